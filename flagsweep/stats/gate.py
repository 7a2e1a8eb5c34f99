"""The A/A gate: the twin (the baseline's own binary again, or its code in other layouts)
judges the sweep before the sweep judges the flags.

One home for the rule, because two places apply it and must agree: the analysis that writes
the verdicts (results.analysis) and the stopping rule that decides whether the sweep is done
(measure.rounds). When only the analysis applied it, a sweep stopped "decided ... 2 slower"
while its table showed those two overruled to inconclusive.

The logic is the control-arm check of an A/A test (Kohavi, Tang & Xu, "Trustworthy Online
Controlled Experiments", 2020, ch. 19): a difference between identical arms is the measurement
moving by itself, so no verdict smaller than that movement is believed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flagsweep import stats

# What the A/A twin is: a copy of the baseline's binary, or with --layouts the baseline's code
# linked in other layouts (then it shows what layout alone does, as well as the machine).
UNSTABLE = "the machine was unstable"
TWIN_IS = {False: "the baseline's own binary again", True: "the baseline's code in other layouts"}


@dataclass(frozen=True)
class Ruling:
    """What the twin ruled (results.json's `aa`): the machine unstable (every call overruled),
    else how far it moved by itself (percent, null: not measured) and the calls overruled."""
    unstable: bool = False
    bound_pct: float | None = None
    gated: list[str] = field(default_factory=list)


def aa_gate(comparisons: dict[str, stats.RatioEstimate], twin: str, threshold_pct: float,
            twin_is: str = TWIN_IS[False]) -> Ruling:
    """Overrule, in place, the verdicts the twin's comparison does not let stand.

    Any faster/slower call on the twin is the machine (or layout alone) moving under the
    measurement: then no verdict of the sweep can be trusted, and every faster, slower and
    equivalent becomes inconclusive, said so in each comparison's why. Otherwise the twin's
    ratio is how far this sweep moved a ratio between two identical binaries, so a faster/slower
    call also needs its whole interval beyond that offset (the bound, when it is larger than
    the threshold: a twin 4% off, yet not significantly, leaves a 3% effect unproven).
    Returns what was gated, for results.json's `aa`."""
    aa = comparisons.get(twin)
    if aa is None:
        return Ruling()
    others = {vid: c for vid, c in comparisons.items() if vid != twin}
    if aa.verdict in ("faster", "slower"):
        why = unstable_why(aa.verdict, aa.ratio, twin_is)
        return Ruling(True, None, rule(others, why, None, threshold_pct, twin_is))
    bound = _aa_bound(aa)
    return Ruling(False, None if bound is None else 100 * bound,
                  rule(others, None, bound, threshold_pct, twin_is))


def rule(comparisons: dict[str, stats.RatioEstimate], unstable: str | None,
         bound: float | None, threshold_pct: float, twin_is: str) -> list[str]:
    """Apply, in place, what the twin ruled: `unstable` (why, when its call was faster or
    slower) overrules every call; else `bound` (how far it moved, a fraction) overrules the
    calls whose interval reaches into it, when it is larger than the threshold. aa_gate rules
    so, and a tune's proof rules again so on the same rounds against -O3, from the ruling its
    sweep recorded. Returns the ids overruled."""
    if unstable:
        return _overrule_all(comparisons, unstable)
    if bound is None or bound <= stats.fraction(threshold_pct):
        return []
    return _overrule_within(comparisons, bound, twin_is)


def unstable_why(verdict: str, ratio: float, twin_is: str) -> str:
    return f"{UNSTABLE} during this sweep: the A/A arm ({twin_is}) came out {verdict} by " \
           f"{abs(ratio - 1) * 100:.1f}%"


def _overrule_all(comparisons: dict[str, stats.RatioEstimate], why: str) -> list[str]:
    """The twin was called faster or slower: every call is overruled."""
    gated = [vid for vid, c in comparisons.items()
             if c.verdict in ("faster", "slower", "equivalent")]
    for vid in gated:
        _overrule(comparisons[vid], why)
    return gated


def _overrule_within(comparisons: dict[str, stats.RatioEstimate], bound: float,
                     twin_is: str) -> list[str]:
    """The calls whose interval reaches into the twin's offset `bound` (a fraction) are
    overruled; the interval the verdict rests on is false-coverage adjusted
    (stats.fcr_intervals)."""
    gated = [vid for vid, c in comparisons.items() if c.verdict in ("faster", "slower")
             and (c.ci_fcr or c.ci95)[0] <= 1 + bound and (c.ci_fcr or c.ci95)[1] >= 1 - bound]
    for vid in gated:
        _overrule(comparisons[vid], f"its interval reaches into +-{100 * bound:.1f}%, as far as "
                                    f"the A/A arm ({twin_is}) moved in this sweep")
    return gated


def overruled(c: stats.RatioEstimate) -> bool:
    """Whether the gate turned this comparison's verdict into inconclusive."""
    return c.why.startswith("inconclusive, not ")


def overrule_summary(c: stats.RatioEstimate) -> str:
    """One clause for a stop line: which call the gate overruled and why."""
    was = c.why[len("inconclusive, not "):].split(":", 1)[0]
    if UNSTABLE in c.why:
        return f"{was}, overruled: the A/A arm moved by itself, so the machine was unstable"
    return f"{was}, overruled: its interval reaches into how far the A/A arm moved"


def _aa_bound(aa: stats.RatioEstimate) -> float | None:
    """How far the twin's ratio lies from 1, as a fraction; None without an estimate."""
    if not (0 < aa.ratio < float("inf")):
        return None
    return abs(aa.ratio - 1)


def _overrule(c: stats.RatioEstimate, why: str) -> None:
    c.why = f"inconclusive, not {c.verdict}: {why} ({c.why})"
    c.verdict, c.rounds_needed = "inconclusive", None
