"""What people call a variant, wherever results are shown: the page, the terminal, pick."""

from __future__ import annotations

from flagsweep import model
from flagsweep.model import AA_SUFFIX, REF_SUFFIX


def label(v: model.Variant, doc: model.Results) -> str:
    """Its flags, with the compiler when the sweep has several; a change to a distribution's
    flags is named by the change ("debian +O3"), not by the dozen flags of the base."""
    flags = " ".join(v.flags) or "(no flags)"
    if doc.distro:
        changes = [x for k, x in (v.factors or {}).items() if k != "compiler"]
        name = doc.distro.name
        flags = " ".join([name, *(f"+{c}" for c in changes if c != name)])
    several = len({x.compiler for x in doc.variants}) > 1
    text = f"{v.compiler} {flags}" if several else flags
    if v.id.endswith(REF_SUFFIX):
        # the reference arm may carry the baseline's very flags: without a word it reads as
        # a second baseline
        return text + " (reference)"
    if not v.id.endswith(AA_SUFFIX):
        return text
    return text + (" (A/A: other layouts)" if doc.measurement and doc.measurement.layouts
                   else " (A/A copy)")
