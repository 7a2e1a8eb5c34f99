"""A stand-in executor for the sweep's seam: executions at planted speeds, no timing real."""

from __future__ import annotations

import math
import random
from pathlib import Path

from flagsweep.host.executor import Execution, Executor


class Synthetic(Executor):
    """Executions of each variant at a planted speed: `seconds` (0.1 s) x its factor x a seeded
    lognormal (CV 0.3%) per call, single-threaded and CPU-bound (user time 98% of wall). The
    variant is read from the binary's path (.../builds/<variant>/...)."""

    def __init__(self, factors: dict[str, float], stop_after: int | None = None,
                 seconds: float = 0.1):
        self.factors, self.stop_after, self.calls = factors, stop_after, 0
        self.seconds = seconds
        self.rng = random.Random(7)

    def __call__(self, argv, *, env, timeout, stderr_path, perf=None, perf_csv=None) -> Execution:
        self.calls += 1
        if self.stop_after is not None and self.calls > self.stop_after:
            raise KeyboardInterrupt
        parts = Path(argv[0]).parts
        vid = parts[parts.index("builds") + 1]
        wall = self.seconds * self.factors.get(vid, 1.0) * math.exp(self.rng.gauss(0, 0.003))
        return Execution(wall, 0.98 * wall, 0.002, 2000, None, False, None)
