"""The pages: results.json becomes index.html (one self-contained page), summary.md and
junit.xml (report/junit.py); two sweeps, a suite, a merge and a tune become theirs; the store
becomes the dashboard across nights (report/dashboard.py); a campaign's campaign.json becomes
the distro report (report/distro.py).

    results.json -> view.build (every decision) -> plots (matplotlib SVG) -> templates (layout)
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jinja2

from flagsweep import __version__, screen
from flagsweep.across import distro as distro_table, merge, suite
from flagsweep.files import make_dir, write_atomic
from flagsweep.report import compare, dashboard, distro, heatmap, junit, tune, view
from flagsweep.report.formats import COLORS, VERDICT_TEXT
from flagsweep.report.variants import link
from flagsweep import model
from flagsweep.results import names, reader
from flagsweep.results.reader import load

TEMPLATES = Path(__file__).resolve().parent / "templates"
def write(results_path: Path, out_dir: Path | None = None) -> Path:
    """Render index.html, summary.md and junit.xml for results_path into out_dir (default:
    beside it). junit.xml comes first: it needs no drawing, so a plot that fails costs it not."""
    results_path = Path(results_path).resolve()
    doc = load(results_path)
    out = make_dir(Path(out_dir or results_path.parent).resolve(), "the report's folder")
    write_atomic(out / "junit.xml", junit.of_sweep(doc))
    r = view.build(doc, results_path, out)
    from flagsweep.report import plots   # here: matplotlib only for a page that draws

    figures = {"forest": plots.forest(r), "distributions": plots.distributions(r),
               "run_order": plots.run_order(r), "history": plots.history(r),
               "layouts": plots.layouts(r), "explain": plots.explained(r)}
    write_atomic(out / "summary.md", _render("summary.md.j2", r=r))
    return write_atomic(out / "index.html", _render("index.html.j2", r=r, plots=figures))


def write_comparison(a_path: Path, b_path: Path, out_dir: Path | None = None):
    """The comparison of two results files; compare.html into out_dir when given."""
    a_path, b_path = Path(a_path).resolve(), Path(b_path).resolve()
    out = Path(out_dir).resolve() if out_dir else Path.cwd()
    c = compare.build(load(a_path), a_path, load(b_path), b_path, out)
    if out_dir:
        page = _render("compare.html.j2", c=c)
        write_atomic(make_dir(out, "the --out folder") / "compare.html", page)
    return c


def write_merge(machines, out: Path) -> Path:
    """merged.json (the table as data) and merged.html (the variant x machine heatmap) into
    `out`; returns the page. What merges is decided by across.merge."""
    make_dir(out, "the --out folder")
    variants, cells = merge.table(machines)
    merged = merge.merged(machines, variants, cells)
    write_atomic(out / "merged.json", json.dumps(merged.dump(), indent=1))
    doc = reader.validate(merged.dump(), out / "merged.json", "merged")
    rows = [(heatmap.MergeRow(names.label(v, model.Results.model_construct(variants=variants))),
             [heatmap.heat_cell(c.change_pct, c.ci, c.verdict) for c in row.per_machine])
            for v, row in zip(variants, doc.variants)]
    first = machines[0].doc
    baseline = next(v for v in first.variants if v.id == first.baseline)
    page = _render("merged.html.j2", title=f"{doc.target}: {len(doc.machines)} machines merged",
                   machines=doc.machines, rows=rows, baseline=" ".join(baseline.flags))
    return write_atomic(out / "merged.html", page)


def write_suite(s, out: Path) -> Path:
    """suite.json and suite.html (variants x programs, the pooled suite column first) into
    `out`; returns the page."""
    out = make_dir(Path(out).resolve(), "the --out folder")
    doc = suite.document(s, out)
    write_atomic(out / "suite.json", json.dumps(doc.dump(), indent=1))
    folders = [(out / p.results).parent for p in doc.programs]
    links = [link(folder / "index.html", out, folder) for folder in folders]
    page = _render("suite.html.j2", title=f"Suite of {len(doc.programs)} programs: {doc.baseline}",
                   s=doc, rows=heatmap.suite_rows(doc), links=links)
    return write_atomic(out / "suite.html", page)


def write_tune(doc: model.Tune, out: Path) -> Path:
    """tune.html: a tune's answer, its proof, its ablation, its best-so-far curve and what it
    tried, into `out` (the folder of its tune.json); returns the page."""
    out = make_dir(Path(out).resolve(), "the tune's folder")
    t = tune.build(doc, out)
    from flagsweep.report import plots   # here: matplotlib only for a page that draws

    page = _render("tune.html.j2", t=t, curve=plots.best_so_far(t))
    return write_atomic(out / "tune.html", page)


def write_dashboard(store, out: Path, targets: tuple[str, ...] = (),
                    threshold_pct: float | None = None) -> Path:
    """The dashboard across nights (report/dashboard.py) into `out`: index.html and a page
    per target, nothing else and nowhere else; returns index.html."""
    d = dashboard.build(store, targets, threshold_pct)
    out = make_dir(Path(out).resolve(), "the --out folder")
    for p in d.pages:
        write_atomic(out / p.file, _render("dashboard-target.html.j2", shown=True, d=d, p=p,
                                           state_text=dashboard.STATE_TEXT))
    return write_atomic(out / "index.html", _render(
        "dashboard.html.j2", shown=True, d=d, state_text=dashboard.STATE_TEXT,
        gate_text={"fails": "fails (exit 1)", "cannot-check": "cannot check (exit 3)",
                   "passes": "passes"}))


def write_distro(campaign_json: Path, out: Path | None = None,
                 threshold_pct: float | None = None, partial: bool = False) -> Path:
    """A campaign's distro report: distro.csv and distro.html into `out` (default: the
    campaign's folder), nothing else and nowhere else; returns the page. `threshold_pct`: the
    pick's across packages [default: the sweeps']; `partial`: busy sweeps count as measured."""
    t = distro_table.build(Path(campaign_json), threshold_pct, partial)
    out = make_dir(Path(out or Path(campaign_json).parent).resolve(), "the report's folder")
    write_atomic(out / "distro.csv", distro.csv_text(t))
    measured = sum(p.results is not None for p in t.packages)
    title = f"Distro report: {measured} of {len(t.packages)} packages measured"
    page = _render("distro.html.j2", shown=True, t=t, title=title, measured=measured,
                   headline=distro.headline(t), changes=distro.changes(t),
                   packages=distro.packages(t, out), costs=distro.cost_lines(t))
    return write_atomic(out / "distro.html", page)


def _render(name: str, shown: bool = False, **context) -> str:
    html = name.endswith(".html.j2")
    env = _environment(html, shown)
    return env.get_template(name).render(
        css=(TEMPLATES / "page.css").read_text() if html else "", colors=COLORS,
        verdict_text=VERDICT_TEXT, version=__version__, **context)


@functools.cache
def _environment(html: bool, shown: bool = False) -> jinja2.Environment:
    """HTML with autoescape on (a target or flag named '<script>' is text); Markdown with its
    own escaping filters instead. StrictUndefined: a misspelt field is an error, not a blank.
    `shown`: every text's control characters written out (screen.shown), for pages made of
    store rows, which anyone with the store may have written. One per process and kind:
    compiling the templates costs a third of a second, and a tune or a suite writes a page per
    sweep."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=html,
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True,
                             finalize=_shown if shown else None)
    env.filters["md"] = markdown_text
    env.filters["code"] = markdown_code
    return env


def _shown(value):
    return screen.shown(value) if isinstance(value, str) else value


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
