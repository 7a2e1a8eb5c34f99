"""The executor: what runs one workload once and measures it.

It is the one seam between a sweep's decisions (which binary, which round, retake or not, stop
or go on) and the machine's timing: every sweep runs its workloads through an Executor. The
launcher (host.launcher.run_once) is the one flagsweep uses; tests hand a sweep another one
(executions at planted speeds, recorded disturbances) so what is decided from timings is tested
without timing anything.

A duet round starts two workloads at once, each pinned to its own CPU, and waits for both: a
Together (host.launcher.run_together for the launcher; launcher.together_of finds a stand-in's
own), so tests plant duets (a moment's noise both runs share, a bias for one side) as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from flagsweep.host.probes import Preflight


@dataclass(frozen=True)
class Execution:
    """One run of a workload as measured: its times and peak memory, perf's counters when perf
    ran (else the launcher's own rusage counts), and why it failed, if it did."""

    wall_s: float | None
    user_s: float | None
    sys_s: float | None
    maxrss_kb: int | None
    counters: dict | None
    multiplexed: bool
    failure: str | None


class Executor(Protocol):
    """Runs argv once with exactly env, under timeout, its stderr into stderr_path; with perf,
    perf stat's counters (written to perf_csv) are added. A crash, a timeout or a nonzero exit
    is an Execution with its failure, never an exception."""

    def __call__(self, argv: list[str], *, env: dict[str, str], timeout: float,
                 stderr_path: Path, perf: Preflight | None = None,
                 perf_csv: Path | None = None) -> Execution: ...


@dataclass(frozen=True)
class Launch:
    """One of the workloads a Together starts at once: its command, exactly its environment,
    the CPU it is pinned to, where its stderr goes and (with perf) perf's counters."""

    argv: list[str]
    env: dict[str, str]
    cpu: int
    stderr_path: Path
    perf_csv: Path | None = None


class Together(Protocol):
    """Starts every launch at once, each on its own CPU, and waits for all of them under one
    timeout counted from their start; their Executions in the launches' order. A failure of
    one is its Execution's, never an exception, and never ends the others."""

    def __call__(self, launches: list[Launch], *, timeout: float,
                 perf: Preflight | None = None) -> list[Execution]: ...
