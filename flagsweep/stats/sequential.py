"""Sequential: when a comparison's verdict can no longer change, so its variant may stop.

A sweep looks at its comparisons after every round. Stopping a variant at its first faster or
slower verdict would test it once a round, and the error rate grows with the looks (a stop at
the first verdict let the A/A twin come out faster or slower in 7.3% of sweeps at CV 5%,
bench/statistics.py). Here each comparison has alpha / m to spend over all its looks (m the
sweep's comparisons: Bonferroni across the sweep, stricter than the analysis's
Benjamini-Hochberg), and a variant stops only at a verdict reached at its look's share. By
Bonferroni across the looks, the chance that any look errs is at most the sum of the shares,
whatever rule ends the sweep; any division of alpha over the looks fixed in advance is valid
(the alpha-spending idea of Lan & DeMets, Discrete sequential boundaries for clinical trials,
Biometrika 70(3), 1983, here without their joint-normal refinement; Jennison & Turnbull, Group
Sequential Methods with Applications to Clinical Trials, Chapman & Hall/CRC 2000, ch. 7).

The division: the first look is at the fewest rounds at which the exact signed-rank test can
reach alpha / m at all (stats.fewest_decisive_pairs: 2 / 2^n <= alpha / m), the round the
analysis itself could first call anything, and spends there exactly what the test needs, 2 / 2^n;
the rest is spread evenly over every later round up to the most rounds. A variant far from the
threshold is evident at the first look, where every round it is spared saves the most; one
near the threshold needs many rounds at any level.

Why the verdict then stands: a stopped variant's samples are frozen, and the analysis at the
end (stats.compare, stats.adjust at alpha) sees exactly them. A raw p below alpha / m has a
Benjamini-Hochberg adjusted p below alpha whatever the other comparisons do (adjusted <= m p);
an interval at 1 - a beyond the +-threshold band puts the 95% interval beyond it; a 1 - 2a
interval inside the band (two one-sided tests at a) puts the 90% interval inside. So a stopped
comparison's false faster/slower and false equivalent chances are each at most alpha / m over
all its looks, and the stops' at most alpha over the sweep.
"""

from __future__ import annotations

from dataclasses import dataclass

from flagsweep import stats

ALPHA = 0.05


@dataclass(frozen=True)
class Looks:
    first: int          # the round of the first look
    first_level: float  # what it spends: 2 / 2^first
    later_level: float  # what each later round spends
    later: int          # how many later rounds

    def level(self, round_count: int) -> float:
        """The level of the look after `round_count` rounds; 0: no stop is possible there."""
        if round_count < self.first:
            return 0.0
        return self.first_level if round_count == self.first else self.later_level


def looks(m: int, max_rounds: int, alpha: float = ALPHA) -> Looks:
    """The division of alpha / m over a sweep's looks for m comparisons and at most
    `max_rounds` rounds (module docstring)."""
    share = alpha / max(1, m)
    first = stats.fewest_decisive_pairs(m, alpha)
    if first > max_rounds:
        return Looks(first, 0.0, 0.0, 0)                  # no look can stop anything
    later = max_rounds - first
    first_level = 2.0 ** (1 - first) if later else share
    return Looks(first, first_level, (share - first_level) / later if later else 0.0, later)


def final(variant: dict[int, float], baseline: dict[int, float], *, round_count: int, m: int,
          max_rounds: int, threshold: float, seed: int,
          alpha: float = ALPHA) -> tuple[str, str] | None:
    """(verdict, why) when this comparison's verdict is reached at the level of the look after
    `round_count` rounds, so that no later round of the others can change it; None: it goes on.
    `variant`/`baseline`: round -> value, `threshold` relative (0.01), `seed` as
    stats.compare's (the p-value the analysis will compute from the same pairs)."""
    level = looks(m, max_rounds, alpha).level(round_count)
    n = len(set(variant) & set(baseline))
    if level <= 0 or 2.0 ** -n > level:                    # the test cannot reach it
        return None
    lo, hi = 1 - threshold, 1 + threshold
    ci = stats.paired_interval(variant, baseline, 1 - level)
    if ci[1] < lo or ci[0] > hi:
        p = stats.compare(variant, baseline, seed=seed).p_value
        if p <= level:
            verdict = "faster" if ci[1] < lo else "slower"
            return verdict, (f"{verdict} beyond any later round: the {_pct(level)} CI "
                             f"{stats.ci_text(ci)} over {n} paired rounds lies beyond "
                             f"+-{100 * threshold:g}% and p = {p:.2g}, both at "
                             f"{_level(level, m)}")
    eq = stats.paired_interval(variant, baseline, 1 - 2 * level)
    if lo < eq[0] and eq[1] < hi:
        return "equivalent", (f"equivalent beyond any later round: the {_pct(2 * level)} CI "
                              f"{stats.ci_text(eq)} over {n} paired rounds lies inside "
                              f"+-{100 * threshold:g}% (two one-sided tests at "
                              f"{_level(level, m)})")
    return None


def _pct(level: float) -> str:
    return f"{100 * (1 - level):.3g}%"


def _level(level: float, m: int) -> str:
    return f"{level:.2g}, this round's share of 0.05 / {m} comparisons"
