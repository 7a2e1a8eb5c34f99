"""The dashboard across nights (`flagsweep dashboard --out DIR`): the store's targets as a
static site, an index with one row per target, CPU and compiler, and a page per target with
every variant's series drawn.

Every number and verdict is history's (across.history: `collect`, `judged`, each series'
`document()`), read as `flagsweep history --check` reads it; nothing here finds a step.
The plots are inline SVG whose geometry is computed here and drawn by the templates
(dashboard.html.j2, dashboard-target.html.j2), so that every text in them, a store row
anyone may have written, passes Jinja2's autoescape like the rest of the page, and a night's
tooltip can say what it is. matplotlib would also cost about 35 ms and 40 kB a series of 100
nights (measured on the bench's VM), twice the template's 21 kB, and name no night.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field

from flagsweep import files
from flagsweep.across import history
from flagsweep.errors import FlagsweepError
from flagsweep.model import HistorySeries
from flagsweep.results.store import Store

# The plot's box in SVG units: the page scales it to its width (svg.plot).
WIDTH, HEIGHT = 720, 170
LEFT, RIGHT, TOP, BOTTOM = 64, 14, 10, 26
# What a series reads at a row's newest night, beyond the verdicts of stats.adjust.
STATE_TEXT = {"faster": "faster", "slower": "slower", "equivalent": "no difference",
              "inconclusive": "inconclusive", "unjudged": "unjudged",
              "first": "nothing to compare yet", "not-measured": "not measured"}
# The outcomes of history.judged the gate fails on (exit 1), and cannot check (exit 3).
FAILS, CANNOT = ("regression",), ("unconfirmed", "unchecked")


@dataclass
class Mark:
    """A judged night: its median and 95% interval, in SVG units."""
    x: float
    y: float
    lo: float
    hi: float
    title: str


@dataclass
class Plot:
    """One series drawn: the medians joined, each night's interval, the steps as vertical
    lines in their verdict's colour, the unjudged nights as hollow marks on the axis."""
    label: str
    line: str                                    # an SVG path of numbers only
    marks: list[Mark]
    steps: list[tuple[float, str, str]]          # x, verdict, text
    unjudged: list[tuple[float, str]]            # x, text
    yticks: list[tuple[float, str]]
    xticks: list[tuple[float, str, str]]         # x, date, text-anchor
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    right: int = WIDTH - RIGHT
    bottom: int = HEIGHT - BOTTOM


@dataclass
class Night:
    """A row of a series' table, newest first."""
    run_id: str
    when: str
    state: str                                   # judged | unjudged | faster | slower (a step)
    median: str
    ci: str
    n: str
    versions: str
    note: str


@dataclass
class SeriesView:
    anchor: str
    variant: str
    flags: str
    compiler: str
    quantity: str
    state: str                                   # at its machine's newest night (STATE_TEXT)
    outcome: str                                 # history.judged's, at that night
    why: str
    plot: Plot
    steps: list[tuple[str, str]]                 # verdict, text
    unjudged: list[tuple[str, str]]              # run id, why
    nights: list[Night]


@dataclass
class IndexRow:
    """The index's row: one target on one CPU with one compiler, at its newest night."""
    target: str
    href: str
    machine: str
    compiler: str
    run_id: str
    when: str
    counts: list[tuple[str, int]]
    gate: str                                    # fails | cannot-check | passes
    open: list[tuple[str, str, str, str]]        # variant, outcome, text, its series' link
    cannot: list[tuple[int, str]]                # series, why


@dataclass
class MachineView:
    anchor: str
    machine: str
    run_id: str
    series: list[SeriesView]


@dataclass
class TargetPage:
    target: str
    file: str
    machines: list[MachineView]
    rows: list[IndexRow] = field(default_factory=list)


@dataclass
class Dashboard:
    pages: list[TargetPage]
    rows: list[IndexRow]
    empty: list[str]                             # targets without a complete sweep
    threshold: str
    made: str


def build(store: Store, targets: tuple[str, ...] = (), threshold_pct: float | None = None
          ) -> Dashboard:
    """The dashboard of `targets` (every target the store holds when none is named)."""
    pages, empty = [], []
    for name in targets or store.targets():
        series = history.collect(store, name, threshold_pct=threshold_pct)
        if series:
            pages.append(_target(name, series))
        elif targets:
            raise FlagsweepError(f"--target {name!r}: no complete sweep of it in the store "
                                 f"{store.url}")
        else:
            empty.append(name)
    if not pages:
        raise FlagsweepError(f"no complete sweep in the store {store.url}: nothing to show")
    threshold = (f"{threshold_pct:g}%" if threshold_pct is not None
                 else "each target's latest sweep's")
    return Dashboard(pages, [r for p in pages for r in p.rows], empty, threshold,
                     _when(time.time()))


def page_file(target: str) -> str:
    """The target page's file name: the name's safe characters and its hash, so that a target
    named `../x` or `<script>` names a file in the folder, and two names never share one."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", target)[:40].strip("_") or "target"
    return f"target-{slug}-{files.sha256_bytes(target.encode('utf-8', 'replace'))[:10]}.html"


def _target(name: str, series: list[history.VariantSeries]) -> TargetPage:
    by_machine: dict[str, list[history.VariantSeries]] = {}
    for s in sorted(series, key=lambda s: (s.machine, s.compiler, s.variant, s.reference or "")):
        by_machine.setdefault(s.machine, []).append(s)
    page = TargetPage(name, page_file(name), [])
    for i, (machine, group) in enumerate(by_machine.items()):
        anchor = f"m{i + 1}"
        newest = history.newest(group)
        docs = [(s, s.document()) for s in group]
        nights = [p for _, d in docs for p in (*d.points, *(d.unjudged or []))]
        span = (min(p.started for p in nights), max(p.started for p in nights))
        views = [_series(f"{anchor}-s{j + 1}", s, d, newest, span)
                 for j, (s, d) in enumerate(docs)]
        page.machines.append(MachineView(anchor, machine, newest, views))
        for compiler in dict.fromkeys(s.compiler for s in group):
            mine = [(s, d, f"{page.file}#{v.anchor}")
                    for (s, d), v in zip(docs, views) if s.compiler == compiler]
            page.rows.append(_row(name, f"{page.file}#{anchor}", machine, compiler, mine))
    return page


def _row(target: str, href: str, machine: str, compiler: str,
         docs: list[tuple[history.VariantSeries, HistorySeries, str]]) -> IndexRow:
    """The row at its own newest night: history --check judges the target's newest sweep, and
    on a store of several CPUs each CPU's nightly job checked its own. `docs`: each series,
    its document and its link."""
    run_id = history.newest([s for s, *_ in docs])
    night = max((p for s, *_ in docs for p in (*s.points, *s.unjudged) if p.run_id == run_id),
                key=lambda p: p.started)
    counts = Counter(_state(d, run_id) for _, d, _ in docs)
    judged = [(d.variant, *history.judged(d, run_id), link) for _, d, link in docs]
    open_ = [j for j in judged if j[1] in ("regression", "unconfirmed")]
    cannot = Counter(why for _, outcome, why, _ in judged if outcome == "unchecked")
    gate = ("fails" if any(j[1] in FAILS for j in judged)
            else "cannot-check" if any(j[1] in CANNOT for j in judged) else "passes")
    version = night.versions.get(compiler)
    return IndexRow(target, href, machine,
                    f"{compiler} {version}" if version not in (None, "?") else compiler,
                    run_id, _when(night.started),
                    sorted(counts.items(), key=lambda c: list(STATE_TEXT).index(c[0])), gate,
                    open_, [(n, why) for why, n in cannot.items()])


def _state(doc: HistorySeries, run_id: str) -> str:
    """What a series reads at a night: unjudged, not measured, its first night (or the first
    after a step, with nothing to compare), or the verdict against its segment."""
    if any(u.run_id == run_id for u in doc.unjudged or []):
        return "unjudged"
    if not doc.points or doc.points[-1].run_id != run_id:
        return "not-measured"
    if doc.latest is None or doc.latest.run_id != run_id:
        return "first"
    return doc.latest.verdict if doc.latest.verdict in STATE_TEXT else "inconclusive"


def _series(anchor: str, s: history.VariantSeries, doc: HistorySeries, newest: str,
            span: tuple[float, float]) -> SeriesView:
    outcome, why = history.judged(doc, newest)
    quantity = doc.metric or "?"
    if doc.reference:
        quantity += f" / reference {doc.reference[:8]}"
    return SeriesView(anchor, doc.variant, " ".join(doc.flags), s.compiler, quantity,
                      _state(doc, newest), outcome, why, plot(doc, span, quantity),
                      [(st.verdict, history.step_text(st)) for st in reversed(doc.steps)],
                      [(u.run_id, u.why) for u in reversed(doc.unjudged or [])],
                      _nights(doc))


def _nights(doc: HistorySeries) -> list[Night]:
    steps = {st.run_id: st for st in doc.steps}
    rows = []
    for p in doc.points:
        step = steps.get(p.run_id)
        versions = ", ".join(f"{k} {v}" for k, v in sorted((p.versions or {}).items()))
        rows.append(Night(p.run_id, _when(p.started), step.verdict if step else "judged",
                          _number(p.median), _interval(p.ci95),
                          f"{p.n:g}" if p.n is not None else "", versions,
                          history.step_text(step) if step else ""))
    rows += [Night(u.run_id, _when(u.started), "unjudged", "", "", "", "", u.why)
             for u in doc.unjudged or []]
    order = {p.run_id: p.started or 0 for p in (*doc.points, *(doc.unjudged or []))}
    return sorted(rows, key=lambda n: order[n.run_id], reverse=True)


def plot(doc: HistorySeries, span: tuple[float, float], quantity: str) -> Plot:
    """The series' geometry on a time axis shared by its machine's series (`span`, the first
    and last night's start), the value axis fitted to its medians and intervals."""
    x = _scale(span, LEFT, WIDTH - RIGHT)
    judged = [p for p in doc.points if p.median is not None and p.started is not None]
    values = [v for p in judged for v in (p.median, *(p.ci95 or ())) if v is not None]
    low, high = _padded(values)
    y = _scale((high, low), TOP, HEIGHT - BOTTOM)
    marks = []
    for p in judged:
        ci = p.ci95 if p.ci95 and None not in p.ci95 else [p.median, p.median]
        marks.append(Mark(x(p.started), y(p.median), y(ci[0]), y(ci[1]),
                          f"{p.run_id}, {_when(p.started)}: {_number(p.median)} "
                          f"{_interval(p.ci95)}".rstrip()))
    line = " ".join(f"{'M' if i == 0 else 'L'}{m.x:.1f},{m.y:.1f}" for i, m in enumerate(marks))
    started = {p.run_id: p.started for p in doc.points}
    steps = [(x(started[st.run_id]), st.verdict, f"{st.verdict}: {history.step_text(st)}")
             for st in doc.steps if started.get(st.run_id) is not None]
    unjudged = [(x(u.started), f"{u.run_id}, {_when(u.started)}: unjudged: {u.why}")
                for u in doc.unjudged or [] if u.started is not None]
    yticks = [(y(v), _number(v)) for v in (low, (low + high) / 2, high)]
    days = {_when(t)[:10]: t for t in reversed(span)}        # one label for a one-day span
    xticks = [(x(t), day, "middle" if span[0] == span[1] else "start" if t == span[0]
               else "end") for day, t in days.items()]
    return Plot(f"{doc.variant}: {quantity} per night", line, marks, steps, unjudged,
                yticks, xticks)


def _scale(domain: tuple[float, float], start: float, end: float):
    """A linear map of `domain` onto [start, end]; a domain of one value maps to the middle."""
    a, b = domain
    if a == b:
        return lambda _: (start + end) / 2
    return lambda v: start + (v - a) / (b - a) * (end - start)


def _padded(values: list[float]) -> tuple[float, float]:
    """The value axis: the values' range and a twentieth on each side (a flat series: 1% of
    its level), so no mark sits on the frame."""
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    pad = (high - low) / 20 or abs(high) / 100 or 1.0
    return low - pad, high + pad


def _interval(ci: list[float] | None) -> str:
    """A night's 95% interval of its median, in the series' own units."""
    return f"[{_number(ci[0])}, {_number(ci[1])}]" if ci and None not in ci else ""


def _number(v: float | None) -> str:
    return "" if v is None else f"{v:.4g}"


def _when(t: float | None) -> str:
    return "" if t is None else time.strftime("%Y-%m-%d %H:%M", time.gmtime(t))
