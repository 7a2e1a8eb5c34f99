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

from flagsweep import stats
from flagsweep.stats.comparison import RatioEstimate
from flagsweep.stats.means import welch_df

Replicates = dict[str, dict[int, float]]     # replicate id -> {round: value}
# More rounds no longer narrow a comparison once the runs' share of the variance of a layout's
# level is below this: the layouts' own spread is then nearly all of it (Kalibera & Jones, ISMM
# 2013: repeat at the level where the variance lives).
RUN_SHARE_SETTLED = 0.1
FQUANTILES = 64          # of the variance ratio, over which power() averages Welch's df


def group(values: dict[str, dict[int, float]], layouts: dict[str, str]) -> dict[str, Replicates]:
    """variant -> its replicates' values, from values keyed by replicate id (`layouts`:
    replicate id -> variant id; an id not in it is a variant of one build)."""
    out: dict[str, Replicates] = {}
    for rid, by_round in values.items():
        out.setdefault(layouts.get(rid, rid), {})[rid] = by_round
    return out


def compare_all(values: dict[str, dict[int, float]], layouts: dict[str, str],
                baseline: str) -> dict[str, RatioEstimate]:
    """Every variant against the baseline over their layouts (not adjusted: stats.adjust)."""
    return compare_arms(group(values, layouts), baseline)


def compare_arms(arms: dict[str, Replicates], baseline: str) -> dict[str, RatioEstimate]:
    """compare_all for values already grouped by variant."""
    if baseline not in arms:
        return {}
    return {vid: compare(reps, arms[baseline]) for vid, reps in arms.items() if vid != baseline}


def compare(variant: Replicates, baseline: Replicates) -> RatioEstimate:
    """Variant / baseline over their layout replicates: the ratio of the arms' mean levels,
    Welch's 95% and 90% intervals and p-value, `layouts` the fewer replicates of the two arms,
    `layout_sd` the pooled spread between replicates of one arm (relative)."""
    drift = _round_levels(baseline)
    v, b = _levels(variant, drift), _levels(baseline, drift)
    k = min(len(v), len(b))
    if k < 2:
        return RatioEstimate(math.exp(float(np.mean(v) - np.mean(b))) if k else math.nan,
                             (0.0, math.inf), (0.0, math.inf), 1.0, k, layouts=k,
                             more_rounds_help=False)
    diff, se, df, sd = _welch(v, b)
    var_v, var_b = float(np.var(v, ddof=1)), float(np.var(b, ddof=1))
    if se == 0:                      # every replicate alike: a deterministic metric
        exact = (math.exp(diff), math.exp(diff))
        return RatioEstimate(math.exp(diff), exact, exact, 1.0 if diff == 0 else 0.0, k,
                             layouts=k, layout_sd=0.0, more_rounds_help=False)
    t = abs(diff) / se
    ci = lambda level: tuple(math.exp(diff + s * float(sps.t.ppf(0.5 + level / 2, df)) * se)  # noqa: E731
                             for s in (-1, 1))
    runs = (_run_variance(variant, drift) + _run_variance(baseline, drift)) / 2
    return RatioEstimate(math.exp(diff), ci(0.95), ci(0.90), float(2 * sps.t.sf(t, df)), k,
                         layouts=k, layout_sd=math.expm1(sd), interval_at=ci,
                         more_rounds_help=runs > RUN_SHARE_SETTLED * (var_v + var_b) / 2)


def noise(baseline: Replicates, twin: Replicates | None, threshold_pct: float,
          m: int = 1, alpha: float = 0.05) -> dict:
    """results.json's `noise` over layouts: the smallest effect this sweep calls at 80% power
    when each comparison is the two-level one above, read from the A/A twin (other layouts of
    the baseline's code): Welch's intervals at 95% and at 1 - alpha/m from its levels' spread,
    turned into an effect by stats.detectable_pct. More rounds do not shrink it once the
    layouts' spread dominates; more layouts do."""
    out = {"baseline_cv": stats.summarize(pooled(baseline)).cv, "mde_pct": None,
           "sd_log_diff": None, "n_pairs": 0, "source": "the A/A twin's layouts",
           "comparisons": m, "power": 0.8, "warning": None, "rounds_needed": None}
    if not twin:
        return {**out, "warning": "no A/A twin layouts were measured, so the noise of this "
                                  "sweep is unknown"}
    drift = _round_levels(baseline)
    v, b = _levels(twin, drift), _levels(baseline, drift)
    k = min(len(v), len(b))
    if k < 2:
        return {**out, "n_pairs": k, "warning": f"{k} layout(s) a side measured: no spread "
                                                "between layouts can be estimated"}
    _, se, df, sd = _welch(v, b)
    half95 = float(sps.t.ppf(0.975, df)) * se
    half_m = float(sps.t.ppf(1 - alpha / max(1, m) / 2, df)) * se
    mde = stats.detectable_pct(half95, half_m, threshold_pct) if se > 0 else threshold_pct
    warning = None
    if mde > 2 * threshold_pct:
        warning = (f"with {k} layouts a side this sweep calls effects of {mde:.1f}% or more "
                   f"(80% power); layout alone moves this program by +-{100 * math.expm1(sd):.1f}%"
                   ", which more rounds do not narrow: more layouts (--layouts) do")
    return {**out, "mde_pct": mde, "sd_log_diff": sd, "n_pairs": k, "warning": warning}


def power(k: int, sd: float, gain_pct: float, threshold_pct: float, m: int = 1,
          alpha: float = 0.05) -> float:
    """The chance that a variant truly gain_pct faster than the baseline is called faster when
    the two are compared over k layouts a side (compare, then stats.adjust over m comparisons),
    each layout's level spread by `sd` (log scale) about its arm's mean.

    A lone claim among m is made when its false-coverage adjusted interval, at 1 - alpha/m
    (stats.multiplicity.fcr_intervals), lies wholly beyond the threshold. With equal spreads
    the arms' difference over its estimated standard error, less the threshold's log, is a
    noncentral t with noncentrality (log(1 - g) - log(1 - t)) / (sd sqrt(2/k)), and the claim
    is its lower tail below the interval's t quantile: the power of a one-sided t test against
    a shifted null (Chow, Shao & Wang, Sample Size Calculations in Clinical Research, 2nd ed.,
    Chapman & Hall/CRC 2008, ch. 3, superiority by a margin; the noncentral t as Cohen,
    Statistical Power Analysis for the Behavioral Sciences, 2nd ed., 1988, ch. 2, uses it).
    Welch's degrees of freedom are not 2k - 2 even when the arms spread alike: they are
    (k - 1)(1 + F)^2 / (1 + F^2), F the ratio of the arms' sample variances, distributed
    F(k - 1, k - 1) (Satterthwaite, Biometrics Bulletin 2, 1946), so the power is averaged over
    FQUANTILES quantiles of F. Against a simulation of the test (tests/results/
    test_layout_rows.py) that is within 4 points from k = 3, where 2k - 2 alone overstated
    k = 4 by 6."""
    if k < 2 or sd <= 0:
        return 0.0 if k < 2 else float(gain_pct > threshold_pct)
    f = sps.f.ppf((np.arange(FQUANTILES) + 0.5) / FQUANTILES, k - 1, k - 1)
    df = (k - 1) * (1 + f) ** 2 / (1 + f ** 2)
    se = sd * math.sqrt(2 / k)
    quantile = sps.t.ppf(1 - alpha / (2 * max(1, m)), df)
    shift = (math.log1p(-gain_pct / 100) - math.log1p(-stats.fraction(threshold_pct))) / se
    return float(np.mean(sps.nct.cdf(-quantile, df, shift)))


def layouts_for(sd: float, gain_pct: float, threshold_pct: float, m: int, wanted: float,
                most: int, fewest: int = 2) -> int:
    """The fewest layouts a side (`fewest` to `most`) at which `power` reaches `wanted`;
    `most` when none does."""
    return next((k for k in range(max(2, fewest), most + 1)
                 if power(k, sd, gain_pct, threshold_pct, m) >= wanted), most)


def level_values(arms: dict[str, Replicates], baseline: str) -> dict[str, dict[int, float]]:
    """variant -> {layout's place: exp(its level)}: one observation per layout, for a model of
    the factors (flagsweep.stats.effects) that must carry the layout level."""
    if baseline not in arms:
        return {}
    drift = _round_levels(arms[baseline])
    return {vid: {j: math.exp(level) for j, level in enumerate(_levels(reps, drift))}
            for vid, reps in arms.items()}


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


def _welch(v: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """(difference of means, its standard error, Welch's degrees of freedom, the pooled sd)."""
    var_v, var_b = float(np.var(v, ddof=1)), float(np.var(b, ddof=1))
    se = math.sqrt(var_v / len(v) + var_b / len(b))
    sd = math.sqrt(((len(v) - 1) * var_v + (len(b) - 1) * var_b) / (len(v) + len(b) - 2))
    return float(np.mean(v) - np.mean(b)), se, welch_df(var_v, len(v), var_b, len(b)), sd


def _run_variance(arm: Replicates, drift: dict[int, float]) -> float:
    """The part of a layout level's variance that the runs bring, averaged over the arm's
    replicates: the variance of its drift-free log values over the rounds, divided by their
    number and times pi/2 (the median's efficiency on normal data)."""
    parts = []
    for values in arm.values():
        d = [math.log(x) - drift[r] for r, x in values.items() if r in drift and x > 0]
        if len(d) >= 2:
            parts.append(float(np.var(d, ddof=1)) / len(d) * math.pi / 2)
    return float(np.mean(parts)) if parts else 0.0
