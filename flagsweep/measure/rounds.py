"""Rounds: each round runs every binary still measured once, in a freshly shuffled order.

(docs/statistics.md, "Pairing by round".) In a duet round (Plan.duet) each variant instead runs
at the same time as a run of the baseline of its own, each on one of the two CPUs, sides
alternating over rounds (`duet`; measure.pairs makes the pairs the values). The order comes from a seeded generator per round, so a resumed
sweep recomputes exactly the order it was following. After each round two rules look at the
rounds so far, with the analysis's own functions: a variant whose verdict no later round can
change stops (stats.sequential; the baseline and the controls never do), and the sweep stops
(`decided`) once every comparison is decided or known to within the precision and not
projected to decide within the rounds left, never before the rounds at which a verdict can
exist at all for this sweep's number of comparisons. Both are
functions of the rounds so far alone, so a resumed sweep replays them to the same stops.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Callable

from flagsweep import stats
from flagsweep.host.launcher import ENV_PAD_MAX
from flagsweep.measure.sample import Sample
from flagsweep.stats import gate, layout, sequential


@dataclass
class Plan:
    variant_ids: list[str]
    seed: int
    warmup: int = 1
    min_runs: int = 5
    max_runs: int = 30
    budget_s: float | None = None
    precision: float = 0.01          # a comparison whose paired 95% CI half-width is within
                                     # this (relative) counts as settled; the CLI ties it to
                                     # --threshold
    metric: str = "wall_s"
    baseline: str | None = None      # what every other binary is compared with
    threshold_pct: float = stats.THRESHOLD_PCT    # the verdicts' practical threshold (percent)
    # run --layouts: binary id -> the variant it is a layout of; comparisons are then made
    # over each variant's layouts (stats.layout) and `baseline` names a variant
    layouts: dict[str, str] = field(default_factory=dict)
    # stop measuring a variant once its verdict is final (stats.sequential); never the binaries
    # in `keep` (the baseline and the controls: the twin, a reference)
    drop: bool = False
    keep: frozenset[str] = frozenset()
    # the A/A twin: its comparison gates the others (stats.gate) here as in the analysis, so
    # the stop line counts the verdicts the table will show
    twin: str | None = None
    # duet rounds on these two CPUs: each variant paired with the baseline, run at once
    duet: tuple[int, int] | None = None


@dataclass(frozen=True)
class Stop:
    """A variant that stopped early: after `rounds` counted rounds, at a final verdict."""
    rounds: int
    verdict: str
    why: str


@dataclass
class Outcome:
    rounds: int
    stop_reason: str
    half_widths: dict[str, float] = field(default_factory=dict)   # per comparison, relative
    stopped: dict[str, Stop] = field(default_factory=dict)


def order(plan: Plan, round_no: int) -> list[str]:
    """The shuffled order of one round: a function of the seed and the round alone. In duet
    rounds, the order of the variants' duets (the baseline runs in each)."""
    ids = sorted(plan.variant_ids)
    random.Random(f"{plan.seed}:{round_no}").shuffle(ids)
    return [vid for vid in ids if vid != plan.baseline] if plan.duet else ids


def env_pad(plan: Plan, variant_id: str, round_no: int) -> int:
    return random.Random(f"{plan.seed}:pad:{variant_id}:{round_no}").randint(0, ENV_PAD_MAX)


@dataclass(frozen=True)
class Duet:
    """One duet: the variant and a run of the baseline (`hub`), started together, each pinned
    to its CPU with its own environment padding."""
    variant: str
    hub: str
    cpus: tuple[int, int]        # the variant's CPU, the baseline's
    pads: tuple[int, int]


def duet(plan: Plan, variant: str, round_no: int, cpus: tuple[int, int] | None = None) -> Duet:
    """A variant's duet in a round, a function of the seed, the variant and the round alone
    (a resumed sweep replays it). Its sides alternate from round to round after a seeded first
    one, so over any two rounds each CPU holds each side once: a CPU faster than the other
    (another core's clock, an SMT sibling's load) moves half the pairs one way and half the
    other, and cancels in the estimate. `cpus`: the two CPUs (the plan's by default)."""
    a, b = cpus or plan.duet
    first = random.Random(f"{plan.seed}:side:{variant}").randrange(2)
    sides = (a, b) if (round_no + first) % 2 == 0 else (b, a)
    return Duet(variant, plan.baseline, sides, (env_pad(plan, variant, round_no),
                                                env_pad(plan, f"{plan.baseline}@{variant}",
                                                        round_no)))


Values = dict[str, dict[int, float]]     # variant -> {round: value}, as analysis.values_by_round
DECISION_MARGIN = 2                      # rounds beyond the fewest at which a verdict can exist


class Stopping:
    """The one stopping rule of a sweep, as a loop asks it: a local sweep after each round, a
    fleet after each round a worker returns (several may be in flight). It counts the completed
    rounds and times them; `may_start` is the budget's one meaning, `after` the rule, `final`
    the outcome when the loop ends otherwise."""

    def __init__(self, plan: Plan, clock: Callable[[], float] | None = None):
        self.plan, self.clock = plan, clock or time.monotonic
        self.started, self.round_s, self.completed = self.clock(), None, 0
        self.outcome: Outcome | None = None
        self.stopped: dict[str, Stop] = {}
        self.new_stops: dict[str, Stop] = {}        # those of the last round

    def active(self, ids: list[str]) -> list[str]:
        """The binaries of a round that are still measured."""
        return [vid for vid in ids if vid not in self.stopped]

    def may_start(self) -> bool:
        """Whether another counted round may start now: not once the rule has stopped, and only
        if it ends within the budget at the last round's pace (max runs is the loop's own)."""
        return (self.outcome is None
                and starts_in_budget(self.plan, self.clock() - self.started, self.round_s))

    def after(self, values: Values, round_s: float) -> Outcome | None:
        """A counted round completed in `round_s` seconds: the rule's outcome, or None to go on."""
        self.completed += 1
        self.round_s = round_s
        self.new_stops = {}
        if self.outcome is None:
            new = stops(self.plan, values, self.completed, self.stopped)
            self.outcome = decided(self.plan, values, self.completed, {**self.stopped, **new},
                                   rounds_left=self.rounds_left())
            if self.outcome is None:         # a stop in the sweep's last round saves nothing
                self.new_stops = new
                self.stopped.update(new)
        return self.outcome

    def rounds_left(self) -> int:
        """The counted rounds that may still start: those max runs leaves, and no more than fit
        in what is left of the budget at the last round's pace."""
        left = self.plan.max_runs - self.completed
        if self.plan.budget_s is not None and self.round_s:
            spare = self.plan.budget_s - (self.clock() - self.started)
            left = min(left, max(0, math.floor(spare / self.round_s)))
        return left

    def said(self, values: Values) -> str:
        """The line after a round: the variants that stopped in it, then why the sweep stopped
        or where the rule stands."""
        rule = (self.outcome.stop_reason if self.outcome
                else standing(self.plan, values, self.completed, self.stopped))
        return "".join(f"{vid} stops ({s.verdict}); " for vid, s in self.new_stops.items()) + rule

    def final(self, values: Values) -> Outcome:
        """The outcome when the loop ended: the rule's, else the budget's, else max runs'."""
        if self.outcome is None:
            self.outcome = (max_runs_outcome(self.plan, values, self.stopped)
                            if self.completed >= self.plan.max_runs
                            else budget_outcome(self.plan, values, self.completed, self.stopped))
        return self.outcome


def rounds(plan: Plan, done: set[tuple[str, int]], measure: Callable[[str, int, int, int], Sample],
           values: Callable[[], Values],
           progress: Callable[[str, int, int], None] | None = None,
           round_done: Callable[[int, int, str], None] | None = None,
           stopped: Callable[[str, Stop], None] | None = None) -> Outcome:
    """Warmup rounds (negative numbers), then counted rounds until the stopping rule says stop.

    `measure(variant, round, position, pad)` takes and stores one sample; `values()` returns the
    primary metric's good values per variant and round so far; pairs in `done` are skipped
    (resume). `round_done(completed, max_runs, what the rule says)` follows each counted round
    that measured something (not one a resume replays), `stopped(variant, stop)` each variant
    that stops early. The rules after round r see rounds
    up to r only, so a resumed sweep, whose store already holds later ones, replays the stops
    its first part made.
    """
    stop = Stopping(plan)
    for r in range(-plan.warmup, plan.max_runs):
        if r >= 0 and not stop.may_start():
            break
        t0 = time.monotonic()
        taken = False
        for pos, vid in enumerate(stop.active(order(plan, r))):
            if (vid, r) in done:
                continue
            taken = True
            if progress:
                progress(vid, r, pos)
            measure(vid, r, pos, env_pad(plan, vid, r))
        if r < 0:
            continue
        now = first_rounds(values(), r + 1)
        stop.after(now, time.monotonic() - t0)
        for vid, s in stop.new_stops.items():
            if stopped:
                stopped(vid, s)
        # A round a resumed sweep replays (all of it taken before) is no progress: its line
        # would count the rounds from 1 again. The count goes on from the first round measured.
        if round_done and taken:
            round_done(stop.completed, plan.max_runs, stop.said(now))
        if stop.outcome is not None:
            break
    return stop.final(first_rounds(values(), stop.completed))


def first_rounds(values: Values, k: int) -> Values:
    """The values of counted rounds 0 .. k-1."""
    return {vid: {r: x for r, x in by.items() if r < k} for vid, by in values.items()}


def stops(plan: Plan, values: Values, completed: int,
          stopped: dict[str, Stop]) -> dict[str, Stop]:
    """The variants whose verdict became final in this round (stats.sequential), none when the
    plan does not drop. Compared one by one with the baseline, at the boundary for the plan's m
    comparisons and most rounds."""
    base = values.get(plan.baseline) if plan.baseline else None
    if not plan.drop or not base:
        return {}
    m = len([v for v in plan.variant_ids if v != plan.baseline])
    out = {}
    for vid in plan.variant_ids:
        if vid in stopped or vid in plan.keep or vid == plan.baseline or vid not in values:
            continue
        got = sequential.final(values[vid], base, round_count=completed, m=m,
                               max_rounds=plan.max_runs, threshold_pct=plan.threshold_pct,
                               seed=plan.seed, plan=design(plan))
        if got:
            out[vid] = Stop(completed, *got)
    return out


def standing(plan: Plan, values: Values, completed: int,
             stopped: dict[str, Stop] | None = None) -> str:
    """What the stopping rule sees after `completed` rounds when it goes on: the verdicts so far
    and the widest unsettled interval, or the round before which it cannot stop (when it could
    stop at all before max_runs)."""
    floor = first_stop(plan)
    if completed < floor <= plan.max_runs:
        why = "--min-runs" if plan.layouts else "the fewest at which a verdict can pass"
        return f"no stop before round {floor} ({why})"
    comparisons = _comparisons(plan, values)
    widths = {vid: stats.log_half_width(c.ci95) for vid, c in comparisons.items()}
    return _tally(comparisons, widths, plan, stopped or {})


def starts_in_budget(plan: Plan, elapsed_s: float, round_s: float | None) -> bool:
    """The one meaning of --budget, for a sweep here and on a fleet: a round starts only if,
    at the pace of the last round, it ends within the budget (so none is cut short or overruns;
    before any round is timed there is no pace, and the first one starts)."""
    return plan.budget_s is None or round_s is None or elapsed_s + round_s <= plan.budget_s


def first_stop(plan: Plan) -> int:
    """The fewest counted rounds after which the rule may stop: min_runs, and never before the
    pairs at which the exact sign-flip test can pass Benjamini-Hochberg for this sweep's m
    comparisons (stats.fewest_decisive_pairs) plus DECISION_MARGIN. At that floor exactly, one
    round whose sign goes the other way (a stall) already keeps every verdict out of reach; two
    more rounds leave room for it (at m = 2: 9 rounds, where a wrong sign on a rank <= 3 still
    passes). Over layouts the test is on the layouts' levels, and min_runs alone holds."""
    if plan.layouts:    # compared over layouts (a t test), not by the exact test on rounds
        return plan.min_runs
    return max(plan.min_runs, stats.fewest_decisive_pairs(_m(plan), design(plan).alpha)
               + DECISION_MARGIN)


def design(plan: Plan) -> sequential.Design:
    """The error the sweep's claims spend (stats.sequential.Design): with stops, the analysis's
    BH at what they leave; equivalence at the level of a test repeated at every round at which
    the sweep may stop. Over layouts one look (the layouts' t test is not the rounds')."""
    if plan.layouts:
        return sequential.Design()
    return sequential.design(_m(plan), plan.min_runs, plan.max_runs, plan.drop)


def _m(plan: Plan) -> int:
    return max(1, len([v for v in plan.variant_ids if v != plan.baseline]))


def decided(plan: Plan, values: Values, completed: int,
            stopped: dict[str, Stop] | None = None,
            rounds_left: int | None = None) -> Outcome | None:
    """The stopping rule after `completed` counted rounds; None: go on.

    It asks what the analysis will conclude, with the analysis's own functions: every variant
    against the baseline by stats.compare, then stats.adjust across the sweep. It stops once
    every comparison is settled (_settled): equivalent, stopped at a final verdict (`stops`),
    or known to within a paired 95% CI of +-precision, unless, still undecided, it is projected
    to decide (stats' rounds_needed) within the rounds that may still start (`rounds_left`:
    max runs' by default, fewer when the budget at this pace leaves fewer). A faster or slower
    verdict alone does not settle a comparison: stopping on the first one to appear is a test
    repeated every round, and it let the A/A twin come out faster or slower in 7.3% of sweeps
    at CV 5% (bench/verdict_rules.py). Never before first_stop: on a quiet machine every interval
    is narrow after 6 rounds, where no verdict can pass BH yet.

    The reason says "decided" only when every comparison is; otherwise it names the open ones
    and why more rounds were not worth it (their projection beyond max runs or the budget)."""
    if completed < first_stop(plan):
        return None
    stopped = stopped or {}
    reach = completed + (plan.max_runs - completed if rounds_left is None else rounds_left)
    comparisons = _comparisons(plan, values)
    widths = {vid: stats.log_half_width(c.ci95) for vid, c in comparisons.items()}
    if not comparisons or any(vid not in stopped and not _settled(c, widths[vid], plan, reach)
                              for vid, c in comparisons.items()):
        return None
    still = {vid: c for vid, c in comparisons.items()
             if vid not in stopped and c.verdict not in DECIDED}
    head = f"decided after {completed} rounds"
    if still:
        head = (f"stopped after {completed} rounds with {len(still)} open ("
                + "; ".join(f"{vid}: {_open(c, plan, reach)}" for vid, c in sorted(still.items()))
                + ")")
    return _outcome(plan, completed, head, comparisons, stopped)


DECIDED = ("faster", "slower", "equivalent")


def _settled(c: stats.RatioEstimate, width: float, plan: Plan, reach: int | None = None) -> bool:
    """Equivalent, known to within the precision and not projected to decide within `reach`
    rounds in all (max runs by default), or (over layouts) no longer narrowed by more rounds:
    the layouts' own spread is then nearly all of its uncertainty.

    Within the precision an undecided estimate sits near the threshold, but not always near
    enough: an estimate one to three thresholds from zero with an interval of +-threshold is
    called within a few more rounds, and stopping there left it inconclusive with its verdict
    in reach."""
    if c.verdict == "equivalent" or not c.more_rounds_help:
        return True
    if width > plan.precision:
        return False
    reach = plan.max_runs if reach is None else reach
    return c.verdict in DECIDED or c.rounds_needed is None or c.rounds_needed > reach


def _open(c: stats.RatioEstimate, plan: Plan, reach: int) -> str:
    """Why an undecided comparison was left open: what would decide it, and why not here."""
    if gate.overruled(c):
        return gate.overrule_summary(c)
    if not c.more_rounds_help:
        return ("more rounds would leave the spread between layouts as it is: more layouts "
                "would narrow it")
    if c.rounds_needed is None:
        return "no projection of the rounds that would decide it"
    capped = " or more" if c.rounds_needed >= stats.ROUNDS_CAP else ""
    need = f"roughly {c.rounds_needed}{capped} rounds would likely decide"
    if c.rounds_needed > plan.max_runs:
        return f"{need}, beyond --max-runs {plan.max_runs}"
    return f"{need}, beyond the {reach} rounds the budget allows at this pace"


def max_runs_outcome(plan: Plan, values: Values,
                     stopped: dict[str, Stop] | None = None) -> Outcome:
    head = (f"the fixed {plan.max_runs} rounds are done" if plan.min_runs >= plan.max_runs
            else f"max runs ({plan.max_runs}) reached")
    return _outcome(plan, plan.max_runs, head, _comparisons(plan, values), stopped)


def budget_outcome(plan: Plan, values: Values, completed: int,
                   stopped: dict[str, Stop] | None = None) -> Outcome:
    return _outcome(plan, completed, f"time budget of {plan.budget_s:g} s reached after "
                    f"{completed} rounds", _comparisons(plan, values), stopped)


def _outcome(plan: Plan, completed: int, head: str, comparisons: dict[str, stats.RatioEstimate],
             stopped: dict[str, Stop] | None = None) -> Outcome:
    # stopped before the last round: a variant settled in it ran as long as the sweep
    stopped = {vid: s for vid, s in (stopped or {}).items() if s.rounds < completed}
    widths = {vid: stats.log_half_width(c.ci95) for vid, c in comparisons.items()}
    return Outcome(completed, f"{head}: {_tally(comparisons, widths, plan, stopped)}", widths,
                   stopped)


def _comparisons(plan: Plan, values: Values) -> dict[str, stats.RatioEstimate]:
    """Every measured variant against the baseline, adjusted together, as analysis.apply does."""
    if plan.layouts:
        out = layout.compare_all(values, plan.layouts, plan.baseline)
    else:
        base = values.get(plan.baseline) if plan.baseline else None
        if not base:
            return {}
        tost = design(plan).tost
        out = {vid: stats.compare(values[vid], base, seed=plan.seed, tost=tost)
               for vid in plan.variant_ids if vid != plan.baseline and vid in values}
    stats.adjust(list(out.values()), threshold_pct=plan.threshold_pct, alpha=design(plan).alpha)
    if plan.twin:
        gate.aa_gate(out, plan.twin, plan.threshold_pct, gate.TWIN_IS[bool(plan.layouts)])
    return out


def _tally(comparisons: dict[str, stats.RatioEstimate], widths: dict[str, float], plan: Plan,
           stopped: dict[str, Stop]) -> str:
    """"1 slower, 1 equivalent" plus the variants stopped early and, when some comparison is
    not settled, its widest interval."""
    if not comparisons:
        return "nothing to compare with the baseline"
    counts: dict[str, int] = {}
    for c in comparisons.values():
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    text = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    if stopped:
        text += " (stopped early: " + ", ".join(f"{vid} after {s.rounds}"
                                                for vid, s in sorted(stopped.items())) + ")"
    unsettled = [widths[v] for v, c in comparisons.items()
                 if v not in stopped and not _settled(c, widths[v], plan)]
    if unsettled and math.isfinite(max(unsettled)):
        text += (f" (widest unsettled 95% CI +-{100 * max(unsettled):.2f}%, "
                 f"target +-{100 * plan.precision:g}%)")
    elif unsettled:
        text += " (too few paired rounds for a 95% CI)"
    return text
