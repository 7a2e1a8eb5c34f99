"""Duet rounds' parts without a sweep: the pairs as the statistics get them, the sides of each
pair over the rounds, and the pilot's figures and choice, on seeded synthetic runs."""

from __future__ import annotations

import math
import random

import pytest

from flagsweep import stats
from flagsweep.measure import metric, pairs, pilot, rounds
from flagsweep.measure.sample import Sample


def _duet(rnd: int, vid: str, x: float, hub_x: float, hub: str = "O2") -> list[Sample]:
    return [Sample(vid, rnd, 0, 0, wall_s=x, pair=vid), Sample(hub, rnd, 0, 0, wall_s=hub_x, pair=vid)]


def test_each_variant_pairs_with_the_baseline_run_of_its_own_duet():
    """The baseline runs once per duet; a variant's value is its own duet's ratio, so a
    comparison by round sees exactly its duets' ratios and never another duet's baseline run."""
    samples = []
    for r, moment in enumerate((1.0, 1.3, 0.8)):      # each round's duets at their own moments
        samples += _duet(r, "O3", 0.9 * moment, 1.0 * moment)
        samples += _duet(r, "O2.aa", 1.2 * moment * 1.1, 1.1 * 1.2 * moment)   # another moment
    values = metric.values_by_round(samples, lambda s: s.wall_s)
    for r in range(3):
        assert values["O3"][r] / values["O2"][r] == pytest.approx(0.9)
        assert values["O2.aa"][r] / values["O2"][r] == pytest.approx(1.0)
    # the baseline's value in a round is its level there, the geometric mean of its runs
    assert values["O2"][0] == pytest.approx(math.sqrt(1.0 * 1.32))


def test_an_incomplete_pair_gives_nothing_and_serial_runs_are_as_before():
    samples = _duet(0, "O3", 0.9, 1.0) + [Sample("O1", 0, 0, 0, wall_s=1.0, pair="O1")]
    samples += [Sample("O3", 1, 0, 0, wall_s=0.8, pair="O3"),
                Sample("O2", 1, 0, 0, failure="crashed", pair="O3")]
    values = metric.values_by_round(samples, lambda s: s.wall_s)
    assert values == {"O3": {0: pytest.approx(0.9)}, "O2": {0: pytest.approx(1.0)}}
    serial = [Sample("O2", 0, 0, 0, wall_s=1.0), Sample("O3", 0, 1, 0, wall_s=0.9)]
    assert metric.values_by_round(serial, lambda s: s.wall_s) == {"O2": {0: 1.0}, "O3": {0: 0.9}}
    partner = pairs.partners(_duet(0, "O3", 0.9, 1.0))
    assert partner == {(0, "O3", "O3"): "O2", (0, "O3", "O2"): "O3"}


def test_a_pairs_sides_alternate_over_rounds_seeded_and_balanced():
    plan = rounds.Plan(["O2", "O3", "O2.aa", "Os"], seed=5, baseline="O2", duet=(0, 1))
    assert rounds.order(plan, 3) and "O2" not in rounds.order(plan, 3)
    for vid in ("O3", "O2.aa", "Os"):
        sides = [rounds.duet(plan, vid, r).cpus for r in range(10)]
        assert all(a != b for a, b in sides)
        assert sum(cpus[0] == 0 for cpus in sides) == 5          # each CPU each side, 5 and 5
        assert all(sides[r] != sides[r + 1] for r in range(9))   # alternating
        # a function of the seed, the variant and the round: a resumed sweep replays it
        again = rounds.Plan(["O2", "O3", "O2.aa", "Os"], seed=5, baseline="O2", duet=(0, 1))
        assert [rounds.duet(again, vid, r) for r in range(10)] == \
            [rounds.duet(plan, vid, r) for r in range(10)]
    firsts = {rounds.duet(rounds.Plan(["O2", "O3"], seed=s, baseline="O2", duet=(0, 1)),
                          "O3", 0).cpus for s in range(20)}
    assert firsts == {(0, 1), (1, 0)}                            # the first side is seeded
    pads = rounds.duet(plan, "O3", 2).pads
    assert pads[0] == rounds.env_pad(plan, "O3", 2) and pads[1] != pads[0]


def test_a_cpu_faster_than_the_other_cancels_over_the_sides():
    """CPU 1 runs 4% faster: its side alternates, so the comparison's estimate keeps no part of
    it (the pairs' ratios move +-4% about the truth)."""
    plan = rounds.Plan(["O2", "O3"], seed=3, baseline="O2", duet=(0, 1))
    rng = random.Random(1)
    samples = []
    for r in range(16):
        d = rounds.duet(plan, "O3", r)
        speed = {0: 1.0, 1: 0.96}
        moment = math.exp(rng.gauss(0, 0.05))
        samples += _duet(r, "O3", 1.02 * moment * speed[d.cpus[0]], moment * speed[d.cpus[1]])
    values = metric.values_by_round(samples, lambda s: s.wall_s)
    c = stats.compare(values["O3"], values["O2"], seed=1)
    assert c.ratio == pytest.approx(1.02, abs=0.005)


# ---- the pilot -----------------------------------------------------------------------------

def _pilot_runs(moment_cv: float, duet_cv: float = 0.0, bias: float = 1.0, effect: float = 1.1,
                seed: int = 4, seconds: float = 1.0) -> list[Sample]:
    """A pilot's stored runs: for O3 and the twin, PAIRS serial pairs (each run its own moment)
    and PAIRS duets (one moment for both runs; O3 slowed by `bias` beside the baseline)."""
    rng = random.Random(seed)
    out = []
    for i in range(pilot.PAIRS):
        for vid, factor in (("O3", effect), ("O2.aa", 1.0)):
            own = (lambda: rng.gauss(0, 0.003))
            x, y = (seconds * math.exp(rng.gauss(0, moment_cv) + own()) for _ in range(2))
            out += _duet(pilot.serial_round(i), vid, factor * x, y)
            m = rng.gauss(0, moment_cv)
            x, y = (seconds * math.exp(m + own() + rng.gauss(0, duet_cv)) for _ in range(2))
            out += _duet(pilot.duet_round(i), vid, factor * x * (bias if vid == "O3" else 1.0), y)
    return out


def test_the_pilot_chooses_duet_where_it_is_narrower_and_agrees():
    fig = pilot.figures(_pilot_runs(moment_cv=0.05), lambda s: s.wall_s)
    assert fig.serial.pairs == fig.duet.pairs == 2 * pilot.PAIRS
    assert fig.duet.sd_pct < fig.serial.sd_pct / 5      # the moment cancels in duet
    # a serial round runs the three binaries one after the other, a duet round two duets
    assert fig.serial.round_s == pytest.approx(3.1, rel=0.1)
    assert fig.duet.round_s == pytest.approx(2.2, rel=0.1)
    assert fig.level == pytest.approx(1 - 0.05 / 2)
    assert all(b.agrees for b in fig.bias)
    chosen, why, warning = pilot.choose(fig, "auto")
    assert chosen == "duet" and warning is None
    assert why.startswith("duet: +-") and "agree on every comparison" in why


def test_the_pilot_keeps_serial_when_a_duet_biases_a_comparison_and_a_forced_duet_warns():
    """O3 runs 5% slower beside the baseline than alone (they share a core): its duets and
    its serial pairs disagree, whatever the spread."""
    fig = pilot.figures(_pilot_runs(moment_cv=0.0, bias=1.05), lambda s: s.wall_s)
    off = [b for b in fig.bias if not b.agrees]
    assert [b.variant for b in off] == ["O3"]
    assert off[0].difference_pct == pytest.approx(100 * math.log(1.05), abs=0.5)
    chosen, why, warning = pilot.choose(fig, "auto")
    assert chosen == "serial" and why.startswith("serial: the duet bias check failed: O3 reads")
    chosen, why, warning = pilot.choose(fig, "duet")
    assert chosen == "duet" and warning.startswith("the duet bias check failed: O3 reads")


def test_the_pilot_keeps_serial_where_duet_is_not_narrower():
    """Two runs at once contend (3% of noise each) and share no moment: duet is wider."""
    fig = pilot.figures(_pilot_runs(moment_cv=0.0, duet_cv=0.03), lambda s: s.wall_s)
    chosen, why, _ = pilot.choose(fig, "auto")
    assert chosen == "serial" and why.startswith("serial: duet is not narrower here: +-")


def test_a_pilot_without_pairs_is_serial_and_a_forced_duet_unchecked():
    fig = pilot.figures([], lambda s: s.wall_s)
    assert pilot.choose(fig, "auto")[0] == "serial"
    chosen, why, warning = pilot.choose(fig, "duet")
    assert chosen == "duet" and "unchecked" in why and warning


def test_the_bias_check_rarely_fails_without_a_bias():
    """Bonferroni over the comparisons: on 200 seeded pilots with no bias (CV 4%, shared 3%),
    at most about 5% fail the check."""
    failed = sum(not all(b.agrees for b in pilot.figures(
        _pilot_runs(moment_cv=0.03, duet_cv=0.02, seed=s), lambda x: x.wall_s).bias)
        for s in range(200))
    assert failed <= 0.08 * 200
