"""A sweep's plan: the rounds its options ask for, the values its stopping rule watches, and
--metric auto's choice, made from the warmup round before any counted run."""

from __future__ import annotations

import time
from typing import Callable

from flagsweep.measure import metric, rounds
from flagsweep.measure.options import MeasureOptions
from flagsweep.measure.sample import Sample

# --metric's names, auto included, and the sample column each one reads (auto: chosen later).
METRICS = {**metric.COLUMNS, "auto": "auto"}


def plan_for(o: MeasureOptions, measured: list[str], baseline: str, arms: tuple[str, ...],
             once: bool = False, layouts: dict[str, str] | None = None,
             drop: bool = False) -> rounds.Plan:
    """The rounds a sweep's options ask for, here or on a fleet; `arms`: the suffixes that make
    the baseline's control arms' ids, the A/A twin's first (jobs.controls.SUFFIXES). `once`: a
    deterministic count (Cachegrind) needs one round and no warmup, unless --runs says
    otherwise. With layouts (binary id -> variant), every layout of every variant runs in every
    round: each round is a balanced block, so the round's drift still cancels and each layout's
    level has as many runs as any other's.

    `drop`: a variant stops once its verdict is final (rounds.stops). Not with --runs (a fixed
    design is asked for), nor over layouts (rounds do not narrow the layouts' spread, which
    rounds.decided already weighs), nor on a fleet (a worker runs whole rounds it was given).
    The baseline, its twin and a reference arm always run: every round is paired with them."""
    layouts = layouts or {}
    base = layouts.get(baseline, baseline)
    return rounds.Plan(measured, o.seed, warmup=0 if once else o.warmup,
                       min_runs=o.runs or (1 if once else o.min_runs),
                       max_runs=o.runs or (1 if once else o.max_runs),
                       budget_s=rounds_budget(o), precision=o.precision_pct / 100,
                       metric=METRICS[o.metric], baseline=base,
                       threshold_pct=o.threshold_pct, layouts=layouts,
                       drop=drop and not (o.runs or once or layouts),
                       keep=frozenset({base, *(base + suffix for suffix in arms), *o.keep}),
                       twin=base + arms[0] if arms else None)


def rounds_budget(o: MeasureOptions, now: Callable[[], float] = time.time) -> float | None:
    """The seconds the counted rounds may take, from now (their start, after the builds):
    --budget, cut to what is left until `o.until`. Past it, none: the first round still runs
    (rounds.starts_in_budget), so a sweep always times something."""
    if o.until is None:
        return o.budget
    left = max(0.0, o.until - now())
    return left if o.budget is None else min(o.budget, left)


def round_values(samples: list[Sample], column: str) -> rounds.Values:
    """The stopping rule's values: what the analysis will compare, variant -> {round: value}."""
    return metric.values_by_round(samples, lambda s: metric.metric_of(s, column))


def choose_metric(plan: rounds.Plan, done: set[tuple[str, int]],
                  take: Callable[[str, int, int, int], Sample],
                  samples: Callable[[], list[Sample]],
                  tick: Callable[[str, int, int], None] | None) -> metric.MetricChoice:
    """--metric auto: the warmup round (one is taken even with --warmup 0) shows whether the
    workload is single-threaded and CPU-bound. Every warmup round is taken here, so the plan
    goes on with none."""
    first = rounds.Plan(plan.variant_ids, plan.seed, warmup=max(1, plan.warmup), max_runs=0,
                        baseline=plan.baseline)
    rounds.rounds(first, done, take, lambda: {}, tick)
    plan.warmup = 0
    # The last warmup round: caches and page cache are as warm as they will be in the sweep.
    return metric.choose([s for s in samples() if s.round == -1])
