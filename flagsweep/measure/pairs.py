"""Pairs: what a comparison pairs, made explicit in the values the statistics get.

In a serial round the baseline runs once and every variant of the round is compared with that
one run. In a duet round (docs/measurement.md, "Duet rounds") each variant runs at the same time
as a run of the baseline of its own, on the other CPU, and the sample is the pair's ratio: the
noise both runs share in that moment cancels in it (Bulej, Horký, Tůma, Farquet & Prokopec,
"Duet Benchmarking: Improving Measurement Accuracy in the Cloud", ICPE 2020). Each of those runs
names its pair (Sample.pair: the variant compared), so a variant's round never pairs with the
baseline run of another duet.

The statistics pair by round (stats.compare on variant -> {round: value}); rather than teach
them duets, `values` hands them each round as a pair-explicit block: the baseline's value is
its level in the round (the geometric mean of its runs there, one per duet), and each
variant's value is its own duet's ratio times that level. Every comparison with the baseline
then sees exactly its duets' ratios, round by round; a comparison of two variants (a factorial
model's, a tune's base level against a candidate) sees the ratio of their two duets' ratios, a
paired difference through the baseline with the noise of both duets. A summary of the baseline
is of its levels, one per round.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from flagsweep.measure.sample import Sample

Values = dict[str, dict[int, float]]


@dataclass(frozen=True)
class Paired:
    """A complete pair: in round `round`, `variant`'s value `x` beside `hub`'s `partner`."""
    round: int
    variant: str
    hub: str
    x: float
    partner: float

    @property
    def log_ratio(self) -> float:
        return math.log(self.x / self.partner)


def complete(paired: list[tuple[Sample, float]]) -> list[Paired]:
    """The complete pairs among runs of pairs (each with its metric value, positive), in
    round order: a pair with one run missing or failed is none."""
    runs: dict[tuple[int, str], dict[str, float]] = defaultdict(dict)
    for s, x in paired:
        if s.pair:
            runs[(s.round, s.pair)][s.variant_id] = x
    out = []
    for (rnd, pair), got in sorted(runs.items()):
        hub = [vid for vid in got if vid != pair]
        if pair in got and len(hub) == 1:
            out.append(Paired(rnd, pair, hub[0], got[pair], got[hub[0]]))
    return out


def values(paired: list[tuple[Sample, float]]) -> Values:
    """variant -> {round: value} from the runs of pairs, as the module's docstring says; a
    round's level is taken over its complete pairs only."""
    by_round: dict[tuple[int, str], list[Paired]] = defaultdict(list)
    for p in complete(paired):
        by_round[(p.round, p.hub)].append(p)
    out: Values = defaultdict(dict)
    for (rnd, hub), own in by_round.items():
        level = math.exp(sum(math.log(p.partner) for p in own) / len(own))
        out[hub][rnd] = level
        for p in own:
            out[p.variant][rnd] = p.x / p.partner * level
    return dict(out)


def partners(samples: list[Sample]) -> dict[tuple[int, str, str], str]:
    """(round, pair, variant) -> the run it was paired with, for every run of a pair (a pair's
    baseline run pairs with the variant the pair is named by, the variant with the other)."""
    members: dict[tuple[int, str], set[str]] = defaultdict(set)
    for s in samples:
        if s.pair:
            members[(s.round, s.pair)].add(s.variant_id)
    out = {}
    for (rnd, pair), ids in members.items():
        for vid in ids:
            others = sorted(ids - {vid})
            out[(rnd, pair, vid)] = pair if vid != pair else (others[0] if others else "")
    return out
