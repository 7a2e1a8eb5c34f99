"""The sweep's stopping rule never says "decided" with a verdict in reach: an undecided
comparison projected to decide within the rounds left keeps the sweep going, and a stop that
leaves one open names it and why more rounds were not worth it. Synthetic seeded values only."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from flagsweep import stats
from flagsweep.measure import rounds
from flagsweep.stats import sequential, significance

N = 12


def _values(effect: float = 0.018, sd: float = 0.02) -> dict[str, dict[int, float]]:
    """Baseline, an equivalent twin, and a variant at +1.8%: after 12 rounds its 95% CI
    [+0.7, +2.6] is within +-1% (precision) yet reaches into the band, inconclusive, and its
    projection (from its false-coverage adjusted interval) is 40
    rounds."""
    rng = np.random.default_rng(5)
    base = {r: float(math.exp(rng.normal(0, 0.03))) for r in range(N)}
    twin = {r: base[r] * math.exp(0.001 * (-1) ** r) for r in range(N)}
    other = np.random.default_rng(7)
    var = {r: base[r] * math.exp(effect + other.normal(0, sd)) for r in range(N)}
    return {"base": base, "base.aa": twin, "var": var}


def _plan(**kw) -> rounds.Plan:
    return rounds.Plan(["base", "base.aa", "var"], seed=1, warmup=0, baseline="base", **kw)


def test_no_stop_while_an_undecided_comparison_is_projected_within_the_rounds_left():
    values, plan = _values(), _plan(max_runs=50)
    c = rounds._comparisons(plan, values)["var"]
    assert c.verdict == "inconclusive" and c.rounds_needed == 40
    assert math.log(c.ci95[1] / c.ci95[0]) / 2 <= plan.precision      # precise, but undecided
    assert rounds.decided(plan, values, N) is None


def test_a_stop_with_an_open_comparison_names_it_and_why_more_rounds_were_not_worth_it():
    values = _values()
    out = rounds.decided(_plan(max_runs=20), values, N)
    assert out is not None and not out.stop_reason.startswith("decided")
    assert out.stop_reason.startswith(
        "stopped after 12 rounds with 1 open (var: roughly 40 rounds would likely decide, "
        "beyond --max-runs 20): 1 equivalent, 1 inconclusive")
    out = rounds.decided(_plan(max_runs=50), values, N, rounds_left=4)
    assert "(var: roughly 40 rounds would likely decide, beyond the 16 rounds the budget allows" \
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



def test_exact_p_lets_a_large_effect_stop_at_a_later_look_among_many_comparisons():
    """+20%, the baseline stalled (x1.3) once in round 3: the first look cannot pass (one round
    has the wrong sign), and every later look's level at m = 11 and m = 51 (1e-5 .. 1e-7) is below
    the Monte Carlo p's floor of 1/20001; the exact p lets it stop."""
    rng = np.random.default_rng(3)
    base = {r: float(math.exp(rng.normal(0, 0.01))) for r in range(30)}
    base[3] *= 1.3
    var = {r: float(1.2 * math.exp(rng.normal(0, 0.01))) for r in range(30)}
    for m in (11, 51):
        first = sequential.looks(m, 30).first
        got = [k for k in range(first, 31)
               if sequential.final({r: x for r, x in var.items() if r < k},
                                   {r: x for r, x in base.items() if r < k}, round_count=k, m=m,
                                   max_rounds=30, threshold_pct=1.0, seed=1)]
        assert got and got[0] > first, m
        d = [math.log(var[r] / base[r]) for r in range(got[0])]
        assert stats.signed_rank_p(d) < 1 / 20001 and sequential.looks(m, 30).level(got[0]) < 1 / 20001


def test_the_exact_p_is_the_sign_flip_tests_own():
    """The same test as the analysis's: its full enumeration up to 14 pairs, zeros and ties
    included; 2 / 2^n when every round has the same sign."""
    rng = np.random.default_rng(1)
    for n in (6, 10, 14):
        d = np.round(rng.normal(0.3, 1, n), 1)
        d[:2] = 0.0
        assert math.isclose(stats.signed_rank_p(d), significance.signflip_p(d, rng), rel_tol=1e-12)
    assert math.isclose(stats.signed_rank_p(np.full(30, 0.05)), 2.0 ** -29)


def test_pocock_level_keeps_a_test_repeated_at_every_look_within_alpha():
    """Seeded random walks observed at rounds 7..30: a one-sided test at the Pocock level errs
    at some look in 5% of them; at 0.05 every look, far more often."""
    level = sequential.pocock_level(7, 30)
    assert 0.009 < level < 0.014
    rng = np.random.default_rng(11)
    walks = np.cumsum(rng.normal(size=(40000, 30)), axis=1)[:, 6:]
    z = walks / np.sqrt(np.arange(7, 31))
    crossed = lambda a: float(np.mean((z >= sps.norm.isf(a)).any(axis=1)))  # noqa: E731
    assert abs(crossed(level) - 0.05) < 0.005 and crossed(0.05) > 0.15
    assert sequential.pocock_level(9, 9) == 0.05                   # a fixed design looks once
    # more looks, a smaller level, also where long sweeps use a coarser grid
    assert sequential.pocock_level(9, 1000) < sequential.pocock_level(9, 200) \
        < sequential.pocock_level(9, 60) < sequential.pocock_level(9, 30)


def test_the_sweep_treats_equivalence_at_its_repeated_level_not_at_90():
    """The twin's 90% interval lies inside +-1% after 12 rounds, but not the interval at the
    level a test repeated at every round of the sweep must use: it is not yet equivalent, so
    it does not settle the sweep; a fixed design (one look) calls it equivalent."""
    rng = np.random.default_rng(2)
    base = {r: float(math.exp(rng.normal(0, 0.03))) for r in range(N)}
    twin = {r: base[r] * math.exp(0.0075 + rng.normal(0, 0.006)) for r in range(N)}
    values = {"base": base, "base.aa": twin}
    plan = rounds.Plan(["base", "base.aa"], seed=1, warmup=0, baseline="base")
    c = rounds._comparisons(plan, values)["base.aa"]
    assert 0.99 < c.ci90[0] and c.ci90[1] < 1.01 and c.equivalence_ci[1] > 1.01
    assert c.verdict == "inconclusive" and rounds.decided(plan, values, N) is None
    fixed = rounds.Plan(["base", "base.aa"], seed=1, warmup=0, baseline="base", min_runs=N,
                        max_runs=N)
    assert rounds._comparisons(fixed, values)["base.aa"].verdict == "equivalent"


def test_the_stops_share_of_alpha_comes_out_of_the_final_analysis():
    with_stops = rounds.design(_plan(drop=True))
    assert math.isclose(with_stops.alpha + with_stops.stops, 0.05) and with_stops.stops > 0
    assert rounds.design(_plan()).alpha == 0.05
    assert sequential.looks(2, 30).first_level + 21 * sequential.looks(2, 30).later_level \
        <= with_stops.stops / 2 + 1e-12


def test_the_stop_line_counts_the_verdicts_the_a_a_gate_leaves():
    """The twin moved +4% by itself (not significantly: a noisy twin) and the variant is +2.5%
    with a tight interval: the table shows it inconclusive (its interval reaches into the
    twin's +-4%), so the stop line must not count it slower."""
    rng = np.random.default_rng(11)
    base = {r: float(math.exp(rng.normal(0, 0.01))) for r in range(N)}
    twin = {r: base[r] * math.exp(0.04 + rng.normal(0, 0.08)) for r in range(N)}
    var = {r: base[r] * math.exp(0.025 + rng.normal(0, 0.002)) for r in range(N)}
    values = {"base": base, "base.aa": twin, "var": var}
    plan = _plan(max_runs=N, twin="base.aa")
    comparisons = rounds._comparisons(plan, values)
    assert comparisons["base.aa"].verdict == "inconclusive"
    assert comparisons["base.aa"].ratio > 1.03
    assert comparisons["var"].verdict == "inconclusive"
    assert comparisons["var"].why.startswith("inconclusive, not slower: its interval reaches")
    out = rounds.max_runs_outcome(plan, values)
    assert "slower" not in out.stop_reason.split(": ", 1)[1]
    assert ": 2 inconclusive (" in out.stop_reason
    # without the twin named, the rule would have counted the call the table overrules
    ungated = rounds.max_runs_outcome(_plan(max_runs=N), values)
    assert "1 slower" in ungated.stop_reason
