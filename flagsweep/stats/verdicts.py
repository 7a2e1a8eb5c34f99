"""The sweep's verdicts: Benjamini-Hochberg across all comparisons, then faster, slower,
equivalent, or inconclusive with the rounds that would likely decide, and the sentence that
says why."""

from __future__ import annotations

import math

from scipy import stats as sps

from flagsweep.stats.comparison import RatioEstimate
from flagsweep.stats.intervals import NO_INTERVAL
from flagsweep.stats.multiplicity import fcr_intervals, fewest_decisive_pairs
from flagsweep.stats.threshold import THRESHOLD_PCT, fraction
from flagsweep.stats.wording import level_text

ROUNDS_CAP = 1000


def adjust(comparisons: list[RatioEstimate], threshold_pct: float = THRESHOLD_PCT,
           alpha: float = 0.05) -> None:
    """Benjamini-Hochberg adjusted p-values across ALL comparisons of the sweep, then a verdict,
    with threshold = threshold_pct / 100:

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
    fcr_intervals(comparisons, threshold_pct, alpha)
    threshold = fraction(threshold_pct)
    for c, p in zip(comparisons, p_adj):
        c.p_adjusted = float(p)
        c.verdict, c.rounds_needed = _verdict(c, threshold, alpha), None
        if c.verdict == "inconclusive" and not (c.pooled or c.layouts):
            c.rounds_needed = _rounds_needed(c, threshold, alpha, len(comparisons))
        c.why = _why(c, threshold_pct, alpha)


def _verdict(c: RatioEstimate, threshold: float, alpha: float) -> str:
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


def _rounds_needed(c: RatioEstimate, threshold: float, alpha: float, m: int) -> int:
    """Rough total rounds at which this comparison would likely be decided.

    A CI's half-width shrinks about as 1/sqrt(n), so with half-width h at n pairs, a margin g
    between the estimate and a decision boundary is cleared near n' = n (h / g)^2. Which
    boundary: an estimate outside the +-threshold band would become faster/slower once the
    adjusted interval's (ci_fcr's) near end crosses the band's edge; one inside would become
    equivalent once both ends of the 90% CI fit inside the band. faster/slower also need the adjusted p below alpha, and a
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


def _p_scale(c: RatioEstimate, alpha: float) -> float:
    """(z_needed / z_now)^2: how much n must grow for the raw p to clear alpha after BH's
    factor for this comparison (p_adjusted / p_value, kept as it is)."""
    factor = c.p_adjusted / c.p_value if c.p_value > 0 else 1.0
    z_now = sps.norm.isf(c.p_value / 2)
    z_needed = sps.norm.isf(alpha / factor / 2)
    return (z_needed / z_now) ** 2 if z_now > 0 else math.inf


def _ratio_sq(half_width: float, margin: float) -> float:
    return (half_width / margin) ** 2 if margin > 0 else math.inf


def _why(c: RatioEstimate, threshold_pct: float, alpha: float) -> str:
    t = f"{threshold_pct:g}%"
    p = f"adjusted p = {c.p_adjusted:.2g}"
    if (c.pooled or c.layouts) and c.verdict == "inconclusive":
        reason = (_significant_but(c, threshold_pct, p) if c.p_adjusted < alpha
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
    elif c.ci95 == NO_INTERVAL:
        return (f"only {c.n_pairs} paired rounds, too few for a 95% interval; measure at "
                f"least {c.rounds_needed} rounds")
    elif c.p_adjusted < alpha:
        reason = _significant_but(c, threshold_pct, p)
    else:
        reason = (f"not significant ({p}) and the {_eq_name(c)} {_fmt(c.equivalence_ci)} does "
                  f"not fit inside +-{t}")
    capped = " or more" if c.rounds_needed >= ROUNDS_CAP else ""
    return (f"{reason}; roughly {c.rounds_needed}{capped} rounds would likely decide (rough: it "
            f"assumes the estimate holds), {_over(c)} so far")


def _significant_but(c: RatioEstimate, threshold_pct: float, p: str) -> str:
    """Why a significant comparison is not faster/slower: the interval the claim rests on
    reaches into the band, the 95% one or only the false-coverage adjusted one."""
    lo, hi = 1 - fraction(threshold_pct), 1 + fraction(threshold_pct)
    t = f"{threshold_pct:g}%"
    clears = lambda ci: ci[1] < lo or ci[0] > hi  # noqa: E731
    if c.ci_fcr is not None and clears(c.ci95) and not clears(c.ci_fcr):
        return (f"significant ({p}) and the 95% CI {_fmt(c.ci95)} clears +-{t}, but the "
                f"{level_text(c.fcr_level)} CI {_fmt(c.ci_fcr)} that this many comparisons "
                f"call for (false-coverage adjusted) reaches into it")
    return f"significant ({p}) but the 95% CI {_fmt(c.ci95)} reaches into +-{t}"


def _fcr_text(c: RatioEstimate) -> str:
    """"; 99.5% CI 2.1% to 6.0%, false-coverage adjusted" where the adjusted interval is wider
    than the 95% one; "" where it is the 95% one (R = m)."""
    if c.ci_fcr is None or c.fcr_level is None or c.fcr_level <= 0.95 + 1e-12:
        return ""
    lo, hi = sorted(abs(x - 1) * 100 for x in c.ci_fcr)
    return f"; {level_text(c.fcr_level)} CI {lo:.1f}% to {hi:.1f}%, false-coverage adjusted"


def _eq_name(c: RatioEstimate) -> str:
    return "90% CI" if c.ci_tost is None else f"{100 * (1 - 2 * c.tost_level):.3g}% CI"


def _eq_level(c: RatioEstimate) -> str:
    """A sweep that may stop at several rounds tests equivalence at each at a smaller level."""
    return "" if c.ci_tost is None else (f" at {c.tost_level:.2g} each, the level that keeps "
                                         "equivalence within 0.05 over this sweep's looks")


def _over(c: RatioEstimate) -> str:
    if c.pooled:
        return f"the geometric mean of {c.pooled} estimates"
    if c.layouts:
        spread = f", layout alone moving it by +-{100 * c.layout_sd:.1f}%" if c.layout_sd else ""
        return f"{c.layouts} layouts a side{spread}"
    return f"{c.n_pairs} paired rounds" if c.paired else f"at least {c.n_pairs} runs in each sweep"


def _fmt(ci: tuple[float, float]) -> str:
    return f"{ci[0]:.4f}..{ci[1]:.4f}"
