"""The report: results.json becomes index.html (one self-contained page) and summary.md.

    results.json -> view.build (every decision) -> plots (matplotlib SVG) -> templates (layout)

`write` is what `flagsweep run` and `flagsweep report` call; `compare` puts two sweeps of one
target side by side; `terminal` prints the same view model as a table at the end of a run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jinja2

from .. import __version__
from ..errors import FlagsweepError
from ..files import make_dir, write_atomic
from . import compare, plots, view

TEMPLATES = Path(__file__).resolve().parent / "templates"
SCHEMA = "flagsweep/1"
REQUIRED = ("schema", "target", "recipe", "metric", "baseline", "machine", "variants")
REQUIRED_VARIANT = ("id", "compiler", "flags", "build")

# The keys whose values the report, compare, merge, pick and suite compute with: each must hold
# a number or a pair of numbers (an interval), or null; [...]: a list of such. "*": any key.
NUM, PAIR = "a number", "a pair of numbers"
NUMERIC = {
    "threshold_pct": NUM,
    "variants": [{
        "build": {"seconds": NUM, "size_bytes": NUM},
        "samples": {"*": [NUM]},
        "summary": {"n": NUM, "median": NUM, "mean": NUM, "cv": NUM, "outliers": NUM,
                    "disturbed": NUM, "retaken": NUM, "ci95": PAIR},
        "vs_baseline": {"ratio": NUM, "p_value": NUM, "p_adjusted": NUM, "n_pairs": NUM,
                        "rounds_needed": NUM, "ci95": PAIR, "ci90": PAIR},
    }],
    "aa": {"ratio": NUM, "p_value": NUM, "bound_pct": NUM, "ci95": PAIR},
    "noise": {"baseline_cv": NUM, "mde_pct": NUM, "sd_log_diff": NUM, "power": NUM,
              "n_pairs": NUM, "comparisons": NUM},
    "effects": [{"effect_pct": NUM, "p_value": NUM, "p_adjusted": NUM, "ci95_pct": PAIR}],
    "history": [{"points": [{"median": NUM, "n": NUM, "ci95": PAIR}],
                 "steps": [{"ratio": NUM, "ci95": PAIR}]}],
}


def load(path: Path) -> dict:
    """Read a results.json, refusing (with the file and the key named) what is not one."""
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise FlagsweepError(f"{path}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FlagsweepError(f"{path}: not a results.json (not valid JSON: {e})") from None
    except OSError as e:
        raise FlagsweepError(f"{path}: cannot read it: {e.strerror}") from None
    if not isinstance(doc, dict):
        raise FlagsweepError(f"{path}: not a results.json (expected a JSON object)")
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise FlagsweepError(f"{path}: not a results.json: missing key(s) {', '.join(missing)}")
    if doc["schema"] != SCHEMA:
        raise FlagsweepError(f"{path}: key 'schema' is {doc['schema']!r}; this flagsweep "
                             f"reads {SCHEMA!r}")
    if not isinstance(doc["variants"], list) or not all(isinstance(v, dict) for v in doc["variants"]):
        raise FlagsweepError(f"{path}: key 'variants': expected a list of objects")
    for i, v in enumerate(doc["variants"]):
        gone = [k for k in REQUIRED_VARIANT if k not in v]
        if gone:
            raise FlagsweepError(f"{path}: variants[{i}] lacks key(s) {', '.join(gone)}")
    _check_numbers(doc, NUMERIC, "", path)
    return doc


def _check_numbers(value, spec, key: str, path: Path) -> None:
    """Walk value along spec (see NUMERIC); the first value of the wrong kind is refused with
    its key path, e.g. variants[2].vs_baseline.ratio. Null passes: absent numbers are null."""
    if value is None:
        return
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise FlagsweepError(f"{path}: key '{key}': expected an object, got {_shown(value)}")
        for name, inner in spec.items():
            for k in (value if name == "*" else [name] if name in value else []):
                _check_numbers(value[k], inner, f"{key}.{k}" if key else k, path)
    elif isinstance(spec, list):
        if not isinstance(value, list):
            raise FlagsweepError(f"{path}: key '{key}': expected a list, got {_shown(value)}")
        for i, item in enumerate(value):
            _check_numbers(item, spec[0], f"{key}[{i}]", path)
    elif not _fits(value, spec):
        raise FlagsweepError(f"{path}: key '{key}': expected {spec} or null, got {_shown(value)}")


def _fits(value, kind: str) -> bool:
    if kind == PAIR:
        return isinstance(value, list) and len(value) == 2 and all(map(_number, value))
    return _number(value)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _shown(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def write(results_path: Path, out_dir: Path | None = None) -> Path:
    """Render index.html and summary.md for results_path into out_dir (default: beside it)."""
    results_path = Path(results_path).resolve()
    doc = load(results_path)
    out = make_dir(Path(out_dir or results_path.parent).resolve(), "the report's folder")
    r = view.build(doc, results_path, out)
    figures = {"forest": plots.forest(r), "distributions": plots.distributions(r),
               "run_order": plots.run_order(r), "history": plots.history(r)}
    write_atomic(out / "summary.md", _render("summary.md.j2", r=r))
    return write_atomic(out / "index.html", _render("index.html.j2", r=r, plots=figures))


def write_comparison(a_path: Path, b_path: Path, out_dir: Path | None = None):
    """The comparison of two results files; compare.html into out_dir when given."""
    a_path, b_path = Path(a_path).resolve(), Path(b_path).resolve()
    out = Path(out_dir).resolve() if out_dir else Path.cwd()
    try:
        c = compare.build(load(a_path), a_path, load(b_path), b_path, out)
    except ValueError as e:
        raise FlagsweepError(str(e)) from None
    if out_dir:
        page = _render("compare.html.j2", c=c)
        write_atomic(make_dir(out, "the --out folder") / "compare.html", page)
    return c


def render_merge(machines, variants: list[dict], cells) -> str:
    """merged.html: the variant x machine heatmap (flagsweep.merge decides what merges)."""
    rows = [(view.MergeRow(view.label_of(v, {"variants": variants})),
             [view.heat_cell(c.change_pct, c.ci, c.verdict) for c in row])
            for v, row in zip(variants, cells)]
    first = machines[0].doc
    baseline = next(v for v in first["variants"] if v["id"] == first["baseline"])
    return _render("merged.html.j2", title=f"{first['target']}: {len(machines)} machines merged",
                   machines=machines, rows=rows, baseline=" ".join(baseline["flags"]))


def render_suite(s, out: Path) -> str:
    """suite.html: variants x programs, the pooled suite column first (flagsweep.suite)."""
    links = [os.path.relpath(p.path.parent / "index.html", out) for p in s.programs]
    return _render("suite.html.j2", title=f"Suite of {len(s.programs)} programs: {s.baseline}",
                   s=s, rows=view.suite_rows(s), links=links)


def _render(name: str, **context) -> str:
    html = name.endswith(".html.j2")
    env = _environment(html)
    return env.get_template(name).render(
        css=(TEMPLATES / "page.css").read_text() if html else "", colors=view.COLORS,
        verdict_text=view.VERDICT_TEXT, version=__version__, **context)


def _environment(html: bool) -> jinja2.Environment:
    """HTML with autoescape on (a target or flag named '<script>' is text); Markdown with its
    own escaping filters instead. StrictUndefined: a misspelt field is an error, not a blank."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=html,
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["md"] = markdown_text
    env.filters["code"] = markdown_code
    return env


def markdown_text(text: str) -> str:
    """Text that Markdown (GitHub's, in a table cell too) shows as written."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for ch in "\\`*_|":
        text = text.replace(ch, "\\" + ch)
    return text.replace("](", "]\\(").replace("\n", " ")  # [x](y) would be a link


def markdown_code(text: str) -> str:
    """A code span that survives backticks and table pipes in the text."""
    text = str(text).replace("|", "\\|").replace("\n", " ")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
