"""Means under normal theory, where the unit of replication is a whole run or sweep and there
are too few of them for ranks: Student's t interval of one mean, and the pooled two-sample t
test of a shift in mean (Student, The probable error of a mean, Biometrika 6(1), 1908; Fisher,
Applications of "Student's" distribution, Metron 5, 1925, for two samples sharing one
variance), and Welch's interval of a difference of means whose spreads differ (Welch, The
generalization of "Student's" problem when several different population variances are
involved, Biometrika 34, 1947; Satterthwaite, Biometrics Bulletin 2(6), 1946, for its degrees
of freedom)."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from scipy import stats as sps


class MeanShift(NamedTuple):
    shift: float                       # mean(after) - mean(before)
    t: float
    p: float                           # two-sided
    ci95: tuple[float, float]          # of exp(shift): the values are logs


def mean_interval(values: list[float]) -> tuple[float, float] | None:
    """Student's t 95% interval of the mean, mean +- t(0.975, n - 1) s / sqrt(n); None for
    fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = sps.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def mean_shift(before: np.ndarray, after: np.ndarray) -> MeanShift:
    """after against before (logs), Student's pooled two-sample t: both sets share one spread.
    A spread of zero makes any shift certain (p 0, t infinite) and no shift no evidence."""
    k, r = len(before), len(after)
    shift = float(np.mean(after) - np.mean(before))
    df = k + r - 2
    ss = float(np.sum((before - before.mean()) ** 2) + np.sum((after - after.mean()) ** 2))
    se = math.sqrt(ss / df * (1 / k + 1 / r)) if df > 0 else math.inf
    if se == 0:
        t = math.copysign(math.inf, shift) if shift else 0.0
        return MeanShift(shift, t, 0.0 if shift else 1.0, (math.exp(shift), math.exp(shift)))
    t = shift / se
    q = t_quantile(df)
    return MeanShift(shift, t, float(2 * sps.t.sf(abs(t), df)),
                     (math.exp(shift - q * se), math.exp(shift + q * se)))


@functools.lru_cache(maxsize=1024)
def t_quantile(df: int) -> float:
    """Student's t 97.5% point at df degrees of freedom, kept: a history tests thousands of
    nights at the same few df."""
    return float(sps.t.isf(0.025, df))


class Difference(NamedTuple):
    difference: float                  # mean(a) - mean(b)
    half: float                        # the interval's half-width: difference +- half
    df: float                          # Welch-Satterthwaite degrees of freedom


def welch_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    """The Welch-Satterthwaite degrees of freedom."""
    qa, qb = var_a / n_a, var_b / n_b
    den = (qa * qa / (n_a - 1) if n_a > 1 else 0.0) + (qb * qb / (n_b - 1) if n_b > 1 else 0.0)
    return (qa + qb) ** 2 / den if den > 0 else float(n_a + n_b - 2)


def difference(a: list[float], b: list[float], level: float = 0.95) -> Difference | None:
    """Welch's two-sided `level` interval of mean(a) - mean(b); None with fewer than two values
    on a side."""
    if len(a) < 2 or len(b) < 2:
        return None
    var_a, var_b = float(np.var(a, ddof=1)), float(np.var(b, ddof=1))
    df = welch_df(var_a, len(a), var_b, len(b))
    se = math.sqrt(var_a / len(a) + var_b / len(b))
    return Difference(float(np.mean(a) - np.mean(b)),
                      float(sps.t.ppf(0.5 + level / 2, df)) * se, df)
