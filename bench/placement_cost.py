#!/usr/bin/env python3
"""What choosing the default CPU (host.placement.default) adds to a sweep's start.

The choice is two snapshots of /proc (/proc/stat, every /proc/PID/stat and each process's
affinity) around a window of load.WINDOW_S, then the lock files' holders. The window is a sleep
and takes no CPU; the rest is the cost proper. Printed: the processes read, the median and
maximum wall time of one snapshot, of the whole choice with the window and without it (the
choice with a 0 s window), and the CPU time the whole choice used.

Usage: python bench/placement_cost.py [REPEATS]      (default 20)
"""

from __future__ import annotations

import sys
import time

import numpy as np

from flagsweep.host import load, placement


def _timed(what, repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of `what()`, each repeat."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        what()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return walls, cpus


def _ms(values: list[float]) -> str:
    return f"median {1000 * float(np.median(values)):.1f} ms, max {1000 * max(values):.1f} ms"


def main(repeats: int = 20) -> None:
    tasks = len(load.snapshot().tasks)
    snap, _ = _timed(load.snapshot, repeats)
    bare, bare_cpu = _timed(lambda: placement.default(window_s=0.0), repeats)
    whole, whole_cpu = _timed(placement.default, max(3, repeats // 4))
    print(f"processes read per snapshot: {tasks}")
    print(f"one snapshot:                {_ms(snap)}")
    print(f"choice without the window:   {_ms(bare)} (CPU {_ms(bare_cpu)})")
    print(f"choice with the {load.WINDOW_S:g} s window: {_ms(whole)} (CPU {_ms(whole_cpu)})")
    print(f"last choice: {placement.default(window_s=0.0).why}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
