"""What a tune's budget buys on this machine: how many candidates its search can build, said
at its start, and the proof's layouts, sized by power within what the budget leaves.

The proof (tune.proof) judges a set over K layouts a side (stats.layout): its interval narrows
as the layouts' spread over sqrt(K), and more rounds leave each layout's luck as it is. At the
4 layouts a proof once always took, a set truly 3% faster than the base was confirmed in 0-6%
of simulated tunes (the statistics audit of 2026-12, item 3; 8 layouts: 50%, 16: 72%). So the
proof takes the fewest layouts at which the smallest gain worth claiming (CLAIM_THRESHOLDS
times the threshold) is confirmed with POWER against the base (stats.layout.power, at the
layout spread measured for this program, else the default), and its builds and least rounds
must fit in what is left of the budget: when they do not, the runners-up go first (a set the
search ranked lower), then layouts, and the plan says what it cut and the power left. A proof
whose least (every set but the runners-up, in 2 layouts) does not fit is not started: the
budget is a promise (a lame tune with --budget 40m was once still building its proof's 24
layouts at 52 minutes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from flagsweep.compilation import layout as link
from flagsweep.errors import FlagsweepError
from flagsweep.report.formats import duration
from flagsweep import model
from flagsweep.results import confirmation, reader
from flagsweep.results.store import Store
from flagsweep.stats import layout

# The smallest gain worth claiming, in thresholds: 3% at the default 1%. A gain at the
# threshold itself is almost never confirmed, whatever the layouts (its whole interval must
# clear the threshold), and at gzip's 1.1% layout spread 90% power takes 38 layouts a side
# at twice the threshold, 11 at three times it (stats.layout.layouts_for).
CLAIM_THRESHOLDS = 3.0
# Each of the answer's two comparisons (the set against the base, and against -O3) at 90%,
# so that both hold in about 80% of proofs: Cohen's conventional power for the answer.
POWER = 0.9
MOST_LAYOUTS = 16               # what the plan takes at most: tune --layouts' bound
LEAST_LAYOUTS = 2               # the fewest between which a spread exists
ROLE_DROPPED_FIRST = "runner-up"


@dataclass(frozen=True)
class Shares:
    """How a tune's budget is shared among its phases, in the order they run."""
    search: float
    ablation: float
    proof: float

    def through(self, phase: str) -> float:
        """The share spent by the end of `phase`: its own and the phases' before it."""
        order = ("search", "ablation", "proof")
        return sum(getattr(self, p) for p in order[:order.index(phase) + 1])


@dataclass(frozen=True)
class Pace:
    """What a proof's sweep costs here: a set's build (its compile, at the search's pace), a
    run of its input, and the rounds it takes at least (its --min-runs and warmup)."""
    build_s: float
    run_s: float
    rounds: int


@dataclass(frozen=True)
class Spread:
    """A layout's level about its variant's mean (log scale), and where that figure is from."""
    sd: float
    source: str


def need(sets: int, k: int, pace: Pace) -> tuple[float, float]:
    """(builds, least rounds) in seconds of a sweep of `sets` sets over k layouts each and the
    A/A twin, at this pace (compilation.layout.cost, which a sweep's confirmation sizes by too)."""
    return link.cost(sets, k, pace.build_s, pace.run_s, pace.rounds)


def spread(check: model.TuneLayoutCheck | None, store: Store, target: str,
           machine: dict | None) -> Spread:
    """The layout spread a proof is sized at: the tune's own check over layouts (this program,
    here, now: its A/A twin's layouts), else the newest --layouts run of the program on this
    machine, else the spread whose reach the confirmation over layouts assumes by default
    (results.confirmation)."""
    if check is not None and check.status == "complete" and check.results:
        try:
            sd = getattr(reader.load(Path(check.results)).noise, "sd_log_diff", None)
        except FlagsweepError:
            sd = None
        if sd:
            return Spread(sd, f"measured by this tune's check over {check.layouts:g} layouts, "
                              "on the search's input")
    found = confirmation.measured_spread(store, target, model.Machine.model_validate(machine)) \
        if machine else None
    if found:
        return Spread(*found)
    return Spread(confirmation.spread_of_reach(confirmation.DEFAULT_REACH_PCT),
                  "the default: no layout spread measured for this program on this machine")


def proof_plan(roles: list[str], spread: Spread, pace: Pace, left_s: float,
               threshold_pct: float, asked: int | None = None) -> model.TuneProofPlan:
    """How many of the listed sets (by role, in tune.proof.entries' order: the runners-up
    last) the proof measures, in how many layouts, and why. `asked`: the layouts --layouts
    gave (else the power decides); `left_s`: the seconds left of the budget."""
    claim = CLAIM_THRESHOLDS * threshold_pct
    fewest = len(roles) - sum(1 for r in roles if r == ROLE_DROPPED_FIRST)

    def wanted(n: int) -> int:
        # n sets: n - 1 compared with the base, and the A/A twin
        return asked or layout.layouts_for(spread.sd, claim, threshold_pct, n, POWER,
                                           MOST_LAYOUTS)

    def fits(n: int, k: int) -> bool:
        return sum(need(n, k, pace)) <= left_s

    chosen = next(((n, wanted(n)) for n in range(len(roles), fewest - 1, -1)
                   if fits(n, wanted(n))), None)
    if chosen is None:
        k = next((k for k in range(wanted(fewest) - 1, LEAST_LAYOUTS - 1, -1)
                  if fits(fewest, k)), None)
        chosen = None if k is None else (fewest, k)
    n, k = chosen or (fewest, LEAST_LAYOUTS)
    builds, rounds = need(n, k, pace)
    whole = chosen is not None and n == len(roles) and k == wanted(n)
    record = model.TuneProofPlan(
        status="sized" if whole else "cut" if chosen else "skipped",
        layouts=k if chosen else None, asked=asked, wanted=wanted(n),
        power=round(layout.power(k, spread.sd, claim, threshold_pct, n), 3) if chosen else None,
        wanted_power=POWER, claim_pct=claim, spread_pct=round(100 * math.expm1(spread.sd), 2),
        spread_source=spread.source, sets=n if chosen else 0, dropped=len(roles) - n,
        left_s=round(left_s, 1), builds_s=round(builds, 1), rounds_s=round(rounds, 1),
        build_s=round(pace.build_s, 1), run_s=round(pace.run_s, 3), rounds=pace.rounds)
    record.why = _said(record, n, k)
    return record


def _said(p: model.TuneProofPlan, n: int, k: int) -> str:
    """The plan in a sentence: its sets and layouts, the power they give, and what it cut."""
    cost = (f"builds about {duration(p.builds_s)} at {duration(p.build_s)} a build, "
            f"{p.rounds:g} rounds about {duration(p.rounds_s)} at {p.run_s:.2g} s a run")
    left = f"the {duration(max(0.0, p.left_s))} left of the budget"
    if p.status == "skipped":
        return (f"not run: {left} do not hold its least, {n} sets in {k} layouts ({cost}); "
                "a longer --budget would")
    sets = f"{n} sets"
    if p.dropped:
        sets += f" ({p.dropped:g} runner{'s' if p.dropped > 1 else ''}-up left out to fit)"
    if k < p.wanted:
        each = f"cut to {k} layouts each to fit, where {p.wanted:g} would give " \
               f"{p.wanted_power:.0%}"
    else:
        each = f"{k} layouts each (" + ("as --layouts asked" if p.asked else
                                        "the most the plan takes" if p.power < p.wanted_power
                                        else f"the fewest for {p.wanted_power:.0%}") + ")"
    more = "; a longer --budget gives the proof more" if p.status == "cut" else ""
    return (f"{sets} on the full input, {each}: a {p.claim_pct:g}% gain is confirmed against "
            f"the base with {p.power:.0%} power at the +-{p.spread_pct:.1f}% layout spread "
            f"({p.spread_source}); {cost}, in {left}{more}")


def opening(budget_s: float, shares: Shares, build_s: float | None,
            compiles: int | None, cached: bool) -> str:
    """What the budget buys here, said as a tune starts: the phases' times and the candidates
    the search's share can build at the pace of the base's build (the search's rounds take
    their share of it too, so fewer)."""
    search = shares.search * budget_s
    phases = (f"then {duration(shares.ablation * budget_s)} for the ablation and "
              f"{duration(shares.proof * budget_s)} for the proof, its layouts sized by "
              "power in what is left")
    head = f"budget {duration(budget_s)} here: the search's {duration(search)}"
    if not build_s:
        return (f"{head} (what a candidate's build takes here is said after the first "
                f"batch); {phases}")
    lines = f", {compiles:g} compile lines" if compiles else ""
    when = "when it was cached" if cached else "just now"
    n = math.floor(search / build_s)
    if n > 200:
        return (f"{head}: a build takes {duration(build_s)} here (the base's{lines}, {when}), "
                f"so the rounds, not the builds, decide how many candidates; {phases}")
    return (f"{head} build about {n} candidates at {duration(build_s)} a build (the base's"
            f"{lines}, {when}), fewer as their rounds take their time too; {phases}")


def batch_fit(n: int, left_s: float, build_s: float, least_s: float) -> tuple[int, str | None]:
    """How many of a batch's n candidates fit in the search's `left_s`: their builds at
    `build_s` each and the batch's least rounds (`least_s`); and, when fewer than n, why (a
    batch of six builds begun a minute before the search's end overran it by six builds)."""
    fit = int((left_s - least_s) // build_s) if build_s else n
    if fit >= n:
        return n, None
    fit = max(0, fit)
    return fit, (f"the {max(0.0, left_s):.0f} s left of its time hold {fit} candidate build(s) "
                 f"at {build_s:.0f} s and a batch's least rounds"
                 + (": the search ends here" if fit < 1 else f": a batch of {fit}"))


def candidates_left(search_left_s: float, spent_s: float, asked: int) -> int | None:
    """Candidates that fit in what is left of the search at its pace so far (its seconds per
    candidate asked, builds and rounds together); None before any."""
    if asked <= 0 or spent_s <= 0:
        return None
    return max(0, math.floor(search_left_s / (spent_s / asked)))
