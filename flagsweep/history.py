"""History: every complete sweep of a target in the store, as one series per variant and
machine, with the steps in it and whether the latest sweep regressed.

A series is keyed by what must be equal for two sweeps' numbers to compare: the target, the
CPU's identity (model, family, microcode and its feature flags), the input's sha256, the metric
and the variant id (compiler and flags). What may change between nightly sweeps, and is what a
nightly job watches, is recorded on each point instead: the target's version and the compilers'
versions. A step then names what changed with it ("gcc 12.2.0 -> 13.1.0").

Steps are found sequentially. The sweeps since the last step form a segment; each new sweep's
samples are compared with the pooled samples of the segment's last WINDOW sweeps by
stats.compare_unpaired (Hodges-Lehmann ratio, Mann-Whitney interval), Benjamini-Hochberg across
the variants of that sweep, and the faster/slower/equivalent/inconclusive rule of stats.adjust
with the threshold. Samples pooled across sweeps understate the sweep-to-sweep spread (another
day, another machine state), so once a series has MIN_SPREAD_RUNS earlier sweeps a step must
also lie beyond SPREAD_Z robust standard deviations of that spread: the median absolute
deviation of the successive differences of log sweep medians, scaled by 1.4826 / sqrt(2) (a
robust SD of one sweep's level; the MAD keeps the few real steps from inflating it; the cut-off
as for the modified z-score of Iglewicz & Hoaglin, How to Detect and Handle Outliers, ASQC 1993).
A shift the history has seen before from the machine alone is not called a regression. A faster or slower verdict that
passes is a step and starts a new segment; the latest sweep's slower steps are the regressions
`flagsweep history --check` fails on.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from . import analysis, results, stats
from . import metric as metric_mod
from .store import Store

WINDOW = 5
MIN_SPREAD_RUNS = 4
SPREAD_Z = 3.5


@dataclass
class Point:
    run_id: str
    started: float
    values: list[float]
    median: float
    ci95: tuple[float, float] | None
    versions: dict[str, str]                 # "target" and each compiler name -> version


@dataclass
class Step:
    run_id: str
    verdict: str                             # faster | slower
    ratio: float
    ci95: tuple[float, float]
    why: str
    changed: list[str]                       # versions that changed with it


@dataclass
class Series:
    variant: str
    flags: list[str]
    machine: str
    points: list[Point] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    latest: dict | None = None               # the latest sweep against its segment

    def to_json(self) -> dict:
        return {"variant": self.variant, "flags": self.flags, "machine": self.machine,
                "points": [{"run_id": p.run_id, "started": p.started, "median": p.median,
                            "ci95": list(p.ci95) if p.ci95 else None, "n": len(p.values),
                            "versions": p.versions} for p in self.points],
                "steps": [{"run_id": s.run_id, "verdict": s.verdict, "ratio": s.ratio,
                           "ci95": list(s.ci95), "why": s.why, "changed": s.changed}
                          for s in self.steps],
                "latest": self.latest}


def machine_key(machine: dict) -> str:
    """The CPU identity two sweeps must share to be one series."""
    flags = hashlib.sha256(" ".join(sorted(machine.get("cpu_flags") or [])).encode()).hexdigest()
    return (f"{machine.get('cpu_model', '?')} (family {machine.get('family', '?')} model "
            f"{machine.get('model', '?')}, microcode {machine.get('microcode', '?')}, "
            f"flags {flags[:8]})")


def collect(store: Store, target: str, until: str | None = None,
            threshold_pct: float | None = None) -> list[Series]:
    """Every series of `target`, from its complete sweeps in start order (up to and including
    run `until` when given), with steps detected."""
    runs = [r for r in store.runs_of(target) if r["status"] == "complete"]
    ids = [r["run_id"] for r in runs]
    if until in ids:
        runs = runs[:ids.index(until) + 1]
    by_key: dict[tuple, Series] = {}
    thresholds = []
    for run in runs:
        thresholds.append(run["options"]["measure"].get("threshold_pct", 1.0))
        for key, series, point in _points(store, run):
            by_key.setdefault(key, series).points.append(point)
    thr = threshold_pct if threshold_pct is not None else (thresholds[-1] if thresholds else 1.0)
    all_series = list(by_key.values())
    _detect(all_series, thr)
    return all_series


def regressions(all_series: list[Series], latest_run: str | None = None) -> list[Series]:
    """Series whose latest sweep (the newest overall unless named) is a slower step."""
    latest_run = latest_run or _newest(all_series)
    return [s for s in all_series if s.steps and s.steps[-1].run_id == latest_run
            and s.steps[-1].verdict == "slower" and s.points[-1].run_id == latest_run]


def _newest(all_series: list[Series]) -> str | None:
    points = [p for s in all_series for p in s.points]
    return max(points, key=lambda p: p.started).run_id if points else None


def _points(store: Store, run: dict):
    """(series key, empty series, point) for each measured variant of one sweep."""
    o = run["options"]
    metric = metric_mod.column(o["measure"]["metric"])
    machine = machine_key(run["machine"] or {})
    input_sha = (o.get("workload") or {}).get("input_sha256")
    values = analysis.values_by_round(store.samples(run["run_id"]),
                                      lambda s: results.metric_of(s, metric))
    versions = {"target": o.get("target_version") or "?",
                **{c["name"]: c.get("version", "?") for c in o.get("compilers") or []}}
    for v in store.variants(run["run_id"]):
        doc = v["doc"]
        if doc["id"].endswith(analysis.AA_SUFFIX) or doc["id"] not in values:
            continue
        x = list(values[doc["id"]].values())
        summary = stats.summarize(values[doc["id"]])
        key = (machine, input_sha, metric, doc["id"])
        yield key, Series(doc["id"], doc["flags"], machine), Point(
            run["run_id"], run["started"], x, summary.median, summary.ci95, versions)


def _detect(all_series: list[Series], threshold_pct: float) -> None:
    """Walk the sweeps in time order; per sweep, compare each series' new point with its
    segment, adjust across the series of that sweep, then keep the steps the spread allows."""
    segment_start = {id(s): 0 for s in all_series}
    run_ids = sorted({(p.started, p.run_id) for s in all_series for p in s.points})
    for _, run_id in run_ids:
        tests = {}
        for s in all_series:
            i = next((k for k, p in enumerate(s.points) if p.run_id == run_id), None)
            if i is None or i == 0 or i <= segment_start[id(s)]:
                continue
            segment = s.points[segment_start[id(s)]:i][-WINDOW:]
            pooled = [x for p in segment for x in p.values]
            tests[id(s)] = (s, i, segment, stats.compare_unpaired(s.points[i].values, pooled))
        stats.adjust([c for *_, c in tests.values()], threshold=threshold_pct / 100)
        for s, i, segment, c in tests.values():
            verdict, why = _judge(c, s.points[i], segment, s.points[:i])
            if i == len(s.points) - 1:
                j = c.to_json()  # strict JSON: an interval that does not exist is null
                s.latest = {"run_id": run_id, "verdict": verdict, "ratio": j["ratio"],
                            "ci95": j["ci95"], "why": why, "against": [p.run_id for p in segment]}
            if verdict in ("faster", "slower"):
                s.steps.append(Step(run_id, verdict, c.ratio, c.ci95, why,
                                    _changed(segment[-1].versions, s.points[i].versions)))
                segment_start[id(s)] = i


def _judge(c: stats.Comparison, point: Point, segment: list[Point],
           earlier: list[Point]) -> tuple[str, str]:
    """The comparison's verdict, unless the history's own sweep-to-sweep spread explains it."""
    if c.verdict not in ("faster", "slower") or len(earlier) < MIN_SPREAD_RUNS:
        return c.verdict, c.why
    diffs = np.diff(np.log([p.median for p in earlier]))
    sd = 1.4826 * float(np.median(np.abs(diffs - np.median(diffs)))) / math.sqrt(2)
    if sd == 0:
        return c.verdict, c.why
    level = float(np.median(np.log([p.median for p in segment])))
    z = (math.log(point.median) - level) / sd
    if abs(z) <= SPREAD_Z:
        return "inconclusive", (f"{c.why}; but within the history's own sweep-to-sweep spread "
                                f"(z = {z:+.1f} robust SDs, needs beyond +-{SPREAD_Z})")
    return c.verdict, f"{c.why}; beyond the history's sweep-to-sweep spread (z = {z:+.1f})"


def _changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return [f"{k} {before.get(k, '?')} -> {after.get(k, '?')}"
            for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
