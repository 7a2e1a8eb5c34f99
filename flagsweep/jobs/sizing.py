"""Sizing a corpus input for `flagsweep new`: the run command timed at -O2 on generated corpora,
each size found by secant steps until a run takes about FULL_S (QUICK_S for --quick)."""

from __future__ import annotations

import math
import re
import tempfile
import time
from pathlib import Path
from typing import Callable

from flagsweep import caches, process
from flagsweep.errors import FlagsweepError
from flagsweep.workload import corpus, inputs


FULL_S, QUICK_S = 2.0, 0.3      # what a full and a quick run should take at -O2
MAX_MB = 512                    # a generated corpus larger than this costs more than it tells


def size_input(argv: list[str], binary: Path, say: Callable[[str], None]) -> tuple[float, float, str]:
    """Corpus megabytes for a FULL_S and a QUICK_S run of argv at -O2.

    Time is not proportional to size (start-up, caches, and programs like zopfli that are not
    linear at all), so each size is found by the secant method on timed runs: a line through
    the two timings nearest the goal, the size it gives timed in turn, until a run lands within
    15% of the goal (at most four runs per size)."""
    mb, seconds = 1.0, _timed(argv, binary, 1.0)
    points = [(mb, seconds)]
    while seconds < 0.1 and mb < MAX_MB:
        mb = min(mb * 8, MAX_MB)
        seconds = _timed(argv, binary, mb)
        points.append((mb, seconds))
    if seconds < 0.01:
        raise FlagsweepError(f"{shown(argv)} on {mb:g} MB took {seconds:.3f} s: too fast to "
                             "size (does the run command read {input}?)")
    quick, quick_s = _secant(QUICK_S, points, argv, binary)
    full, full_s = _secant(FULL_S, points, argv, binary)
    say(f"input: {quick:g} MB took {quick_s:.2f} s and {full:g} MB {full_s:.2f} s at -O2")
    note = f"timed at -O2: {full:g} MB took {full_s:.2f} s, {quick:g} MB {quick_s:.2f} s"
    if full == MAX_MB and full_s < FULL_S * 0.85:
        note += f"; capped at {MAX_MB} MB: the command is too fast to fill {FULL_S:g} s"
    return full, quick, note


def _secant(goal: float, points: list[tuple[float, float]], argv: list[str],
            binary: Path) -> tuple[float, float]:
    """The size whose run takes about goal seconds, and its time; points gains each timing."""
    best = min(points, key=lambda p: abs(p[1] - goal))
    for _ in range(4):
        if abs(best[1] - goal) <= 0.15 * goal:
            break
        (m1, t1), (m2, t2) = sorted(points, key=lambda p: abs(p[1] - goal))[:2] \
            if len(points) > 1 else (points[0], (0.0, 0.0))
        slope = (t1 - t2) / (m1 - m2) if m1 != m2 and t1 != t2 else t1 / m1
        mb = m1 + (goal - t1) / slope if slope > 0 else m1 * goal / t1
        mb = min(max(_round(mb), 0.01), MAX_MB)
        if any(m == mb for m, _ in points):
            break
        points.append((mb, _timed(argv, binary, mb)))
        best = min(points, key=lambda p: abs(p[1] - goal))
    return best


def _timed(argv: list[str], binary: Path, megabytes: float) -> float:
    """Seconds of the best of two runs on a corpus of that size; FlagsweepError when the run
    fails."""
    data = trial_corpus(megabytes)
    with tempfile.TemporaryDirectory(prefix="flagsweep-trial-") as scratch:
        return _best_of_two(argv, binary, data, Path(scratch) / "output", megabytes)


def _best_of_two(argv: list[str], binary: Path, data: Path, out: Path, megabytes: float) -> float:
    args = [a.format(binary=str(binary), input=str(data), output=str(out)) for a in argv]
    best = math.inf
    for _ in range(2):
        started = time.perf_counter()
        try:
            done = process.run(args, timeout=120, keep_stdout=False)
        except process.TimeoutExpired:
            raise FlagsweepError(f"{shown(argv)} on {megabytes:g} MB ran over 120 s") from None
        took = time.perf_counter() - started
        if done.returncode != 0:
            why = done.stderr.strip().splitlines()[-1:] or [""]
            raise FlagsweepError(f"{shown(argv)} exited {done.returncode} "
                                 f"({why[0][:200]})")
        best = min(best, took)
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
