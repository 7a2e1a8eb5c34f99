"""The statistics: the median CI (exact ranks, coverage by simulation), and the comparison
machinery judged by seeded simulations of realistic noise (A/A false positives, power at the
default run count, equivalence, unequal n), plus units worked out by hand."""

from __future__ import annotations

import json
import math
import time
from collections import Counter

import numpy as np
import pytest
from scipy import stats as sps

from flagsweep import stats
from flagsweep.stats import intervals


def test_too_few_samples_have_no_95_percent_interval():
    assert stats.median_ci([1, 2, 3, 4, 5]) is None      # [min, max] covers only 93.75%
    assert stats.median_ci([]) is None


def test_known_ranks():
    # n = 6: [x(1), x(6)] covers 1 - 2/64 = 96.9%.
    ci = stats.median_ci([6, 1, 5, 2, 4, 3])
    assert (ci.low, ci.median, ci.high) == (1, 3.5, 6)
    assert ci.conf == pytest.approx(1 - 2 / 64)
    # n = 20: ranks 6 and 15 (a textbook value, e.g. Conover's table A3).
    x = list(range(1, 21))
    ci = stats.median_ci(x)
    assert (ci.low, ci.high) == (6, 15)
    assert ci.conf >= 0.95


def test_coverage_by_simulation():
    """Seeded: skewed (log-normal) timings; the true median must be inside >= ~95% of the time."""
    rng = np.random.default_rng(2003)
    true_median = 1.0  # median of lognormal(0, s) is e^0
    hits = 0
    trials = 2000
    for _ in range(trials):
        ci = stats.median_ci(rng.lognormal(0.0, 0.05, size=15))
        hits += ci.low <= true_median <= ci.high
    assert 0.94 <= hits / trials <= 0.995


# ---------------------------------------------------------------------------------------------
# Seeded simulations: the verdicts must mean what they say on realistic noise.
# ---------------------------------------------------------------------------------------------

TRIALS = 200


def _sigma(cv: float) -> float:
    """Log-normal sigma giving coefficient of variation `cv`."""
    return math.sqrt(math.log1p(cv * cv))


def _arm(rng, drift, cv, shift, outlier_rate, max_drop) -> dict[int, float]:
    """One binary's samples over the rounds: the round's shared drift, its own log-normal noise,
    occasional 30% stalls, and 0..max_drop failed (absent) samples."""
    n = len(drift)
    x = (1 + shift) * drift * rng.lognormal(0.0, _sigma(cv), n)
    x = np.where(rng.random(n) < outlier_rate, x * 1.3, x)
    failed = set(rng.choice(n, rng.integers(0, max_drop + 1), replace=False).tolist())
    return {r: float(x[r]) for r in range(n) if r not in failed}


def _sweep(rng, rounds, cv, shifts, *, drift_cv=0.01, outlier_rate=0.05, max_drop=3,
           seed=0) -> tuple[list[stats.RatioEstimate], dict, list[dict]]:
    """One sweep: a complete baseline and one variant per shift, all in the same rounds (so they
    share each round's drift), compared and adjusted together as the integrator does."""
    drift = rng.lognormal(0.0, _sigma(drift_cv), rounds)
    baseline = _arm(rng, drift, cv, 0.0, outlier_rate, 0)
    variants = [_arm(rng, drift, cv, s, outlier_rate, max_drop) for s in shifts]
    comps = [stats.compare(v, baseline, seed=seed * 100 + k) for k, v in enumerate(variants)]
    stats.adjust(comps)
    return comps, baseline, variants


def _report(name: str, counts: Counter, started: float) -> None:
    print(f"\n{name}: {dict(counts)} in {time.perf_counter() - started:.2f} s")


def test_aa_false_positive_rate():
    """A/A with realistic noise: CV 1-3%, 5% stalls x1.3, per-round drift, 0-3 failed samples per
    variant, 10-20 rounds, 4 comparisons per sweep. faster/slower must stay rare, per comparison
    and per sweep (BH controls the family-wise rate when every null is true)."""
    started = time.perf_counter()
    rng = np.random.default_rng(1)
    verdicts, sweeps_with_fp = Counter(), 0
    for trial in range(TRIALS):
        comps, _, _ = _sweep(rng, int(rng.integers(10, 21)), rng.uniform(0.01, 0.03), [0.0] * 4,
                             seed=trial)
        verdicts.update(c.verdict for c in comps)
        sweeps_with_fp += any(c.verdict in ("faster", "slower") for c in comps)
    fp = (verdicts["faster"] + verdicts["slower"]) / (4 * TRIALS)
    _report("A/A", verdicts, started)
    print(f"A/A false positives: {fp:.2%} of comparisons, {sweeps_with_fp / TRIALS:.1%} of sweeps")
    assert fp <= 0.05
    assert sweeps_with_fp / TRIALS <= 0.05


def test_planted_three_percent_is_found_at_ten_rounds():
    """+3% and -3% at CV 1% with 10 rounds (round drift included, which pairing cancels), in one
    sweep with two A/A arms so BH has a realistic family: found >= 90% of the time each. (With
    plain 95% intervals 97-98%; two selected of four need 97.5% false-coverage adjusted ones,
    which at 10 pairs cut three more Walsh averages from each end.)"""
    started = time.perf_counter()
    rng = np.random.default_rng(3)
    slower, faster, wrong = 0, 0, 0
    for trial in range(TRIALS):
        comps, _, _ = _sweep(rng, 10, 0.01, [0.03, -0.03, 0.0, 0.0], outlier_rate=0.0,
                             max_drop=0, seed=trial)
        slower += comps[0].verdict == "slower"
        faster += comps[1].verdict == "faster"
        wrong += comps[0].verdict == "faster" or comps[1].verdict == "slower"
        wrong += any(c.verdict in ("faster", "slower") for c in comps[2:])
    _report("power +-3%", Counter(slower=slower, faster=faster, wrong=wrong), started)
    print(f"power at 3%, CV 1%, 10 rounds: slower {slower / TRIALS:.1%}, "
          f"faster {faster / TRIALS:.1%}")
    assert slower / TRIALS >= 0.90
    assert faster / TRIALS >= 0.90
    assert wrong == 0


def test_stalls_and_failures_cost_power_but_never_flip_a_verdict():
    """The same 3% with 5% stalls and 0-3 failed samples: 10 rounds are then often too few (a
    stall in the baseline's round looks like one round where the variant was 27% faster), and
    what is missed must come out inconclusive, asking for more rounds, never the wrong way."""
    started = time.perf_counter()
    rng = np.random.default_rng(4)
    found, counts = 0, Counter()
    for trial in range(TRIALS):
        comps, _, _ = _sweep(rng, 10, 0.01, [0.03], seed=trial)
        c = comps[0]
        counts[c.verdict] += 1
        found += c.verdict == "slower"
        assert c.verdict in ("slower", "inconclusive")
        if c.verdict == "inconclusive":
            assert c.rounds_needed > c.n_pairs
    _report("power +3% with stalls and failures", counts, started)
    print(f"power at 3%, CV 1%, 10 rounds, 5% stalls, 0-3 failures: {found / TRIALS:.1%}")
    assert found / TRIALS >= 0.5


def test_tost_calls_a_negligible_shift_equivalent():
    """0.2% at CV 0.5% with 30 rounds (drift, stalls, failures included): equivalent within the
    default 1% threshold in >= 90% of trials."""
    started = time.perf_counter()
    rng = np.random.default_rng(5)
    counts = Counter()
    for trial in range(TRIALS):
        comps, _, _ = _sweep(rng, 30, 0.005, [0.002], seed=trial)
        counts[comps[0].verdict] += 1
    _report("TOST 0.2%", counts, started)
    print(f"equivalent at 0.2%, CV 0.5%, 30 rounds: {counts['equivalent'] / TRIALS:.1%}")
    assert counts["equivalent"] / TRIALS >= 0.90
    assert counts["faster"] + counts["slower"] == 0


def test_unequal_sample_sizes_do_not_create_significance():
    """A/A where every variant lost a random half of its rounds (pyperf's unequal-n path
    reported "significant"): only the shared rounds are compared, and false positives stay rare."""
    started = time.perf_counter()
    rng = np.random.default_rng(6)
    verdicts = Counter()
    for trial in range(TRIALS):
        rounds = int(rng.integers(10, 21))
        drift = rng.lognormal(0.0, _sigma(0.01), rounds)
        cv = rng.uniform(0.01, 0.03)
        baseline = _arm(rng, drift, cv, 0.0, 0.05, 0)
        comps = []
        for k in range(4):
            full = _arm(rng, drift, cv, 0.0, 0.05, 0)
            kept = rng.choice(rounds, rounds // 2, replace=False)
            half = {int(r): full[int(r)] for r in kept}
            comps.append(stats.compare(half, baseline, seed=trial * 10 + k))
            assert comps[-1].n_pairs == len(half)
        stats.adjust(comps)
        verdicts.update(c.verdict for c in comps)
    fp = (verdicts["faster"] + verdicts["slower"]) / (4 * TRIALS)
    _report("A/A, half the rounds missing", verdicts, started)
    print(f"unequal n false positives: {fp:.2%} of comparisons")
    assert fp <= 0.05


# ---------------------------------------------------------------------------------------------
# Units, with numbers worked out by hand.
# ---------------------------------------------------------------------------------------------

def test_outlier_indices_modified_z():
    # median 10.025, MAD 0.075: 13 has M = 0.6745 * 2.975 / 0.075 = 26.8; 10.1 only 0.67.
    assert stats.outlier_indices([10, 10.1, 9.9, 10.05, 9.95, 13]) == [5]
    assert stats.outlier_indices([10, 10.1, 9.9, 10.05, 9.95, 7]) == [5]       # both tails
    assert stats.outlier_indices([10, 10.1, 9.9, 10.05, 9.95, 10.3]) == []     # M = 1.85
    # MAD == 0: no scale, so anything off the median is flagged; nothing when all agree.
    assert stats.outlier_indices([5, 5, 5, 5, 6]) == [4]
    assert stats.outlier_indices([5, 5, 5]) == []
    assert stats.outlier_indices([]) == []


def test_summarize_small_dict():
    s = stats.summarize({1: 1.0, 2: 1.1, 3: 0.9, 5: 5.0})
    assert s.n == 4 and s.median == pytest.approx(1.05) and s.mean == pytest.approx(2.0)
    assert s.ci95 is None                                  # n < 6: no 95% order-statistic CI
    assert s.cv == pytest.approx(math.sqrt(12.02 / 3) / 2)  # sd (ddof 1) / mean
    assert (s.outliers, s.outlier_rounds) == (1, (5,))     # reported, not dropped: mean has it
    doc = s.to_json()
    assert {"n", "median", "ci95", "cv", "outliers", "mean", "outlier_rounds"} <= doc.keys()
    assert doc["outlier_rounds"] == [5]
    json.dumps(doc, allow_nan=False)

    s = stats.summarize({r: 10.0 + r % 3 for r in range(9)})
    assert s.ci95 is not None and s.ci95[0] <= s.median <= s.ci95[1]
    assert stats.summarize({}).to_json() == {"n": 0, "median": None, "ci95": None, "cv": None,
                                             "outliers": 0, "mean": None, "outlier_rounds": []}
    assert stats.summarize({7: 3.0}).cv is None


def _comp(p, ci95, ci90=None, n=10, ratio=None):
    ratio = ratio if ratio is not None else math.sqrt(ci95[0] * ci95[1])
    return stats.RatioEstimate(ratio, ci95, ci90 or ci95, p, n)


def test_benjamini_hochberg_and_verdicts_by_hand():
    # p = .01 .04 .03 .005 (m = 4). Sorted: .005 .01 .03 .04 -> x4/rank: .02 .02 .04 .04,
    # already monotone, so in input order: .02 .04 .04 .02.
    faster = _comp(0.01, (0.95, 0.97))
    slower = _comp(0.04, (1.02, 1.05))
    negligible = _comp(0.03, (0.985, 1.006), (0.992, 1.004))   # real, but inside +-1%
    unsure = _comp(0.005, (0.975, 1.0), (0.98, 0.998), ratio=0.99)
    comps = [faster, slower, negligible, unsure]
    stats.adjust(comps)
    assert [c.p_adjusted for c in comps] == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert [c.verdict for c in comps] == ["faster", "slower", "equivalent", "inconclusive"]
    assert unsure.rounds_needed > unsure.n_pairs
    assert all(c.rounds_needed is None for c in comps[:3])
    assert all(c.why for c in comps)
    # The same p-values through scipy directly: adjust uses it, not a home-made BH.
    assert sps.false_discovery_control([0.01, 0.04, 0.03, 0.005]) == pytest.approx(
        [0.02, 0.04, 0.04, 0.02])


def test_significant_but_not_beyond_threshold_is_not_faster():
    c = _comp(0.001, (0.985, 0.995))
    stats.adjust([c])
    assert c.verdict == "inconclusive" and "reaches into" in c.why
    assert c.rounds_needed > c.n_pairs


def test_rounds_needed_follows_the_ci_width():
    # estimate 0.97, the 95% CI's upper end 0.995: half-width log(0.995/0.97) must shrink
    # below the margin log(0.97/0.99), at n' = n * (hw / margin)^2.
    c = _comp(0.02, (0.94, 0.995), ratio=0.97, n=10)
    stats.adjust([c])
    expect = math.ceil(10 * (math.log(0.995 / 0.97) / math.log(0.99 / 0.97)) ** 2)
    assert c.verdict == "inconclusive" and c.rounds_needed == expect == 16
    # CI already clear of the band, but p = 0.2: z = 1.28 must grow to 1.96 like sqrt(n).
    c = _comp(0.2, (0.95, 0.985), ratio=0.97, n=10)
    stats.adjust([c])
    assert c.rounds_needed == math.ceil(10 * (1.959964 / 1.281552) ** 2) == 24
    # On the band's edge nothing decides soon: capped, and the text says so.
    edge = _comp(0.5, (0.95, 1.03), ratio=0.99)
    stats.adjust([edge])
    assert edge.rounds_needed == stats.ROUNDS_CAP and "or more" in edge.why


def test_exact_permutation_p_by_hand():
    # 4 pairs all slower: only the all-plus and all-minus sign vectors reach |T| = 10 -> 2/16.
    base = {r: 1.0 for r in range(4)}
    c = stats.compare({0: 1.01, 1: 1.02, 2: 1.03, 3: 1.04}, base)
    assert c.p_value == pytest.approx(2 / 16)
    assert c.n_pairs == 4
    # Log ratios ranked 1, -2, 3, 4: T = 6; sign vectors with |T*| >= 6 negate rank sets {},
    # {1}, {2} or their complements -> 6/16.
    c = stats.compare({r: math.exp(0.01 * d) for r, d in enumerate([1, -2, 3, 4])}, base)
    assert c.p_value == pytest.approx(6 / 16)


def test_random_flips_beyond_exact_size_are_seeded_and_never_zero():
    base = {r: 1.0 for r in range(20)}
    var = {r: 1.01 + 0.001 * r for r in range(20)}
    a = stats.compare(var, base, seed=7)
    b = stats.compare(var, base, seed=7)
    assert a == b                                   # deterministic given the seed
    assert 0 < a.p_value <= 3 / 20001               # Phipson & Smyth: (1 + hits) / (1 + N)


def test_too_few_pairs_is_inconclusive_and_json_safe():
    c = stats.compare({1: 1.0, 2: 1.1}, {3: 1.0, 4: 1.0})
    assert c.n_pairs == 0 and c.p_value == 1.0 and c.ratio == pytest.approx(1.05)
    stats.adjust([c])
    assert c.verdict == "inconclusive" and c.rounds_needed > 0 and "only 0 round" in c.why
    doc = c.to_json()
    assert doc["ci95"] is None and doc["ci90"] is None
    assert {"ratio", "ci95", "p_value", "p_adjusted", "verdict", "ci90", "n_pairs",
            "rounds_needed", "why"} <= doc.keys()
    json.dumps(doc, allow_nan=False)


def test_metric_with_zeros_still_compares():
    # sys time is often 0: no log ratio, plain differences and the ratio of medians instead.
    base = {r: [0.0, 0.01, 0.01, 0.02][r % 4] for r in range(12)}
    var = {r: x + 0.01 for r, x in base.items()}
    c = stats.compare(var, base)
    stats.adjust([c])
    assert c.p_value == pytest.approx(2 / 2 ** 12)
    assert c.ratio == pytest.approx(2.0)
    json.dumps(c.to_json(), allow_nan=False)


def test_identical_counts_are_equivalent():
    # A deterministic metric (instruction counts) with the same value every round.
    c = stats.compare({r: 1e9 for r in range(8)}, {r: 1e9 for r in range(8)})
    stats.adjust([c])
    assert (c.ratio, c.p_value, c.verdict) == (1.0, 1.0, "equivalent")


def test_detectable_effect_and_rounds_for_precision_numbers():
    # The 1 - alpha/m interval (a lone effect's false-coverage adjusted one) must clear the
    # threshold: log(1.01) + 0.0224 + 0.8416 / 1.96 * 0.0196 = 0.04077 -> 4.16%.
    assert stats.detectable_pct(0.0196, 0.0224, 1.0) == pytest.approx(4.161, abs=1e-3)
    # A big 1 - alpha/m interval: log(1.01) + 0.05 + 0.8416 / 1.96 * 0.001 = 0.06038 -> 6.22%.
    assert stats.detectable_pct(0.001, 0.05, 1.0) == pytest.approx(6.224, abs=1e-3)
    assert stats.detectable_pct(0.01, math.inf, 1.0) == math.inf
    # ... and the rounds that bring it down to an effect: half-widths shrink as 1/sqrt(n).
    n = stats.rounds_to_detect(0.0196, 0.0224, 10, 2.0, 1.0, m=2)
    shrink = lambda k: math.sqrt(10 / k)  # noqa: E731
    assert stats.detectable_pct(0.0196 * shrink(n), 0.0224 * shrink(n), 1.0) <= 2.0
    assert stats.detectable_pct(0.0196 * shrink(n - 1), 0.0224 * shrink(n - 1), 1.0) > 2.0
    assert stats.rounds_to_detect(0.0196, 0.0224, 10, 1.0, 1.0, m=2) is None
    # Half-width W: n = (1.96 CV / W)^2.  CV 1%, W 1% -> 3.84 -> 4; CV 2%, W 0.5% -> 61.5 -> 62.
    assert stats.rounds_for_precision(0.01, 1.0) == 4
    assert stats.rounds_for_precision(0.02, 0.5) == 62
    assert stats.rounds_for_precision(0.01, 1.96) == 2        # exactly 1, but a CI needs 2
    # pyperf's 4 * 1.96^2 * CV^2 / W^2 is this formula with W the full width.
    cv, w = 0.03, 0.4
    pyperf = math.ceil(4 * 1.96 ** 2 * (cv * 100) ** 2 / w ** 2)
    assert stats.rounds_for_precision(cv, w / 2) == pyperf


def test_rounds_for_precision_delivers_the_half_width():
    """Seeded: at the n it asks for, the mean's 95% CI half-width is about the target."""
    rng = np.random.default_rng(11)
    n = stats.rounds_for_precision(0.05, 1.0)                 # (1.96 * 5)^2 = 96.04 -> 97
    x = rng.normal(1.0, 0.05, size=(2000, n))
    half = 1.96 * x.std(axis=1, ddof=1) / np.sqrt(n) / x.mean(axis=1) * 100
    assert n == 97 and np.median(half) == pytest.approx(1.0, abs=0.02)


def test_noise_from_the_twin_and_its_warning():
    rng = np.random.default_rng(12)
    drift = rng.lognormal(0, 0.05, 10)                   # big drift: pairing must cancel it
    base = {r: float(drift[r] * rng.lognormal(0, 0.002)) for r in range(10)}
    twin = {r: float(drift[r] * rng.lognormal(0, 0.002)) for r in range(10)}
    quiet = stats.noise(base, twin, threshold_pct=1.0, m=2)
    assert quiet["source"] == "the A/A twin" and quiet["n_pairs"] == 10
    assert quiet["sd_log_diff"] < 0.005 and quiet["warning"] is None
    assert 1.0 < quiet["mde_pct"] < 1.6                   # the threshold plus a little
    assert quiet["baseline_cv"] > 0.02                    # the drift is in the CV, not the pairs

    loud = stats.noise(base, None, threshold_pct=1.0, m=2)  # no twin: sqrt(2) x CV, drift and all
    assert "sqrt(2)" in loud["source"] and loud["mde_pct"] > 2.0
    assert loud["warning"].startswith(f"with 10 rounds this sweep calls effects of "
                                      f"{loud['mde_pct']:.1f}% or more (80% power)")
    rounds = loud["rounds_needed"]
    assert rounds > 10 and loud["warning"].endswith(f"About {rounds} rounds would call 2%")
    assert quiet["rounds_needed"] is None
    json.dumps(loud, allow_nan=False)
    # A twin that shares only 2 rounds cannot give the paired sd: the fallback, and it says so.
    short = stats.noise(base, {0: 1.0, 1: 1.0}, threshold_pct=1.0, m=2)
    assert "too few usable A/A twin rounds" in short["source"]
    assert short["sd_log_diff"] == loud["sd_log_diff"] and short["n_pairs"] == 10
    # Too few rounds for the exact test to pass BH at 40 comparisons (11): nothing is detectable.
    few = stats.noise(base, twin, threshold_pct=1.0, m=40)
    assert few["mde_pct"] is None and "no effect would be called" in few["warning"]


def test_noise_feels_a_stall_as_the_verdicts_do():
    """One 30% stall in 10 A/A rounds: a variant with such a stall on the baseline's side loses
    its p below 0.05 whatever its size, so the stated effect grows; the sd still leaves it out."""
    base = {r: 1.0 + 0.001 * (r % 3) for r in range(10)}
    clean = {r: x * (1 + 0.001 * ((r * 7) % 5 - 2)) for r, x in base.items()}
    stalled = {**clean, 4: clean[4] * 1.3}
    calm, hit = stats.noise(base, clean, 1.0, m=2), stats.noise(base, stalled, 1.0, m=2)
    assert hit["sd_log_diff"] < 0.005 and calm["mde_pct"] < 1.5
    assert hit["mde_pct"] is None or hit["mde_pct"] > 5 * calm["mde_pct"]


def test_a_stall_in_the_baseline_holds_back_every_slowdown_and_the_statement_says_so():
    """A 30% stall in the baseline is shared by every comparison: below about 26% no slowdown
    can outrank it. The statement must reach past it (a symmetric interval stated ~11% here, and
    a variant of that size stayed inconclusive); a speedup of the stated size is called too."""
    base = {r: 1.0 + 0.001 * (r % 3) for r in range(10)}
    clean = {r: x * (1 + 0.001 * ((r * 7) % 5 - 2)) for r, x in base.items()}
    stalled = {**base, 4: base[4] * 1.3}
    said = stats.noise(stalled, clean, 1.0, m=2)
    assert said["mde_pct"] is not None and said["mde_pct"] > 10
    for sign, verdict in ((1, "slower"), (-1, "faster")):
        effect = (1 + said["mde_pct"] / 100) ** sign
        cs = [stats.compare(clean, stalled), stats.compare({r: x * effect for r, x in clean.items()},
                                                           stalled)]
        stats.adjust(cs, threshold_pct=1.0)
        assert cs[1].verdict == verdict, (sign, cs[1])


def test_the_stated_effect_is_called_about_80_percent_of_the_time():
    """Seeded: 300 sweeps (baseline, twin, variant; CV 1%, 12 rounds, round drift). Each states
    its smallest effect at 80% power; its variant then carries exactly that effect (noise drawn
    first). Fixed seed, so the rate is one number; the band allows the normal approximation's
    slack (bench/verdict_rules.py measures 73-83% across noise models)."""
    rng = np.random.default_rng(2026)
    called = 0
    for i in range(300):
        drift = rng.normal(0, 0.03, 12)
        logs = [drift + rng.normal(0, 0.01, 12) for _ in range(3)]
        base, twin = ({r: math.exp(x) for r, x in enumerate(a)} for a in logs[:2])
        said = stats.noise(base, twin, 1.0, m=2)
        effect = math.log1p(said["mde_pct"] / 100)
        var = {r: math.exp(x + effect) for r, x in enumerate(logs[2])}
        cs = [stats.compare(twin, base, seed=i), stats.compare(var, base, seed=i)]
        stats.adjust(cs, threshold_pct=1.0)
        called += cs[1].verdict == "slower"
    assert 0.70 <= called / 300 <= 0.88


def test_interval_inverts_the_signed_rank_test():
    """The 95% CI is the set of shifts that scipy's exact Wilcoxon test does not reject: a shift
    just inside either end gives p >= 0.05, one just outside gives p < 0.05."""
    rng = np.random.default_rng(13)
    d = rng.normal(0.02, 0.01, 10)
    c = stats.compare({r: math.exp(x) for r, x in enumerate(d)}, {r: 1.0 for r in range(10)})
    i, j = np.triu_indices(10)
    w = np.sort((d[i] + d[j]) / 2)                      # 55 Walsh averages; k = 9 at n = 10
    assert c.ratio == pytest.approx(math.exp(np.median(w)))
    assert c.ci95 == pytest.approx((math.exp(w[8]), math.exp(w[46])))

    def p_at(shift):
        return sps.wilcoxon(d - shift, method="exact").pvalue
    assert p_at((w[8] + w[9]) / 2) >= 0.05 > p_at((w[7] + w[8]) / 2)
    assert p_at((w[45] + w[46]) / 2) >= 0.05 > p_at((w[46] + w[47]) / 2)


def test_hodges_lehmann_by_hand():
    # log ratios .01 .02 .03: Walsh averages .01 .015 .02 .02 .025 .03, median .02.
    c = stats.compare({0: math.exp(0.01), 1: math.exp(0.02), 2: math.exp(0.03)},
                      {0: 1.0, 1: 1.0, 2: 1.0})
    assert c.ratio == pytest.approx(math.exp(0.02))


def test_too_few_pairs_for_an_interval_asks_for_more():
    # 4 pairs: no 95% interval exists (even [min, max] covers only 1 - 2/16), so no verdict.
    c = stats.compare({r: 1.0 + 0.01 * r for r in range(4)}, {r: 1.0 for r in range(4)})
    assert c.ci95 == (0.0, math.inf)
    stats.adjust([c])
    assert c.verdict == "inconclusive" and c.rounds_needed >= 6
    assert "too few for a 95% interval" in c.why


def test_equivalence_error_rate_at_the_band_edge():
    """TOST's promise: a true shift of exactly +1% is called "equivalent within 1%" at most 5% of
    the time (4.2% at 10 pairs, where the exact interval cuts at P(T+ <= 10) = 43/1024), here
    with 10 rounds at CV 1%. 2000 trials: the binomial sd is then 0.45%."""
    rng = np.random.default_rng(14)
    trials = 2000
    wrong = sum(_sweep(rng, 10, 0.01, [0.01], drift_cv=0.0, outlier_rate=0.0, max_drop=0,
                       seed=t)[0][0].verdict == "equivalent" for t in range(trials))
    print(f"\n'equivalent' for a true 1% shift: {wrong / trials:.1%}")
    assert wrong / trials <= 0.055


def test_unpaired_interval_cut_matches_the_mann_whitney_table():
    # Two-sided 0.05 critical values of U (lower tail) are 23 for m = n = 10 and 37 for 12, 12
    # (Hollander, Wolfe & Chicken, table A.6): the interval cuts k = U + 1 differences each end.
    assert intervals._mann_whitney_cut(10, 10, 0.95) == 24
    assert intervals._mann_whitney_cut(12, 12, 0.95) == 38
    assert intervals._u_counts(4, 3).sum() == math.comb(7, 3)


def test_unpaired_comparison_covers_a_planted_shift():
    rng = np.random.default_rng(3)
    hits, n = 0, 400
    for _ in range(n):
        a = np.exp(rng.normal(0, 0.01, 12))
        b = np.exp(rng.normal(0.03, 0.01, 12))
        c = stats.compare_unpaired(b, a)
        hits += c.ci95[0] < math.exp(0.03) < c.ci95[1]
        assert not c.paired
    assert hits / n >= 0.92             # nominal 95%; 400 trials leave about +-2%


def test_unpaired_verdicts_say_runs_not_rounds():
    rng = np.random.default_rng(4)
    a = np.exp(rng.normal(0, 0.002, 12))
    c = stats.compare_unpaired(a * 1.1, a)
    stats.adjust([c], threshold_pct=1.0)
    assert c.verdict == "slower" and "at least 12 runs in each sweep" in c.why


# "Beyond the threshold" across a sweep: false-coverage-rate adjusted intervals
# (Benjamini & Yekutieli, JASA 2005). Per-round log ratios are a fixed pattern, 12 rounds,
# all of one sign where an effect is meant, so every p-value is exact (2 / 2^12).

_PATTERN = np.linspace(-1, 1, 12)
_BASE = {r: 1.0 for r in range(12)}


def _shifted(log_ratio: float, spread: float = 0.01) -> stats.RatioEstimate:
    d = log_ratio + spread * _PATTERN
    return stats.compare({r: float(math.exp(x)) for r, x in enumerate(d)}, _BASE)


def _just_beyond() -> stats.RatioEstimate:
    """+1.5%: its 95% interval's low end 1.0105 clears 1.01, its 97.5% one (1.0095) does not."""
    return _shifted(math.log(1.01) + 0.005)


def _nulls(k: int) -> list[stats.RatioEstimate]:
    return [_shifted(0.0, 0.003) for _ in range(k)]


def test_one_interval_just_beyond_the_threshold_among_ten_is_not_a_slower_call():
    alone, among = _just_beyond(), _just_beyond()
    stats.adjust([alone], threshold_pct=1.0)
    stats.adjust([among, *_nulls(9)], threshold_pct=1.0)
    assert alone.ci95[0] > 1.01 and among.ci95[0] > 1.01 and among.p_adjusted < 0.05
    # One of ten: a 1 - 0.05/10 = 99.5% interval, which reaches into the band.
    assert among.verdict == "inconclusive"
    # Alone, one of one selected: the 95% interval is the adjusted one, and it clears 1%.
    assert alone.verdict == "slower" and alone.fcr_level == pytest.approx(0.95)
    assert among.fcr_level == pytest.approx(0.995)
    assert among.ci_fcr == stats.paired_interval(
        {r: float(math.exp(math.log(1.01) + 0.005 + 0.01 * x)) for r, x in enumerate(_PATTERN)},
        _BASE, 0.995)
    assert among.ci_fcr[0] < 1.01 < among.ci95[0]
    assert "99.5% CI" in among.why and "false-coverage adjusted" in among.why
    row = among.to_json()
    assert row["ci_fcr"] == [among.ci_fcr[0], among.ci_fcr[1]] and row["fcr_level"] == 0.995


def test_ten_intervals_just_beyond_the_threshold_among_twenty_are_not_slower_calls():
    edge = [_just_beyond() for _ in range(10)]
    stats.adjust([*edge, *_nulls(10)], threshold_pct=1.0)
    assert all(c.ci95[0] > 1.01 and c.p_adjusted < 0.05 for c in edge)
    assert [c.verdict for c in edge] == ["inconclusive"] * 10
    # R = 10 of 20 would need 97.5% intervals beyond 1%; none is, nor at any smaller R.
    assert stats.fcr_intervals([*edge, *_nulls(10)], 1.0) == 0
    assert all(c.ci_fcr[0] < 1.01 for c in edge)


def test_a_clear_effect_among_ten_is_still_slower_and_says_its_adjusted_interval():
    clear = _shifted(math.log(1.01) + 0.02)          # +3.0%: 99.5% interval from +2.3%
    stats.adjust([clear, *_nulls(9)], threshold_pct=1.0)
    assert clear.verdict == "slower"
    assert clear.fcr_level == pytest.approx(0.995)
    assert clear.ci_fcr[0] < clear.ci95[0] and clear.ci_fcr[0] > 1.01
    assert "99.5% CI 2.3% to 3.8%, false-coverage adjusted" in clear.why


def test_the_step_up_selects_every_clear_effect_at_its_own_level():
    # Five clear effects and five nulls: R = 5 of 10, each selected one judged at 97.5%; a
    # just-beyond one joins only if its 1 - 6 * 0.05 / 11 interval clears, which it does not.
    clear = [_shifted(math.log(1.01) + 0.02) for _ in range(5)]
    edge = _just_beyond()
    stats.adjust([*clear, edge, *_nulls(5)], threshold_pct=1.0)
    assert [c.verdict for c in clear] == ["slower"] * 5
    assert all(c.fcr_level == pytest.approx(1 - 5 * 0.05 / 11) for c in clear)
    assert edge.verdict == "inconclusive"
    assert edge.fcr_level == pytest.approx(1 - 6 * 0.05 / 11)
