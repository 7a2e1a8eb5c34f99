"""A stand-in executor for the sweep's seam: executions at planted speeds, no timing real."""

from __future__ import annotations

import math
import random
from pathlib import Path

from flagsweep.host.executor import Execution, Executor


class Synthetic(Executor):
    """Executions of each variant at a planted speed: `seconds` (0.1 s) x its factor x a seeded
    lognormal (CV 0.3%) per call, single-threaded and CPU-bound (user time 98% of wall). The
    variant is read from the binary's path (.../builds/<variant>/...).

    It runs duets too (`together`, host.executor.Together), with what a duet meets planted:
    `moment_cv`, the host's noise of a moment, drawn once per serial run and once per duet, so
    its two runs share it; `duet_factors` (variant -> factor on its time when it runs in a duet:
    one binary slowing beside the other); `cpu_factors` (CPU -> factor on a duet's run pinned
    there: a CPU's own speed); `duet_cv`, noise of its own each run of a duet adds (the two
    contending)."""

    def __init__(self, factors: dict[str, float], stop_after: int | None = None,
                 seconds: float = 0.1, moment_cv: float = 0.0,
                 duet_factors: dict[str, float] | None = None,
                 cpu_factors: dict[int, float] | None = None, duet_cv: float = 0.0):
        self.factors, self.stop_after, self.calls = factors, stop_after, 0
        self.seconds, self.moment_cv, self.duet_cv = seconds, moment_cv, duet_cv
        self.duet_factors, self.cpu_factors = duet_factors or {}, cpu_factors or {}
        self.rng = random.Random(7)
        self.duets: list[list[tuple[str, int]]] = []     # each duet's (variant, cpu)s

    def __call__(self, argv, *, env, timeout, stderr_path, perf=None, perf_csv=None) -> Execution:
        return self._run(argv, self._draw(self.moment_cv))

    def together(self, launches, *, timeout, perf=None) -> list[Execution]:
        moment = self._draw(self.moment_cv)
        self.duets.append([(_variant(one.argv), one.cpu) for one in launches])
        return [self._run(one.argv, moment, one.cpu) for one in launches]

    def _run(self, argv, moment: float, cpu: int | None = None) -> Execution:
        self.calls += 1
        if self.stop_after is not None and self.calls > self.stop_after:
            raise KeyboardInterrupt
        vid = _variant(argv)
        factor = self.factors.get(vid, 1.0)
        noise = self.rng.gauss(0, 0.003) + moment
        if cpu is not None:
            factor *= self.duet_factors.get(vid, 1.0) * self.cpu_factors.get(cpu, 1.0)
            noise += self._draw(self.duet_cv)
        wall = self.seconds * factor * math.exp(noise)
        return Execution(wall, 0.98 * wall, 0.002, 2000, None, False, None)

    def _draw(self, cv: float) -> float:
        """A planted noise term; none drawn when it is not planted (the seeded sequence of the
        runs' own noise stays what it was)."""
        return self.rng.gauss(0, cv) if cv else 0.0


def _variant(argv) -> str:
    parts = Path(argv[0]).parts
    return parts[parts.index("builds") + 1]
