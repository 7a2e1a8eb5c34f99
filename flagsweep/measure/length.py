"""How long a run should be: the input size that buys the narrowest interval per minute.

A sweep's interval narrows with the pairs it takes, and a pair of shorter runs costs less time,
so the question is not how noisy one run is but how much precision a minute of measuring buys.
After T seconds of pairs that each cost c(L) seconds, the paired 95% half-width is about

    Z95 * sd(L) / sqrt(T / c(L))

(the mean of T / c(L) independent log ratios). The spread of one pair's log ratio is modelled
as two independent parts, adding in variance:

    sd(L)^2 = a^2 + (b / L)^2

`a`, a relative part every run carries whatever its length (the host's state over the run: on
this project's VM the noise moves on a scale of seconds, longer than a run, so a shorter run
does not see less of it), and `b`, a fixed part of b seconds per run (start and exit, a tick, a
page-cache miss), whose share shrinks as 1/L. Per minute, a^2 * L grows with L and b^2 / L
shrinks: without overhead the best length is L = b / a, where the two parts are equal. The cost
of a pair, c(L) = c0 + c1 * L, carries the harness's time per pair too (spawn, bookkeeping), which
favours longer runs a little more. Choosing a repetition's size from each level's variance and
cost, to minimise the variance per unit of experiment time, is Kalibera & Jones, "Rigorous
Benchmarking in Reasonable Time", ISMM 2013, section 5; the two-part model is this module's
assumption, fitted exactly on two measured lengths. A third part that averages down as 1/L in
variance (noise on a scale shorter than the run) costs the same per minute at every length; two
points cannot tell it apart, and the fit books it into a and b.

Bounds: the target's own sizes (quick and full input), and never a run shorter than
resolution.SHORTEST_S, below which a sample is mostly the launcher's floor.

`pilot` measures the two points for a sweep (`flagsweep run --input-size auto`): pairs of the
baseline against itself, back to back on the sweep's CPU, at the quick and the full input in
turn, through the sweep's executor.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from flagsweep import stats
from flagsweep.experiment.target import Target
from flagsweep.host import launcher
from flagsweep.host.executor import Execution, Executor
from flagsweep.measure import metric as metric_mod
from flagsweep.measure.resolution import SHORTEST_S
from flagsweep.measure.sample import Sample
from flagsweep.workload import check, inputs

GRID = 400                   # sizes tried between the bounds (geometric)
# A size already measured (and its input already made) is kept unless another is predicted
# this much narrower per minute: the fit comes from a few pairs at two points.
NEGLIGIBLE = 0.05
# A/A pairs the pilot takes at each size: a spread from 8 pairs is within about +-25% of the
# truth (its relative standard error is 1/sqrt(2 (n - 1))), enough to tell a fixed part that
# dominates from one that does not; the pilot costs 16 runs of each size.
PILOT_PAIRS = 8


@dataclass(frozen=True)
class PilotPoint:
    """What a pilot measured at one input size."""

    size: float        # the input's size, in the target's unit (MB of corpus, s of audio)
    run_s: float       # the baseline's median run time there, in the metric's seconds
    sd: float          # sd of the paired log ratio of two runs of the baseline (A/A)
    pair_s: float      # seconds of measuring one pair cost there, harness included
    pairs: int         # how many pairs the sd is from


@dataclass(frozen=True)
class Choice:
    """The chosen input size and what it is predicted to buy; size None: no choice made."""

    size: float | None
    run_s: float | None                 # predicted run time at that size
    sd: float | None                    # predicted paired spread (log ratio)
    half_per_minute: float | None       # predicted 95% half-width after one minute (log)
    relative: float                     # a: the part every run carries (log)
    fixed_s: float                      # b: the fixed part per run (seconds)
    measured: tuple[PilotPoint, ...]
    why: str
    unit: str = ""                      # of size: "MB", "s"
    metric: str | None = None           # the column the pilot's spreads are of
    pilot_s: float | None = None        # what the pilot took

    def to_json(self) -> dict:
        return {"size": self.size, "unit": self.unit, "run_s": self.run_s, "sd": self.sd,
                "half_per_minute": self.half_per_minute, "relative": _num(self.relative),
                "fixed_s": _num(self.fixed_s), "metric": self.metric, "pilot_s": self.pilot_s,
                "why": self.why, "measured": [asdict(s) for s in self.measured]}


def fit(short: PilotPoint, long: PilotPoint) -> tuple[float, float]:
    """(a, b) of sd(L)^2 = a^2 + (b / L)^2 through the two points. A spread that does not shrink
    with length has no fixed part (b = 0, a the shorter run's spread: where it would be used);
    one that shrinks faster than a fixed part explains has no relative part (a = 0, b from the
    longer run)."""
    u1, u2 = 1 / short.run_s ** 2, 1 / long.run_s ** 2
    if u1 <= u2:                                   # not shorter after all: nothing to separate
        return short.sd, 0.0
    b2 = (short.sd ** 2 - long.sd ** 2) / (u1 - u2)
    if b2 <= 0:
        return short.sd, 0.0
    a2 = long.sd ** 2 - b2 * u2
    if a2 <= 0:
        return 0.0, long.sd * long.run_s
    return math.sqrt(a2), math.sqrt(b2)


def choose(short: PilotPoint, long: PilotPoint, unit: str = "",
           shortest_s: float = SHORTEST_S) -> Choice:
    """The input size between short.size and long.size (the target's quick and full sizes)
    whose runs give the narrowest predicted 95% interval per minute of measuring, never runs
    under `shortest_s`. Run time and the cost of a pair are interpolated linearly in the size
    between the two points; `unit` names the size in the reason ("MB")."""
    measured = (short, long)
    if not all(s.run_s > 0 and s.pair_s > 0 and s.sd >= 0 and s.size > 0 and s.pairs >= 2
               for s in measured) \
            or long.size <= short.size:
        return replace(_none(measured, "the pilot measured no usable spread at two sizes"),
                       unit=unit)
    a, b = fit(short, long)
    run = _line(short.size, short.run_s, long.size, long.run_s)
    cost = _line(short.run_s, short.pair_s, long.run_s, long.pair_s)
    if long.run_s < shortest_s:
        return replace(_none(measured, f"even the larger input runs {_ms(long.run_s)}, under "
                             f"the {_ms(shortest_s)} a sample resolves: no size the target "
                             "allows is long enough to time", a, b), unit=unit)
    low = short.size if short.run_s >= shortest_s else _size_at(run, shortest_s, long.size)

    def width(size: float) -> float:
        length = run(size)
        return stats.Z95 * math.sqrt((a * a + (b / length) ** 2) * max(cost(length), 1e-9) / 60)

    sizes = [low * (long.size / low) ** (i / (GRID - 1)) for i in range(GRID)]
    best = min(sizes, key=width)
    kept = [s for s in (low, long.size) if width(s) <= (1 + NEGLIGIBLE) * width(best)]
    if kept:                                       # a size already made does as well
        best = min(kept, key=width)
    else:
        best = min(max(_two_digits(best), low), long.size)
    length = run(best)
    chosen = Choice(best, length, math.sqrt(a * a + (b / length) ** 2), width(best), a, b,
                       measured, "", unit)
    return replace(chosen, why=_reason(chosen, width, low, unit, short.run_s < shortest_s))


def _reason(c: Choice, width, low: float, unit: str, floor_bound: bool) -> str:
    short, long = c.measured
    where = ("the quick input" if c.size == short.size else "the full input"
             if c.size == long.size else f"the shortest whose runs reach {_ms(SHORTEST_S)}"
             if c.size == low else "between the quick and the full input")
    every = (f"a part of {_pct(c.relative)} every run carries whatever its length"
             if c.relative else "nothing every run carries whatever its length")
    fixed = f"a fixed {_ms(c.fixed_s)} per run" if c.fixed_s else "no fixed part per run"
    parts = (f"A/A spread {_pct(short.sd)} at {_secs(short.run_s)} runs and {_pct(long.sd)} at "
             f"{_secs(long.run_s)} ({short.pairs} and {long.pairs} pairs): {every} and "
             f"{fixed} (sd^2 = a^2 + (b/L)^2)")
    other = (f"+-{_pct(width(long.size))} with the full input" if c.size != long.size else
             f"+-{_pct(width(low))} at {_size(low, unit)}")
    floor = (f"; {_size(short.size, unit)} runs under {_ms(SHORTEST_S)}, so nothing shorter "
             f"than {_size(low, unit)}") if floor_bound else ""
    return (f"{_size(c.size, unit)}, {where} (runs of about {_secs(c.run_s)}): {parts}; about "
            f"+-{_pct(c.half_per_minute)} per minute of measuring, against {other}{floor}")


def _none(measured: tuple[PilotPoint, ...], why: str, a: float = math.nan,
          b: float = math.nan) -> Choice:
    return Choice(None, None, None, None, a, b, measured, why)


def _num(x: float) -> float | None:
    """JSON has no nan: a part never fitted is null."""
    return None if math.isnan(x) else x


def _line(x1: float, y1: float, x2: float, y2: float):
    """y as a straight line through two points of x (constant when they share x)."""
    slope = (y2 - y1) / (x2 - x1) if x2 != x1 else 0.0
    return lambda x: y1 + slope * (x - x1)


def _size_at(run, seconds: float, top: float) -> float:
    """The size whose predicted run is `seconds` (run is increasing in size), capped at top."""
    lo, hi = 0.0, top
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if run(mid) < seconds else (lo, mid)
    return min(_two_digits(hi, up=True), top)


def _two_digits(x: float, up: bool = False) -> float:
    """x to two significant digits (rounded up when `up`: a size that must reach a length)."""
    scale = 10 ** (math.floor(math.log10(x)) - 1)
    return round((math.ceil(x / scale) if up else round(x / scale)) * scale, 12)


def _pct(x: float) -> str:
    return f"{100 * x:.2g}%" if x < 0.1 else f"{100 * x:.0f}%"


def _ms(s: float) -> str:
    return f"{1e3 * s:.2g} ms" if s < 0.1 else _secs(s)


def _secs(s: float) -> str:
    return _ms(s) if s < 0.1 else f"{s:.2g} s" if s < 100 else f"{s:.0f} s"


def _size(x: float, unit: str) -> str:
    return f"{x:g} {unit}".strip()


# ---- the pilot -------------------------------------------------------------------------------

def for_sweep(target: Target, binary: Path | None, execute: Executor, scratch: Path, seed: int,
              metric_option: str, cpu: int, say: Callable[[str], None]) -> Choice:
    """A sweep's --input-size auto: the pilot on its CPU, said as it starts and as it ends."""
    if binary is None or metric_option == "instructions":
        chosen = _none((), "the baseline did not build" if binary is None else
                       "a count (--metric instructions) is the same at every length")
    else:
        say(f"input size: a pilot of {PILOT_PAIRS} A/A pairs of the baseline at the quick and "
            "the full input")
        with launcher.pinned(cpu):
            chosen = pilot(target, binary, execute, scratch, seed, metric_option)
    say(f"input size: {chosen.why}" if chosen.size is not None
        else f"input size: the full input ({chosen.why})")
    return chosen


def pilot(target: Target, binary: Path, execute: Executor, scratch: Path, seed: int,
          metric_option: str, pairs: int = PILOT_PAIRS) -> Choice:
    """The run length for a sweep, from `pairs` A/A pairs of its baseline at the target's quick
    and full input, taken in turn (which size goes first alternates, so drift falls on both),
    each pair back to back on the CPU the caller pinned. The spread is of the sweep's metric:
    wall time for --metric wall, CPU time otherwise, unless auto finds the workload is not
    single-threaded and CPU-bound (measure.metric.choose, on the pilot's runs)."""
    spec = target.spec.inputs
    unit = inputs.size_of(spec, False)[2]
    if not unit:
        return replace(_none((), "the input is a given file, which has one size"), unit=unit)
    began = time.monotonic()
    scratch.mkdir(parents=True, exist_ok=True)
    work = {quick: check.Invocation(target, inputs.prepare(target, quick=quick).path, scratch)
            for quick in (True, False)}
    pads = random.Random(f"{seed}:length")
    taken: dict[bool, list[tuple[Execution, Execution, float]]] = {True: [], False: []}
    for i in range(pairs):
        for quick in ((True, False) if i % 2 == 0 else (False, True)):
            started = time.monotonic()
            two = [_once(execute, work[quick], binary, pads.randint(0, launcher.ENV_PAD_MAX))
                   for _ in range(2)]
            failed = next((e.failure for e in two if e.failure), None)
            if failed:
                return replace(_none((), f"the pilot's run of the baseline failed ({failed})"),
                               unit=unit)
            taken[quick].append((*two, time.monotonic() - started))
    column = _column(metric_option, [e for got in taken.values() for e, _, _ in got])
    short, long = (_spread(inputs.size_of(spec, quick)[1], taken[quick], column)
                   for quick in (True, False))
    return replace(choose(short, long, unit), metric=column,
                   pilot_s=round(time.monotonic() - began, 3))


def _once(execute: Executor, work: check.Invocation, binary: Path, pad: int) -> Execution:
    argv = work.argv(binary, work.scratch / "length.out")
    return execute(argv, env=launcher.padded_env(launcher.MINIMAL_ENV, pad),
                   timeout=work.timeout, stderr_path=work.scratch / "length.stderr")


def _column(option: str, runs: list[Execution]) -> str:
    """The sample column the spreads are of (see pilot)."""
    if option == "wall":
        return "wall_s"
    if option == "auto":
        probes = [Sample("baseline", -1, 0, 0, e.wall_s, e.user_s, e.sys_s, e.maxrss_kb,
                         e.counters) for e in runs]
        return metric_mod.COLUMNS[metric_mod.choose(probes).metric]
    return "cpu_s"


def _spread(size: float, got: list[tuple[Execution, Execution, float]],
            column: str) -> PilotPoint:
    def value(e: Execution) -> float:
        return e.wall_s if column == "wall_s" else e.user_s + e.sys_s

    logs = [math.log(value(a) / value(b)) for a, b, _ in got if value(a) > 0 and value(b) > 0]
    runs = sorted(value(e) for a, b, _ in got for e in (a, b))
    # A pair costs its two runs at least; the clock around them adds the harness's own time.
    cost = [max(elapsed, a.wall_s + b.wall_s) for a, b, elapsed in got]
    sd = statistics.stdev(logs) if len(logs) >= 2 else 0.0
    return PilotPoint(size, statistics.median(runs), sd, statistics.fmean(cost), len(logs))
