"""The estimate a recommendation prints, with the interval its verdict used.

A sweep names its winner after looking at every comparison, so the winner's own 95% interval
is no longer a 95% interval: among m comparisons the one chosen tends to be the one whose
noise, and with one build a variant whose code layout, flattered it most. Printed beside
"Use X", the plain 95% interval of the chosen one covered its true effect in 30-37% of
simulated sweeps at a layout spread of 1.5%, the gain overstated by 1.2-1.9 points
(bench/intervals.py). So "Use X" prints the interval the decision rested on, of one of these
kinds (`recommendation.estimate.kind`):

- `selection-adjusted`: the winner's false-coverage-rate adjusted interval, `ci_fcr` at level
  1 - R alpha / m for R selected of the sweep's m comparisons (Benjamini & Yekutieli, False
  discovery rate-adjusted multiple confidence intervals for selected parameters, JASA 100(469),
  2005; stats.fcr_intervals): the interval its "faster" verdict needed beyond the threshold,
  built for parameters chosen by looking at the data. With one build a variant it is about the
  binaries measured, and holds no layout luck: printed so only where the layout question was
  not answered (--no-confirm, a confirmation that failed or is running) or a sweep with
  --layouts compared over layouts already.
- `with-layout-luck`: the flags' effect from a sweep of one build a variant whose winner needed
  no confirmation. A one-build comparison carries the difference of two builds' layout effects,
  sd sqrt(2) s on the log scale (s the spread of one build's layout; results.confirmation's
  reach is 1.96 sqrt(2) s), independent of the run noise, so the two add in variance (the
  random-effects sum of within and between variance: Borenstein, Hedges, Higgins & Rothstein,
  Introduction to Meta-Analysis, Wiley 2009, ch. 12). Every comparison's interval is widened
  so, and the false-coverage adjustment made again over the widened ones: with layout luck
  many one-build comparisons clear the threshold, R grows, and the level of the narrow
  intervals drops to about 95%, while the winner is the luckiest of many. Over the widened ones
  the choice is among flags. results.confirmation asks for no confirmation exactly when this
  interval lies beyond the threshold.
- `over-layouts`: the confirmation's estimate and the interval its verdict used, over K layouts
  each of the winner and the baseline (results.confirmation), adjusted across the
  confirmation's own comparisons. Its layouts were built after the winner was chosen, so the
  choice does not bias it, and its interval carries the layout spread: the flags' effect.
  Printed only when it confirmed the winner, so its estimate is the one that passed (the
  significance filter): bench/intervals.py measures what that costs at each K.
- `unadjusted`: the 95% interval, where an older record kept no adjusted one.
"""

from __future__ import annotations

import functools
import math

from flagsweep import stats
from flagsweep import model
from flagsweep.model import is_control
from flagsweep.stats import intervals

SELECTED, WITH_LUCK, OVER_LAYOUTS, UNADJUSTED = ("selection-adjusted", "with-layout-luck",
                                                 "over-layouts", "unadjusted")
# The verdicts of comparisons made (every other variant was not compared: identical code, not
# measured), the family the adjustment chose among.
COMPARED = ("faster", "slower", "equivalent", "inconclusive")
CITED = "false-coverage rate, Benjamini & Yekutieli 2005"


def comparisons(doc: model.Results) -> int:
    """How many comparisons the sweep's adjustment chose among: every variant compared with the
    baseline, the A/A twin and a reference arm included."""
    return sum(1 for v in doc.variants if v.vs_baseline is not None
               and v.vs_baseline.verdict in COMPARED)


def selected(vs: model.VsBaseline, m: int | None) -> model.Estimate:
    """A recommended variant's comparison as it is printed: its estimate and the adjusted
    interval its verdict used (the 95% one, `unadjusted`, where none was kept)."""
    layouts = getattr(vs, "layouts", None) or None
    if not (vs.ci_fcr and vs.fcr_level):
        return _unadjusted(vs.ratio, vs.ci95, layouts, vs.p_adjusted)
    held = (f"over {layouts} layouts each, so it holds their spread" if layouts else
            "of one build each: it holds no layout luck, which was not measured")
    return model.Estimate(
        ratio=vs.ratio, ci=vs.ci_fcr, level=vs.fcr_level, kind=SELECTED, layouts=layouts,
        comparisons=m, p_adjusted=vs.p_adjusted,
        why=f"The interval is the one its verdict used, adjusted for choosing it{_among(m)} "
            f"({CITED}): a plain 95% interval of the best of many is too narrow and too far "
            f"from no change. It is {held}.")


def with_luck(doc: model.Results, variant: str, reach_pct: float) -> model.Estimate | None:
    """The recommended variant's interval of its flags' effect from a sweep of one build a
    variant: every comparison's interval widened by one build's layout luck (reach_pct, 95%,
    results.confirmation), then the false-coverage adjustment made again over those widened
    intervals, so that the choice among m is of flags, not of lucky links. None when the
    variant was not compared."""
    return with_luck_all(doc, reach_pct).get(variant)


def with_luck_all(doc: model.Results, reach_pct: float) -> dict[str, model.Estimate]:
    """with_luck of every compared variant, from one adjustment over them all: what
    results.confirmation holds each faster or slower row's interval to."""
    luck = math.log1p(reach_pct / 100) / stats.Z95  # sd of a one-build comparison's luck
    found = {v.id: v.vs_baseline for v in doc.variants
             if v.vs_baseline is not None and v.vs_baseline.verdict in COMPARED}
    # the A/A twin and a reference arm are copies of a binary: no layout of their own to draw
    widened = {vid: _widened(vs, 0.0 if is_control(vid) else luck) for vid, vs in found.items()}
    m, alpha = len(widened), _alpha(doc)
    stats.fcr_intervals(list(widened.values()), threshold_of(doc), alpha)
    out = {}
    for vid, c in widened.items():
        if c.ci_fcr is None:        # its estimate is inside the threshold: the lone-choice level
            c.ci_fcr, c.fcr_level = c.interval_at(1 - alpha / m), 1 - alpha / m
        out[vid] = model.Estimate(
            ratio=c.ratio, ci=list(c.ci_fcr), level=c.fcr_level, kind=WITH_LUCK, comparisons=m,
            p_adjusted=found[vid].p_adjusted,
            why=f"The interval holds the layout luck of one build a variant (reach "
                f"{reach_pct:.1f}%), adjusted for choosing it{_among(m)} over such intervals "
                f"({CITED}): the flags' effect, not one lucky link's. It lies beyond the "
                "threshold, so no confirmation over layouts was needed.")
    return out


def _widened(vs: model.VsBaseline, luck: float) -> stats.RatioEstimate:
    """A comparison whose interval at any level also holds a layout luck of sd `luck` (log
    scale): each side's standard error, read from its 95% interval, and the luck's, added in
    variance."""
    ratio, ci = vs.ratio, vs.ci95
    if not (ratio and ratio > 0 and ci and 0 < ci[0] <= ratio <= ci[1] < math.inf):
        return stats.RatioEstimate(ratio or math.nan, intervals.NO_INTERVAL,
                                   intervals.NO_INTERVAL, 1.0, 0,
                                   interval_at=lambda level: intervals.NO_INTERVAL)
    est = math.log(ratio)
    low = math.hypot((est - math.log(ci[0])) / stats.Z95, luck)
    high = math.hypot((math.log(ci[1]) - est) / stats.Z95, luck)
    at = functools.partial(intervals.normal_interval, est, low, high)
    return stats.RatioEstimate(ratio, at(0.95), at(0.90), vs.p_value or 1.0, vs.n_pairs or 0,
                               interval_at=at)


def threshold_of(doc: model.Results) -> float:
    """The threshold the document was judged by, in percent (older documents lack it)."""
    return stats.THRESHOLD_PCT if doc.threshold_pct is None else doc.threshold_pct


def _alpha(doc: model.Results) -> float:
    """The level the sweep's adjustment ran at (stats.sequential.Design.alpha)."""
    seq = doc.measurement.sequential if doc.measurement else None
    return getattr(seq, "alpha", None) or 0.05


def over_layouts(c: model.LayoutEstimate, k: int | None) -> model.Estimate:
    """The confirmation's estimate over K layouts each and the interval its verdict used."""
    layouts = c.layouts or k
    if not (c.ci_fcr and c.fcr_level):
        return _unadjusted(c.ratio, c.ci95, layouts, c.p_adjusted)
    return model.Estimate(
        ratio=c.ratio, ci=c.ci_fcr, level=c.fcr_level, kind=OVER_LAYOUTS, layouts=layouts,
        p_adjusted=c.p_adjusted,
        why=f"The estimate and interval are the confirmation's, over {layouts} layouts each "
            "built after the winner was chosen, so the choice does not bias them and the "
            "layout spread is in them: the interval its verdict used, adjusted across its own "
            f"comparisons ({CITED}).")


def _unadjusted(ratio, ci, layouts, p) -> model.Estimate:
    return model.Estimate(ratio=ratio, ci=ci, level=0.95 if ci else None, kind=UNADJUSTED,
                             layouts=layouts, p_adjusted=p,
                             why="The interval is the plain 95% one: the results kept no "
                                 "adjusted one, so it is not adjusted for choosing the winner.")


def printed(doc: model.Results) -> model.Estimate | None:
    """What the recommendation prints: its `estimate`; for results written before there was
    one, the same made from what they kept. None when it keeps the baseline."""
    rec = doc.recommendation
    if rec is None or not rec.variant or rec.variant == doc.baseline:
        return None
    if rec.estimate is not None:
        return rec.estimate
    c = rec.confirmation
    if c is not None and c.status == "confirmed" and c.over_layouts is not None:
        return over_layouts(c.over_layouts, c.layouts)
    vs = next((v.vs_baseline for v in doc.variants if v.id == rec.variant), None)
    return selected(vs, comparisons(doc)) if vs is not None else None


def _usable(e: model.Estimate) -> bool:
    return bool(e.ratio and e.ratio > 0 and e.ci and e.level and 0 < e.ci[0] <= e.ci[1]
                and math.isfinite(e.ci[1]))


def faster_beyond(e: model.Estimate | None, threshold_pct: float) -> bool:
    """Whether e's whole interval lies on the faster side of the threshold."""
    return beyond(e, threshold_pct, "faster")


def beyond(e: model.Estimate | None, threshold_pct: float, side: str) -> bool:
    """Whether e's whole interval lies beyond the threshold on `side` (faster or slower)."""
    if e is None or not _usable(e):
        return False
    t = stats.fraction(threshold_pct)
    return e.ci[1] < 1 - t if side == "faster" else e.ci[0] > 1 + t


def text(e: model.Estimate, against: str = "") -> str:
    """The estimate and its interval as a recommendation writes them: "-3.1% against the
    baseline (99.7% CI [-5.0, -1.2], adjusted for choosing it among 21 comparisons)"."""
    if e.ratio is None:
        return f"no estimate{against}"
    over = f" over {e.layouts:g} layouts each" if e.layouts else ""
    head = f"{stats.change_text(e.ratio)}{over}{against}"
    if not e.ci:
        return head
    level = stats.level_text(e.level) if e.level else "95%"
    return f"{head} ({level} CI {stats.ci_text(e.ci)}, {_adjusted_for(e)})"


def _adjusted_for(e: model.Estimate) -> str:
    among = _among(e.comparisons)
    return {SELECTED: f"adjusted for choosing it{among}",
            WITH_LUCK: f"with one build's layout luck, adjusted for choosing it{among}",
            OVER_LAYOUTS: "the confirmation's, on layouts built after the choice",
            }.get(e.kind, "not adjusted for choosing it")


def _among(m: int | float | None) -> str:
    return f" among {m:g} comparisons" if m else ""
