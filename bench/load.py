#!/usr/bin/env python3
"""A seeded, bursty background load: what a shared CI runner or a busy workstation does to a
benchmark, made repeatable.

One process per CPU (each pinned to its CPU) alternates busy bursts and idle gaps, each drawn
uniformly from BURST_MS and GAP_MS (tens to hundreds of milliseconds: shorter than a round of a
sweep, so pairing by round cannot absorb them, and on the order of one run, so some runs are hit
and others are not). A burst copies a buffer larger than the last-level cache of most machines
and spins on arithmetic, so it takes the CPU from a pinned workload and evicts its cache lines
on the other CPUs as well. Every process's sequence of bursts and gaps follows from the seed.

Usage:
  python bench/load.py [--seed N] [--duration S] [--duty F]    run until Ctrl-C / S seconds
  from load import running; with running(seed=1): ...           (bench scripts, in-process)
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time
from contextlib import contextmanager
from multiprocessing import Process
from typing import Iterator

BURST_MS = (20, 300)
GAP_MS = (20, 300)
BUFFER_BYTES = 16 << 20


def _burn(cpu: int, seed: int, duty: float, until: float | None) -> None:
    """One CPU's load: bursts and gaps for ever (or until `until`, a monotonic time)."""
    os.sched_setaffinity(0, {cpu})
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    _end_with_parent()
    rng = random.Random(f"{seed}:{cpu}")
    src, dst = bytearray(BUFFER_BYTES), bytearray(BUFFER_BYTES)
    # duty scales the gaps: 0.5 leaves the mean burst and the mean gap equal.
    gap_scale = (1 - duty) / duty if 0 < duty < 1 else 1.0
    while until is None or time.monotonic() < until:
        burst_end = time.monotonic() + rng.uniform(*BURST_MS) / 1000
        x = 0
        while time.monotonic() < burst_end:
            dst[:] = src                      # memory traffic: evicts the shared cache
            for i in range(2000):             # and plain CPU work
                x = (x * 1103515245 + i) & 0xFFFFFFFF
        time.sleep(rng.uniform(*GAP_MS) * gap_scale / 1000)


def _end_with_parent() -> None:
    """Linux's PR_SET_PDEATHSIG: this process gets SIGTERM when its parent dies, so a load
    whose driver was killed (kill -9, a crashed benchmark) does not run on unseen."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:       # the parent died before prctl took effect
        os._exit(0)


@contextmanager
def running(seed: int = 1, duty: float = 0.5, cpus: list[int] | None = None) -> Iterator[None]:
    """The load, on every CPU this process may use (or `cpus`), for the duration of the block."""
    procs = [Process(target=_burn, args=(cpu, seed, duty, None), daemon=True)
             for cpu in (cpus if cpus is not None else sorted(os.sched_getaffinity(0)))]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join()


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=None, help="seconds (default: until Ctrl-C)")
    ap.add_argument("--duty", type=float, default=0.5,
                    help="share of time busy on each CPU, 0 < duty < 1 (default 0.5)")
    a = ap.parse_args()
    if not 0 < a.duty < 1:
        ap.error("--duty must lie strictly between 0 and 1")
    cpus = sorted(os.sched_getaffinity(0))
    # SIGTERM (kill, timeout) ends the load as Ctrl-C does: through running()'s clean-up.
    signal.signal(signal.SIGTERM, _interrupt)
    print(f"load: seed {a.seed}, duty {a.duty:g}, bursts {BURST_MS[0]}-{BURST_MS[1]} ms, "
          f"CPUs {','.join(map(str, cpus))}", flush=True)
    try:
        with running(a.seed, a.duty, cpus):
            if a.duration is None:
                signal.pause()
            else:
                time.sleep(a.duration)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
