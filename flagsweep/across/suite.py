"""Suite: one recipe over several programs on one machine, and the answer across them.

`flagsweep run --all` sweeps every shipped benchmark target in turn (each its own sweep, with
its own results.json and report, in OUT/<target>/) and then writes the suite report beside them;
`flagsweep suite RESULTS... --out DIR` builds the same report from sweeps already taken.

Two kinds of verdict, kept apart:
- per program, each variant keeps the verdict its own sweep gave it (paired by round on that
  program, Benjamini-Hochberg across that sweep);
- across programs, each variant's ratios are pooled into an equal-weight geometric mean with a
  95% CI (stats.pool), and those suite rows get their own BH adjustment and the same verdict rule
  as a sweep (stats.adjust).
A flag can be a suite-wide win and a loss for one program: both are shown ("slower on gzip"),
and a suite verdict never replaces a program's.

Results are put together only when their numbers answer one question: the same machine (CPU
identity, as `flagsweep history` keys it), the same metric and the same baseline build (compiler
and flags), one results file per program. Anything else is refused, naming the files and the key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from flagsweep import stats
from flagsweep.across import comparable, pick
from flagsweep.across.history import given
from flagsweep.errors import FlagsweepError
from flagsweep.results import names, reader
from flagsweep.model import (
    SUITE_SCHEMA, Comparison, ProgramCell, Results, Suite, SuiteFailure, SuiteProgram,
    SuiteVariant, is_control)

# A suite pools each program's change against its own baseline: a change in wall time beside
# one in CPU time is still a change in time (a program that waits is measured in wall time).
TIMES = {"wall_s", "cpu_s"}


@dataclass
class Program:
    target: str
    version: str
    path: Path
    status: str                      # the sweep's: complete, interrupted, failed
    recommendation: str
    stop_reason: str = ""
    unstable: bool = False           # its A/A gate failed: shown, not pooled


@dataclass
class Row:
    id: str
    compiler: str
    flags: list[str]
    cells: dict[str, pick.Pair | None]             # program -> its own comparison, None: absent
    suite: stats.RatioEstimate | None = None
    missing: str = ""                              # why there is no suite estimate
    label: str = ""                                # what people call it (results.names)

    def on(self, verdict: str) -> list[str]:
        """The programs whose own sweep called this variant `verdict`."""
        return [p for p, c in self.cells.items() if c and c.verdict == verdict]


@dataclass
class SuiteTable:
    """The variants x programs table with the pooled column, before it is suite.json."""
    machine: str
    metric: str
    baseline: str
    threshold_pct: float
    programs: list[Program]
    rows: list[Row]
    failed: list[SuiteFailure] = field(default_factory=list)   # programs with no results at all
    recommendation: str = ""
    warnings: list[str] = field(default_factory=list)


def load_all(paths: list[Path], partial: bool = False) -> list[tuple[Path, Results]]:
    """The results files, checked to belong in one suite; a sweep stopped early (busy) is
    refused unless `partial` (left_out says which, for `run --all`)."""
    docs = [(Path(p).resolve(), reader.load(Path(p))) for p in paths]
    comparable.refuse_partial(docs, partial)
    seen: dict[str, Path] = {}
    for path, doc in docs:
        if doc.target in seen:
            raise FlagsweepError(f"{path} and {seen[doc.target]} are both {doc.target}: a "
                                 "suite takes one results file per program")
        seen[doc.target] = path
    comparable.check(docs, "one suite (it compares flags on one machine against one baseline; "
                           "merge and pick work across machines)", comparable.ONE_MACHINE)
    metrics = {d.metric: p for p, d in docs}
    if len(metrics) > 1 and not set(metrics) <= TIMES:
        named = "; ".join(f"{p}: {m}" for m, p in metrics.items())
        raise FlagsweepError(f"the sweeps measured different quantities ({named}): a suite pools "
                             "changes in time, wall or CPU, per program, not a count beside a time")
    return docs


def left_out(paths: list[Path]) -> tuple[list[Path], list[SuiteFailure]]:
    """(the results files a suite takes, the target and why for each sweep stopped early):
    `run --all` goes on with the other programs, as with one that failed."""
    keep, out = [], []
    for p in paths:
        doc = reader.load(Path(p))
        why = comparable.partial(doc)
        if why:
            out.append(SuiteFailure(target=doc.target, error=why))
        else:
            keep.append(p)
    return keep, out


def unstable(doc: Results) -> bool:
    """The sweep's A/A gate failed (stats.gate.aa_gate): its twin, the baseline's own binary again,
    came out faster or slower, so the machine moved every ratio of that sweep."""
    return bool(doc.aa and getattr(doc.aa, "unstable", None))


def build(docs: list[tuple[Path, Results]], threshold_pct: float | None = None,
          failed: list[dict | SuiteFailure] | None = None) -> SuiteTable:
    """Per-program cells, pooled suite rows with their verdicts, and the suite's recommendation.
    `failed`: {"target", "error"} for each program with no results (run --all's)."""
    failed = [SuiteFailure.model_validate(f) for f in failed or []]
    if not docs:
        raise FlagsweepError("no program of the suite has results"
                             + "".join(f"; {f.target}: {f.error}" for f in failed))
    first = docs[0][1]
    thresholds = {d.threshold_pct for _, d in docs}
    threshold = threshold_pct or max(thresholds)
    programs = [Program(d.target, d.target_version or "?", p, given(d, "status"),
                        d.recommendation.why if d.recommendation else "", d.stop_reason or "",
                        unstable(d))
                for p, d in docs]
    shaky = {d.target for _, d in docs if unstable(d)}
    rows = [_row(vid, docs, shaky) for vid in _variant_ids(docs)]
    pooled = [r.suite for r in rows if r.suite is not None]
    stats.adjust(pooled, threshold)
    m = first.machine
    s = SuiteTable(f"{given(m, 'cpu_model')} ({m.march_native or '?'}), {given(m, 'hostname')}",
                   first.metric,
                   comparable.baseline_flags(first), threshold, programs, rows, failed)
    s.warnings = _warnings(docs, thresholds, threshold, s.failed)
    s.recommendation = _recommend(s)
    return s


def _variant_ids(docs: list[tuple[Path, Results]]) -> list[str]:
    """Every compared variant of any program, in first-seen order (not baselines, not A/A)."""
    out: dict[str, None] = {}
    for _, doc in docs:
        for v in doc.variants:
            if v.id != doc.baseline and not is_control(v.id):
                out.setdefault(v.id)
    return list(out)


def _row(vid: str, docs: list[tuple[Path, Results]], shaky: set[str] = frozenset()) -> Row:
    """A variant's cells on every program, pooled over the programs whose sweep passed its A/A
    gate (`shaky`: those that did not; their cells are shown, never pooled)."""
    v0 = next(v for _, d in docs for v in d.variants if v.id == vid)
    cells = {d.target: (pick.pair(d, vid) if any(v.id == vid for v in d.variants)
                        else None) for _, d in docs}
    d0 = next(d for _, d in docs if any(v is v0 for v in d.variants))
    row = Row(vid, v0.compiler, v0.flags, cells, label=names.label(v0, d0))
    pooled = {p: c for p, c in cells.items() if p not in shaky}
    absent = [p for p, c in pooled.items() if c is None]
    no_ci = [p for p, c in pooled.items() if c and c.ci95 is None and c.verdict != "identical-code"]
    if absent or no_ci or not pooled:
        row.missing = "; ".join(filter(None, [
            f"not measured on {', '.join(absent)}" if absent else "",
            f"no interval on {', '.join(no_ci)}" if no_ci else "",
            "every program's sweep was unstable (its A/A arm failed)" if not pooled else ""]))
        return row
    row.suite = stats.pool([(c.ratio, c.ci95) for c in pooled.values()])
    if row.suite is None:
        row.missing = "no usable estimate"
    return row


def _warnings(docs, thresholds: set[float], threshold: float,
              failed: list[SuiteFailure]) -> list[str]:
    out = []
    metrics = {d.target: d.metric for _, d in docs}
    if len(set(metrics.values())) > 1:
        out.append("the programs' own metrics differ (" + ", ".join(
            f"{t}: {m}" for t, m in metrics.items()) + "; each chose its own, --metric auto): "
            "each program's change is in its own time, and the suite pools those changes")
    if len(thresholds) > 1:
        out.append(f"the sweeps used different thresholds ({', '.join(f'{t:g}%' for t in sorted(thresholds))});"
                   f" the suite verdicts use {threshold:g}%, each program's keeps its own")
    for path, doc in docs:
        if doc.status != "complete":
            out.append(f"{doc.target}: its sweep is {doc.status} "
                       f"({doc.stop_reason}), so its numbers are partial ({path})")
        if warning := doc.aa and getattr(doc.aa, "warning", None):
            out.append(f"{doc.target}: {warning}")
        if unstable(doc):
            out.append(f"{doc.target}: its A/A arm failed, so its ratios are shown but not "
                       "pooled: the suite column is over the other programs")
    for f in failed:
        out.append(f"{f.target}: no results ({f.error}); the suite is over the others")
    return out


def _recommend(s: SuiteTable) -> str:
    faster = [r for r in s.rows if r.suite and r.suite.verdict == "faster"]
    n = len(s.programs) - sum(p.unstable for p in s.programs)
    if not faster:
        return (f"Keep {s.baseline}: no variant was significantly faster than it by more than "
                f"{s.threshold_pct:g}% across the {n} programs (geometric mean).")
    best = min(faster, key=lambda r: r.suite.ratio)
    parts = [f"{verdict} on {', '.join(best.on(verdict)) or 'none'}" for verdict in ("faster", "slower")]
    undecided = [p for p, c in best.cells.items() if c and c.verdict not in ("faster", "slower")]
    if undecided:
        parts.append(f"no difference or undecided on {', '.join(undecided)}")
    plain = f"{best.compiler} {' '.join(best.flags)}"
    named = best.label if best.label and best.label != " ".join(best.flags) else plain
    m = sum(r.suite is not None for r in s.rows)
    return (f"{named}: {_pct_ci(best.suite, m)} across the {n} "
            f"programs (geometric mean); by program: {'; '.join(parts)}.")


def _pct_ci(c: stats.RatioEstimate, m: int) -> str:
    """The chosen row's change with the interval its verdict used: adjusted for choosing it
    among the m pooled rows (stats.fcr_intervals), as a sweep's "Use X" prints its winner's."""
    if c.ci_fcr is None or c.fcr_level is None:
        return stats.change_text(c.ratio, c.ci95)
    return (f"{stats.change_text(c.ratio)} ({stats.level_text(c.fcr_level)} CI "
            f"{stats.ci_text(c.ci_fcr)}, adjusted for choosing it among {m} pooled rows)")


def document(s: SuiteTable, out: Path) -> Suite:
    """suite.json: the same table as data, result paths relative to the suite's folder."""
    return Suite(
        schema=SUITE_SCHEMA, machine=s.machine, metric=s.metric, baseline=s.baseline,
        threshold_pct=s.threshold_pct, recommendation=s.recommendation,
        warnings=s.warnings, failed=s.failed,
        programs=[SuiteProgram(target=p.target, version=p.version, status=p.status,
                               results=os.path.relpath(p.path, out),
                               stop_reason=p.stop_reason, recommendation=p.recommendation,
                               unstable=p.unstable)
                  for p in s.programs],
        variants=[SuiteVariant(id=r.id, compiler=r.compiler, flags=r.flags, label=r.label,
                               per_program={k: _cell(c) for k, c in r.cells.items()},
                               suite=Comparison.model_validate(r.suite.to_json())
                               if r.suite else None,
                               missing=r.missing, faster_on=r.on("faster"),
                               slower_on=r.on("slower"))
                  for r in s.rows])


def _cell(c: pick.Pair | None) -> ProgramCell | None:
    return c and ProgramCell(program=c.program, machine=c.machine, ratio=c.ratio,
                             ci95=list(c.ci95) if c.ci95 else None, verdict=c.verdict)
