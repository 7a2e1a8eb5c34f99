"""Stopping a variant once its verdict is final (stats.sequential, rounds.stops): the boundary,
the verdicts it can reach, and that a stopped variant is neither measured again nor judged
differently at the end. Synthetic seeded values only: no timing."""

from __future__ import annotations

import math

import numpy as np

from flagsweep import stats
from flagsweep.measure import rounds
from flagsweep.measure.sample import Sample
from flagsweep.stats import sequential


def _values(ratios: dict[str, float], n: int, cv: float, seed: int = 1) -> dict[str, dict[int, float]]:
    rng = np.random.default_rng(seed)
    drift = rng.normal(0, 0.03, size=n)
    return {vid: {r: float(ratio * math.exp(drift[r] + rng.normal(0, cv))) for r in range(n)}
            for vid, ratio in ratios.items()}


def test_the_looks_spend_the_stops_share_over_m_first_where_the_exact_test_can_first_pass():
    b = sequential.looks(5, 30)                              # the stops spend 0.01 of 0.05
    assert b.first == stats.fewest_decisive_pairs(5, 0.01) == 10 and b.later == 20
    assert b.first_level == 2.0 ** (1 - 10)                  # exactly what the test needs there
    assert math.isclose(b.first_level + b.later * b.later_level, 0.01 / 5)
    assert b.level(9) == 0 and b.level(10) == b.first_level and b.level(20) == b.later_level
    assert sequential.looks(5, 60).later_level < b.later_level   # more looks, a stricter level
    assert math.isclose(sequential.looks(5, 10).first_level, 0.01 / 5)   # one look: all
    assert sequential.looks(5, 9).level(9) == 0                 # too few rounds to stop at all


def test_a_far_variant_is_final_at_the_first_look_and_not_before():
    v = _values({"base": 1.0, "far": 1.35}, 30, cv=0.01)
    first = {k: {r: x for r, x in by.items() if r < 9} for k, by in v.items()}
    assert sequential.final(first["far"], first["base"], round_count=9, m=5, max_rounds=30,
                            threshold_pct=1.0, seed=1) is None
    first = {k: {r: x for r, x in by.items() if r < 10} for k, by in v.items()}
    got = sequential.final(first["far"], first["base"], round_count=10, m=5, max_rounds=30,
                           threshold_pct=1.0, seed=1)
    assert got and got[0] == "slower" and "beyond any later round" in got[1]


def test_a_variant_missed_at_the_first_look_needs_the_later_looks_stricter_level():
    """+5% at CV 2%, m = 2: not all of 9 pairs beyond +1% (the first look needs every one), and
    a later look at 5e-5 needs 15 pairs or more."""
    v = _values({"base": 1.0, "mid": 1.05}, 30, cv=0.02, seed=2)
    got = [k for k in range(8, 31)
           if sequential.final({r: x for r, x in v["mid"].items() if r < k}, v["base"],
                               round_count=k, m=2, max_rounds=30, threshold_pct=1.0, seed=1)]
    assert got and 15 <= got[0]


def test_a_null_variant_on_a_noisy_machine_never_stops_and_a_quiet_one_stops_equivalent():
    noisy = _values({"base": 1.0, "null": 1.0}, 30, cv=0.05)
    assert all(sequential.final({r: x for r, x in noisy["null"].items() if r < k}, noisy["base"],
                                round_count=k, m=5, max_rounds=30, threshold_pct=1.0,
                                seed=1) is None
               for k in range(2, 31))
    quiet = _values({"base": 1.0, "null": 1.0}, 30, cv=0.0005)
    got = sequential.final(quiet["null"], quiet["base"], round_count=30, m=5, max_rounds=30,
                           threshold_pct=1.0, seed=1)
    assert got and got[0] == "equivalent"


def test_the_verdict_at_the_stop_is_the_analysis_verdict_on_the_same_rounds():
    """The analysis at the end (compare, then BH over every comparison at what the stops left
    of alpha) reaches the stop's verdict whatever the other comparisons' p-values are."""
    v = _values({"base": 1.0, "far": 0.7}, 10, cv=0.01)
    verdict, _ = sequential.final(v["far"], v["base"], round_count=10, m=5, max_rounds=30,
                                  threshold_pct=1.0, seed=3)
    c = stats.compare(v["far"], v["base"], seed=3)
    others = [stats.RatioEstimate(1.0, (0.5, 2.0), (0.6, 1.7), 1.0, 10) for _ in range(4)]
    stats.adjust([c, *others], threshold_pct=1.0, alpha=sequential.design(5, 5, 30, True).alpha)
    assert verdict == c.verdict == "faster"


def _sweep(plan: rounds.Plan, ratios: dict[str, float], cv: float, done=(), stop_after=None):
    """Drive rounds.rounds over pre-drawn values; `stop_after`: interrupt after that many
    samples (KeyboardInterrupt, as a Ctrl-C does). Returns (outcome or None, taken, store)."""
    drawn = _values(ratios, plan.max_runs, cv, seed=plan.seed)
    store: dict[str, dict[int, float]] = {}
    for vid, r in done:
        store.setdefault(vid, {})[r] = drawn[vid][r]
    taken: list[tuple[str, int]] = []
    stops: list[tuple[str, rounds.Stop]] = []

    def measure(vid, rnd, pos, pad):
        if stop_after is not None and len(taken) >= stop_after:
            raise KeyboardInterrupt
        taken.append((vid, rnd))
        if rnd >= 0:
            store.setdefault(vid, {})[rnd] = drawn[vid][rnd]
        return Sample(vid, rnd, pos, pad)

    try:
        outcome = rounds.rounds(plan, set(done), measure, lambda: store,
                                stopped=lambda vid, s: stops.append((vid, s)))
    except KeyboardInterrupt:
        outcome = None
    return outcome, taken, store, stops


RATIOS = {"base": 1.0, "base.aa": 1.0, "far": 1.5, "edge": 1.01}


def _plan(**kw) -> rounds.Plan:
    return rounds.Plan(list(RATIOS), seed=4, warmup=0, baseline="base", drop=True,
                       keep=frozenset({"base", "base.aa"}), **kw)


def test_a_stopped_variant_is_not_measured_again_and_the_controls_always_are():
    outcome, taken, store, stops = _sweep(_plan(), RATIOS, cv=0.02)
    assert [vid for vid, _ in stops] == ["far"] and set(outcome.stopped) == {"far"}
    at = outcome.stopped["far"].rounds
    assert sequential.looks(3, 30).first <= at < outcome.rounds == 30
    assert max(r for vid, r in taken if vid == "far") == at - 1
    for vid in ("base", "base.aa", "edge"):
        assert sorted(r for v, r in taken if v == vid) == list(range(30))
    assert f"stopped early: far after {at}" in outcome.stop_reason
    # the frozen rounds give the analysis the stop's verdict
    c = {vid: stats.compare(store[vid], store["base"], seed=4) for vid in RATIOS if vid != "base"}
    stats.adjust(list(c.values()), threshold_pct=1.0)
    assert c["far"].verdict == outcome.stopped["far"].verdict == "slower"


def test_without_drop_every_variant_runs_every_round():
    plan = _plan()
    plan.drop = False
    outcome, taken, _, stops = _sweep(plan, RATIOS, cv=0.02)
    assert not stops and not outcome.stopped and len(taken) == 4 * outcome.rounds


def test_a_stopped_variant_counts_as_settled():
    """'slower' alone does not settle a comparison (its interval may still be wider than the
    precision), but a stopped one is settled: its samples are frozen."""
    plan = _plan(precision=0.0001)
    values = _values({"base": 1.0, "base.aa": 1.0, "far": 1.5}, 20, cv=0.02)
    plan.variant_ids = ["base", "base.aa", "far"]
    plan.keep = frozenset({"base", "base.aa", "far"})      # no stop: "far" stays unsettled
    assert rounds.decided(plan, values, 20) is None
    stop = rounds.Stop(12, "slower", "")
    values["base.aa"] = dict(values["base"])                 # the twin settles as equivalent
    assert rounds.decided(plan, values, 20, {"far": stop}).stop_reason.startswith(
        "decided after 20 rounds")


def test_a_resumed_sweep_replays_its_stops_and_takes_exactly_the_missing_samples():
    whole, taken, _, _ = _sweep(_plan(), RATIOS, cv=0.02)
    at = whole.stopped["far"].rounds
    cut = len([t for t in taken if t[1] < at + 2]) + 1       # interrupted two rounds after the stop
    first, part, _, _ = _sweep(_plan(), RATIOS, cv=0.02, stop_after=cut)
    assert first is None and len(part) == cut
    resumed, rest, _, stops = _sweep(_plan(), RATIOS, cv=0.02, done=part)
    assert sorted(part + rest) == sorted(taken)              # nothing twice, nothing missing
    assert resumed.stopped == whole.stopped and resumed.stop_reason == whole.stop_reason
    assert [vid for vid, _ in stops] == ["far"]              # the replay says its stop again


def test_a_sweep_stops_variants_but_not_a_fixed_design_layouts_or_the_controls():
    from flagsweep.jobs.controls import SUFFIXES
    from flagsweep.measure.options import MeasureOptions
    from flagsweep.measure.plan import plan_for

    ids = ["gcc-O2", "gcc-O2.aa", "gcc-O2.ref", "gcc-O0"]
    plan = plan_for(MeasureOptions(seed=1), ids, "gcc-O2", SUFFIXES, drop=True)
    assert plan.drop and plan.keep == {"gcc-O2", "gcc-O2.aa", "gcc-O2.ref"}
    assert plan.twin == "gcc-O2.aa"
    assert not plan_for(MeasureOptions(seed=1, runs=20), ids, "gcc-O2", SUFFIXES, drop=True).drop
    assert not plan_for(MeasureOptions(seed=1), ids, "gcc-O2", SUFFIXES).drop    # a fleet's
    layouts = {"gcc-O2.L1": "gcc-O2", "gcc-O2.L2": "gcc-O2"}
    assert not plan_for(MeasureOptions(seed=1, layouts=2), list(layouts), "gcc-O2.L1", SUFFIXES,
                        layouts=layouts, drop=True).drop
