"""History: every complete sweep of a target in the store, as one series per variant and
machine, with the steps in it and whether the latest sweep regressed.

A series is keyed by what must be equal for two sweeps' numbers to compare: the target, the
CPU's identity (model, family and its feature flags), the input's sha256, the variant id
(compiler and flags) and the reference binary the values are divided by, if any. What may
change between nightly sweeps, and is what a nightly job watches, is recorded on each point
instead: the target's version, the compilers' versions and the environment (kernel, microcode,
distribution, CI runner image: across.cause). A step then names what changed with it
("gcc 12.2.0 -> 13.1.0", "environment: kernel 6.8.0-1017 -> 6.8.0-1020; the reference arm
moved +4.1% too: the environment's").

The microcode is the environment's, not the identity's. It was the identity's, so an update
(which a distribution ships like any package) started a new series, and a step it caused could
never be named: the nights before it were in another series. The CPU is the same chip after an
update, and a nightly series should survive it and say so. Older stores keep reading right: a
series key is computed from each run's machine block as it is read, never stored, so their
series simply join across microcode updates; and a series is still split by the reference
binary, so nights measured against different references (an older flagsweep kept a new one
after each update) never merge. The kept references an older flagsweep stored under the old
key are still found (jobs.controls), and comparable keeps the microcode in the identity `suite`
checks (machine_key(microcode=True)). The metric is the series' own, the one its first sweep
measured: a later sweep whose `--metric auto` chose the other time is read in the series'
metric from its samples (every sample has wall, user and sys time), so a regression that comes
with a metric flip is still compared with the nights before it.

A night is judged only when it was measured well and its numbers are the series' quantity: a
sweep whose A/A arm failed (the machine moved two identical binaries apart: results.json's
`aa.unstable`) or whose samples lack the series' metric is kept as an unjudged point, neither a
pass nor a regression, and out of the segment later nights are compared with. Only complete
sweeps are read (a sweep stopped because the machine was busy is `busy`), unless asked.

Without a reference arm (jobs.controls.kept_reference) a night's level is the program's and the
machine's together: on a machine that drifts 2-3% from night to night, the more so when the
drift wanders (a random walk: the nights are then not independent, and the t test below
assumes they are), no test on the nights alone can tell the two apart. Such a series is checked
as before, and `unchecked` says that it cannot be trusted either way.

Steps are found sequentially. The sweeps since the last step form a segment; each new
sweep's samples are compared with the pooled samples of the segment's last WINDOW sweeps by
stats.compare_unpaired (Hodges-Lehmann ratio, Mann-Whitney interval), Benjamini-Hochberg across
the variants of that sweep, and the faster/slower/equivalent/inconclusive rule of stats.adjust
with the threshold. Samples pooled across sweeps understate the sweep-to-sweep spread (another
day, another machine state), so a step must also stand out from the spread of the sweeps
themselves, with the sweep (its log median) as the unit of replication:

- Once the segment has MIN_SPREAD_RUNS earlier sweeps, the last r = 1..PERSIST sweeps are
  tested against the segment's earlier ones (at most REFERENCE of them) by Student's pooled
  two-sample t test on log medians, each split at NIGHT_ALPHA / PERSIST (Bonferroni), so a
  series fails a night by chance with probability at most NIGHT_ALPHA. The mean shift must
  also pass the threshold. r = 1 is the new sweep alone (and its samples must agree); r > 1
  finds a step that stayed, every sweep since on the same side, and places it on its first
  sweep: one night of a 5% step on a machine that drifts 2-3% a day is within the spread, a
  few nights of it are not. Of several splits the largest |t| wins, the likeliest place of a
  single step (the likelihood-ratio change point of a normal mean; Hawkins, Testing a
  sequence of observations for a shift in location, JASA 72(357), 1977). A spread of zero
  (an exact count) is no reason to skip the test: any shift then stands out.
- Before that the spread is too uncertain for a test at that level, and a step must lie
  beyond the threshold and beyond SPREAD_Z standard deviations of the earlier sweeps' levels
  about their mean (the cut-off of the modified z-score, Iglewicz & Hoaglin, How to Detect
  and Handle Outliers, ASQC 1993). Nothing is skipped on a zero spread here either; on these
  first nights the threshold has to be above the machine's day-to-day drift. With a single
  earlier sweep there is no spread to measure, and no step is called, unless the series is an
  instruction count (COUNTED): a count has no night-to-night drift to estimate, so its second
  night is judged by the samples and the threshold alone.

A faster or slower step starts a new segment at the sweep it is placed on; a slower step found
with the newest sweep is a regression `flagsweep history --check` fails on, even when it is
placed a night or two earlier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from flagsweep import files, stats
from flagsweep.across import cause
from flagsweep.measure import metric as metric_mod
from flagsweep.results import analysis
from flagsweep.model import (
    AA_SUFFIX, REF_SUFFIX, Comparison, HistoryLatest, HistoryPoint, HistorySeries,
    HistoryStep, HistoryUnjudged, Machine, RunRecord, TUNE_STEPS, Variant, is_control)
from flagsweep.results.store import Store

WINDOW = 5
MIN_SPREAD_RUNS = 8
SPREAD_Z = 3.5
PERSIST = 3
NIGHT_ALPHA = 0.002
REFERENCE = 30
# Quantities that move from one sweep to the next only with the code (or the libraries it
# runs, which history names as environment changes): a count of executed instructions.
COUNTED = {"instructions"}


@dataclass
class Point:
    run_id: str
    started: float
    values: list[float]
    median: float
    ci95: tuple[float, float] | None
    versions: dict[str, str]                 # "target" and each compiler name -> version
    unjudged: str = ""                       # why this night is neither a pass nor a step
    environment: dict[str, str | None] = field(default_factory=dict)   # cause.environment
    reference_level: float | None = None     # the reference arm's raw median that night


@dataclass
class Step:
    run_id: str
    verdict: str                             # faster | slower
    ratio: float
    ci95: tuple[float, float]
    why: str
    changed: list[str]                       # versions that changed with it
    found_in: str = ""                       # the sweep whose check found it (run_id or later)


@dataclass
class VariantSeries:
    """One variant's sweeps on one machine and input, in start order, with the steps found."""
    variant: str
    flags: list[str]
    machine: str
    points: list[Point] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    latest: HistoryLatest | None = None      # the latest sweep against its segment
    reference: str | None = None             # the reference binary's sha256: values are ratios to it
    metric: str = ""                         # the series' quantity: its first sweep's metric
    unjudged: list[Point] = field(default_factory=list)   # nights measured but not judged
    compiler: str = ""                       # the variant's compiler (its id names it too)

    def document(self) -> HistorySeries:
        """The series as results.json's `history` and `history --json` carry it."""
        return HistorySeries(
            variant=self.variant, flags=self.flags, machine=self.machine,
            reference=self.reference, metric=self.metric,
            points=[HistoryPoint(run_id=p.run_id, started=p.started, median=p.median,
                                 ci95=list(p.ci95) if p.ci95 else None, n=len(p.values),
                                 versions=p.versions, environment=p.environment or None)
                    for p in self.points],
            unjudged=[HistoryUnjudged(run_id=p.run_id, started=p.started, why=p.unjudged)
                      for p in self.unjudged],
            steps=[HistoryStep(run_id=s.run_id, verdict=s.verdict, ratio=s.ratio,
                               ci95=list(s.ci95), why=s.why, changed=s.changed,
                               found_in=s.found_in)
                   for s in self.steps],
            latest=self.latest)


def given(model, name: str):
    """The key's value as the document gave it (a null stays None), "?" when it has no such
    key: what a name or a key made of several keys shows, unchanged since they were dicts."""
    if name in model.model_fields_set or name in (model.model_extra or {}):
        return getattr(model, name)
    return "?"


def machine_key(machine: Machine | dict, microcode: bool = False) -> str:
    """The CPU identity two sweeps must share to be one series (a machine block of results.json,
    or the store's copy of one). `microcode`: with it, as flagsweep keyed series and kept
    references before the microcode became the environment's (module docstring), and as
    `suite` still checks one machine."""
    m = Machine.model_validate(machine)
    flags = files.sha256_bytes(" ".join(sorted(m.cpu_flags or [])).encode())
    update = f", microcode {given(m, 'microcode')}" if microcode else ""
    return (f"{given(m, 'cpu_model')} (family {given(m, 'family')} model "
            f"{given(m, 'model')}{update}, flags {flags[:8]})")


@dataclass
class StoredSweep:
    """One sweep as the store keeps it (its run row), the things the history reads from it."""
    run_id: str
    started: float
    status: str
    target: str
    machine: Machine
    metric: str                  # the --metric option
    threshold_pct: float
    seed: int
    layouts: bool
    baseline: str | None
    input_sha256: str | None
    versions: dict[str, str]     # "target" and each compiler name -> version

    @classmethod
    def of(cls, run: RunRecord) -> StoredSweep:
        """The store's row, read here once."""
        o, m = run.options, run.options.measure
        return cls(run.run_id, run.started, run.status, run.target, run.machine or Machine(),
                   m["metric"], m.get("threshold_pct", stats.THRESHOLD_PCT), m.get("seed") or 0,
                   bool(m.get("layouts")), o.baseline,
                   o.workload.input_sha256 if o.workload else None,
                   {"target": o.target_version or "?",
                    **{c.name: given(c, "version") for c in o.compilers}})


# The statuses `collect` reads: complete sweeps, and with `partial` also those stopped early
# because the machine was busy (timing.timed), whose few rounds are a night measured badly.
PARTIAL = ("busy",)


def collect(store: Store, target: str, until: str | None = None,
            threshold_pct: float | None = None, finishing: str | None = None,
            partial: bool = False) -> list[VariantSeries]:
    """Every series of `target`, from its complete sweeps (and busy ones, with `partial`) in
    start order (up to and including run `until` when given), with steps detected.
    `finishing`: a run whose results are being written before it is marked complete, counted
    as complete."""
    statuses = ("complete", *PARTIAL) if partial else ("complete",)
    runs = [StoredSweep.of(r) for r in store.runs_of(target) if r.recipe not in TUNE_STEPS]
    runs = [r for r in runs if r.status in statuses or r.run_id == finishing]
    ids = [r.run_id for r in runs]
    if until in ids:
        runs = runs[:ids.index(until) + 1]
    by_key: dict[tuple, VariantSeries] = {}
    thresholds = []
    kept = store.references_of(target)
    for run in runs:
        thresholds.append(run.threshold_pct)
        for key, series, point in _points(store, run, by_key, kept.get(run.run_id)):
            s = by_key.setdefault(key, series)
            (s.unjudged if point.unjudged else s.points).append(point)
    thr = threshold_pct if threshold_pct is not None else (thresholds[-1] if thresholds else stats.THRESHOLD_PCT)
    all_series = [s for s in by_key.values() if s.points or s.unjudged]
    _detect(all_series, thr)
    for s in all_series:
        _unjudged_latest(s)
    return all_series


def regressions(all_series: list[VariantSeries], latest_run: str | None = None) -> list[VariantSeries]:
    """Series in which the latest sweep (the newest overall unless named) found a slower step."""
    latest_run = latest_run or newest(all_series)
    return [s for s in all_series if s.steps and s.steps[-1].found_in == latest_run
            and s.steps[-1].verdict == "slower" and s.points[-1].run_id == latest_run]


NO_REFERENCE = ("no reference arm: the night's level is the program's and the machine's "
                "together, and on a machine that drifts from night to night (the more so when "
                "the drift wanders) the sweeps alone cannot tell the two apart; measure a kept "
                "reference beside each build (the default of flagsweep run from its second "
                "sweep on, or --reference)")


def unchecked(all_series: list[VariantSeries], latest_run: str | None = None
              ) -> list[tuple[VariantSeries, str]]:
    """(series, why) for each series the latest sweep (the newest overall unless named) is in
    but cannot be checked by: that night is unjudged (its A/A arm failed, its samples lack the
    series' metric), or the series has earlier nights but no reference arm. Neither a pass nor
    a regression: `history --check` says so."""
    latest_run = latest_run or newest(all_series)
    out = []
    for s in all_series:
        night = next((p for p in s.unjudged if p.run_id == latest_run), None)
        if night is not None:
            out.append((s, night.unjudged))
        elif s.reference is None and len(s.points) >= 2 and s.points[-1].run_id == latest_run:
            out.append((s, NO_REFERENCE))
    return out


def judged(series: HistorySeries, run_id: str) -> tuple[str, str]:
    """What `--check` says of one series at run `run_id`, read from its document (results.json's
    `history`, or VariantSeries.document()), so that a run's junit.xml and `history --junit`
    say what the exit code says: (outcome, why), the outcome one of "regression" (a slower
    step found by this sweep, with a reference arm: exit 1), "unconfirmed" (the same without
    one), "unchecked" (its night unjudged, or no reference arm: exit 3), "absent" (the series
    has no point at that run) or "ok"."""
    night = next((p for p in series.unjudged or [] if p.run_id == run_id), None)
    if night is not None:
        return "unchecked", night.why
    if not series.points or series.points[-1].run_id != run_id:
        last = series.points[-1].run_id if series.points else None
        return "absent", (f"not measured in {run_id}" + (f"; last in {last}" if last else ""))
    step = series.steps[-1] if series.steps else None
    if step is not None and step.found_in == run_id and step.verdict == "slower":
        if series.reference:
            return "regression", f"regression: {step_text(step)}"
        return "unconfirmed", f"slower, unconfirmed (no reference arm): {step_text(step)}"
    if series.reference is None and len(series.points) >= 2:
        return "unchecked", NO_REFERENCE
    latest = series.latest
    if len(series.points) < 2:
        return "ok", "the series' first sweep: nothing to compare it with yet"
    if latest is None:
        return "ok", "the first sweep after a step: nothing to compare it with yet"
    return "ok", (f"{latest.verdict} against {len(latest.against)} earlier sweep(s)"
                  + (f": {stats.change_text(latest.ratio, latest.ci95)}" if latest.ratio else ""))


def step_text(step: HistoryStep) -> str:
    """A step as `--check` (and the dashboard) prints it: "+X% [lo, hi] in RUN (what changed): why"."""
    ci = tuple(step.ci95) if step.ci95 else None
    change = stats.change_text(step.ratio, ci) if step.ratio is not None else "slower"
    changed = f" ({', '.join(step.changed)})" if step.changed else ""
    return f"{change} in {step.run_id}{changed}: {step.why or '?'}"


def newest(all_series: list[VariantSeries]) -> str | None:
    """The run id of the newest sweep any series has a night of, judged or not."""
    points = [p for s in all_series for p in (*s.points, *s.unjudged)]
    return max(points, key=lambda p: p.started).run_id if points else None


def _unjudged_latest(s: VariantSeries) -> None:
    """An unjudged night newer than every judged one is the series' latest: neither a pass nor
    a step, and said so."""
    night = max(s.unjudged, key=lambda p: p.started, default=None)
    if night is not None and (not s.points or night.started > s.points[-1].started):
        s.latest = HistoryLatest(run_id=night.run_id, verdict="unjudged", ratio=None, ci95=None,
                                 why=night.unjudged, against=[])


def _points(store: Store, run: StoredSweep, known: dict[tuple, VariantSeries],
            kept_sha: str | None = None):
    """(series key, empty series, point) for each measured variant of one sweep; `known`: the
    series so far (a night is read in its series' metric); `kept_sha`: the sha256 of the
    reference kept from this sweep's baseline, if one was."""
    metric = metric_mod.column(run.metric)
    machine = machine_key(run.machine)
    samples = store.samples(run.run_id)
    by_metric: dict[str, tuple] = {}
    docs = store.variants(run.run_id)
    raw = analysis.values_by_round(samples, lambda s: metric_mod.metric_of(s, metric))
    shaky = _unstable(raw, run, docs)
    _, reference = _against_reference(docs, raw, kept_sha)
    environment = cause.environment(run.machine)
    for doc in docs:
        if is_control(doc.id):
            continue
        key = (machine, run.input_sha256, doc.id, reference)
        series = known.get(key) or VariantSeries(doc.id, doc.flags, machine,
                                                 reference=reference, metric=metric,
                                                 compiler=doc.compiler)
        if series.metric not in by_metric:
            own = analysis.values_by_round(
                samples, lambda s, m=series.metric: metric_mod.metric_of(s, m))
            by_metric[series.metric] = (_against_reference(docs, own, kept_sha)[0],
                                        _reference_level(docs, own, kept_sha))
        values, level = by_metric[series.metric]
        why = shaky
        if doc.id not in values:
            if doc.id not in raw:
                continue                    # not measured that night (a failed build)
            why = why or (f"this sweep measured {metric}, and its samples carry no "
                          f"{series.metric}, the series' metric: nothing to compare")
        x = list((values.get(doc.id) or {}).values())
        summary = stats.summarize(values.get(doc.id) or {})
        yield key, series, Point(run.run_id, run.started, x, summary.median,
                                 summary.ci95, run.versions, unjudged=why,
                                 environment=environment, reference_level=level)


def _unstable(values: dict[str, dict[int, float]], run: StoredSweep, docs: list[Variant]) -> str:
    """Why the sweep's A/A gate failed (stats.gate.aa_gate: its twin, a copy of the baseline,
    came out faster or slower after Benjamini-Hochberg across the sweep's comparisons, as
    results.json's `aa.unstable` says), else "". Such a night measured the machine moving, so
    it judges nothing."""
    baseline = run.baseline
    twin = f"{baseline}{AA_SUFFIX}"
    if run.layouts or twin not in values or baseline not in values:
        return ""
    measured = [d.id for d in docs if d.id != baseline and d.id in values
                and not d.build.identical_to]
    comparisons = {vid: stats.compare(values[vid], values[baseline], seed=run.seed)
                   for vid in measured}
    stats.adjust(list(comparisons.values()), threshold_pct=run.threshold_pct)
    aa = comparisons[twin]
    if aa.verdict not in ("faster", "slower"):
        return ""
    return (f"the sweep's A/A arm ({baseline}'s own binary again) came out {aa.verdict} by "
            f"{abs(aa.ratio - 1) * 100:.1f}%: the machine was unstable that night, so it is "
            "neither a pass nor a regression")


def _reference_arm(docs: list[Variant], kept_sha: str | None) -> tuple[str, str] | None:
    """(the reference arm's variant id, its binary's sha256), None without one. `kept_sha`:
    this sweep's own baseline binary was kept as the reference (jobs.controls.keep_reference);
    its A/A twin, a copy of that binary, is then the reference arm of the series' first night."""
    ref = next(((d.id, d.build.reference_sha256) for d in docs if d.id.endswith(REF_SUFFIX)
                and d.build.reference_sha256), None)
    if ref is None and kept_sha:
        twin = next((d for d in docs if d.aa_of), None)
        ref = twin and (twin.id, kept_sha)
    return ref


def _against_reference(docs: list[Variant], values: dict[str, dict[int, float]],
                       kept_sha: str | None = None
                       ) -> tuple[dict[str, dict[int, float]], str | None]:
    """With a reference arm (run --reference, or the kept reference a sweep measures by
    default), each value divided by the reference's in the same round, and the reference
    binary's sha256 (only sweeps with the same reference make one series); else the values as
    they are and None. The reference runs the same code every night in the same shuffled
    rounds, so the machine's level that night cancels in the ratio and what is left is the
    program's own change against a fixed yardstick."""
    ref = _reference_arm(docs, kept_sha)
    if ref is None or ref[0] not in values:
        return values, None
    by_round = values[ref[0]]
    ratios = {vid: {r: x / by_round[r] for r, x in v.items() if r in by_round}
              for vid, v in values.items()}
    return {vid: v for vid, v in ratios.items() if v}, ref[1]


def _reference_level(docs: list[Variant], values: dict[str, dict[int, float]],
                     kept_sha: str | None) -> float | None:
    """The reference arm's own raw median that night, the machine's level the ratios cancel:
    what says whether the machine moved with a step (across.cause); None without one."""
    ref = _reference_arm(docs, kept_sha)
    own = values.get(ref[0]) if ref else None
    return float(np.median(list(own.values()))) if own else None


def _detect(all_series: list[VariantSeries], threshold_pct: float) -> None:
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
        stats.adjust([c for *_, c in tests.values()], threshold_pct=threshold_pct)
        for s, i, segment, c in tests.values():
            verdict, why, at, ratio, ci = _judge(c, s.points[segment_start[id(s)]:i + 1],
                                                 threshold_pct, s.metric in COUNTED)
            at += segment_start[id(s)]
            if i == len(s.points) - 1:
                # strict JSON: an interval that does not exist is null
                j = Comparison.model_validate(c.to_json())
                s.latest = HistoryLatest(run_id=run_id, verdict=verdict, ratio=j.ratio,
                                         ci95=j.ci95, why=why,
                                         against=[p.run_id for p in segment])
            if verdict in ("faster", "slower"):
                s.steps.append(Step(s.points[at].run_id, verdict, ratio, ci, why,
                                    _changed(s, segment_start[id(s)], at, threshold_pct),
                                    found_in=run_id))
                segment_start[id(s)] = at


def _judge(c: stats.RatioEstimate, points: list[Point], threshold_pct: float,
           counted: bool = False):
    """(verdict, why, index of the step's first sweep in `points`, ratio, ci95) for the last of
    `points`, the segment so far: the samples' verdict unless the sweeps' own spread explains
    it, or a step that stayed (module docstring). `counted`: the series is an instruction
    count (COUNTED)."""
    levels = np.log([p.median for p in points])
    last = len(points) - 1
    margin = math.log1p(stats.fraction(threshold_pct))
    sample_step = c.verdict in ("faster", "slower")
    if last < MIN_SPREAD_RUNS:
        if not sample_step:
            return c.verdict, c.why, last, c.ratio, c.ci95
        before = levels[:-1]
        sd = float(np.std(before, ddof=1)) if len(before) >= 2 else 0.0 if counted else math.inf
        shift = levels[-1] - float(np.mean(before))
        if abs(shift) > max(margin, SPREAD_Z * sd):
            spread = (f"beyond {SPREAD_Z} SDs of the {len(before)} earlier sweeps (SD "
                      f"{100 * sd:.2f}%)" if len(before) >= 2 else
                      "an instruction count, which moves between sweeps only with the code: "
                      "after a single earlier sweep the threshold decides")
            return c.verdict, f"{c.why}; {spread}", last, c.ratio, c.ci95
        return "inconclusive", (f"{c.why}; but within the history's own sweep-to-sweep spread "
                                f"({len(before)} earlier sweeps, SD {100 * sd:.2f}%: a step "
                                f"needs beyond {SPREAD_Z} SDs)"), last, c.ratio, c.ci95
    best = None
    for r in range(1, PERSIST + 1):
        before, after = levels[:-r][-REFERENCE:], levels[-r:]
        shift, t, p, ci = stats.mean_shift(before, after)
        same_side = np.all(np.sign(after - np.mean(before)) == np.sign(shift))
        agrees = (sample_step and (c.ratio > 1) == (shift > 0)) if r == 1 else same_side
        if p < NIGHT_ALPHA / PERSIST and abs(shift) > margin and agrees \
                and (best is None or abs(t) > abs(best[1])):
            best = (r, t, shift, ci)
    if best is None:
        if not sample_step:
            return c.verdict, c.why, last, c.ratio, c.ci95
        return "inconclusive", (f"{c.why}; but within the history's own sweep-to-sweep spread "
                                f"(t test of this sweep against the segment's earlier ones not "
                                f"below {NIGHT_ALPHA / PERSIST:.2g})"), last, c.ratio, c.ci95
    r, t, shift, ci = best
    verdict = "slower" if shift > 0 else "faster"
    nights = "this sweep" if r == 1 else f"the last {r} sweeps"
    why = (f"{abs(math.expm1(shift)) * 100:.1f}% {verdict} over {nights} than the "
           f"{min(last + 1 - r, REFERENCE)} before (95% CI {_pct(ci)}), beyond the "
           f"{threshold_pct:g}% threshold and the sweep-to-sweep spread (t = {t:+.1f})")
    return verdict, why, last + 1 - r, math.exp(shift), ci


def _pct(ci: tuple[float, float]) -> str:
    return stats.ci_text(ci)


def _changed(s: VariantSeries, start: int, at: int, threshold_pct: float) -> list[str]:
    """What changed with a step placed on point `at` of a segment starting at `start`: the
    versions ("gcc 12.2.0 -> 13.1.0"), then the environment, with what the reference arm says
    of it (across.cause)."""
    before, after = s.points[at - 1], s.points[at]
    a, b = before.versions, after.versions
    out = [f"{k} {a.get(k, '?')} -> {b.get(k, '?')}"
           for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    moved = cause.changes(before.environment, after.environment)
    if moved:
        levels = [p.reference_level for p in s.points[start:at][-WINDOW:]]
        word = cause.reference_word(levels, after.reference_level, threshold_pct,
                                          SPREAD_Z, s.reference is not None)
        out.append(cause.text(moved, word))
    return out


def of_run(store: Store, run_id: str, finishing: bool = False) -> list[dict]:
    """This run's variants in the earlier complete sweeps of the same target, machine, input
    and metric, for the report's history plot; [] when there are none. `finishing`: the run is
    complete, its results are written before the store says so."""
    run = StoredSweep.of(store.run(run_id))
    if run.status != "complete" and not finishing:
        return []
    mine = machine_key(run.machine)
    return [s.document().dump() for s in collect(store, run.target, until=run_id,
                                         finishing=run_id if finishing else None)
            if s.machine == mine and len(s.points) >= 2 and s.points[-1].run_id == run_id]
