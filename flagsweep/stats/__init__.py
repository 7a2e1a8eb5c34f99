"""Statistics of samples: what one binary measured, how a variant compares with the baseline,
what a whole sweep may conclude, and what this machine can resolve at all.

- summarize: median with its distribution-free CI, mean, CV, outliers flagged but never
  dropped.
- compare: variant against baseline, paired by round (the round is the block): the
  Hodges-Lehmann estimate of the per-round ratio with exact signed-rank (Walsh average) 95% and
  90% intervals, and a sign-flip permutation p-value with the signed-rank statistic (a
  bootstrap only for metrics that can be zero). docs/statistics.md says why these replaced the
  design sketch's ratio of medians with bootstrap CIs.
- adjust: Benjamini-Hochberg across the sweep, false-coverage-rate adjusted intervals for the
  "beyond the threshold" claim, then one of four verdicts (faster, slower, equivalent,
  inconclusive with the rounds that would likely decide).
- detectable_pct, rounds_for_precision, noise: sensitivity stated up front.

The median's CI comes from order statistics: for n independent samples, the number below the
true median is Binomial(n, 1/2), so the interval [x_(l), x_(u)] with l the largest rank such that
P(B <= l - 1) <= alpha/2 and u = n + 1 - l covers the median with probability >= 1 - alpha, for any
continuous distribution. (Conover, Practical Nonparametric Statistics, 3rd ed., 1999, section
3.2; Hahn & Meeker, Statistical Intervals, 1991, section 5.2.) Timings are skewed and carry
outliers, which is why the median and not the mean is the measure here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps


@dataclass(frozen=True)
class MedianCI:
    median: float
    low: float
    high: float
    conf: float          # the interval's actual coverage (>= the level asked for), from the binomial


def median_ci(values: list[float] | np.ndarray, level: float = 0.95) -> MedianCI | None:
    """The median with an order-statistic CI of at least `level` coverage; None when n is too
    small for any such interval to exist (n < 6 at 95%: even [min, max] covers only 1 - 2/2^n)."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0:
        return None
    alpha = 1 - level
    # Largest l with P(B <= l - 1) <= alpha/2, B ~ Binomial(n, 1/2); ranks are 1-based.
    l = int(sps.binom.ppf(alpha / 2, n, 0.5))
    if l >= 1 and sps.binom.cdf(l - 1, n, 0.5) > alpha / 2:
        l -= 1
    if l < 1:
        return None
    u = n + 1 - l
    coverage = 1 - 2 * sps.binom.cdf(l - 1, n, 0.5)
    return MedianCI(float(np.median(x)), float(x[l - 1]), float(x[u - 1]), float(coverage))


# --------------------------------------------------------------------------------------------
# One variant's samples: summary and outliers.
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Summary:
    n: int
    median: float | None
    ci95: tuple[float, float] | None     # order-statistic CI of the median (median_ci)
    mean: float | None
    cv: float | None                     # sd / mean, ddof=1; None when n < 2
    outliers: int                        # flagged by modified z-score, never dropped
    outlier_rounds: tuple[int, ...]

    def to_json(self) -> dict:
        return {"n": self.n, "median": self.median,
                "ci95": list(self.ci95) if self.ci95 else None,
                "cv": self.cv, "outliers": self.outliers,
                "mean": self.mean, "outlier_rounds": list(self.outlier_rounds)}


def summarize(values: dict[int, float]) -> Summary:
    """n, median (with its order-statistic CI), mean, CV and flagged outliers of one variant's
    samples, keyed by round. Outliers are counted and named, never removed: a slow sample is a
    fact about the machine, and the median and the rank test are already insensitive to it."""
    rounds = sorted(values)
    x = np.array([values[r] for r in rounds], dtype=float)
    n = len(x)
    if n == 0:
        return Summary(0, None, None, None, None, 0, ())
    ci = median_ci(x)
    mean = float(np.mean(x))
    cv = float(np.std(x, ddof=1) / mean) if n >= 2 and mean != 0 else None
    flagged = tuple(rounds[i] for i in outlier_indices(x))
    return Summary(n, float(np.median(x)), (ci.low, ci.high) if ci else None, mean, cv,
                   len(flagged), flagged)


def mad(values: Sequence[float]) -> float:
    """The median absolute deviation from the median (raw, not scaled to a normal sd)."""
    x = np.asarray(values, dtype=float)
    return float(np.median(np.abs(x - np.median(x))))


def outlier_indices(values: Sequence[float], cutoff: float = 3.5) -> list[int]:
    """Indices whose modified z-score |M| = |0.6745 (x - median) / MAD| exceeds `cutoff`.
    (Iglewicz & Hoaglin, How to Detect and Handle Outliers, ASQC Basic References in Quality
    Control vol. 16, 1993: M > 3.5 as the outlier label.) 0.6745 makes MAD consistent with the
    normal sd, and median/MAD are not dragged by the outliers themselves as mean/sd are.
    MAD == 0 (over half the values equal, e.g. deterministic counts): no scale exists, so every
    value that differs from the median at all is flagged, and none when all are equal."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        return []
    med, scale = np.median(x), mad(x)
    if scale == 0:
        return [int(i) for i in np.flatnonzero(x != med)]
    m = 0.6745 * (x - med) / scale
    return [int(i) for i in np.flatnonzero(np.abs(m) > cutoff)]


# --------------------------------------------------------------------------------------------
# Variant against baseline: paired by round.
# --------------------------------------------------------------------------------------------

EXACT_MAX_PAIRS = 14          # 2^14 = 16384 sign vectors: exact enumeration is still instant
RANDOM_FLIPS = 20000
ROUNDS_CAP = 1000
Z95 = 1.959963984540054       # the normal distribution's 97.5% point


@dataclass
class Comparison:
    ratio: float                       # variant / baseline: Hodges-Lehmann of per-round ratios
    ci95: tuple[float, float]          # CI of the ratio (inverts the signed-rank test)
    ci90: tuple[float, float]          # the same at 90%, for TOST
    p_value: float                     # sign-flip permutation test on per-round log ratios
    n_pairs: int                       # rounds where both were measured
    p_adjusted: float | None = None    # Benjamini-Hochberg across the sweep, by adjust()
    verdict: str | None = None         # faster | slower | equivalent | inconclusive, by adjust()
    rounds_needed: int | None = None   # inconclusive only: rough total rounds likely to decide
    why: str = ""
    paired: bool = True                # False: two independent samples (compare_unpaired)
    pooled: int = 0                    # >0: a geometric mean of this many estimates (pool)
    layouts: int = 0                   # >0: over this many layout replicates a side (stats.layout)
    layout_sd: float | None = None     # the spread between one arm's layouts (relative)
    more_rounds_help: bool = True      # False: the layouts' spread is nearly all its variance
    # By adjust(), where the estimate lies beyond the threshold: the false-coverage-rate
    # adjusted interval that a faster/slower verdict needs wholly beyond it, and its level.
    ci_fcr: tuple[float, float] | None = None
    fcr_level: float | None = None
    # The same interval as ci95/ci90 at any level (level -> (low, high)); None: see _at_level.
    interval_at: Callable[[float], tuple[float, float]] | None = field(
        default=None, repr=False, compare=False)
    # a sweep that may stop at more than one round tests equivalence at a smaller level per
    # one-sided test (stats.sequential.Design.tost); its interval, 1 - 2 tost. None: the 90%
    ci_tost: tuple[float, float] | None = None
    tost_level: float = 0.05

    @property
    def equivalence_ci(self) -> tuple[float, float]:
        """The interval that must lie inside the band for "equivalent"."""
        return self.ci_tost if self.ci_tost is not None else self.ci90

    def to_json(self) -> dict:
        # JSON has no inf/nan: an interval that does not exist (too few pairs) is null.
        return {"ratio": _num(self.ratio), "ci95": _interval(self.ci95),
                "p_value": self.p_value, "p_adjusted": self.p_adjusted, "verdict": self.verdict,
                "ci90": _interval(self.ci90), "n_pairs": self.n_pairs,
                "rounds_needed": self.rounds_needed, "why": self.why,
                **({"ci_fcr": _interval(self.ci_fcr), "fcr_level": self.fcr_level}
                   if self.ci_fcr is not None else {}),
                **({"ci_tost": _interval(self.ci_tost), "tost_level": self.tost_level}
                   if self.ci_tost is not None else {}),
                **({"layouts": self.layouts, "layout_sd_pct": _num(100 * self.layout_sd)
                    if self.layout_sd is not None else None} if self.layouts else {})}


def compare(variant: dict[int, float], baseline: dict[int, float], *, seed: int = 0,
            n_boot: int = 2000, tost: float = 0.05) -> Comparison:
    """Variant / baseline ratio with CIs and a permutation p-value, all by round.

    Only rounds where both binaries were measured are used: a round is a block (same machine
    state for every binary), so per-round log ratios d_r cancel round-to-round drift. Unequal n
    then simply means fewer pairs. From the d_r come three things that belong together: the
    signed-rank permutation test (_signflip_p), its Hodges-Lehmann estimate of the ratio, and the
    CIs that invert that test (_walsh_interval). A metric that can be zero has no log ratio: then
    the ratio of medians with a bootstrap over whole pairs (`n_boot` resamples), and plain
    differences for the test. Deterministic given `seed`. `tost` below 0.05: equivalence is
    judged on the 1 - 2 tost interval (ci_tost), a sweep's level for a test repeated at every
    look (stats.sequential)."""
    common = sorted(set(variant) & set(baseline))
    v = np.array([variant[r] for r in common], dtype=float)
    b = np.array([baseline[r] for r in common], dtype=float)
    if len(common) < 2:
        # Nothing to resample or permute: the raw ratio of medians and an interval deciding nothing.
        ratio = _median_ratios(np.array(list(variant.values()), dtype=float)[None, :],
                               np.array(list(baseline.values()), dtype=float)[None, :])[0]
        return Comparison(float(ratio), _NO_INTERVAL, _NO_INTERVAL, 1.0, len(common),
                          why=f"only {len(common)} round(s) measured both binaries; "
                              "no interval or test is possible")
    rng = np.random.default_rng(seed)
    if np.all(v > 0) and np.all(b > 0):
        d = np.log(v) - np.log(b)
        w = _walsh_averages(d)
        ratio = math.exp(float(np.median(w)))
        at = functools.partial(_walsh_interval, w, len(d))
    else:
        d = v - b
        ratio = float(_median_ratios(v[None, :], b[None, :])[0])
        boot = _bootstrap_median_ratios(v, b, rng, n_boot)
        at = lambda level: _percentiles(boot, 100 * level)  # noqa: E731
    return Comparison(ratio, at(0.95), at(0.90), _signflip_p(d, rng), len(common),
                      interval_at=at, ci_tost=at(1 - 2 * tost) if tost < 0.05 else None,
                      tost_level=tost)


_NO_INTERVAL = (0.0, math.inf)       # an interval that decides nothing: never faster/slower/equal


def paired_interval(variant: dict[int, float], baseline: dict[int, float],
                    level: float) -> tuple[float, float]:
    """compare's interval of the ratio at any level: the Walsh-average (Tukey) interval of the
    per-round log ratios over the rounds both measured. _NO_INTERVAL when a value is not
    positive or the pairs are too few for the level."""
    common = sorted(set(variant) & set(baseline))
    v = np.array([variant[r] for r in common], dtype=float)
    b = np.array([baseline[r] for r in common], dtype=float)
    if len(common) < 2 or not (np.all(v > 0) and np.all(b > 0)):
        return _NO_INTERVAL
    return _walsh_interval(_walsh_averages(np.log(v) - np.log(b)), len(common), level)


def compare_unpaired(b: Sequence[float], a: Sequence[float]) -> Comparison:
    """b / a for two independent samples of positive values: the same variant in two sweeps
    (`flagsweep compare`), where no round pairs one sample with another.

    The Hodges-Lehmann two-sample estimate, the median of all m*n differences log b_j - log a_i,
    with the interval that inverts the Wilcoxon-Mann-Whitney test: [D_(k), D_(mn+1-k)], k the
    largest with P(U <= k - 1) <= (1 - level) / 2 under the null, exponentiated (Hollander, Wolfe
    & Chicken, Nonparametric Statistical Methods, 3rd ed., Wiley 2014, ch. 4; Lehmann,
    Nonparametrics, 1975, ch. 2). It assumes the two distributions differ by a shift on the log
    scale. The p-value is scipy's Mann-Whitney U (exact for small samples without ties). Across
    sweeps the machine state differs too, so a difference here is the flags' or the machine's."""
    la = np.log(np.asarray(a, dtype=float))
    lb = np.log(np.asarray(b, dtype=float))
    m, n = len(la), len(lb)
    if m < 2 or n < 2:
        ratio = math.exp(float(np.median(lb) - np.median(la))) if m and n else math.nan
        return Comparison(ratio, _NO_INTERVAL, _NO_INTERVAL, 1.0, min(m, n), paired=False)
    diffs = np.sort((lb[:, None] - la[None, :]).ravel())
    ratio = math.exp(float(np.median(diffs)))
    p = float(sps.mannwhitneyu(lb, la, alternative="two-sided").pvalue)
    at = functools.partial(_mw_interval, diffs, m, n)
    return Comparison(ratio, at(0.95), at(0.90), p, min(m, n), paired=False, interval_at=at)


def pool(estimates: Sequence[tuple[float, tuple[float, float] | None]]) -> Comparison | None:
    """The equal-weight geometric mean of independent ratio estimates (one per program, or per
    program and machine), with a normal-approximation interval and test.

    Ratios are summarised by their geometric mean, the one mean of normalised numbers that does
    not depend on which machine or build they were normalised to (Fleming & Wallace, How not to
    lie with statistics: the correct way to summarize benchmark results, CACM 29(3), 1986; SPEC
    CPU's overall ratio is the same mean). Each estimate's standard error on the log scale is
    read back from its 95% interval, (log hi - log lo) / (2 z_0.975); an estimate given without
    an interval is exact (identical code: ratio 1, error 0). With equal weights by design (every
    program counts alike, not the most precisely measured one), the mean log ratio m = sum l_i / k
    has SE sqrt(sum se_i^2) / k, and m / SE is referred to the normal distribution: the fixed-
    effect combination with equal weights (Borenstein, Hedges, Higgins & Rothstein, Introduction
    to Meta-Analysis, Wiley 2009, ch. 11 and 23). It treats the programs given as the population
    asked about; it says nothing about programs not measured. None when no estimate is usable."""
    logs, ses = [], []
    for ratio, ci in estimates:
        if ratio is None or not ratio > 0 or (ci is not None and not (0 < ci[0] <= ci[1] < math.inf)):
            return None
        logs.append(math.log(ratio))
        ses.append((math.log(ci[1]) - math.log(ci[0])) / (2 * Z95) if ci else 0.0)
    if not logs:
        return None
    k = len(logs)
    mean, se = sum(logs) / k, math.sqrt(sum(x * x for x in ses)) / k
    if se == 0:      # every estimate exact: the same code everywhere
        exact = (math.exp(mean), math.exp(mean))
        return Comparison(math.exp(mean), exact, exact, 1.0 if mean == 0 else 0.0, k, pooled=k)
    ci = lambda level: _normal_interval(mean, se, se, level)  # noqa: E731
    p = float(2 * sps.norm.sf(abs(mean) / se))
    return Comparison(math.exp(mean), ci(0.95), ci(0.90), p, k, pooled=k, interval_at=ci)


def _normal_interval(mean: float, se_low: float, se_high: float,
                     level: float) -> tuple[float, float]:
    """exp(mean -+ z se) at `level`, each side with its own standard error."""
    z = float(sps.norm.isf((1 - level) / 2))
    return (math.exp(mean - z * se_low), math.exp(mean + z * se_high))


def _mw_interval(diffs: np.ndarray, m: int, n: int, level: float) -> tuple[float, float]:
    k = _mann_whitney_cut(m, n, level)
    if k < 1:
        return _NO_INTERVAL
    return (math.exp(float(diffs[k - 1])), math.exp(float(diffs[len(diffs) - k])))


@functools.lru_cache(maxsize=None)
def _mann_whitney_cut(m: int, n: int, level: float) -> int:
    """The k of _mw_interval from the exact null distribution of U (the number of ways to
    reach each U, by the recurrence f(u; m, n) = f(u - n; m - 1, n) + f(u; m, n - 1)) while
    m * n <= 2500, else the normal approximation: mean mn/2, variance mn(m+n+1)/12."""
    tail = (1 - level) / 2
    if m * n > 2500:
        mean, sd = m * n / 2, math.sqrt(m * n * (m + n + 1) / 12)
        return max(0, math.floor(mean - sps.norm.isf(tail) * sd + 0.5))
    counts = _u_counts(m, n)
    cdf = np.cumsum(counts) / counts.sum()
    return int(np.searchsorted(cdf, tail * (1 + 1e-12), side="right"))


def _u_counts(m: int, n: int) -> np.ndarray:
    """How many of the C(m+n, m) orderings give each U = 0 .. mn."""
    # table[j] holds the counts for (i, j) as i grows: f(u; i, j) = f(u - j; i - 1, j) + f(u; i, j - 1)
    table = [np.ones(1) for _ in range(n + 1)]          # i = 0: only U = 0
    for i in range(1, m + 1):
        row = [np.ones(1)]                               # j = 0: only U = 0
        for j in range(1, n + 1):
            size = i * j + 1
            f = np.zeros(size)
            prev_i = table[j]                            # f(.; i - 1, j), shifted by j
            f[j:j + len(prev_i)] += prev_i
            f[:len(row[j - 1])] += row[j - 1]            # f(.; i, j - 1)
            row.append(f)
        table = row
    return table[n]


def _walsh_averages(d: np.ndarray) -> np.ndarray:
    """All (d_i + d_j) / 2, i <= j, sorted. Their median is the Hodges-Lehmann estimate
    (Hodges & Lehmann, Estimates of location based on rank tests, Annals of Mathematical
    Statistics 34(2), 1963): the shift the signed-rank test finds least surprising.

    Why it and not median(variant) / median(baseline): it keeps the pairing (drift cancels
    within a round; the ratio of medians takes its two medians from different rounds), and on
    normal noise its variance is pi/3 ~ 1.05 times the mean's where a median's is pi/2 ~ 1.57,
    while a stall still moves it little (breakdown point 29%). In seeded simulations (3% at CV
    1%, 10 rounds, 2000 sweeps) that was the difference between finding the shift about 94% of
    the time (ratio of medians, paired bootstrap) and 96-98% (this estimate and interval)."""
    i, j = np.triu_indices(len(d))
    return np.sort((d[i] + d[j]) / 2)


def _walsh_interval(w: np.ndarray, n: int, level: float) -> tuple[float, float]:
    """CI of the ratio: [w_(k), w_(M+1-k)] of the M sorted Walsh averages, k the largest with
    P(T+ <= k - 1) <= (1 - level) / 2 under the signed-rank null, exponentiated. It is exactly
    the set of shifts the signed-rank test does not reject, so its coverage is >= level for any
    continuous distribution of d symmetric about the shift, which exchangeable rounds give
    (Hollander, Wolfe & Chicken, Nonparametric Statistical Methods, 3rd ed., Wiley 2014, ch. 3,
    the Tukey interval; Bauer, Constructing confidence sets using rank statistics, JASA 67, 1972).
    That makes "the 90% CI inside the band" literally two one-sided signed-rank tests at 0.05.
    A percentile bootstrap of the same estimate, tried first, is too narrow at these n: it
    called a true 1% shift "equivalent" to within 1% in 6-7% of simulated trials (14% at 3
    pairs) where 5% is the promise; this interval keeps to 5%. Too few pairs for the level
    (fewer than 6 at 95%, 5 at 90%): _NO_INTERVAL. Tied |d| make the null only approximate."""
    k = _signed_rank_cut(n, level)
    if k < 1:
        return _NO_INTERVAL
    return (math.exp(float(w[k - 1])), math.exp(float(w[len(w) - k])))


@functools.lru_cache(maxsize=None)
def _signed_rank_cut(n: int, level: float) -> int:
    """The k of _walsh_interval: how many Walsh averages to cut from each end. Exact null
    distribution of T+ (counting subsets of ranks 1..n by sum) up to 300 pairs; beyond that the
    normal approximation, mean n(n+1)/4 and variance n(n+1)(2n+1)/24 (Hollander et al., ch. 3)."""
    tail = (1 - level) / 2
    if n > 300:
        mean, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        return max(0, math.floor(mean - sps.norm.isf(tail) * sd + 0.5))
    top = n * (n + 1) // 2
    counts = np.zeros(top + 1)
    counts[0] = 1
    for r in range(1, n + 1):             # add rank r to every subset: counts[t] += counts[t - r]
        counts[r:] = counts[r:] + counts[:top + 1 - r]
    cdf = np.cumsum(counts) / 2.0 ** n
    return int(np.searchsorted(cdf, tail * (1 + 1e-12), side="right"))


def _bootstrap_median_ratios(v: np.ndarray, b: np.ndarray, rng: np.random.Generator,
                             n_boot: int) -> np.ndarray:
    """Ratio of medians for `n_boot` resamples of whole pairs (rounds) with replacement
    (Efron & Tibshirani, An Introduction to the Bootstrap, Chapman & Hall 1993, ch. 6 and 13:
    the bootstrap distribution of a statistic and its percentile interval)."""
    idx = rng.integers(0, len(v), size=(n_boot, len(v)))
    return _median_ratios(v[idx], b[idx])


def _median_ratios(v: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Ratio of medians per row: the fallback for metrics that can be zero (sys time, some
    counters), which have no log ratio; nan/inf where a median is zero."""
    if v.shape[1] == 0 or b.shape[1] == 0:
        return np.full(v.shape[0], math.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.median(v, axis=1) / np.median(b, axis=1)


def _percentiles(boot: np.ndarray, level: float) -> tuple[float, float]:
    """Percentile interval; (nan, nan) when some resample had no ratio (a median of zero)."""
    if not np.all(np.isfinite(boot)):
        return (math.nan, math.nan)
    lo, hi = np.percentile(boot, [(100 - level) / 2, (100 + level) / 2])
    return (float(lo), float(hi))


def _signflip_p(d: np.ndarray, rng: np.random.Generator) -> float:
    """Two-sided p-value of the paired sign-flip permutation test.

    Under H0 the two binaries of a round are exchangeable, so each round's difference is as
    likely to have either sign; the reference distribution is the statistic over all 2^n sign
    vectors (Good, Permutation Tests: A Practical Guide to Resampling Methods for Testing
    Hypotheses, 2nd ed., Springer 2000, on matched pairs; Pesarin, Multivariate Permutation
    Tests, Wiley 2001). Exact for n <= EXACT_MAX_PAIRS, else
    RANDOM_FLIPS seeded random sign vectors with p = (1 + #{T* >= T}) / (1 + N), which is never
    zero and keeps the test valid (Phipson & Smyth, Permutation p-values should never be zero,
    Statistical Applications in Genetics and Molecular Biology 9(1), 2010).

    The statistic is the signed-rank sum T = |sum sign(d_r) rank(|d_r|)| (Wilcoxon, Individual
    comparisons by ranking methods, Biometrics Bulletin 1(6), 1945), not |median(d)|: the median
    barely moves when small differences flip sign, so its permutation distribution is lumpy and
    its smallest p at 10 pairs is 32/1024 = 0.031, while Benjamini-Hochberg over 4 comparisons
    needs 0.0125 from a lone real effect. The signed-rank sum reaches 2/2^n (0.002 at 10 pairs)
    and, unlike the mean, ignores how far out an outlier lies. Zero differences carry
    no sign and add nothing whichever way they are "flipped"; tied |d| get average ranks."""
    w = sps.rankdata(np.abs(d)) * (d != 0)
    t_obs = abs(float(np.sign(d) @ w))
    tol = 1e-9 * max(1.0, float(w.sum()))         # ranks are half-integers: guard float sums only
    if t_obs == 0:
        return 1.0
    n = len(d)
    if n <= EXACT_MAX_PAIRS:
        t = np.abs(_all_signs(n) @ w)
        return float(np.mean(t >= t_obs - tol))
    hits = 0
    chunk = max(1, 2_000_000 // n)                # bound memory for long runs
    for start in range(0, RANDOM_FLIPS, chunk):
        rows = min(chunk, RANDOM_FLIPS - start)
        s = rng.integers(0, 2, size=(rows, n), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(np.abs(s @ w) >= t_obs - tol))
    return (1 + hits) / (1 + RANDOM_FLIPS)


def signed_rank_p(d: Sequence[float]) -> float:
    """The exact two-sided p of _signflip_p's test at any n: P(|sum s_r w_r| >= T) over all
    2^n sign vectors s, w the (average) ranks of |d|, zeros weighing nothing.

    _signflip_p estimates it from RANDOM_FLIPS random sign vectors beyond EXACT_MAX_PAIRS
    pairs, so it cannot go below 1 / (1 + RANDOM_FLIPS) = 5.0e-5; a level smaller than that
    (a stopping look's share among many comparisons, stats.sequential) needs the exact value.
    It comes from the null distribution of the signed sum by the subset-sum recurrence that
    counts the signed-rank statistic's null distribution (Wilcoxon 1945; Hollander, Wolfe &
    Chicken, 2014, ch. 3), on doubled ranks so that tied (half-integer) ranks stay integers;
    probabilities rather than counts, so 2^n does not overflow."""
    x = np.asarray(d, dtype=float)
    w2 = np.rint(2 * sps.rankdata(np.abs(x)) * (x != 0)).astype(int)
    t_obs = abs(int(np.sign(x) @ w2))
    if t_obs == 0:
        return 1.0
    top = int(w2.sum())
    dist = np.zeros(top + 1)            # P(sum of the positive-signed weights = k)
    dist[0] = 1.0
    for w in w2[w2 > 0]:
        dist[w:] = (dist[w:] + dist[:top + 1 - w]) / 2
        dist[:w] /= 2
    # sum s w = 2 P - top, P the positive-signed weights: |2P - top| >= t_obs
    k = np.arange(top + 1)
    return float(min(1.0, dist[np.abs(2 * k - top) >= t_obs].sum()))


@functools.lru_cache(maxsize=None)
def _all_signs(n: int) -> np.ndarray:
    """Every +-1 vector of length n, one per row (2^n rows)."""
    bits = (np.arange(2 ** n)[:, None] >> np.arange(n)) & 1
    return (1 - 2 * bits).astype(float)


# --------------------------------------------------------------------------------------------
# The sweep: false discoveries and verdicts.
# --------------------------------------------------------------------------------------------

def adjust(comparisons: list[Comparison], threshold: float = 0.01, alpha: float = 0.05) -> None:
    """Benjamini-Hochberg adjusted p-values across ALL comparisons of the sweep, then a verdict:

    - faster / slower: p_adjusted < alpha and the false-coverage-rate adjusted interval
      (ci_fcr, at level 1 - R alpha / m: fcr_intervals) entirely beyond 1 -+ threshold;
    - equivalent: the 90% CI inside (1 - threshold, 1 + threshold), which is the two one-sided
      tests procedure at alpha = 0.05 (Schuirmann, A comparison of the two one-sided tests
      procedure and the power approach for assessing the equivalence of average
      bioavailability, J. Pharmacokinetics and Biopharmaceutics 15(6), 1987);
    - inconclusive: neither, with a rough count of the rounds that would likely decide.

    BH controls the expected share of false discoveries among the comparisons called different
    (Benjamini & Hochberg, Controlling the false discovery rate, JRSS B 57(1), 1995), computed by
    scipy.stats.false_discovery_control. A sweep of 20 A/A variants at p < 0.05 each would
    otherwise expect one "different" build from noise alone. "Beyond the threshold" is a claim
    about the interval, so it gets the same control through the intervals (fcr_intervals)."""
    if not comparisons:
        return
    p_adj = sps.false_discovery_control([c.p_value for c in comparisons], method="bh")
    fcr_intervals(comparisons, threshold, alpha)
    for c, p in zip(comparisons, p_adj):
        c.p_adjusted = float(p)
        c.verdict, c.rounds_needed = _verdict(c, threshold, alpha), None
        if c.verdict == "inconclusive" and not (c.pooled or c.layouts):
            c.rounds_needed = _rounds_needed(c, threshold, alpha, len(comparisons))
        c.why = _why(c, threshold, alpha)


def fcr_intervals(comparisons: list[Comparison], threshold: float, alpha: float = 0.05) -> int:
    """Set ci_fcr and fcr_level on every comparison whose estimate lies beyond 1 -+ threshold;
    return R, how many comparisons' adjusted intervals lie wholly beyond it.

    A 95% interval per comparison misses its true ratio 5% of the time each: with 10 variants
    whose true ratio is exactly the threshold, one of ten 95% intervals cleared it by chance in
    13-16% of simulated sweeps at CV 1-3%, 1-2.6% with these (bench/statistics.py, beyond). Benjamini & Yekutieli (False discovery
    rate-adjusted multiple confidence intervals for selected parameters, JASA 100(469), 2005)
    bound the expected share of non-covering intervals among the R selected out of m (the
    false coverage rate) by alpha when each selected one is given at level 1 - R alpha / m.
    The selection here is the claim itself, which makes R the largest r for which at least r
    comparisons have their 1 - r alpha / m interval wholly beyond the threshold: the
    Benjamini-Hochberg step-up on the tests of "no further than the threshold" that these
    intervals invert, the consistent pairing of selection and intervals of B&Y's section 5.
    With every true ratio at the threshold that selects nothing in about 1 - alpha of sweeps
    (BH under a complete null), and a lone real effect among m needs its 1 - alpha / m interval
    beyond it, as BH asks its p-value to be below alpha / m. A comparison not selected gets the
    interval it would have needed, at 1 - (R + 1) alpha / m, which is never wholly beyond.
    The comparisons share the baseline, so they are positively dependent; B&Y's proof assumes
    independence (their arbitrary-dependence bound divides alpha by 1 + 1/2 + ... + 1/m),
    which the simulations check instead."""
    m = len(comparisons)
    lo, hi = 1 - threshold, 1 + threshold
    beyond = lambda ci: ci[1] < lo or ci[0] > hi  # noqa: E731
    # Every level used is at least 1 - alpha and the intervals nest, so only a comparison
    # whose 1 - alpha interval clears the band can be selected.
    candidates = [c for c in comparisons if beyond(_at_level(c, 1 - alpha))]
    selected: list[Comparison] = []
    for r in range(len(candidates), 0, -1):
        level = 1 - r * alpha / m
        selected = [c for c in candidates if beyond(_at_level(c, level))]
        if len(selected) >= r:
            break
    else:
        selected = []
    r = len(selected)
    for c in comparisons:
        c.ci_fcr = c.fcr_level = None
        if not (c.ratio < lo or c.ratio > hi):     # also nan: no claim to judge
            continue
        level = 1 - (r if any(c is s for s in selected) else min(r + 1, m)) * alpha / m
        c.ci_fcr, c.fcr_level = _at_level(c, level), level
    return r


def _at_level(c: Comparison, level: float) -> tuple[float, float]:
    """c's interval at `level`: its own method where it carries one (interval_at), else read
    from its 95% interval on the log scale as normal, each side scaled by z_level / z_0.975
    (a Comparison built by hand)."""
    if c.interval_at is not None:
        return c.interval_at(level)
    if abs(level - 0.95) < 1e-12:
        return c.ci95
    lo, hi = c.ci95
    if not (0 < lo <= c.ratio <= hi < math.inf):
        return _NO_INTERVAL
    est = math.log(c.ratio)
    return _normal_interval(est, (est - math.log(lo)) / Z95, (math.log(hi) - est) / Z95, level)


def _verdict(c: Comparison, threshold: float, alpha: float) -> str:
    lo, hi = 1 - threshold, 1 + threshold
    significant = c.p_adjusted is not None and c.p_adjusted < alpha
    ci = c.ci_fcr or c.ci95     # no ci_fcr: the estimate is inside the band, so is the interval
    if significant and ci[1] < lo:
        return "faster"
    if significant and ci[0] > hi:
        return "slower"
    if lo < c.equivalence_ci[0] and c.equivalence_ci[1] < hi:
        return "equivalent"
    return "inconclusive"          # also where a CI is nan: every comparison above is False


def _rounds_needed(c: Comparison, threshold: float, alpha: float, m: int) -> int:
    """Rough total rounds at which this comparison would likely be decided.

    A CI's half-width shrinks about as 1/sqrt(n), so with half-width h at n pairs, a margin g
    between the estimate and a decision boundary is cleared near n' = n (h / g)^2. Which
    boundary: an estimate outside the +-threshold band would become faster/slower once the
    adjusted interval's (ci_fcr's) near end crosses the band's edge; one inside would become equivalent once both ends of
    the 90% CI fit inside the band. faster/slower also need the adjusted p below alpha, and a
    test statistic grows about as sqrt(n) too, so n' = n (z_needed / z_now)^2 from the raw p
    and the factor BH applied to it; the larger of the two counts. Never below the fewest pairs
    at which the exact test can reach alpha / m at all (2 / 2^n) nor below those a 95% interval
    needs (6), never above ROUNDS_CAP. It assumes the estimate stays put, so an estimate that
    landed near the band's edge by chance asks for too many rounds: hence "rough". With too few
    pairs for an interval it is only that floor, a lower bound."""
    n = c.n_pairs
    floor = max(n + 1, fewest_decisive_pairs(m, alpha))
    est = math.log(c.ratio) if c.ratio > 0 else math.nan
    eq = c.equivalence_ci
    if n < 2 or not math.isfinite(est) or not all(map(math.isfinite, c.ci95 + eq)) \
            or min(c.ci95 + eq) <= 0:
        return min(ROUNDS_CAP, floor)
    lo_b, hi_b = math.log(1 - threshold), math.log(1 + threshold)
    near = c.ci_fcr if c.ci_fcr and 0 < c.ci_fcr[0] <= c.ci_fcr[1] < math.inf else c.ci95
    if est <= lo_b:
        scale = max(_ratio_sq(math.log(near[1]) - est, lo_b - est), _p_scale(c, alpha))
    elif est >= hi_b:
        scale = max(_ratio_sq(est - math.log(near[0]), est - hi_b), _p_scale(c, alpha))
    else:
        scale = max(_ratio_sq(math.log(eq[1]) - est, hi_b - est),
                    _ratio_sq(est - math.log(eq[0]), est - lo_b))
    need = n * scale
    return min(ROUNDS_CAP, max(floor, math.ceil(need) if math.isfinite(need) else ROUNDS_CAP))


def fewest_decisive_pairs(m: int, alpha: float = 0.05) -> int:
    """The fewest pairs at which a faster/slower verdict can exist in a sweep of m comparisons:
    a 95% interval needs 6, and the exact sign-flip p is at least 2 / 2^n, which a lone effect
    must bring to alpha / m for Benjamini-Hochberg to pass it (the others being null):
    n >= log2(2m / alpha). 6 for m = 1, 7 for m = 2, 9 for m = 10, 10 for m = 20."""
    return max(math.ceil(math.log2(2 * max(1, m) / alpha)), _min_pairs(0.95))


@functools.lru_cache(maxsize=None)
def _min_pairs(level: float) -> int:
    """Fewest pairs for which _walsh_interval exists at `level`."""
    return next(n for n in range(1, 64) if _signed_rank_cut(n, level) >= 1)


def _p_scale(c: Comparison, alpha: float) -> float:
    """(z_needed / z_now)^2: how much n must grow for the raw p to clear alpha after BH's
    factor for this comparison (p_adjusted / p_value, kept as it is)."""
    factor = c.p_adjusted / c.p_value if c.p_value > 0 else 1.0
    z_now = sps.norm.isf(c.p_value / 2)
    z_needed = sps.norm.isf(alpha / factor / 2)
    return (z_needed / z_now) ** 2 if z_now > 0 else math.inf


def _ratio_sq(half_width: float, margin: float) -> float:
    return (half_width / margin) ** 2 if margin > 0 else math.inf


def _why(c: Comparison, threshold: float, alpha: float) -> str:
    t = f"{threshold * 100:g}%"
    p = f"adjusted p = {c.p_adjusted:.2g}"
    if (c.pooled or c.layouts) and c.verdict == "inconclusive":
        reason = (_significant_but(c, threshold, p) if c.p_adjusted < alpha
                  else f"not significant ({p}) and the 90% CI {_fmt(c.ci90)} does not fit "
                  f"inside +-{t}")
        more = ("more layouts (not more rounds: they leave each layout's effect as it is)"
                if c.layouts else "more rounds of the undecided ones")
        return f"{reason}, {_over(c)}; {more} would narrow it"
    if c.n_pairs < 2:
        return (f"only {c.n_pairs} round(s) measured both binaries, so there is no interval or "
                f"test; measure at least {c.rounds_needed} rounds")
    if c.verdict in ("faster", "slower"):
        lo, hi = sorted(abs(x - 1) * 100 for x in c.ci95)
        return (f"{abs(c.ratio - 1) * 100:.1f}% {c.verdict} (95% CI {lo:.1f}% to {hi:.1f}%"
                f"{_fcr_text(c)}), beyond the {t} threshold, {p} over {_over(c)}")
    if c.verdict == "equivalent":
        return (f"within +-{t}: the {_eq_name(c)} {_fmt(c.equivalence_ci)} lies inside the "
                f"band (two one-sided tests{_eq_level(c)}), over {_over(c)}")
    if math.isnan(c.ci95[0]):
        reason = "the ratio has no finite interval (a median of zero)"
    elif c.ci95 == _NO_INTERVAL:
        return (f"only {c.n_pairs} paired rounds, too few for a 95% interval; measure at "
                f"least {c.rounds_needed} rounds")
    elif c.p_adjusted < alpha:
        reason = _significant_but(c, threshold, p)
    else:
        reason = (f"not significant ({p}) and the {_eq_name(c)} {_fmt(c.equivalence_ci)} does "
                  f"not fit inside +-{t}")
    capped = " or more" if c.rounds_needed >= ROUNDS_CAP else ""
    return (f"{reason}; roughly {c.rounds_needed}{capped} rounds would likely decide (rough: it "
            f"assumes the estimate holds), {_over(c)} so far")


def _significant_but(c: Comparison, threshold: float, p: str) -> str:
    """Why a significant comparison is not faster/slower: the interval the claim rests on
    reaches into the band, the 95% one or only the false-coverage adjusted one."""
    lo, hi = 1 - threshold, 1 + threshold
    t = f"{threshold * 100:g}%"
    clears = lambda ci: ci[1] < lo or ci[0] > hi  # noqa: E731
    if c.ci_fcr is not None and clears(c.ci95) and not clears(c.ci_fcr):
        return (f"significant ({p}) and the 95% CI {_fmt(c.ci95)} clears +-{t}, but the "
                f"{level_text(c.fcr_level)} CI {_fmt(c.ci_fcr)} that this many comparisons "
                f"call for (false-coverage adjusted) reaches into it")
    return f"significant ({p}) but the 95% CI {_fmt(c.ci95)} reaches into +-{t}"


def _fcr_text(c: Comparison) -> str:
    """"; 99.5% CI 2.1% to 6.0%, false-coverage adjusted" where the adjusted interval is wider
    than the 95% one; "" where it is the 95% one (R = m)."""
    if c.ci_fcr is None or c.fcr_level is None or c.fcr_level <= 0.95 + 1e-12:
        return ""
    lo, hi = sorted(abs(x - 1) * 100 for x in c.ci_fcr)
    return f"; {level_text(c.fcr_level)} CI {lo:.1f}% to {hi:.1f}%, false-coverage adjusted"


def level_text(level: float | None) -> str:
    """99.55% -> "99.5%": a level rounded down, so it never claims more than it is."""
    if level is None:
        return "adjusted"
    pct = math.floor(level * 1000 + 1e-9) / 10
    return f"{pct:g}%"
def _eq_name(c: Comparison) -> str:
    return "90% CI" if c.ci_tost is None else f"{100 * (1 - 2 * c.tost_level):.3g}% CI"


def _eq_level(c: Comparison) -> str:
    """A sweep that may stop at several rounds tests equivalence at each at a smaller level."""
    return "" if c.ci_tost is None else (f" at {c.tost_level:.2g} each, the level that keeps "
                                         "equivalence within 0.05 over this sweep's looks")


def _over(c: Comparison) -> str:
    if c.pooled:
        return f"the geometric mean of {c.pooled} estimates"
    if c.layouts:
        spread = f", layout alone moving it by +-{100 * c.layout_sd:.1f}%" if c.layout_sd else ""
        return f"{c.layouts} layouts a side{spread}"
    return f"{c.n_pairs} paired rounds" if c.paired else f"at least {c.n_pairs} runs in each sweep"


def change_text(ratio: float, ci: tuple[float, float] | None = None) -> str:
    """How a ratio to the baseline is written for people, everywhere: "+3.2% [+1.0, +5.4]",
    the change in percent and its 95% interval in percentage points of the same change."""
    text = f"{(ratio - 1) * 100:+.1f}%"
    return f"{text} {ci_text(ci)}" if ci else text


def ci_text(ci: tuple[float, float] | None) -> str:
    """An interval of ratios as percent changes, "[+1.0, +5.4]"; "" without one."""
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f"[{(ci[0] - 1) * 100:+.1f}, {(ci[1] - 1) * 100:+.1f}]"


def _fmt(ci: tuple[float, float]) -> str:
    return f"{ci[0]:.4f}..{ci[1]:.4f}"


def _num(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _interval(ci: tuple[float, float]) -> list[float] | None:
    return [float(ci[0]), float(ci[1])] if all(map(math.isfinite, ci)) else None


# --------------------------------------------------------------------------------------------
# Sensitivity: what this machine can resolve, and how many rounds a precision needs.
# --------------------------------------------------------------------------------------------

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
    margin = math.log1p(threshold_pct / 100)
    spread = half95 if spread95 is None else spread95
    return 100 * math.expm1(margin + half_m + Z80 / Z95 * spread)


def rounds_to_detect(half95: float, half_m: float, n: int, effect_pct: float,
                     threshold_pct: float, m: int) -> int | None:
    """Rounds at which detectable_pct comes down to `effect_pct`, both half-widths shrinking
    as 1/sqrt(n); None when the effect is not beyond the threshold."""
    target, margin = math.log1p(effect_pct / 100), math.log1p(threshold_pct / 100)
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
            sd, n, source = _robust_sd(d), len(common), "the A/A twin"
            if n >= _min_pairs(0.95):
                halves, spread = _reaches(d, level_m)
    if sd is None and twin is not None:
        n, source = summary.n, "sqrt(2) x the baseline's CV (too few usable A/A twin rounds)"
    if sd is None:
        cv = _robust_cv(np.array(list(baseline.values()), dtype=float))
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
    reaches keep clean and stalled noise within 75-85% (bench/statistics.py statement)."""
    n, w = len(d), _walsh_averages(d)
    hl = float(np.median(w))
    sides = []
    for level in (0.95, level_m):
        lo, hi = _walsh_interval(w, n, level)
        ok = 0 < lo <= hi < math.inf
        sides.append((hl - math.log(lo), math.log(hi) - hl) if ok else (math.inf, math.inf))
    (low95, up95), (low_m, up_m) = sides
    return (max(low95, up95), max(low_m, up_m)), min(low95, up95)


def log_half_width(ci: tuple[float, float]) -> float:
    """Half an interval of ratios' width on the log scale (about relative); inf without one."""
    lo, hi = ci
    return (math.log(hi) - math.log(lo)) / 2 if 0 < lo <= hi < math.inf else math.inf


def _without_outliers(x: np.ndarray) -> np.ndarray:
    drop = outlier_indices(x)
    return np.delete(x, drop)


def _robust_sd(x: np.ndarray) -> float | None:
    kept = _without_outliers(x)
    return float(np.std(kept, ddof=1)) if len(kept) >= 2 else None


def _robust_cv(x: np.ndarray) -> float | None:
    kept = _without_outliers(x)
    if len(kept) < 2 or np.mean(kept) <= 0:
        return None
    return float(np.std(kept, ddof=1) / np.mean(kept))


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
