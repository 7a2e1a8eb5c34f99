"""`flagsweep new`'s input sizing through the executor seam: planted CPU times, nothing run."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagsweep.host.executor import Execution
from flagsweep.jobs import sizing
from flagsweep.workload import inputs


def planted(fixed_s: float, per_mb_s: float, wall_factor: float = 1.0):
    """An executor whose runs take fixed_s + per_mb_s a megabyte of CPU (the input is the
    argv word naming a trial corpus), and wall_factor times that of wall time (a loaded
    machine: the run waits for a CPU)."""
    def execute(argv, *, env, timeout, stderr_path, perf=None, perf_csv=None):
        data = Path(argv[1])
        cpu = fixed_s + per_mb_s * data.stat().st_size / inputs.MB
        return Execution(wall_s=cpu * wall_factor, user_s=cpu * 0.9, sys_s=cpu * 0.1,
                         maxrss_kb=1000, counters={}, multiplexed=False, failure=None)
    return execute


ARGV = ["{binary}", "{input}"]


def test_a_large_fixed_cost_is_said_unreachable_not_estimated():
    # zopfli: 3 s whatever the input, then 0.01 s a megabyte.
    said: list[str] = []
    got = sizing.size_input(ARGV, Path("/bin/true"), said.append, execute=planted(3.0, 0.01))
    assert not got.quick_reached and not got.full_reached
    assert got.quick_megabytes == got.megabytes == sizing.MIN_MB
    assert abs(got.quick_s - 3.0) < 0.01
    assert got.quick_comment() == ("not 0.3 s: the smallest size tried took 3.00 s of CPU at "
                                   "-O2, a fixed cost")
    assert got.full_comment().startswith("not 2 s at -O2 (not reachable: 0.01 MB, the smallest "
                                         "tried, already took 3.00 s of CPU at -O2")
    assert ("input: a 0.3 s run is not reachable: 0.01 MB, the smallest tried, already took "
            "3.00 s (a fixed cost)") in said
    assert "input: 0.01 MB took 3.00 s and 0.01 MB 3.00 s of CPU at -O2" in said


def test_sizes_follow_cpu_time_not_a_loaded_machines_wall_time():
    # 1 s a megabyte of CPU, but five times that of wall time on a busy machine.
    said: list[str] = []
    got = sizing.size_input(ARGV, Path("/bin/true"), said.append,
                            execute=planted(0.0, 1.0, wall_factor=5.0))
    assert got.quick_reached and got.full_reached
    assert (got.megabytes, got.quick_megabytes) == (2.0, 0.3)
    assert got.quick_comment() == f"~0.3 s: {got.quick_s:.2f} s of CPU at -O2"
    assert got.full_comment() == (f"~2 s at -O2 (timed at -O2: {got.megabytes:g} MB took "
                                  f"{got.full_s:.2f} s of CPU)")
