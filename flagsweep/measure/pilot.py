"""The schedule's pilot: is a duet narrower than serial rounds here, and do the two agree?

Duet rounds (measure.pairs, docs/measurement.md "Duet rounds") win where two runs taken at the
same moment share more of their noise than two taken one after the other, and where running
two at once costs nothing else. Neither is a given: two vCPUs may be SMT siblings of one core
or share a cache, so each run slows the other, and a memory-heavy binary may slow its partner
more than it is slowed (a bias no pairing removes). So before the counted rounds the pilot
measures, for every comparison with the baseline, PAIRS pairs in each schedule, interleaved in
a seeded order so the machine's moods fall on both alike:

- serial: the variant and a run of the baseline back to back on the sweep's CPU;
- duet: the two at once, one on each CPU, sides alternating (rounds.duet).

From them (`figures`): each schedule's paired spread (the pooled within-comparison standard
deviation of the pairs' log-ratios), a round's duration (wall time: serial runs every binary
one after the other; a duet round runs each variant's duet, as long as its longer run), and so
the half-width of a 95% interval after one minute of measuring, 1.96 sd sqrt(round / 60 s);
and the bias check: per comparison, the duet pairs' mean log-ratio against the serial pairs',
Welch's interval of the difference (stats.means.difference) at 1 - 0.05 / m for the m
comparisons (Bonferroni), so that a machine without a bias fails the check in at most 5% of
sweeps. `choose` takes duet only where it is narrower per minute and agrees on every
comparison; a forced duet still runs the check and warns when it fails.

The serial pilot pairs are adjacent runs, which share more noise than a serial round's pairs
of the same comparison, a few positions apart: the check leans towards serial, never duet.
After EARLY pairs a pilot where duet reads WIDER times as wide stops there (serial needs no
bias check). Pilot runs are stored (rounds from FIRST_ROUND down, never counted) and a resumed
sweep takes only the pairs it misses; the choice is kept with the run.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from flagsweep import model
from flagsweep.measure import pairs, rounds
from flagsweep.measure.sample import Sample
from flagsweep.stats import means

PAIRS = 6               # pilot pairs of each comparison, in each schedule
# After the first EARLY pairs of at least EARLY_COMPARISONS comparisons the pilot stops when
# duet is WIDER times as wide per minute as serial: serial is sound whatever the pilot finds,
# so only duet needs the whole pilot's bias check. There (8 degrees of freedom a schedule or
# more) a duet truly 0.7x as wide reads 1.25x as wide with probability at most 0.06 (0.04 at 5
# comparisons: the F distribution of the ratio of the two variances); a machine where duet
# loses (this project's VM, most pilots) pays half the pilot. Fewer comparisons: a cheap pilot.
EARLY, EARLY_COMPARISONS, WIDER = 3, 4, 1.25
FIRST_ROUND = -1000     # pilot pair i: serial in round FIRST_ROUND - 2i, duet in the next one down
ALPHA = 0.05            # the bias check's family-wise error over the comparisons
Z95 = 1.96


def serial_round(i: int) -> int:
    return FIRST_ROUND - 2 * i


def duet_round(i: int) -> int:
    return FIRST_ROUND - 2 * i - 1


def is_pilot(rnd: int) -> bool:
    return rnd <= FIRST_ROUND


def schedule_of(rnd: int) -> str:
    """Which schedule a pilot round's pairs ran in."""
    return "serial" if (FIRST_ROUND - rnd) % 2 == 0 else "duet"


def run(plan: rounds.Plan, cpus: tuple[int, int],
        take: Callable[..., Sample], take_duet: Callable[[rounds.Duet, int, int], list[Sample]],
        done: set[tuple[str, int]], pairs: range = range(PAIRS)) -> None:
    """Every pilot pair of `pairs` not taken yet (`done`: the (variant, round) already
    stored). `take` is the sampler (one run, pinned to the sweep's CPU, cpus[0]), `take_duet`
    its duet."""
    hub = plan.baseline
    for i in pairs:
        compared = [vid for vid in rounds.order(plan, serial_round(i)) if vid != hub]
        for pos, vid in enumerate(compared):
            coin = random.Random(f"{plan.seed}:pilot:{vid}:{i}").randrange(2)
            for schedule in (("serial", "duet") if coin else ("duet", "serial")):
                r = serial_round(i) if schedule == "serial" else duet_round(i)
                if (vid, r) in done:
                    continue
                if schedule == "duet":
                    take_duet(rounds.duet(plan, vid, r, cpus), r, pos)
                    continue
                order = (vid, hub) if (i + coin) % 2 else (hub, vid)
                for who in order:
                    pad = rounds.env_pad(plan, vid if who == vid else f"{hub}@{vid}", r)
                    take(who, r, pos, pad, pair=vid)


@dataclass
class RatioLogs:
    """Each comparison's paired log ratios (variant -> its pairs'), in each schedule."""
    serial: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    duet: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def of(self, schedule: str) -> dict[str, list[float]]:
        return self.serial if schedule == "serial" else self.duet


def figures(samples: list[Sample],
            metric_of: Callable[[Sample], float | None]) -> model.Pilot:
    """What the pilot measured (the module's docstring): per schedule its pairs, paired
    spread, round duration and half-width after a minute, and the bias check per comparison."""
    ran = [s for s in samples if is_pilot(s.round) and s.ok and s.pair]
    logs = RatioLogs()
    for p in pairs.complete([(s, x) for s in ran if (x := metric_of(s)) and x > 0]):
        logs.of(schedule_of(p.round))[p.variant].append(p.log_ratio)
    comparisons = len(set(logs.serial) | set(logs.duet))
    each = {}
    for schedule, round_s in _round_seconds(ran).items():
        sd = _pooled_sd(logs.of(schedule))
        each[schedule] = model.PilotFigures(
            pairs=sum(map(len, logs.of(schedule).values())),
            sd_pct=None if sd is None else 100 * sd, round_s=round_s,
            minute_pct=None if sd is None or round_s is None
            else 100 * Z95 * sd * math.sqrt(round_s / 60))
    level = 1 - ALPHA / max(1, comparisons)
    return model.Pilot(
        pairs=max((len(x) for by in (logs.serial, logs.duet) for x in by.values()), default=0),
        comparisons=comparisons, **each, level=level,
        bias=[_bias(vid, logs.duet.get(vid, []), logs.serial.get(vid, []), level)
              for vid in sorted(set(logs.serial) & set(logs.duet))])


def _pooled_sd(by_comparison: dict[str, list[float]]) -> float | None:
    """The pooled within-comparison standard deviation: each comparison about its own mean."""
    ss = sum(sum((d - statistics.fmean(ds)) ** 2 for d in ds)
             for ds in by_comparison.values() if len(ds) >= 2)
    df = sum(len(ds) - 1 for ds in by_comparison.values() if len(ds) >= 2)
    return math.sqrt(ss / df) if df > 0 else None


def _round_seconds(ran: list[Sample]) -> dict[str, float | None]:
    """A round's wall time in each schedule, from the pilot's runs: serial, every binary's
    median run one after the other; duet, every comparison's median duet (its longer run)."""
    serial: dict[str, list[float]] = defaultdict(list)
    for s in ran:
        if schedule_of(s.round) == "serial" and s.wall_s:
            serial[s.variant_id].append(s.wall_s)
    duets: dict[str, list[float]] = defaultdict(list)
    for p in pairs.complete([(s, s.wall_s) for s in ran
                             if schedule_of(s.round) == "duet" and s.wall_s]):
        duets[p.variant].append(max(p.x, p.partner))
    return {"serial": sum(map(statistics.median, serial.values())) if serial else None,
            "duet": sum(map(statistics.median, duets.values())) if duets else None}


def _bias(vid: str, duet: list[float], serial: list[float], level: float) -> model.BiasCheck:
    """One comparison's bias check: its duet and serial estimates (percent changes), their
    difference (of the mean log-ratios, in percent) and the interval's half-width."""
    got = means.difference(duet, serial, level)
    pct = (lambda xs: 100 * math.expm1(statistics.fmean(xs)) if xs else None)
    return model.BiasCheck(variant=vid, duet_pct=pct(duet), serial_pct=pct(serial),
                           difference_pct=None if got is None else 100 * got.difference,
                           half_pct=None if got is None else 100 * got.half,
                           agrees=None if got is None else abs(got.difference) <= got.half)


def clearly_wider(fig: model.Pilot) -> bool:
    """Whether duet reads WIDER times as wide per minute as serial: enough, after EARLY
    pairs, to keep serial without the rest of the pilot."""
    serial, duet = fig.serial, fig.duet
    if serial is None or duet is None or serial.minute_pct is None \
            or duet.minute_pct is None or fig.comparisons < EARLY_COMPARISONS:
        return False
    return duet.minute_pct >= WIDER * serial.minute_pct


def choose(fig: model.Pilot, asked: str) -> tuple[str, str, str | None]:
    """(schedule, why, warning) from the pilot's figures: `asked` auto takes duet only where it
    is narrower per minute and agrees on every comparison checked; duet (forced) stays duet,
    with a warning when the check failed."""
    serial, duet = fig.serial, fig.duet
    if serial is None or duet is None or serial.minute_pct is None or duet.minute_pct is None:
        why = "the pilot has too few complete pairs to compare the schedules"
        if asked == "duet":
            return "duet", f"duet (--schedule duet), unchecked: {why}", f"duet unchecked: {why}"
        return "serial", f"serial: {why}", None
    spread = (f"+-{duet.minute_pct:.2f}% after a minute of measuring in duet against "
              f"+-{serial.minute_pct:.2f}% serial (paired spread {duet.sd_pct:.2f}% vs "
              f"{serial.sd_pct:.2f}%, a round {duet.round_s:.3g} s vs "
              f"{serial.round_s:.3g} s)")
    off = [b for b in fig.bias or [] if b.agrees is False]
    unchecked = [b.variant for b in fig.bias or [] if b.agrees is None]
    bias = "; ".join(
        f"{b.variant} reads {b.duet_pct:+.2f}% in duet and {b.serial_pct:+.2f}% serial "
        f"(difference {b.difference_pct:+.2f}%, beyond +-{b.half_pct:.2f}%)" for b in off)
    cause = ("one binary slows the other when both run at once (SMT siblings, a shared cache "
             "or memory bandwidth)")
    if asked == "duet":
        warning = (f"the duet bias check failed: {bias}: {cause}, so duet's ratios may carry "
                   "that bias; --schedule serial avoids it") if off else None
        return "duet", f"duet (--schedule duet): {spread}", warning
    if off:
        return "serial", f"serial: the duet bias check failed: {bias}: {cause}", None
    if duet.minute_pct >= serial.minute_pct:
        early = (f" (the pilot stopped after {fig.pairs:g} pairs: duet {WIDER:g}x as wide or "
                 "more)" if fig.pairs < PAIRS else "")
        return "serial", f"serial: duet is not narrower here: {spread}{early}", None
    agree = ("duet and serial agree on every comparison" if not unchecked else
             f"duet and serial agree where checked ({', '.join(unchecked)}: too few pairs)")
    return "duet", f"duet: {spread}, and {agree}", None
