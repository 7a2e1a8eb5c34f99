"""What a tune's budget buys (tune.budget): the proof's layouts sized by power at a planted
layout spread, cut to what a planted budget and pace leave, and the words that say so; the
power they rest on checked against flagsweep's own comparison over layouts; the opening line
and a line per built candidate when stderr is not a terminal. Plans are asserted, never a
time."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from tiny_target import write_tiny_target

from flagsweep import stats
from flagsweep.compilation import variants
from flagsweep.experiment import target
from flagsweep.measure.options import MeasureOptions
from flagsweep import model
from flagsweep.model.tune import TuneRecord
from flagsweep.results.store import Store
from flagsweep.stats import layout
from flagsweep.tune import batch, budget, cost, tune

ROLES = ["base", "-O3", "winner", "minimal", "runner-up", "runner-up"]
GZIP = budget.Spread(0.011, "planted: gzip's +-1.1%")
# 20 s a set's build, 1.5 s a run of the full input, 6 rounds at least
PACE = budget.Pace(20.0, 1.5, 6)


def test_the_proof_takes_the_fewest_layouts_that_confirm_the_claim_with_its_power():
    plan = budget.proof_plan(ROLES, GZIP, PACE, 10_000.0, 1.0)
    k = int(plan.layouts)
    assert plan.status == "sized" and plan.sets == 6 and plan.dropped == 0
    assert plan.claim_pct == 3.0 and plan.wanted == k
    # the fewest: one layout fewer misses the power, these reach it (6 comparisons: 5 sets
    # against the base and the A/A twin)
    assert layout.power(k, 0.011, 3.0, 1.0, 6) >= budget.POWER > layout.power(k - 1, 0.011, 3.0,
                                                                              1.0, 6)
    assert plan.power == pytest.approx(layout.power(k, 0.011, 3.0, 1.0, 6), abs=1e-3)
    assert plan.why.startswith(f"6 sets on the full input, {k} layouts each (the fewest for "
                               f"90%): a 3% gain is confirmed against the base with ")
    assert "at the +-1.1% layout spread (planted: gzip's +-1.1%)" in plan.why
    # a wider spread asks for more layouts, up to the most the plan takes
    wide = budget.proof_plan(ROLES, budget.Spread(0.03, "wide"), PACE, 10_000.0, 1.0)
    assert wide.layouts == budget.MOST_LAYOUTS and wide.power < budget.POWER
    assert "16 layouts each (the most the plan takes)" in wide.why
    # a narrower one fewer
    assert budget.proof_plan(ROLES, budget.Spread(0.005, "narrow"), PACE, 10_000.0,
                             1.0).layouts < k


def test_a_proof_that_does_not_fit_drops_its_runners_up_then_layouts_and_says_so():
    whole = sum(budget.need(6, 11, PACE))
    plan = budget.proof_plan(ROLES, GZIP, PACE, whole - 1, 1.0)
    # without the last runner-up the same layouts fit: the sets the search ranked lowest go
    # first
    assert plan.status == "cut" and plan.sets == 5 and plan.dropped == 1
    assert plan.layouts == plan.wanted == 11
    assert sum(budget.need(5, 11, PACE)) <= whole - 1
    assert plan.why.startswith("5 sets (1 runner-up left out to fit) on the full input, 11 "
                               "layouts each (the fewest for 90%)")
    assert plan.why.endswith("; a longer --budget gives the proof more")
    both = budget.proof_plan(ROLES, GZIP, PACE, sum(budget.need(5, 11, PACE)) - 1, 1.0)
    assert (both.sets, both.dropped) == (4, 2) and "(2 runners-up left out to fit)" in both.why
    # less time: fewer layouts, the most that fit, and what the power would have been
    tight = budget.proof_plan(ROLES, GZIP, PACE, 600.0, 1.0)
    k = int(tight.layouts)
    assert tight.status == "cut" and tight.sets == 4 and k < tight.wanted
    assert sum(budget.need(4, k, PACE)) <= 600 < sum(budget.need(4, k + 1, PACE))
    assert f"cut to {k} layouts each to fit, where {tight.wanted:g} would give 90%" in tight.why
    assert f"with {tight.power:.0%} power" in tight.why and tight.power < budget.POWER
    assert tight.builds_s + tight.rounds_s <= tight.left_s == 600.0


def test_a_proof_whose_least_does_not_fit_is_not_run_and_says_what_would():
    least = sum(budget.need(4, budget.LEAST_LAYOUTS, PACE))
    plan = budget.proof_plan(ROLES, GZIP, PACE, least - 1, 1.0)
    assert plan.status == "skipped" and plan.layouts is None and plan.sets == 0
    assert plan.why.startswith("not run: the ")
    assert "do not hold its least, 4 sets in 2 layouts (builds about " in plan.why
    assert plan.why.endswith("; a longer --budget would")
    assert budget.proof_plan(ROLES, GZIP, PACE, least, 1.0).layouts == 2


def test_layouts_asked_are_taken_when_they_fit_and_cut_when_not():
    asked = budget.proof_plan(ROLES, GZIP, PACE, 10_000.0, 1.0, asked=4)
    assert asked.status == "sized" and asked.layouts == 4 and asked.asked == 4
    assert "4 layouts each (as --layouts asked)" in asked.why
    cut = budget.proof_plan(ROLES, GZIP, PACE, sum(budget.need(4, 3, PACE)), 1.0, asked=8)
    assert cut.status == "cut" and (cut.sets, cut.layouts) == (4, 3)


def test_the_builds_cost_a_compile_a_set_and_a_link_a_later_layout():
    # 3 sets in 4 layouts: 3 compiles, 9 later layouts and the twin's 4 links at 0.4
    builds, rounds = budget.need(3, 4, budget.Pace(10.0, 2.0, 6))
    assert builds == pytest.approx(30 + 13 * 0.4 * 10)
    assert rounds == pytest.approx(6 * 4 * 4 * 2.0)      # 6 rounds of 4 arms in 4 layouts


def test_the_power_is_what_the_comparison_over_layouts_calls():
    """The noncentral-t power against flagsweep's own decisions: a set truly 3% faster, three
    no-effect sets and the twin over K layouts a side, each layout its own fixed luck (sd
    0.95%) and each run its noise (0.5%, 8 rounds), compared (stats.layout.compare_arms) and
    adjusted (stats.adjust) as a proof's sweep is. A layout's level then spreads by
    sqrt(0.95^2 + 0.5^2 pi/2 / 8)% (its median over the rounds)."""
    rng = np.random.default_rng(66)
    k, luck, noise, rounds, trials, called = 6, 0.0095, 0.005, 8, 300, 0
    truth = {"base": 0.0, "o3": 0.0, "win": math.log(0.97), "r1": 0.0, "r2": 0.0,
             "base.aa": 0.0}
    for _ in range(trials):
        drift = rng.normal(0, 0.01, rounds)
        arms = {vid: {f"{vid}.L{j}": dict(enumerate(np.exp(
            mu + rng.normal(0, luck) + drift + rng.normal(0, noise, rounds))))
            for j in range(k)} for vid, mu in truth.items()}
        found = layout.compare_arms(arms, "base")
        stats.adjust(list(found.values()), threshold_pct=1.0, alpha=0.05)
        called += found["win"].verdict == "faster"
    sd = math.sqrt(luck ** 2 + noise ** 2 * math.pi / 2 / rounds)
    expected = layout.power(k, sd, 3.0, 1.0, m=5)
    assert 0.3 < expected < 0.9
    assert abs(called / trials - expected) < 3 * math.sqrt(expected * (1 - expected) / trials)


def test_the_opening_says_how_many_candidates_the_search_can_build():
    shares = budget.Shares(search=0.6, ablation=0.15, proof=0.25)
    said = budget.opening(1200.0, shares, 105.0, 279, cached=False)
    assert said.startswith("budget 20 min here: the search's 12 min build about 6 candidates "
                           "at 2 min a build (the base's, 279 compile lines, just now), fewer")
    assert said.endswith("then 3 min for the ablation and 5 min for the proof, its layouts "
                         "sized by power in what is left")
    quick = budget.opening(3600.0, shares, 0.8, 12, cached=True)
    assert "so the rounds, not the builds, decide how many candidates" in quick
    assert "when it was cached" in quick
    assert "said after the first batch" in budget.opening(3600.0, shares, None, None, True)


def test_a_batch_near_the_searchs_end_builds_only_what_fits():
    assert budget.batch_fit(6, 1000.0, 100.0, 30.0) == (6, None)
    n, why = budget.batch_fit(6, 330.0, 100.0, 30.0)
    assert n == 3 and why.endswith(": a batch of 3")
    n, why = budget.batch_fit(6, 100.0, 100.0, 30.0)
    assert n == 0 and why.endswith(": the search ends here")
    assert budget.batch_fit(6, 10.0, 0.0, 30.0) == (6, None)       # no pace yet


def test_the_spread_is_the_programs_own_else_the_default(monkeypatch):
    monkeypatch.setattr(budget.confirmation, "measured_spread",
                        lambda *a: (0.012, "layout spread +-1.2% measured by run x (4 layouts)"))
    found = budget.spread(None, None, "gzip", {"hostname": "h"})
    assert found.sd == 0.012 and "run x" in found.source
    monkeypatch.setattr(budget.confirmation, "measured_spread", lambda *a: None)
    default = budget.spread(None, None, "gzip", {"hostname": "h"})
    assert default.source.startswith("the default")
    assert budget.confirmation.reach_of_spread(default.sd) == pytest.approx(5.0)


class Recorded(SimpleNamespace):
    """A tune's record alone (none of its identity: model_construct), and the setting it
    builds with."""
    def save(self):
        pass


@pytest.mark.integration
def test_the_tune_says_what_its_budget_buys_and_a_line_per_build(tmp_path, capsys):
    """The base of the real tiny program built as a tune starts: the opening line from its
    build, its time kept as the search's pace, and (stderr not a terminal, as here) one line
    for it as `run` prints them; started again elsewhere, the build cache's record tells the
    time."""
    # A name of its own: the build cache is the worker's for the whole session, and the tune
    # tests build the same tiny at -O2, which would make the first build here a cached one.
    t = target.load(str(write_tiny_target(tmp_path / "tiny", name="tinybudget", megabytes=0.2,
                                          quick_megabytes=0.1)))
    setting = batch.Setting(t, "gcc", ("-O2",), variants.Options(out_dir=tmp_path / "o"),
                            MeasureOptions(), Store(), print)
    said: list[str] = []
    first = Recorded(state=TuneRecord.model_construct(), setting=setting, out=tmp_path / "one",
                     opts=SimpleNamespace(budget_s=1200.0))
    tune._opening(first, said.append)
    assert said[0].startswith("budget 20 min here: the search's 12 min")
    assert "compile lines, just now)" in said[0]
    assert cost.search_pace(first) > 0 and first.state.opening.cached is False
    assert [line.split(":")[0] for line in capsys.readouterr().err.splitlines()
            if line.startswith("built ")] == ["built 1/1"]
    again = Recorded(state=TuneRecord.model_construct(), setting=setting, out=tmp_path / "two",
                     opts=SimpleNamespace(budget_s=1200.0))
    tune._opening(again, said.append)
    assert "when it was cached)" in said[1] and again.state.opening.cached is True
    tune._opening(again, said.append)            # said once: a resumed tune says nothing
    assert len(said) == 2
