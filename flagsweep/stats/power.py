"""Sensitivity stated up front: what this machine can resolve (the smallest effect called at
80% power), and how many rounds a precision needs."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from flagsweep.stats.intervals import Z95, min_pairs, walsh_averages, walsh_interval
from flagsweep.stats.multiplicity import fewest_decisive_pairs
from flagsweep.stats.summary import robust_cv, robust_sd, summarize
from flagsweep.stats.threshold import fraction

Z80 = 0.8416212335729143       # the normal distribution's 80% point: power 80%


def detectable_pct(half95: float, half_m: float, threshold_pct: float,
                   spread95: float | None = None) -> float:
    """The smallest slowdown (in percent) called "slower" with 80% power by a comparison whose
    log-ratio intervals reach `half95` at 95% and `half_m` at 1 - alpha/m from its estimate on
    the side that must clear the threshold, the estimate varying with `spread95` (the 95%
    half-width of its variation; `half95` when not given).

    adjust() calls a lone effect among m comparisons slower when its p-value is below alpha / m
    (what BH asks of it when its companions are null) and its false-coverage adjusted interval,
    at 1 - alpha/m for one selected of m (fcr_intervals), clears log(1 + t). The second
    implies the first (the 1 - alpha/m interval inverts the same signed-rank test), and it
    holds once the estimate exceeds log(1 + t) + half_m; with the estimate about normal with
    standard error spread95 / z_0.975, it does so with probability 80% at
        delta = log(1 + t) + half_m + z_0.80 spread95 / z_0.975,
    the power formula of a one-sided test against a shifted null (Chow, Shao & Wang, Sample
    Size Calculations in Clinical Research, 2nd ed., Chapman & Hall/CRC 2008, ch. 3, tests for
    superiority by a margin). Faster is the mirror image: pass the reaches of the other side."""
    margin = math.log1p(fraction(threshold_pct))
    spread = half95 if spread95 is None else spread95
    return 100 * math.expm1(margin + half_m + Z80 / Z95 * spread)


def rounds_to_detect(half95: float, half_m: float, n: int, effect_pct: float,
                     threshold_pct: float, m: int) -> int | None:
    """Rounds at which detectable_pct comes down to `effect_pct`, both half-widths shrinking
    as 1/sqrt(n); None when the effect is not beyond the threshold."""
    target, margin = math.log1p(effect_pct / 100), math.log1p(fraction(threshold_pct))
    if target <= margin:
        return None
    shrink = (target - margin) / (half_m + Z80 / Z95 * half95)
    return max(math.ceil(n / shrink ** 2 - 1e-9), fewest_decisive_pairs(m))


def rounds_for_precision(cv: float, half_width_pct: float) -> int:
    """Rounds for the mean's 95% CI to have relative half-width `half_width_pct` (percent), with
    `cv` = sd / mean as a fraction.

    Derivation: the mean's 95% CI is mean +- 1.96 sd / sqrt(n), so its relative half-width is
    W = 1.96 CV / sqrt(n), hence n = (1.96 CV / W)^2. The rule the design notes quote from
    pyperf, n = 4 * 1.96^2 * CV^2 / W^2 = (2 * 1.96 CV / W)^2, is the same formula with W the
    *full* width; used with a half-width it asks for 4x too many rounds. (Normal approximation,
    e.g. Cochran, Sampling Techniques, 3rd ed., Wiley 1977, ch. 4.) For the median, which
    the runner's stopping rule uses, multiply by about pi/2 (its asymptotic variance on normal
    data). At least 2 rounds: no CI exists from one."""
    if half_width_pct <= 0:
        raise ValueError("half_width_pct must be positive")
    n = (1.96 * cv * 100 / half_width_pct) ** 2
    return max(2, math.ceil(n - 1e-9))          # 1e-9: 3.99999... from float rounding is 4


def noise(baseline: dict[int, float], twin: dict[int, float] | None,
          threshold_pct: float, m: int = 1, alpha: float = 0.05) -> dict:
    """The baseline's CV, the noise of a paired comparison, and the smallest effect this sweep
    would call at 80% power (`mde_pct`) given its rounds, its m comparisons and the threshold.

    What a comparison faces is read from the A/A twin: its per-round log ratios give the
    signed-rank (Walsh) intervals a variant with the same noise would get, at 95% and at
    1 - alpha/m, about its own estimate; detectable_pct turns how far they reach into the
    effect (_reaches: each side on its own, since a stall is one-sided). They come from the
    very ranks the verdicts use, so stalls and heavy tails widen them as they widen every
    comparison's, and where the exact test cannot reach alpha/m at these rounds there is no
    such interval and no detectable effect (None, and the warning says so). No round is left
    out. Without a twin sharing 6 positive rounds with the
    baseline: normal intervals from sd * sqrt(pi/3) / sqrt(n) (the Hodges-Lehmann estimate's
    spread on normal data), sd being the twin's per-round sd (at least 3 rounds) else sqrt(2)
    x the baseline's CV (two independent arms; it ignores the drift pairing cancels, so it
    errs high); these sds leave out the rounds the modified z-score flags, so they understate
    stalls."""
    summary = summarize(baseline)
    sd, n, source, halves = None, summary.n, "sqrt(2) x the baseline's CV (no A/A twin)", None
    spread = None
    level_m = 1 - alpha / max(1, m)
    if twin is not None:
        common = sorted(set(twin) & set(baseline))
        t = np.array([twin[r] for r in common], dtype=float)
        b = np.array([baseline[r] for r in common], dtype=float)
        if len(common) >= 3 and np.all(t > 0) and np.all(b > 0):
            d = np.log(t) - np.log(b)
            sd, n, source = robust_sd(d), len(common), "the A/A twin"
            if n >= min_pairs(0.95):
                halves, spread = _reaches(d, level_m)
    if sd is None and twin is not None:
        n, source = summary.n, "sqrt(2) x the baseline's CV (too few usable A/A twin rounds)"
    if sd is None:
        cv = robust_cv(np.array(list(baseline.values()), dtype=float))
        sd = math.sqrt(2) * cv if cv is not None else None
    if halves is None and sd is not None and n >= 1:
        se = sd * math.sqrt(math.pi / 3 / n)
        halves = (Z95 * se, float(sps.norm.isf((1 - level_m) / 2)) * se)
    if halves is not None and n < fewest_decisive_pairs(m, alpha):
        halves = (halves[0], math.inf)
    mde = detectable_pct(*halves, threshold_pct, spread) if halves else None
    mde = mde if mde is not None and math.isfinite(mde) else None
    warning, rounds = _noise_warning(mde, halves, n, threshold_pct, m)
    return {"baseline_cv": summary.cv, "mde_pct": mde, "sd_log_diff": sd, "n_pairs": n,
            "source": source, "comparisons": m, "power": 0.8, "warning": warning,
            "rounds_needed": rounds}


def _reaches(d: np.ndarray, level_m: float) -> tuple[tuple[float, float], float]:
    """((reach at 95%, reach at level_m), spread) of the twin's log ratios d for detectable_pct.

    A stall only ever slows a run. One in the baseline is shared by every comparison: it
    sits below all variants' estimates and stretches their intervals downwards, so a slowdown
    must rise that much further; one in the twin stands for the stalls a variant meets in its
    own runs, which stretch upwards and hold back a speedup. So each side's reach is measured
    from the Hodges-Lehmann estimate on its own, and the statement takes the side that needs
    more: an effect of that size either way is called at 80% power. The estimate's variation
    (the power term) is the narrower side's: a shared stall moves every variant alike and adds
    no variation between them. Symmetric intervals stated 2.3% where a baseline stall let no
    slowdown below about 26% through, and were called at 66-70% with 5-10% stalls; these
    reaches keep clean and stalled noise within 75-85% (bench/verdict_rules.py statement)."""
    n, w = len(d), walsh_averages(d)
    hl = float(np.median(w))
    sides = []
    for level in (0.95, level_m):
        lo, hi = walsh_interval(w, n, level)
        ok = 0 < lo <= hi < math.inf
        sides.append((hl - math.log(lo), math.log(hi) - hl) if ok else (math.inf, math.inf))
    (low95, up95), (low_m, up_m) = sides
    return (max(low95, up95), max(low_m, up_m)), min(low95, up95)


def _noise_warning(mde: float | None, halves: tuple[float, float] | None, n: int,
                   threshold_pct: float, m: int) -> tuple[str | None, int | None]:
    """(What this sweep could not resolve, the rounds that would resolve twice the threshold);
    (None, None) while an effect of twice the threshold would be called at 80% power. What to
    do about it depends on the run (its pace, its metric, the machine): the results layer
    words that (results.analysis.advise)."""
    if halves is None:
        return f"too few rounds ({n}) to estimate the noise of this machine", None
    if mde is None:
        return (f"with {n} rounds and {m} comparisons the A/A twin shows no effect would be "
                "called at 80% power (too few rounds for the exact test at this many "
                "comparisons, or stalls)"), max(2 * n, fewest_decisive_pairs(m) + 2)
    if mde <= 2 * threshold_pct:
        return None, None
    rounds = rounds_to_detect(*halves, n, 2 * threshold_pct, threshold_pct, m)
    return (f"with {n} rounds this sweep calls effects of {mde:.1f}% or more (80% power); "
            f"real effects between {threshold_pct:g}% and that likely end inconclusive. About "
            f"{rounds} rounds would call {2 * threshold_pct:g}%"), rounds
