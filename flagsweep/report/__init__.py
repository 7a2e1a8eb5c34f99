"""The report: results.json becomes index.html (one self-contained page) and summary.md.

    results.json -> view.build (every decision) -> plots (matplotlib SVG) -> templates (layout)

`write` is what `flagsweep run` and `flagsweep report` call (report/page.py, with the compare,
suite and merge pages); `terminal` prints the same view model as a table at the end of a run;
`lines` prints build and round progress. The pages are loaded on first use: `flagsweep build`
prints progress lines and nothing else of the report, and should not pay for matplotlib,
SciPy and statsmodels to do it.
"""

from __future__ import annotations


import importlib

# What report/page.py gives: asked of this package, it is loaded then (submodules such as
# lines, terminal or view are imported as usual and never load it).
PAGE = ("write", "write_comparison", "write_merge", "write_suite", "write_tune",
        "write_dashboard", "write_distro", "markdown_text", "markdown_code", "TEMPLATES")


def __getattr__(name: str):
    if name not in PAGE:
        raise AttributeError(f"module 'flagsweep.report' has no attribute {name!r}")
    return getattr(importlib.import_module("flagsweep.report.page"), name)
