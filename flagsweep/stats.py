"""Statistics of samples. This stage: the median and its distribution-free confidence interval,
which the runner's adaptive stopping rule uses (stop on precision, never on significance).

The median's CI comes from order statistics: for n independent samples, the number below the
true median is Binomial(n, 1/2), so the interval [x_(l), x_(u)] with l the largest rank such that
P(B <= l - 1) <= alpha/2 and u = n + 1 - l covers the median with probability >= 1 - alpha, for any
continuous distribution. (Conover, Practical Nonparametric Statistics, 3rd ed., 1999, section
3.2; Hahn & Meeker, Statistical Intervals, 1991, section 5.2.) Timings are skewed and carry
outliers, which is why the median and not the mean is the measure here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps


@dataclass(frozen=True)
class MedianCI:
    median: float
    low: float
    high: float
    conf: float          # the interval's actual coverage (>= the level asked for), from the binomial

    @property
    def half_width_rel(self) -> float:
        """Half the interval's width relative to the median: the precision the runner aims at."""
        return (self.high - self.low) / 2 / abs(self.median) if self.median else math.inf


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
