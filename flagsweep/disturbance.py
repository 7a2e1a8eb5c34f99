"""Disturbance: whether the machine, not the binary, took part of a run's time.

The evidence is the kernel's, read by the launcher for every run (runner._scheduler): run_delay,
the time the workload was runnable but waiting for its CPU (schedstat), and the host's steal
time on that CPU. Nothing is guessed from the measured value itself: re-running the runs that
came out slow would bias every comparison towards fast.

What counts as disturbed depends on the metric, because load does not inflate every metric
alike. Measured on the project's 2-CPU VM with bench/load.py beside a pinned gzip -9 run
(bench/under_load.py, section "rule"; docs/measurement.md has the figures):

- wall time grows with the off-CPU share (about 1.5x the share: a run waiting 26% of its wall
  time took 39% longer), while quiet runs wait under 0.6% of their time (99th percentile). So a
  wall-time run is disturbed past WALL_SHARE, the level quiet runs stay below.
- CPU time (user + sys) did not grow with it: a slope of 0.000 +- 0.037 per unit of off-CPU
  share over runs waiting 0-40% of their time. Being descheduled costs a CPU-time run only the
  cache refills after each switch, too little to see at these rates. Beyond the range measured
  there is no such evidence, so a CPU-time run is disturbed past CPU_SHARE.
- Steal time is the host taking the CPU from this VM; the guest's scheduler does not see it,
  so the workload's times may include it, whatever the metric: past STEAL_SHARE it disturbs.

A disturbed run is taken again inside its round (sweep.Sampler), at most MAX_RETAKES times; the
attempts set aside stay in the store. When even then most runs stay disturbed, the machine is
too busy for this metric and the sweep stops early (BUSY_SHARE) instead of spending its budget.
"""

from __future__ import annotations

from dataclasses import dataclass

WALL_SHARE = 0.01
CPU_SHARE = 0.40
STEAL_SHARE = 0.01
MAX_RETAKES = 3
BUSY_SHARE = 0.5          # of the counted runs so far, disturbed after their retakes
BUSY_MIN_RUNS = 12        # judge "most" only once this many runs are in

# Metrics whose runs the scheduler can disturb; counts (instructions, cycles) are per process
# and do not include the time someone else had the CPU.
LIMITS = {"wall_s": WALL_SHARE, "cpu_s": CPU_SHARE}


@dataclass(frozen=True)
class Evidence:
    off_cpu_share: float | None      # run_delay / wall
    steal_share: float | None        # steal / wall

    def text(self) -> str:
        parts = []
        if self.off_cpu_share is not None:
            parts.append(f"waited for the CPU {100 * self.off_cpu_share:.1f}% of its time")
        if self.steal_share:
            parts.append(f"host steal {100 * self.steal_share:.1f}%")
        return ", ".join(parts) or "no scheduler evidence"


def evidence(wall_s: float | None, counters: dict | None) -> Evidence:
    """The off-CPU and steal shares of one run, None where the kernel gave no figure."""
    c = counters or {}
    if not wall_s or wall_s <= 0:
        return Evidence(None, None)
    delay, steal = c.get("run_delay_s"), c.get("steal_s")
    return Evidence(delay / wall_s if isinstance(delay, (int, float)) else None,
                    steal / wall_s if isinstance(steal, (int, float)) else None)


def disturbed(metric: str, wall_s: float | None, counters: dict | None) -> bool:
    """Whether a run's value of `metric` was inflated by others, by the kernel's evidence."""
    limit = LIMITS.get(metric)
    if limit is None:
        return False
    e = evidence(wall_s, counters)
    return (e.off_cpu_share is not None and e.off_cpu_share > limit) or \
        (e.steal_share is not None and e.steal_share > STEAL_SHARE)


def busy(counted: int, still_disturbed: int) -> bool:
    """Most runs stayed disturbed after their retakes: measuring on would spend the budget on
    the machine's noise."""
    return counted >= BUSY_MIN_RUNS and still_disturbed > BUSY_SHARE * counted


def busy_reason(metric: str, counted: int, still_disturbed: int) -> str:
    limit = LIMITS[metric]
    advice = (" --metric cpu is not disturbed by waiting for the CPU (single-threaded "
              "workloads); or" if metric == "wall_s" else "")
    return (f"the machine is busy: {still_disturbed} of {counted} runs waited for the CPU more "
            f"than {100 * limit:g}% of their time even after {MAX_RETAKES} retakes each, so "
            f"their {metric} measures the other work, not the binaries; stopped early.{advice} "
            "measure when the machine is quieter (flagsweep system shows what runs)")
