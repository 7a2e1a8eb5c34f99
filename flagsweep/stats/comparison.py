"""A variant against the baseline: paired by round (the round is the block), the Hodges-Lehmann
estimate of the per-round ratio with exact signed-rank (Walsh average) 95% and 90% intervals
and a sign-flip permutation p-value with the signed-rank statistic (a bootstrap only for
metrics that can be zero); two independent samples; and the pooled mean of several estimates.
docs/statistics.md says why these replaced the design sketch's ratio of medians with bootstrap
CIs."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from flagsweep.stats import significance
from flagsweep.stats.intervals import (NO_INTERVAL, Z95, bootstrap_median_ratios, median_ratios,
                                       mw_interval, normal_interval, percentiles,
                                       walsh_averages, walsh_interval)


@dataclass
class RatioEstimate:
    """What the statistics say about one ratio to the baseline: the estimate, its intervals
    and test, and (by stats.adjust) its verdict. The results layer turns it into the contract's
    Comparison (to_json is that row)."""

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
    # The same interval as ci95/ci90 at any level (level -> (low, high)); None: see at_level.
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
            n_boot: int = 2000, tost: float = 0.05) -> RatioEstimate:
    """Variant / baseline ratio with CIs and a permutation p-value, all by round.

    Only rounds where both binaries were measured are used: a round is a block (same machine
    state for every binary), so per-round log ratios d_r cancel round-to-round drift. Unequal n
    then simply means fewer pairs. From the d_r come three things that belong together: the
    signed-rank permutation test (signflip_p), its Hodges-Lehmann estimate of the ratio, and the
    CIs that invert that test (walsh_interval). A metric that can be zero has no log ratio: then
    the ratio of medians with a bootstrap over whole pairs (`n_boot` resamples), and plain
    differences for the test. Deterministic given `seed`. `tost` below 0.05: equivalence is
    judged on the 1 - 2 tost interval (ci_tost), a sweep's level for a test repeated at every
    look (stats.sequential)."""
    common = sorted(set(variant) & set(baseline))
    v = np.array([variant[r] for r in common], dtype=float)
    b = np.array([baseline[r] for r in common], dtype=float)
    if len(common) < 2:
        # Nothing to resample or permute: the raw ratio of medians and an interval deciding nothing.
        ratio = median_ratios(np.array(list(variant.values()), dtype=float)[None, :],
                              np.array(list(baseline.values()), dtype=float)[None, :])[0]
        return RatioEstimate(float(ratio), NO_INTERVAL, NO_INTERVAL, 1.0, len(common),
                             why=f"only {len(common)} round(s) measured both binaries; "
                                 "no interval or test is possible")
    rng = np.random.default_rng(seed)
    if np.all(v > 0) and np.all(b > 0):
        d = np.log(v) - np.log(b)
        w = walsh_averages(d)
        ratio = math.exp(float(np.median(w)))
        at = functools.partial(walsh_interval, w, len(d))
    else:
        d = v - b
        ratio = float(median_ratios(v[None, :], b[None, :])[0])
        boot = bootstrap_median_ratios(v, b, rng, n_boot)
        at = lambda level: percentiles(boot, 100 * level)  # noqa: E731
    # through the module: bench/verdict_rules.py swaps in the exact test
    return RatioEstimate(ratio, at(0.95), at(0.90), significance.signflip_p(d, rng), len(common),
                         interval_at=at, ci_tost=at(1 - 2 * tost) if tost < 0.05 else None,
                         tost_level=tost)


def paired_interval(variant: dict[int, float], baseline: dict[int, float],
                    level: float) -> tuple[float, float]:
    """compare's interval of the ratio at any level: the Walsh-average (Tukey) interval of the
    per-round log ratios over the rounds both measured. NO_INTERVAL when a value is not
    positive or the pairs are too few for the level."""
    common = sorted(set(variant) & set(baseline))
    v = np.array([variant[r] for r in common], dtype=float)
    b = np.array([baseline[r] for r in common], dtype=float)
    if len(common) < 2 or not (np.all(v > 0) and np.all(b > 0)):
        return NO_INTERVAL
    return walsh_interval(walsh_averages(np.log(v) - np.log(b)), len(common), level)


def compare_unpaired(b: Sequence[float], a: Sequence[float]) -> RatioEstimate:
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
        return RatioEstimate(ratio, NO_INTERVAL, NO_INTERVAL, 1.0, min(m, n), paired=False)
    diffs = np.sort((lb[:, None] - la[None, :]).ravel())
    ratio = math.exp(float(np.median(diffs)))
    p = float(sps.mannwhitneyu(lb, la, alternative="two-sided").pvalue)
    at = functools.partial(mw_interval, diffs, m, n)
    return RatioEstimate(ratio, at(0.95), at(0.90), p, min(m, n), paired=False, interval_at=at)


def pool(estimates: Sequence[tuple[float, tuple[float, float] | None]]) -> RatioEstimate | None:
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
        return RatioEstimate(math.exp(mean), exact, exact, 1.0 if mean == 0 else 0.0, k, pooled=k)
    ci = lambda level: normal_interval(mean, se, se, level)  # noqa: E731
    p = float(2 * sps.norm.sf(abs(mean) / se))
    return RatioEstimate(math.exp(mean), ci(0.95), ci(0.90), p, k, pooled=k, interval_at=ci)


def _num(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _interval(ci: tuple[float, float]) -> list[float] | None:
    return [float(ci[0]), float(ci[1])] if all(map(math.isfinite, ci)) else None
