"""Sizing a corpus input for `flagsweep new`: the run command timed at -O2 on generated corpora,
each size found by secant steps until a run takes about FULL_S (QUICK_S for --quick).

Times are CPU times (user + sys, from the executor's Execution, the metric sweeps measure by
default): zopfli's wall time on a loaded machine sized a run it had just timed at 3.8 s as
~0.3 s. The time measured is written beside each size, and a goal that even the smallest input
overshoots (a program with a large fixed cost) is said to be out of reach, not estimated."""

from __future__ import annotations

import functools
import math
import re
import tempfile
from pathlib import Path
from typing import Callable, NamedTuple

from flagsweep import caches
from flagsweep.errors import FlagsweepError
from flagsweep.host import launcher
from flagsweep.host.executor import Executor
from flagsweep.workload import corpus, inputs


FULL_S, QUICK_S = 2.0, 0.3      # what a full and a quick run should take at -O2
MAX_MB = 512                    # a generated corpus larger than this costs more than it tells
MIN_MB = 0.01                   # the smallest corpus the secant steps try
WITHIN = 0.15                   # a size whose run lands this close to its goal is found


class Sizing(NamedTuple):
    """The sizes chosen and the CPU seconds their runs took at -O2."""

    megabytes: float
    quick_megabytes: float
    full_s: float
    quick_s: float
    full_reached: bool          # False: even the smallest size tried overshot FULL_S
    quick_reached: bool
    capped: bool                # the full size is MAX_MB and its run still short of FULL_S

    def note(self) -> str:
        """What the megabytes line says of its size, in its parentheses."""
        said = (f"timed at -O2: {self.megabytes:g} MB took {self.full_s:.2f} s of CPU"
                if self.full_reached else
                f"not reachable: {self.megabytes:g} MB, the smallest tried, already took "
                f"{self.full_s:.2f} s of CPU at -O2, a fixed cost")
        if self.capped:
            said += f"; capped at {MAX_MB} MB: the command is too fast to fill {FULL_S:g} s"
        return said

    def full_comment(self) -> str:
        return f"{'~' if self.full_reached else 'not '}{FULL_S:g} s at -O2 ({self.note()})"

    def quick_comment(self) -> str:
        if self.quick_reached:
            return f"~{QUICK_S:g} s: {self.quick_s:.2f} s of CPU at -O2"
        return (f"not {QUICK_S:g} s: the smallest size tried took {self.quick_s:.2f} s of CPU "
                "at -O2, a fixed cost")


def size_input(argv: list[str], binary: Path, say: Callable[[str], None],
               execute: Executor = launcher.run_once) -> Sizing:
    """Corpus megabytes for a FULL_S and a QUICK_S run of argv at -O2.

    Time is not proportional to size (start-up, caches, and programs like zopfli that are not
    linear at all), so each size is found by the secant method on timed runs: a line through
    the two timings nearest the goal, the size it gives timed in turn, until a run lands within
    15% of the goal (at most four runs per size)."""
    timed = functools.partial(_timed, argv, binary, execute)
    mb, seconds = 1.0, timed(1.0)
    points = [(mb, seconds)]
    while seconds < 0.1 and mb < MAX_MB:
        mb = min(mb * 8, MAX_MB)
        seconds = timed(mb)
        points.append((mb, seconds))
    if seconds < 0.01:
        raise FlagsweepError(f"{shown(argv)} on {mb:g} MB took {seconds:.3f} s: too fast to "
                             "size (does the run command read {input}?)")
    quick, quick_s = _secant(QUICK_S, points, timed)
    full, full_s = _secant(FULL_S, points, timed)
    smallest = min(m for m, _ in points)
    sizing = Sizing(full, quick, full_s, quick_s,
                    full_reached=not (full_s > FULL_S * (1 + WITHIN) and full == smallest),
                    quick_reached=not (quick_s > QUICK_S * (1 + WITHIN) and quick == smallest),
                    capped=full == MAX_MB and full_s < FULL_S * (1 - WITHIN))
    say(f"input: {quick:g} MB took {quick_s:.2f} s and {full:g} MB {full_s:.2f} s of CPU at -O2")
    for goal, reached in ((QUICK_S, sizing.quick_reached), (FULL_S, sizing.full_reached)):
        if not reached:
            say(f"input: a {goal:g} s run is not reachable: {smallest:g} MB, the smallest "
                f"tried, already took {dict(points)[smallest]:.2f} s (a fixed cost)")
    return sizing


def _secant(goal: float, points: list[tuple[float, float]],
            timed: Callable[[float], float]) -> tuple[float, float]:
    """The size whose run takes about goal seconds, and its time; points gains each timing."""
    best = min(points, key=lambda p: abs(p[1] - goal))
    for _ in range(4):
        if abs(best[1] - goal) <= WITHIN * goal:
            break
        (m1, t1), (m2, t2) = sorted(points, key=lambda p: abs(p[1] - goal))[:2] \
            if len(points) > 1 else (points[0], (0.0, 0.0))
        slope = (t1 - t2) / (m1 - m2) if m1 != m2 and t1 != t2 else t1 / m1
        mb = m1 + (goal - t1) / slope if slope > 0 else m1 * goal / t1
        mb = min(max(_round(mb), MIN_MB), MAX_MB)
        if any(m == mb for m, _ in points):
            break
        points.append((mb, timed(mb)))
        best = min(points, key=lambda p: abs(p[1] - goal))
    return best


def _timed(argv: list[str], binary: Path, execute: Executor, megabytes: float) -> float:
    """CPU seconds of the best of two runs on a corpus of that size; FlagsweepError when the
    run fails."""
    data = trial_corpus(megabytes)
    with tempfile.TemporaryDirectory(prefix="flagsweep-trial-") as scratch:
        out = Path(scratch) / "output"
        args = [a.format(binary=str(binary), input=str(data), output=str(out)) for a in argv]
        best = math.inf
        for _ in range(2):
            done = execute(args, env=launcher.MINIMAL_ENV, timeout=120,
                           stderr_path=Path(scratch) / "stderr")
            if done.failure:
                raise FlagsweepError(f"{shown(argv)} on {megabytes:g} MB failed: "
                                     f"{done.failure[:300]}")
            cpu = (done.user_s or 0.0) + (done.sys_s or 0.0)
            best = min(best, cpu if done.user_s is not None else done.wall_s or 0.0)
        return best


def trial_corpus(megabytes: float) -> Path:
    """A generated corpus of that size for trial runs, kept in the cache between them."""
    data = caches.TRIAL_RUNS.entry(f"corpus-{megabytes:g}.bin")
    if not data.exists():
        # whole or not at all: another `new` may be timing the same size at the same moment,
        # and a half-written corpus would size its input wrong
        caches.TRIAL_RUNS.write(data, corpus.corpus_bytes(round(megabytes * inputs.MB), 1))
    return data


def _round(mb: float) -> float:
    """Two significant digits: a size a person would write."""
    return float(f"{mb:.2g}")


def shown(argv: list[str]) -> str:
    return " ".join(argv)


def set_line(text: str, key: str, value: str, comment: str) -> str:
    pattern = re.compile(rf"^{key}\s*=.*$", re.M)
    if not pattern.search(text):
        raise FlagsweepError(f"no '{key} =' line in the [inputs] table to rewrite")
    return pattern.sub(f"{key} = {value}  # {comment}", text, count=1)
