"""Two sweeps of one target side by side: `flagsweep compare A.json B.json`.

Per variant (matched by id, which is stable for the same compiler and flags): each sweep's own
verdict against its own baseline, whether that verdict changed, and B's median against A's with
an unpaired interval (stats.compare_unpaired, Benjamini-Hochberg across the variants). The
within-sweep verdicts are the robust part: each was paired by round on one machine. B / A
compares different runs, so it moves with the machine as well as the code; the page says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flagsweep import stats
from flagsweep.across import comparable
from flagsweep.report import view
from flagsweep.report.formats import ci_pct_text, signed_pct, threshold
from flagsweep.report.variants import VariantRow, metric_values
from flagsweep import model


@dataclass
class Side:
    name: str                        # run id and date
    path: str
    row: VariantRow | None


@dataclass
class CompareRow:
    id: str
    label: str
    a: VariantRow | None
    b: VariantRow | None
    across_text: str                 # B / A: "+1.2% [+0.4, +2.0]"
    across_verdict: str              # faster | slower | equivalent | inconclusive | ""
    across_why: str
    changed: str                     # "" or what changed between the two sweeps' verdicts


@dataclass
class TwoSweeps:
    """Two sweeps of one target side by side, as compare.html and the terminal show them."""
    title: str
    a: Side
    b: Side
    differences: list[tuple[str, str, str]]   # what differs between the sweeps: key, A, B
    warnings: list[str]
    rows: list[CompareRow]
    threshold_pct: float
    summary: str


def build(a_doc: model.Results, a_path: Path, b_doc: model.Results, b_path: Path,
          out_dir: Path) -> TwoSweeps:
    """Refuses two different targets or metrics: their numbers do not compare."""
    comparable.check([(a_path, a_doc), (b_path, b_doc)], "two sweeps of one program to compare",
                     comparable.TWO_SWEEPS)
    ra = view.build(a_doc, a_path, out_dir)
    rb = view.build(b_doc, b_path, out_dir)
    thr = max(ra.threshold_pct, rb.threshold_pct)
    rows = _rows(ra, rb, a_doc, b_doc, thr)
    diffs = _differences(a_doc, b_doc)
    return TwoSweeps(
        title=f"{a_doc.target}: two sweeps compared",
        a=Side(_name(a_doc), str(a_path), None), b=Side(_name(b_doc), str(b_path), None),
        differences=diffs, warnings=_warnings(a_doc, b_doc, diffs, rows),
        rows=rows, threshold_pct=thr, summary=_summary(rows, thr))


def _name(doc: model.Results) -> str:
    return f"{doc.run_id or doc.target} ({(doc.finished or '')[:10]})"


def _rows(ra: view.SweepView, rb: view.SweepView, a_doc: model.Results,
          b_doc: model.Results, thr: float) -> list[CompareRow]:
    a_rows, b_rows = {r.id: r for r in ra.variants}, {r.id: r for r in rb.variants}
    a_values, b_values = _values(a_doc), _values(b_doc)
    ids = [r.id for r in ra.variants] + [r.id for r in rb.variants if r.id not in a_rows]
    comparisons = {vid: stats.compare_unpaired(b_values[vid], a_values[vid]) for vid in ids
                   if vid in a_values and vid in b_values}
    stats.adjust(list(comparisons.values()), threshold_pct=thr)
    out = []
    for vid in ids:
        a, b, c = a_rows.get(vid), b_rows.get(vid), comparisons.get(vid)
        across = (f"{signed_pct((c.ratio - 1) * 100)} {ci_pct_text(c.ci95)}".strip()
                  if c and c.ratio == c.ratio else "")
        out.append(CompareRow(vid, (a or b).label, a, b, across, c.verdict if c else "",
                              c.why if c else "not measured in both sweeps", _changed(a, b)))
    return out


def _values(doc: model.Results) -> dict[str, list[float]]:
    out = {}
    for v in doc.variants:
        values = [x for x in metric_values(v.samples or {}, doc.metric)
                  if x is not None and x > 0]
        if values and not v.build.identical_to:
            out[v.id] = values
    return out


def _changed(a: VariantRow | None, b: VariantRow | None) -> str:
    if a is None or b is None:
        return "only in A" if b is None else "only in B"
    if a.verdict == b.verdict:
        return ""
    flipped = {a.verdict, b.verdict} == {"faster", "slower"}
    return f"{a.badge} -> {b.badge}" + (" (reversed)" if flipped else "")


DIFFERENCE_KEYS = [("recipe", lambda d: d.recipe),
                   ("baseline", lambda d: d.baseline),
                   ("CPU", lambda d: d.machine.cpu_model),
                   ("-march=native", lambda d: d.machine.march_native),
                   ("kernel", lambda d: d.machine.kernel),
                   ("microcode", lambda d: d.machine.microcode),
                   ("distribution", lambda d: _environment(d, "distro")),
                   ("CI runner image", lambda d: _environment(d, "image")),
                   ("host", lambda d: d.machine.hostname),
                   ("compilers", lambda d: ", ".join(f"{c.name} {c.version or ''}"
                                                     for c in d.compilers or [])),
                   ("input", lambda d: d.workload.input_sha256 if d.workload else None),
                   ("threshold", lambda d: f"{threshold(d.threshold_pct):g}%")]


# What a document recorded before flagsweep read it does not have: not a difference.
UNRECORDED = object()


def _environment(doc: model.Results, key: str):
    """A key of the machine's environment (host.image), UNRECORDED in an older document."""
    e = doc.machine.environment
    return UNRECORDED if e is None else getattr(e, key)


def _differences(a: model.Results, b: model.Results) -> list[tuple[str, str, str]]:
    out = []
    for key, get in DIFFERENCE_KEYS:
        x, y = get(a), get(b)
        if x != y and UNRECORDED not in (x, y):
            out.append((key, str(x), str(y)))
    return out


def _warnings(a: model.Results, b: model.Results, diffs: list,
              rows: list[CompareRow]) -> list[str]:
    keys = {k for k, _, _ in diffs}
    out = []
    if "baseline" in keys:
        out.append("The two sweeps have different baselines: their 'vs baseline' columns "
                   "measure against different builds.")
    if "input" in keys:
        out.append("The two sweeps timed different inputs: B / A compares different work.")
    if keys & {"CPU", "host", "kernel", "microcode", "distribution", "CI runner image",
               "compilers"}:
        out.append("The sweeps ran on different machines or toolchains (see the differences): "
                   "B / A includes that, not only the flags.")
    for doc, side in ((a, "A"), (b, "B")):
        if doc.status and doc.status != "complete":
            out.append(f"Sweep {side} is {doc.status}: {doc.stop_reason}.")
    if any("reversed" in r.changed for r in rows):
        out.append("Some variant is faster in one sweep and slower in the other.")
    return out


def _summary(rows: list[CompareRow], thr: float) -> str:
    changed = [r for r in rows if r.changed and not r.changed.startswith("only")]
    moved = [r for r in rows if r.across_verdict in ("faster", "slower")]
    return (f"{len(changed)} of {len(rows)} variants changed verdict between the sweeps; "
            f"{len(moved)} moved by more than {thr:g}% from A to B"
            + (f" ({', '.join(r.label + ' ' + r.across_verdict for r in moved[:5])})" if moved else "")
            + ".")
