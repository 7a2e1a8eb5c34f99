"""Intervals of a ratio: the signed-rank (Walsh average) interval of paired log ratios, the
Mann-Whitney interval of two independent samples, a normal interval, and the percentile
bootstrap for metrics that can be zero, and the exact interval of a binomial rate. Each inverts
a test, so its coverage is the test's."""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import stats as sps

Z95 = 1.959963984540054       # the normal distribution's 97.5% point
NO_INTERVAL = (0.0, math.inf)       # an interval that decides nothing: never faster/slower/equal


def normal_interval(mean: float, se_low: float, se_high: float,
                    level: float) -> tuple[float, float]:
    """exp(mean -+ z se) at `level`, each side with its own standard error."""
    z = float(sps.norm.isf((1 - level) / 2))
    return (math.exp(mean - z * se_low), math.exp(mean + z * se_high))


def mw_interval(diffs: np.ndarray, m: int, n: int, level: float) -> tuple[float, float]:
    k = _mann_whitney_cut(m, n, level)
    if k < 1:
        return NO_INTERVAL
    return (math.exp(float(diffs[k - 1])), math.exp(float(diffs[len(diffs) - k])))


@functools.lru_cache(maxsize=None)
def _mann_whitney_cut(m: int, n: int, level: float) -> int:
    """The k of mw_interval from the exact null distribution of U (the number of ways to
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


def walsh_averages(d: np.ndarray) -> np.ndarray:
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


def walsh_interval(w: np.ndarray, n: int, level: float) -> tuple[float, float]:
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
    (fewer than 6 at 95%, 5 at 90%): NO_INTERVAL. Tied |d| make the null only approximate."""
    k = _signed_rank_cut(n, level)
    if k < 1:
        return NO_INTERVAL
    return (math.exp(float(w[k - 1])), math.exp(float(w[len(w) - k])))


@functools.lru_cache(maxsize=None)
def _signed_rank_cut(n: int, level: float) -> int:
    """The k of walsh_interval: how many Walsh averages to cut from each end. Exact null
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


def bootstrap_median_ratios(v: np.ndarray, b: np.ndarray, rng: np.random.Generator,
                             n_boot: int) -> np.ndarray:
    """Ratio of medians for `n_boot` resamples of whole pairs (rounds) with replacement
    (Efron & Tibshirani, An Introduction to the Bootstrap, Chapman & Hall 1993, ch. 6 and 13:
    the bootstrap distribution of a statistic and its percentile interval)."""
    idx = rng.integers(0, len(v), size=(n_boot, len(v)))
    return median_ratios(v[idx], b[idx])


def median_ratios(v: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Ratio of medians per row: the fallback for metrics that can be zero (sys time, some
    counters), which have no log ratio; nan/inf where a median is zero."""
    if v.shape[1] == 0 or b.shape[1] == 0:
        return np.full(v.shape[0], math.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.median(v, axis=1) / np.median(b, axis=1)


def percentiles(boot: np.ndarray, level: float) -> tuple[float, float]:
    """Percentile interval; (nan, nan) when some resample had no ratio (a median of zero)."""
    if not np.all(np.isfinite(boot)):
        return (math.nan, math.nan)
    lo, hi = np.percentile(boot, [(100 - level) / 2, (100 + level) / 2])
    return (float(lo), float(hi))


@functools.lru_cache(maxsize=None)
def min_pairs(level: float) -> int:
    """Fewest pairs for which walsh_interval exists at `level`."""
    return next(n for n in range(1, 64) if _signed_rank_cut(n, level) >= 1)


def log_half_width(ci: tuple[float, float]) -> float:
    """Half an interval of ratios' width on the log scale (about relative); inf without one."""
    lo, hi = ci
    return (math.log(hi) - math.log(lo)) / 2 if 0 < lo <= hi < math.inf else math.inf


def binomial_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a rate seen k times in n trials: the beta
    quantiles that invert two one-sided binomial tests (Clopper & Pearson, The use of confidence
    or fiducial limits illustrated in the case of the binomial, Biometrika 26(4), 1934). It
    covers at least `level` for every rate, where the normal approximation says nothing at
    k = 0, which is what a clean runner's A/A comparisons give."""
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    tail = (1 - level) / 2
    low = float(sps.beta.ppf(tail, k, n - k + 1)) if k > 0 else 0.0
    high = float(sps.beta.ppf(1 - tail, k + 1, n - k)) if k < n else 1.0
    return low, high
