"""Sequential: when a comparison's verdict can no longer change, so its variant may stop.

A sweep looks at its comparisons after every round. Stopping a variant at its first faster or
slower verdict would test it once a round, and the error rate grows with the looks (a stop at
the first verdict let the A/A twin come out faster or slower in 7.3% of sweeps at CV 5%,
bench/statistics.py). Here a variant stops only at a verdict reached at level

    a = alpha / (m * L)

with m the sweep's comparisons (Bonferroni across the sweep, stricter than the analysis's
Benjamini-Hochberg) and L the looks at which such a verdict is possible at all (Bonferroni
across the looks: the chance that any look errs is at most the sum of the looks' levels,
whatever rule ends the sweep; the simplest valid group-sequential boundary, Jennison & Turnbull,
Group Sequential Methods with Applications to Clinical Trials, Chapman & Hall/CRC 2000, ch. 1
and 2). A look where the exact signed-rank test cannot reach `a` (1 / 2^n > a / 2 for the
one-sided halves) cannot stop anything and spends nothing, so L counts the rounds from the
first pair count where it can to the sweep's most rounds.

Why the verdict then stands: a stopped variant's samples are frozen, and the analysis at the
end (stats.compare, stats.adjust at alpha) sees exactly them. A raw p below alpha / (m L) has a
Benjamini-Hochberg adjusted p below alpha whatever the other comparisons do (adjusted <= m p);
a 1 - a interval beyond the +-threshold band puts the 95% interval beyond it; and a 1 - 2a
interval inside the band (two one-sided tests at a) puts the 90% interval inside. So each
stopped comparison's false faster/slower and false equivalent chances are each at most
alpha / m, over every look, and the sweep's at most alpha.
"""

from __future__ import annotations

from dataclasses import dataclass

from flagsweep import stats

ALPHA = 0.05


@dataclass(frozen=True)
class Looks:
    level: float        # a: each look's level, alpha / (m L)
    first: int          # the fewest pairs at which a stop is possible at that level
    count: int          # L: the looks from `first` to the most rounds


def looks(m: int, max_rounds: int, alpha: float = ALPHA) -> Looks:
    """The stopping boundary of a sweep of m comparisons and at most `max_rounds` rounds: the
    smallest n at which an equivalence (two one-sided tests at a, the lighter of the two
    verdicts' demands: 1 / 2^n <= a) is possible, with a = alpha / (m (max_rounds - n + 1))."""
    m = max(1, m)
    for n in range(1, max_rounds + 1):
        count = max_rounds - n + 1
        level = alpha / (m * count)
        if 2.0 ** -n <= level:
            return Looks(level, n, count)
    return Looks(alpha / m, max_rounds + 1, 0)      # no look can stop anything


def final(variant: dict[int, float], baseline: dict[int, float], *, m: int, max_rounds: int,
          threshold: float, seed: int, alpha: float = ALPHA) -> tuple[str, str] | None:
    """(verdict, why) when this comparison's verdict is reached at the boundary's level, so that
    no later round of the others can change it; None: it goes on. `variant`/`baseline`: round
    -> value, `threshold` relative (0.01), `seed` as stats.compare's (the p-value the analysis
    will compute from the same pairs)."""
    bound = looks(m, max_rounds, alpha)
    n = len(set(variant) & set(baseline))
    if n < bound.first:
        return None
    lo, hi = 1 - threshold, 1 + threshold
    ci = stats.paired_interval(variant, baseline, 1 - bound.level)
    if ci[1] < lo or ci[0] > hi:
        p = stats.compare(variant, baseline, seed=seed).p_value
        if p < bound.level:
            verdict = "faster" if ci[1] < lo else "slower"
            return verdict, (f"{verdict} beyond any later round: the {_pct(bound)} CI "
                             f"{stats.ci_text(ci)} over {n} paired rounds lies beyond "
                             f"+-{100 * threshold:g}% and p = {p:.2g}, both at "
                             f"{_level(bound, m)}")
    eq = stats.paired_interval(variant, baseline, 1 - 2 * bound.level)
    if lo < eq[0] and eq[1] < hi:
        return "equivalent", (f"equivalent beyond any later round: the {_pct(bound, 2)} CI "
                              f"{stats.ci_text(eq)} over {n} paired rounds lies inside "
                              f"+-{100 * threshold:g}% (two one-sided tests at "
                              f"{_level(bound, m)})")
    return None


def _pct(bound: Looks, sides: int = 1) -> str:
    return f"{100 * (1 - sides * bound.level):.3g}%"


def _level(bound: Looks, m: int) -> str:
    return (f"{bound.level:.2g} = 0.05 / ({m} comparisons x {bound.count} rounds at which a "
            "stop is possible)")
