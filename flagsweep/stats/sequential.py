"""Sequential: when a comparison's verdict can no longer change, so its variant may stop.

A sweep looks at its comparisons after every round. Stopping a variant at its first faster or
slower verdict would test it once a round, and the error rate grows with the looks (a stop at
the first verdict let the A/A twin come out faster or slower in 7.3% of sweeps at CV 5%,
bench/verdict_rules.py). Here each comparison has s / m to spend over all its looks (s the stops'
share of alpha, below; m the sweep's comparisons: Bonferroni across the sweep, stricter than
the analysis's Benjamini-Hochberg), and a variant stops only at a verdict reached at its look's share. By
Bonferroni across the looks, the chance that any look errs is at most the sum of the shares,
whatever rule ends the sweep; any division of alpha over the looks fixed in advance is valid
(the alpha-spending idea of Lan & DeMets, Discrete sequential boundaries for clinical trials,
Biometrika 70(3), 1983, here without their joint-normal refinement; Jennison & Turnbull, Group
Sequential Methods with Applications to Clinical Trials, Chapman & Hall/CRC 2000, ch. 7).

The division: the first look is at the fewest rounds at which the exact signed-rank test can
reach s / m at all (stats.fewest_decisive_pairs: 2 / 2^n <= s / m), about the sweep's own
floor, and spends there exactly what the test needs, 2 / 2^n;
the rest is spread evenly over every later round up to the most rounds. A variant far from the
threshold is evident at the first look, where every round it is spared saves the most; one
near the threshold needs many rounds at any level.

Why the verdict then stands: a stopped variant's samples are frozen, and the analysis at the
end (stats.compare, stats.adjust at what the stops leave of alpha) sees exactly them. A raw p
within that alpha / m has an adjusted p below it whatever the other comparisons do (adjusted
<= m p); an interval at 1 - a beyond the +-threshold band puts the 95% interval beyond it; an
equivalent stop is the analysis's own equivalence at this look (below). So a stopped
comparison's false faster/slower chance is at most its share over all its looks.

The share is taken out of the analysis's alpha, not added to it (Design): the stops spend
STOP_SHARE of alpha over the sweep (alpha STOP_SHARE / m a comparison), and the analysis's
Benjamini-Hochberg at the end tests at what is left, so that a false faster/slower anywhere in
the sweep, at a stop or at the end, stays within alpha (Bonferroni over the two: Lan & DeMets's
spending, the final analysis being the last look). Stopping with the whole alpha and testing
the end at the whole alpha again had made false calls in A/A sweeps at CV 10% more frequent
with the stops than without (bench/verdict_rules.py, "paired A/A").

Equivalence is tested at every look too: by the sweep's own rule, which stops once everything
is settled and an equivalent comparison is settled, and by a variant's stop. Two one-sided
tests at alpha each look, over 20-odd looks, called a true effect at the band's edge
equivalent in 5.6-6.4% of sweeps where 5% is the promise. So in a sweep that may stop at more
than one round, each one-sided test is at Pocock's constant nominal level (Pocock, Group
sequential methods in the design and analysis of clinical trials, Biometrika 64(2), 1977): the
level at which a test repeated at every round from the first that can stop to the most rounds
errs at any of them with probability alpha, computed for a Gaussian random walk (the
signed-rank statistic's large-sample form) by the recursive numerical integration of
Armitage, McPherson & Rowe (Repeated significance tests on accumulating data, JRSS A 132(2),
1969). Bonferroni over these looks, as for the stops, would ask each for alpha / 20 where their
tests are nearly the same test; Pocock's level for 7..30 rounds is 0.011. The analysis at the
end uses the same level, so "equivalent" means the same thing at a stop and at the end. A
fixed design (--runs) looks once: alpha, the 90% interval.

Stops assume the program does not change during the sweep: a verdict frozen at round 8 says
nothing about an effect that begins at round 10 (docs/statistics.md).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from flagsweep import model, stats

ALPHA = 0.05
STOP_SHARE = 0.2      # of alpha, for the variant stops; the analysis at the end tests at the rest


@dataclass(frozen=True)
class Design:
    """The error a sweep's claims spend: `alpha` the analysis's Benjamini-Hochberg level at the
    end, `stops` what the variant stops spend over the sweep (out of the same alpha), `tost` the
    level of each one-sided test of equivalence at every look (module docstring)."""
    alpha: float = ALPHA
    stops: float = 0.0
    tost: float = ALPHA

    def to_json(self) -> dict:
        return {"alpha": self.alpha, "stops_alpha": self.stops, "tost_level": self.tost}

    @classmethod
    def stored(cls, kept: model.Sequential | None) -> "Design":
        """A stored design; none stored (a sweep before designs were kept): a single look."""
        if kept is None or not kept.model_fields_set:
            return cls()
        return cls(kept.alpha, kept.stops_alpha, kept.tost_level)


def design(m: int, min_rounds: int, max_rounds: int, drop: bool, alpha: float = ALPHA) -> Design:
    """The design of a sweep of m comparisons: `drop` when variants stop at final verdicts;
    adaptive (more than one look) when it may stop before max_rounds. Its equivalence looks are
    every round from the fewest pairs at which the analysis can call anything (and, without
    stops, min_rounds) to max_rounds, a superset of the rounds at which the sweep or a variant
    can stop (a variant's stop does not wait for min_rounds)."""
    stops = STOP_SHARE * alpha if drop else 0.0
    final_alpha = alpha - stops
    first = stats.fewest_decisive_pairs(m, final_alpha)
    if not drop:
        first = max(first, min_rounds)
    adaptive = (min_rounds < max_rounds or drop) and first < max_rounds
    tost = pocock_level(first, max_rounds, alpha) if adaptive else alpha
    return Design(final_alpha, stops, tost)


@functools.lru_cache(maxsize=None)
def pocock_level(first: int, last: int, alpha: float = ALPHA) -> float:
    """The one-sided nominal level c at which a test repeated at every round first..last errs at
    any of them with probability alpha, the rounds' statistics being a Gaussian random walk
    S_n standardised, S_n / sqrt(n) (module docstring); alpha for one look."""
    if last <= first:
        return alpha
    lo, hi = float(sps.norm.isf(alpha)), float(sps.norm.isf(alpha / (last - first + 1)))
    for _ in range(30):                     # bisection on the boundary z, to about 1e-9
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _crossing(mid, first, last) > alpha else (lo, mid)
    return float(sps.norm.sf(hi))


def _crossing(z: float, first: int, last: int, step: float = 0.05) -> float:
    """P(S_n >= z sqrt(n) for some n in first..last), S a random walk of N(0, 1) steps: the
    density of S below the boundary carried from round to round by convolution with the step's
    density on a grid (Armitage, McPherson & Rowe 1969), what is lost being what crossed."""
    step = step * max(1.0, math.sqrt(last / 100))      # a coarser grid for very long sweeps
    grid = np.arange(-8 * math.sqrt(last), z * math.sqrt(last) + step, step)
    f = sps.norm.pdf(grid, scale=math.sqrt(first)) * step
    f[grid >= z * math.sqrt(first)] = 0
    half = math.ceil(8 / step)             # symmetric about 0, or the walk drifts a little a round
    kernel = sps.norm.pdf(np.arange(-half, half + 1) * step)
    kernel /= kernel.sum()                  # a step loses no mass but what crosses
    for n in range(first + 1, last + 1):
        f = np.convolve(f, kernel)[half:half + len(grid)]
        f[grid >= z * math.sqrt(n)] = 0
    return 1.0 - float(f.sum())


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


def looks(m: int, max_rounds: int, alpha: float = STOP_SHARE * ALPHA) -> Looks:
    """The division of alpha / m over a sweep's looks for m comparisons and at most
    `max_rounds` rounds, alpha being what the stops spend over the sweep (module docstring)."""
    share = alpha / max(1, m)
    first = stats.fewest_decisive_pairs(m, alpha)
    if first > max_rounds:
        return Looks(first, 0.0, 0.0, 0)                  # no look can stop anything
    later = max_rounds - first
    first_level = 2.0 ** (1 - first) if later else share
    return Looks(first, first_level, (share - first_level) / later if later else 0.0, later)


def final(variant: dict[int, float], baseline: dict[int, float], *, round_count: int, m: int,
          max_rounds: int, threshold_pct: float, seed: int,
          plan: Design | None = None) -> tuple[str, str] | None:
    """(verdict, why) when this comparison's verdict is reached at the level of the look after
    `round_count` rounds, so that no later round of the others can change it; None: it goes on.
    `variant`/`baseline`: round -> value, `seed` as
    stats.compare's (the p-value the analysis will compute from the same pairs), `plan` the
    sweep's Design (by default: stops with a share of alpha, every round a look)."""
    plan = plan or design(m, 1, max_rounds, drop=True)
    level = looks(m, max_rounds, plan.stops).level(round_count)
    n = len(set(variant) & set(baseline))
    if level <= 0 or n < 2:
        return None
    threshold = stats.fraction(threshold_pct)
    lo, hi = 1 - threshold, 1 + threshold
    if 2.0 ** -n <= level:
        ci = stats.paired_interval(variant, baseline, 1 - level)
        if (ci[1] < lo or ci[0] > hi) and _passes(variant, baseline, level, m, plan, seed):
            verdict = "faster" if ci[1] < lo else "slower"
            p = _exact_p(variant, baseline)
            return verdict, (f"{verdict} beyond any later round: the {_pct(level)} CI "
                             f"{stats.ci_text(ci)} over {n} paired rounds lies beyond "
                             f"+-{threshold_pct:g}% and p = {p:.2g}, both at "
                             f"{_level(level, m, plan)}")
    eq = stats.paired_interval(variant, baseline, 1 - 2 * plan.tost)
    if lo < eq[0] and eq[1] < hi:
        return "equivalent", (f"equivalent beyond any later round: the {_pct(2 * plan.tost)} "
                              f"CI {stats.ci_text(eq)} over {n} paired rounds lies inside "
                              f"+-{threshold_pct:g}% (two one-sided tests at "
                              f"{plan.tost:.2g}, the level that keeps equivalence at every "
                              "look of this sweep within 0.05)")
    return None


def _passes(variant: dict[int, float], baseline: dict[int, float], level: float, m: int,
            plan: Design, seed: int) -> bool:
    """The exact p within the look's level, and the analysis's own p (a Monte Carlo estimate
    beyond stats.EXACT_MAX_PAIRS, never below 1 / 20001) within what Benjamini-Hochberg at the
    end asks of it whatever the others do (alpha / m), so that the end says the same."""
    if _exact_p(variant, baseline) > level:
        return False
    return stats.compare(variant, baseline, seed=seed).p_value <= plan.alpha / max(1, m)


def _exact_p(variant: dict[int, float], baseline: dict[int, float]) -> float:
    """The sign-flip test's exact p on the rounds both measured (stats.signed_rank_p): the
    later looks' levels (3.0e-5 at m = 11, 2.0e-7 at m = 51 before the stops' share) lie below
    the Monte Carlo floor."""
    common = sorted(set(variant) & set(baseline))
    v = np.array([variant[r] for r in common], dtype=float)
    b = np.array([baseline[r] for r in common], dtype=float)
    if not (np.all(v > 0) and np.all(b > 0)):
        return 1.0
    return stats.signed_rank_p(np.log(v) - np.log(b))


def _pct(level: float) -> str:
    return f"{100 * (1 - level):.3g}%"


def _level(level: float, m: int, plan: Design) -> str:
    return f"{level:.2g}, this round's share of {plan.stops:.2g} / {m} comparisons"
