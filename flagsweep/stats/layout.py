"""Comparisons with two levels of variance: runs within a build, and builds (layouts) within a
variant.

Link order, section placement and environment size move a program's speed by a few percent
without any change to its code (Mytkowicz, Diwan, Hauswirth & Sweeney, Producing wrong data
without doing anything obviously wrong!, ASPLOS 2009); re-randomising layout, -O3 against -O2
was indistinguishable from noise across SPEC CPU2006 (Curtsinger & Berger, STABILIZER, ASPLOS
2013). A variant measured as one build carries one draw of that layout effect, which no number
of runs averages away: runs are repeated at the wrong level (Kalibera & Jones, Rigorous
benchmarking in reasonable time, ISMM 2013). So each variant is built K times, same code,
different seeded layouts, and the comparison is made at the level where the variance lives.

Model, on the log scale: log x[a, j, r] = mu_a + L[a, j] + R[r] + e[a, j, r], for arm a (variant
or baseline), layout replicate j, round r; L ~ N(0, s_L^2) the layout effect, R the round's drift
shared by every binary of the round, e the run noise. For a balanced nested design the test of
mu_v - mu_b in the mixed model is the two-sample t-test on the replicates' own levels (each
replicate's level averages its runs, so its variance is s_L^2 + s_e^2 / n; Montgomery, Design and
Analysis of Experiments, 8th ed., Wiley 2013, sec. 14.1, the two-stage nested design, where the
treatment is tested against the replicates-within-treatment mean square). Here each replicate's
level is the median over rounds of its log value minus that round's baseline mean (the round
drift R cancels, and a stalled run does not pull it), and the arms are compared by Welch's t-test
(Welch, The generalization of 'Student's' problem when several different population variances
are involved, Biometrika 34, 1947), since a variant's layout spread need not equal the
baseline's. Its interval is what stats.adjust turns into a verdict, so a faster or slower call
needs the effect to stand out from what layout alone does.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from flagsweep.stats import Comparison

Replicates = dict[str, dict[int, float]]     # replicate id -> {round: value}


def compare(variant: Replicates, baseline: Replicates) -> Comparison:
    """Variant / baseline over their layout replicates: the ratio of the arms' mean levels,
    Welch's 95% and 90% intervals and p-value, `layouts` the fewer replicates of the two arms,
    `layout_sd` the pooled spread between replicates of one arm (relative)."""
    drift = _round_levels(baseline)
    v, b = _levels(variant, drift), _levels(baseline, drift)
    k = min(len(v), len(b))
    if k < 2:
        return Comparison(math.exp(float(np.mean(v) - np.mean(b))) if k else math.nan,
                          (0.0, math.inf), (0.0, math.inf), 1.0, k, layouts=k)
    diff = float(np.mean(v) - np.mean(b))
    var_v, var_b = float(np.var(v, ddof=1)), float(np.var(b, ddof=1))
    se = math.sqrt(var_v / len(v) + var_b / len(b))
    sd = math.sqrt(((len(v) - 1) * var_v + (len(b) - 1) * var_b) / (len(v) + len(b) - 2))
    if se == 0:                      # every replicate alike: a deterministic metric
        exact = (math.exp(diff), math.exp(diff))
        return Comparison(math.exp(diff), exact, exact, 1.0 if diff == 0 else 0.0, k,
                          layouts=k, layout_sd=0.0)
    df = _welch_df(var_v, len(v), var_b, len(b))
    t = abs(diff) / se
    ci = lambda level: tuple(math.exp(diff + s * float(sps.t.ppf(0.5 + level / 2, df)) * se)  # noqa: E731
                             for s in (-1, 1))
    return Comparison(math.exp(diff), ci(0.95), ci(0.90), float(2 * sps.t.sf(t, df)), k,
                      layouts=k, layout_sd=math.expm1(sd))


def pooled(arm: Replicates) -> dict[int, float]:
    """One value per round for an arm, its replicates' geometric mean in that round: what a
    comparison that ignores the layout level sees (it pairs rounds, and the layout effect, the
    same in every round, passes for an effect of the flags)."""
    by_round: dict[int, list[float]] = {}
    for values in arm.values():
        for r, x in values.items():
            if x > 0:
                by_round.setdefault(r, []).append(math.log(x))
    return {r: math.exp(sum(xs) / len(xs)) for r, xs in by_round.items()}


def _round_levels(baseline: Replicates) -> dict[int, float]:
    """Each round's mean log value over the baseline's replicates: the drift every binary of
    that round shares."""
    return {r: math.log(x) for r, x in pooled(baseline).items()}


def _levels(arm: Replicates, drift: dict[int, float]) -> np.ndarray:
    """Each replicate's level: the median over the rounds it shares with the baseline of its log
    value less the round's drift. A replicate with no such round has no level."""
    out = []
    for values in arm.values():
        d = [math.log(x) - drift[r] for r, x in values.items() if r in drift and x > 0]
        if d:
            out.append(float(np.median(d)))
    return np.asarray(out)


def _welch_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    """The Welch-Satterthwaite degrees of freedom."""
    qa, qb = var_a / n_a, var_b / n_b
    den = (qa * qa / (n_a - 1) if n_a > 1 else 0.0) + (qb * qb / (n_b - 1) if n_b > 1 else 0.0)
    return (qa + qb) ** 2 / den if den > 0 else float(n_a + n_b - 2)
