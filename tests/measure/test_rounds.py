"""The rounds (measure.rounds): the seeded order, resume, and the stopping rule as a local sweep
and a fleet ask it, on values from a stand-in measure (no program runs)."""

from __future__ import annotations

import numpy as np

from flagsweep.host import launcher
from flagsweep.measure import rounds
from flagsweep.measure.sample import Sample


def _simulate(plan, done=(), noise=0.0, effects=None, seed=0):
    """Drive rounds.rounds with a fake measure. Without `effects`: value 1.0 (+ alternating
    noise) per sample. With `effects` (variant -> ratio): seeded log-normal values with CV
    `noise`, the variant's ratio times the round's shared drift."""
    taken: list[tuple[str, int, int]] = []
    store: dict[str, dict[int, float]] = {}
    rng = np.random.default_rng(seed)

    def measure(vid, rnd, pos, pad):
        assert 0 <= pad <= launcher.ENV_PAD_MAX
        taken.append((vid, rnd, pos))
        if rnd >= 0:
            if effects is None:
                value = 1.0 + noise * (-1) ** len(store.get(vid, {}))
            else:
                value = effects.get(vid, 1.0) * (1 + 0.02 * rnd) * float(rng.lognormal(0, noise))
            store.setdefault(vid, {})[rnd] = value
        return Sample(vid, rnd, pos, pad)

    outcome = rounds.rounds(plan, set(done), measure, lambda: store)
    return outcome, taken


def test_every_round_runs_each_variant_once_in_a_seeded_shuffle():
    plan = rounds.Plan(["a", "b", "c", "d"], seed=5, warmup=1, min_runs=3, max_runs=3, baseline="a")
    outcome, taken = _simulate(plan, noise=0.5)
    for r in range(-1, 3):
        assert sorted(v for v, rnd, _ in taken if rnd == r) == ["a", "b", "c", "d"]
    orders = [tuple(rounds.order(plan, r)) for r in range(3)]
    assert len(set(orders)) > 1  # shuffled per round
    assert orders == [tuple(rounds.order(plan, r)) for r in range(3)]  # and reproducible
    assert outcome.rounds == 3 and outcome.stop_reason.startswith("the fixed 3 rounds are done")


def test_never_stops_before_a_verdict_can_pass_bh():
    """Identical values: every comparison is 'equivalent' from 6 rounds on, yet the rule waits
    for the rounds at which the exact test could pass BH at this m, plus the margin."""
    for ids, floor in ((["a", "a.aa", "b"], 7), ([f"v{i}" for i in range(21)], 10)):
        assert rounds.stats.fewest_decisive_pairs(len(ids) - 1) == floor
        plan = rounds.Plan(ids, seed=1, warmup=0, min_runs=5, max_runs=30, baseline=ids[0])
        outcome, _ = _simulate(plan, noise=0.0)
        assert outcome.rounds == floor + rounds.DECISION_MARGIN == rounds.first_stop(plan)
        assert outcome.stop_reason.startswith(f"decided after {outcome.rounds} rounds: "
                                              f"{len(ids) - 1} equivalent")
    # min_runs above the floor still holds the rule back
    plan = rounds.Plan(["a", "b"], seed=1, warmup=0, min_runs=12, max_runs=30, baseline="a")
    assert _simulate(plan, noise=0.0)[0].rounds == 12


def test_quiet_machine_ends_slower_not_inconclusive():
    """Baseline and twin at CV 0.3%, a variant at +5%, default options: the old precision rule
    stopped at 6 rounds (p 2/64, adjusted 0.0625, inconclusive); now it stops once the analysis
    can say 'slower'."""
    plan = rounds.Plan(["base", "base.aa", "var"], seed=3, warmup=0, baseline="base")
    outcome, _ = _simulate(plan, noise=0.003, effects={"var": 1.05}, seed=3)
    assert outcome.rounds == rounds.first_stop(plan) == 9
    assert outcome.stop_reason == "decided after 9 rounds: 1 equivalent, 1 slower"


def test_stops_once_everything_is_decided_and_runs_on_while_not():
    """CV 1%, +10%: decided well before max runs. CV 5%, +1.5%: undecided and wide, so max runs."""
    plan = rounds.Plan(["base", "base.aa", "var"], seed=4, warmup=0, baseline="base")
    outcome, _ = _simulate(plan, noise=0.01, effects={"var": 1.10}, seed=4)
    assert outcome.rounds < 20 and outcome.stop_reason.startswith(f"stopped after {outcome.rounds}"
                                                                  " rounds with 1 open (base.aa: ")
    assert "1 slower" in outcome.stop_reason and "beyond --max-runs 30" in outcome.stop_reason
    outcome, _ = _simulate(plan, noise=0.05, effects={"var": 1.015}, seed=4)
    assert outcome.rounds == 30 and outcome.stop_reason.startswith("max runs (30) reached: ")
    assert "widest unsettled 95% CI" in outcome.stop_reason
    assert max(outcome.half_widths.values()) > plan.precision


def test_resume_skips_what_is_done():
    plan = rounds.Plan(["a", "b"], seed=9, warmup=1, min_runs=2, max_runs=2, baseline="a")
    done = {("a", -1), ("b", -1), ("a", 0)}
    _, taken = _simulate(plan, done=done, noise=0.5)
    assert {(v, r) for v, r, _ in taken} == {("b", 0), ("a", 1), ("b", 1)}


def test_a_resumed_sweeps_progress_lines_go_on_from_the_first_round_it_measures():
    """Rounds taken before the resume are replayed (the stops see them again) but are no
    progress: a line for each counted the rounds from 1 again, as if the sweep had restarted."""
    plan = rounds.Plan(["a", "b"], seed=9, warmup=1, min_runs=6, max_runs=6, baseline="a")
    before = {(v, r) for v in ("a", "b") for r in range(-1, 3)} | {("a", 3)}   # round 4 begun
    lines: list[tuple[int, int]] = []
    store = {v: {r: 1.0 for r in range(3)} for v in ("a", "b")}

    def measure(vid, rnd, pos, pad):
        store[vid][rnd] = 1.0
        return Sample(vid, rnd, pos, pad)

    rounds.rounds(plan, before, measure, lambda: store,
                  round_done=lambda completed, most, _: lines.append((completed, most)))
    assert lines == [(4, 6), (5, 6), (6, 6)]


def test_budget_stops_before_a_round_that_would_overrun(monkeypatch):
    clock = iter(range(0, 10_000, 10))  # every call to monotonic() advances 10 s
    monkeypatch.setattr(rounds.time, "monotonic", lambda: next(clock))
    plan = rounds.Plan(["a", "b"], seed=1, warmup=0, min_runs=1, max_runs=50, budget_s=45,
                       precision=0.0001, baseline="a")
    outcome, _ = _simulate(plan, noise=0.3)
    assert "time budget of 45 s reached" in outcome.stop_reason and outcome.rounds < 50



def test_a_wall_clock_end_cuts_the_budget_counted_from_the_rounds_start():
    from flagsweep.measure.options import MeasureOptions
    from flagsweep.measure.plan import rounds_budget

    def now():
        return 1000.0

    assert rounds_budget(MeasureOptions(budget=1800), now) == 1800
    assert rounds_budget(MeasureOptions(budget=1800, until=1100.0), now) == 100
    assert rounds_budget(MeasureOptions(budget=60, until=1100.0), now) == 60
    assert rounds_budget(MeasureOptions(budget=None, until=1100.0), now) == 100
    assert rounds_budget(MeasureOptions(budget=1800, until=900.0), now) == 0   # past: none


def test_the_stopping_rule_as_a_fleet_asks_it_with_rounds_in_flight():
    """A fleet asks the same rule after each round a worker returns, while others still run:
    the rule stops once, later returns keep its outcome, and no round may start after it; the
    budget and max runs end it the way they end a local sweep."""
    now = [0.0]
    plan = rounds.Plan(["a", "b"], seed=1, warmup=0, min_runs=1, max_runs=30, baseline="a")
    stop = rounds.Stopping(plan, clock=lambda: now[0])
    values: dict[str, dict[int, float]] = {"a": {}, "b": {}}
    for r in range(rounds.first_stop(plan)):              # identical values: equivalent
        values["a"][r] = values["b"][r] = 1.0
        assert stop.may_start()
        decided = stop.after(values, 5.0)
        assert (decided is None) == (stop.completed < rounds.first_stop(plan))
    assert not stop.may_start()
    values["a"][99], values["b"][99] = 1.0, 2.0           # a round in flight comes back late
    assert stop.after(values, 5.0) is decided and stop.completed == rounds.first_stop(plan) + 1
    assert stop.final(values).stop_reason.startswith(f"decided after {rounds.first_stop(plan)} rounds")
    assert "decided after" in stop.said(values)

    plan = rounds.Plan(["a", "b"], seed=1, warmup=0, min_runs=30, max_runs=30, budget_s=12,
                       baseline="a")
    stop = rounds.Stopping(plan, clock=lambda: now[0])
    assert stop.may_start()                                # no pace yet: the first one starts
    now[0] = 5.0
    stop.after({"a": {0: 1.0}, "b": {0: 1.0}}, 5.0)
    assert stop.may_start()                                # 5 + 5 <= 12
    now[0] = 10.0
    stop.after({"a": {0: 1.0, 1: 1.0}, "b": {0: 1.0, 1: 1.0}}, 5.0)
    assert not stop.may_start()                            # 10 + 5 > 12
    assert stop.final({}).stop_reason.startswith("time budget of 12 s reached after 2 rounds")

    plan = rounds.Plan(["a", "b"], seed=1, warmup=0, min_runs=2, max_runs=2, baseline="a")
    stop = rounds.Stopping(plan, clock=lambda: now[0])
    for _ in range(2):
        stop.after({"a": {0: 1.0, 1: 1.1}, "b": {0: 1.2, 1: 1.0}}, 1.0)
    assert stop.final({}).stop_reason.startswith("the fixed 2 rounds are done")
