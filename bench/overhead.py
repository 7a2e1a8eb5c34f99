#!/usr/bin/env python3
"""The harness's own cost per sample, against running the binary directly.

The workload is a C program that does nothing (so any cost is the harness's). "Direct" is the
floor any harness pays: posix_spawn + waitpid in a loop. "flagsweep" is the real measuring path:
rounds.rounds driving measure.sampler.Sampler (padded environment, the launcher's extra fork and
exec, pidfd timeout, the store's committed insert per sample, the stopping rule's read-back after each
round), pinned to one CPU as in a sweep. Printed: median milliseconds per run, and flagsweep's overhead over direct,
without perf and with perf stat (when perf is usable here). Then the floor of a sample: the wall
and CPU time the launcher itself reports for the program that does nothing (its fork, exec, the
dynamic loader, exit), which every sample holds whatever the program does, and the shortest run
it allows (flagsweep.measure.resolution).

Usage: python bench/overhead.py [RUNS]      (default 300 samples per configuration)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from flagsweep.host import launcher, probes
from flagsweep.measure import resolution, rounds
from flagsweep.measure.plan import round_values
from flagsweep.measure.sampler import Busy, Sampler
from flagsweep.results.store import Store
from flagsweep.experiment import target
from flagsweep.workload import check


def _median(values) -> float:
    return float(np.median(list(values)))

TARGET = """summary = "bench: a program that does nothing"
version = "0"
[source]
path = "."
[build]
system = "make"
binary = "noop"
[inputs]
kind = "file"
path = "noop.c"
[run]
argv = ["{binary}"]
[check]
method = "exact"
"""


def direct(binary: Path, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        pid = os.posix_spawn(str(binary), [str(binary)], {"PATH": "/usr/bin:/bin"})
        os.waitpid(pid, 0)
        times.append((time.perf_counter_ns() - t0) / 1e6)
    return times


def harness(folder: Path, binary: Path, n: int, perf: probes.Preflight | None) -> list[float]:
    """Per-sample wall time of the full path, measured from outside it."""
    store = Store(f"sqlite:///{folder / 'store.sqlite'}")
    run_id = store.new_run_id("bench")
    store.create_run(run_id, "bench", "bench", folder, {}, {})
    t = target.load(str(folder))
    workload = check.Invocation(t, folder / "noop.c", folder / "scratch")
    workload.scratch.mkdir(exist_ok=True)
    ids = ["a", "b", "c", "d"]
    sampler = Sampler(run_id, workload, {i: binary for i in ids}, perf, False, store,
                      lambda _: None)
    stamps: list[float] = []

    def measure(vid, rnd, pos, pad):
        stamps.append(time.perf_counter_ns() / 1e6)
        return sampler(vid, rnd, pos, pad)   # a run the machine disturbed is retaken, as in a sweep

    plan = rounds.Plan(ids, seed=1, warmup=0, min_runs=n // len(ids), max_runs=n // len(ids),
                       precision=0.0)
    with launcher.pinned(launcher.choose_cpu([])):
        rounds.rounds(plan, set(), measure,
                      lambda: round_values(store.samples(run_id), "wall_s"))
    stamps.append(time.perf_counter_ns() / 1e6)
    return [b - a for a, b in zip(stamps, stamps[1:])]


def floor(binary: Path, folder: Path, n: int) -> tuple[list[float], list[float]]:
    """The launcher's own figures for a program that does nothing: wall and user + sys, s."""
    wall, cpu = [], []
    with launcher.pinned(launcher.choose_cpu([])):
        for _ in range(n):
            e = launcher.run_once([str(binary)], env={"PATH": "/usr/bin:/bin"}, timeout=10,
                                  stderr_path=folder / "floor.err")
            wall.append(e.wall_s)
            cpu.append(e.user_s + e.sys_s)
    return wall, cpu


def main() -> None:
    try:
        measure_overhead()
    except Busy as e:  # the sampling path now refuses a busy machine, as a sweep does
        sys.exit(f"overhead: not measured: {e}")


def measure_overhead() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    with tempfile.TemporaryDirectory(prefix="flagsweep-overhead-") as tmp:
        folder = Path(tmp)
        (folder / "noop.c").write_text("int main(void) { return 0; }\n")
        (folder / "target.toml").write_text(TARGET)
        subprocess.run(["gcc", "-O2", "-o", str(folder / "noop"), str(folder / "noop.c")], check=True)
        binary = folder / "noop"
        base = _median(direct(binary, n))
        plain = _median(harness(folder, binary, n, None))
        pre = probes.preflight()
        with_perf = _median(harness(folder, binary, n, pre)) if pre.mode != "none" else None
        wall, cpu = floor(binary, folder, n)
    print(f"per run, median of {n} (ms): a program that does nothing")
    print(f"  direct posix_spawn + waitpid      {base:7.3f}")
    print(f"  flagsweep, counters none          {plain:7.3f}   overhead {plain - base:6.3f} ms")
    if with_perf is not None:
        print(f"  flagsweep, perf stat ({pre.mode:8s})  {with_perf:7.3f}   overhead "
              f"{with_perf - base:6.3f} ms (mostly perf's own start-up, which the launcher's "
              "wall time inside perf leaves out)")
    print("floor of a sample (the launcher's figures for the same program, median / 90th pct):")
    print(f"  wall {1e3 * _median(wall):7.3f} / {1e3 * np.percentile(wall, 90):7.3f}   "
          f"cpu (user + sys) {1e3 * _median(cpu):7.3f} / {1e3 * np.percentile(cpu, 90):7.3f}")
    print(f"  flagsweep warns below {1e3 * resolution.SHORTEST_S:g} ms a run "
          f"({resolution.DILUTION:.0f} x the floor it assumes, {1e3 * resolution.FLOOR_S:g} ms)")


if __name__ == "__main__":
    main()
