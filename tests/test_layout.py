"""Comparisons over layout replicates (flagsweep.stats.layout), on seeded simulations: the
two-level model holds its false-positive rate where layout moves a program by 2%, the one-level
comparison of pooled runs does not, and a real effect is still found."""

from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pytest
from tiny_target import TINY_SRC

from flagsweep import stats
from flagsweep.stats import layout

SWEEPS = 1000


def _arm(rng, mu: float, k: int, rounds: int, layout_sd: float, run_cv: float,
         drift: np.ndarray) -> layout.Replicates:
    """k builds of one variant, each with its own layout effect, measured in every round."""
    reps = {}
    for j in range(k):
        effect = mu + rng.normal(0, layout_sd)
        reps[f"L{j}"] = {r: math.exp(effect + drift[r] + rng.normal(0, run_cv))
                         for r in range(rounds)}
    return reps


def _sweep(rng, ratio: float = 1.0, k: int = 4, rounds: int = 10, layout_sd: float = 0.02,
           run_cv: float = 0.01, drift_cv: float = 0.01):
    drift = rng.normal(0, drift_cv, rounds)
    return (_arm(rng, math.log(ratio), k, rounds, layout_sd, run_cv, drift),
            _arm(rng, 0.0, k, rounds, layout_sd, run_cv, drift))


def _calls(comparisons: list[stats.Comparison]) -> float:
    """The share of single comparisons called faster or slower (threshold 1%, as a sweep)."""
    for c in comparisons:
        stats.adjust([c], threshold=0.01)
    return sum(c.verdict in ("faster", "slower") for c in comparisons) / len(comparisons)


def test_two_levels_hold_the_false_positive_rate_where_one_level_does_not():
    """No real effect, layout spread 2%, runs 1%, round drift 1%, 4 layouts a side, 10 rounds:
    one build a variant (today's sweep) calls most such sweeps faster or slower, and so does,
    less often, a one-level comparison of the 4 layouts' runs pooled by round; the two-level one
    stays within its 5% (its raw test's size too, within the Monte-Carlo error of 1000 sweeps)."""
    rng = np.random.default_rng(16)
    two, one, single = [], [], []
    for _ in range(SWEEPS):
        v, b = _sweep(rng)
        two.append(layout.compare(v, b))
        one.append(stats.compare(layout.pooled(v), layout.pooled(b), seed=1))
        single.append(stats.compare(v["L0"], b["L0"], seed=1))     # one build a variant
    size = sum(c.p_value < 0.05 for c in two) / SWEEPS
    two_rate, one_rate, single_rate = _calls(two), _calls(one), _calls(single)
    print(f"false calls: two-level {two_rate:.3f} (test size {size:.3f}), one-level over "
          f"4 layouts {one_rate:.3f}, one build a variant {single_rate:.3f}")
    assert two_rate <= 0.05 and size <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / SWEEPS)
    assert one_rate > 0.15 and single_rate > 0.35


def test_a_real_effect_beyond_the_layout_spread_is_still_found():
    rng = np.random.default_rng(17)
    found = [layout.compare(*_sweep(rng, ratio=1.10)) for _ in range(200)]
    assert _calls(found) >= 0.8
    assert all(c.verdict != "faster" for c in found)
    spread = np.median([c.layout_sd for c in found])
    assert 0.012 < spread < 0.03                          # the planted 2%, read back


def test_layout_says_what_it_rests_on_and_what_would_narrow_it():
    rng = np.random.default_rng(18)
    c = layout.compare(*_sweep(rng, ratio=1.005, k=3))
    stats.adjust([c], threshold=0.01)
    assert c.layouts == 3 and c.verdict == "inconclusive" and c.rounds_needed is None
    assert "3 layouts a side, layout alone moving it by +-" in c.why
    assert "more layouts" in c.why
    doc = c.to_json()
    assert doc["layouts"] == 3 and doc["layout_sd_pct"] == 100 * c.layout_sd


def test_identical_layouts_and_too_few_replicates():
    same = {"L0": {0: 1.0, 1: 1.0}, "L1": {0: 1.0, 1: 1.0}}
    slower = {"L0": {0: 1.2, 1: 1.2}, "L1": {0: 1.2, 1: 1.2}}
    c = layout.compare(slower, same)                      # a deterministic count: exact
    assert c.ci95 == c.ci90 == (c.ratio, c.ratio) and abs(c.ratio - 1.2) < 1e-12
    assert c.layout_sd == 0.0
    one = layout.compare({"L0": {0: 1.1, 1: 1.1}}, same)  # one layout: no interval
    stats.adjust([one], threshold=0.01)
    assert one.verdict == "inconclusive" and one.layouts == 1
    # A replicate that shares no round with the baseline has no level.
    assert layout.compare({"L0": {5: 1.0}, "L1": {0: 1.0, 1: 1.0}}, same).layouts == 1


# ---- the linker: shuffled layouts of one compiled program -------------------------------------

@pytest.mark.integration
@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_a_seed_moves_the_functions_and_leaves_the_code_and_its_output(compiler, tmp_path):
    """tiny compiled once with the layout's compile flags, linked with two seeds: the objects
    are shared, the order of the functions in the binary differs (so the code fingerprint
    does), and both binaries print the same for one input."""
    from flagsweep.build import fingerprint
    from flagsweep.build import layout as link

    if shutil.which(compiler) is None or link.unavailable(compiler):
        pytest.skip(f"{compiler} with LLD is not installed: {link.unavailable(compiler)}")
    objects = []
    for source in sorted(TINY_SRC.glob("*.c")):
        obj = tmp_path / f"{source.stem}.o"
        subprocess.run([compiler, "-O2", *link.COMPILE_FLAGS, "-I", str(TINY_SRC), "-c",
                        str(source), "-o", str(obj)], check=True)
        objects.append(str(obj))
    order, hashes, outputs = {}, {}, {}
    data = tmp_path / "input"
    data.write_bytes(bytes(range(256)) * 4096)
    for seed in (0, 1, 2):
        binary = tmp_path / f"tiny-{seed}"
        subprocess.run([compiler, *objects, *link.link_flags(seed), "-lm", "-o", str(binary)],
                       check=True)
        symbols = subprocess.run(["nm", "-n", str(binary)], capture_output=True, text=True,
                                 check=True).stdout.split("\n")
        order[seed] = [s.split()[2] for s in symbols if s.split()[1:2] in (["t"], ["T"])
                       and s.split()[2].startswith(("tiny_", "main"))]
        hashes[seed] = fingerprint.code_hash(binary)
        outputs[seed] = subprocess.run([str(binary), str(data), "1"], capture_output=True,
                                       check=True).stdout
    assert sorted(order[0]) == sorted(order[1]) == sorted(order[2])    # the same functions
    assert len({tuple(o) for o in order.values()}) > 1                 # placed differently
    assert len(set(hashes.values())) == 3
    assert outputs[0] == outputs[1] == outputs[2]
