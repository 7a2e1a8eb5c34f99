"""What one binary measured: the median with its distribution-free CI, mean, CV, and outliers
flagged but never dropped.

The median's CI comes from order statistics: for n independent samples, the number below the
true median is Binomial(n, 1/2), so the interval [x_(l), x_(u)] with l the largest rank such that
P(B <= l - 1) <= alpha/2 and u = n + 1 - l covers the median with probability >= 1 - alpha, for any
continuous distribution. (Conover, Practical Nonparametric Statistics, 3rd ed., 1999, section
3.2; Hahn & Meeker, Statistical Intervals, 1991, section 5.2.) Timings are skewed and carry
outliers, which is why the median and not the mean is the measure here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

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
    l, coverage = median_ranks(n, level)
    if l < 1:
        return None
    u = n + 1 - l
    return MedianCI(float(np.median(x)), float(x[l - 1]), float(x[u - 1]), coverage)


@functools.lru_cache(maxsize=1024)
def median_ranks(n: int, level: float) -> tuple[int, float]:
    """(l, coverage): the median interval's lower rank (1-based; < 1 when none exists) and its
    coverage. A function of n and the level alone, so kept: a history summarises thousands of
    nights of the same few round counts, and scipy's binomial costs more than the rest."""
    alpha = 1 - level
    # Largest l with P(B <= l - 1) <= alpha/2, B ~ Binomial(n, 1/2); ranks are 1-based.
    l = int(sps.binom.ppf(alpha / 2, n, 0.5))
    if l >= 1 and sps.binom.cdf(l - 1, n, 0.5) > alpha / 2:
        l -= 1
    return l, float(1 - 2 * sps.binom.cdf(l - 1, n, 0.5))


@dataclass(frozen=True)
class SampleSummary:
    """One variant's samples in a few numbers; the results layer turns it into the contract's
    Summary (to_json is that row)."""

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


def summarize(values: dict[int, float]) -> SampleSummary:
    """n, median (with its order-statistic CI), mean, CV and flagged outliers of one variant's
    samples, keyed by round. Outliers are counted and named, never removed: a slow sample is a
    fact about the machine, and the median and the rank test are already insensitive to it."""
    rounds = sorted(values)
    x = np.array([values[r] for r in rounds], dtype=float)
    n = len(x)
    if n == 0:
        return SampleSummary(0, None, None, None, None, 0, ())
    ci = median_ci(x)
    mean = float(np.mean(x))
    cv = float(np.std(x, ddof=1) / mean) if n >= 2 and mean != 0 else None
    flagged = tuple(rounds[i] for i in outlier_indices(x))
    return SampleSummary(n, float(np.median(x)), (ci.low, ci.high) if ci else None, mean, cv,
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


def _without_outliers(x: np.ndarray) -> np.ndarray:
    drop = outlier_indices(x)
    return np.delete(x, drop)


def robust_sd(x: np.ndarray) -> float | None:
    kept = _without_outliers(x)
    return float(np.std(kept, ddof=1)) if len(kept) >= 2 else None


def robust_cv(x: np.ndarray) -> float | None:
    kept = _without_outliers(x)
    if len(kept) < 2 or np.mean(kept) <= 0:
        return None
    return float(np.std(kept, ddof=1) / np.mean(kept))
