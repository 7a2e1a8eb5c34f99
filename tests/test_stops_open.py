"""The sweep's stopping rule never says "decided" with a verdict in reach: an undecided
comparison projected to decide within the rounds left keeps the sweep going, and a stop that
leaves one open names it and why more rounds were not worth it. Synthetic seeded values only."""

from __future__ import annotations

import math

import numpy as np

from flagsweep.measure import rounds

N = 12


def _values(effect: float = 0.018, sd: float = 0.02) -> dict[str, dict[int, float]]:
    """Baseline, an equivalent twin, and a variant at +1.8%: after 12 rounds its 95% CI
    [+0.7, +2.6] is within +-1% (precision) yet reaches into the band, inconclusive, and its
    projection is 28 rounds."""
    rng = np.random.default_rng(5)
    base = {r: float(math.exp(rng.normal(0, 0.03))) for r in range(N)}
    twin = {r: base[r] * math.exp(0.001 * (-1) ** r) for r in range(N)}
    other = np.random.default_rng(7)
    var = {r: base[r] * math.exp(effect + other.normal(0, sd)) for r in range(N)}
    return {"base": base, "base.aa": twin, "var": var}


def _plan(**kw) -> rounds.Plan:
    return rounds.Plan(["base", "base.aa", "var"], seed=1, warmup=0, baseline="base", **kw)


def test_no_stop_while_an_undecided_comparison_is_projected_within_the_rounds_left():
    values, plan = _values(), _plan()
    c = rounds._comparisons(plan, values)["var"]
    assert c.verdict == "inconclusive" and c.rounds_needed == 28
    assert math.log(c.ci95[1] / c.ci95[0]) / 2 <= plan.precision      # precise, but undecided
    assert rounds.decided(plan, values, N) is None


def test_a_stop_with_an_open_comparison_names_it_and_why_more_rounds_were_not_worth_it():
    values = _values()
    out = rounds.decided(_plan(max_runs=20), values, N)
    assert out is not None and not out.stop_reason.startswith("decided")
    assert out.stop_reason.startswith(
        "stopped after 12 rounds with 1 open (var: roughly 28 rounds would likely decide, "
        "beyond --max-runs 20): 1 equivalent, 1 inconclusive")
    out = rounds.decided(_plan(), values, N, rounds_left=4)
    assert "(var: roughly 28 rounds would likely decide, beyond the 16 rounds the budget allows" \
        in out.stop_reason
    decided = rounds.decided(_plan(), _values(effect=0.05, sd=0.005), N)
    assert decided.stop_reason == "decided after 12 rounds: 1 equivalent, 1 slower"


def test_the_budget_at_this_pace_bounds_the_rounds_left():
    now = [0.0]
    stop = rounds.Stopping(_plan(budget_s=100), clock=lambda: now[0])
    now[0] = 80.0
    stop.completed, stop.round_s = N, 5.0
    assert stop.rounds_left() == 4
    stop.plan.budget_s = None
    assert stop.rounds_left() == 30 - N

