"""Disturbance: whether the machine, not the binary, took part of a run's time.

The evidence is the kernel's, read by the launcher for every run (runner._scheduler): run_delay,
the time the workload was runnable but waiting for its CPU (schedstat), and the host's steal
time on that CPU. Nothing is guessed from the measured value itself: re-running the runs that
came out slow would bias every comparison towards fast.

What counts as disturbed depends on the metric, because waiting does not inflate every metric
alike, and on the practical threshold, because an inflation matters once it could move a verdict.
Measured with bench/under_load.py (section "rule": one gzip -9 binary pinned, 60 runs quiet and
60 under bench/load.py; docs/measurement.md has the table), as the least-squares growth of the
value per unit of off-CPU share (run_delay / wall):

- wall time: +1.49 +- 0.04. Every moment spent waiting is in it, plus the cache refills.
- CPU time (user + sys): +0.06 +- 0.03. Waiting is not in it; what remains is the refills after
  each preemption and the other CPU's memory traffic (median +1.6% at a median 26% share).

A run is disturbed when that growth at its share would pass the practical threshold:
share > threshold / INFLATION[metric] (0.67% for wall time and 17% for CPU time at the default
1%). Steal time is the host taking the CPU from this VM, unseen by the guest's scheduler, so it
may be inside either metric one for one: a steal share past the threshold disturbs too. /proc/stat
counts steal in whole ticks (10 ms), so a run's difference of two readings can show one tick
that mostly fell outside it; one tick is taken off before judging (in a gzip sweep on this VM
without the load, 16 of 202 runs showed exactly one tick of steal, and none more).

A disturbed run is taken again inside its round (sweep.Sampler), at most MAX_RETAKES times; the
attempts set aside stay in the store. When even then most runs stay disturbed, the machine is
too busy for this metric and the sweep stops early (BUSY_SHARE) instead of spending its budget.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Growth of each metric per unit of off-CPU share, measured (see above). Counts (instructions,
# cycles) are per process and do not include the time someone else had the CPU: not judged.
INFLATION = {"wall_s": 1.49, "cpu_s": 0.06}
STEAL_TICK_S = 1 / os.sysconf("SC_CLK_TCK")
MAX_RETAKES = 3
BUSY_SHARE = 0.5          # of the counted runs so far, disturbed after their retakes
BUSY_MIN_RUNS = 12        # judge "most" only once this many runs are in


def limit(metric: str, threshold_pct: float) -> float | None:
    """The off-CPU share past which a run of `metric` is disturbed; None: never judged."""
    growth = INFLATION.get(metric)
    return None if growth is None else threshold_pct / 100 / growth


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
                    max(0.0, steal - STEAL_TICK_S) / wall_s if isinstance(steal, (int, float))
                    else None)


def disturbed(metric: str, wall_s: float | None, counters: dict | None,
              threshold_pct: float = 1.0) -> bool:
    """Whether a run's value of `metric` was inflated by others past the practical threshold,
    by the kernel's evidence."""
    most = limit(metric, threshold_pct)
    if most is None:
        return False
    e = evidence(wall_s, counters)
    return (e.off_cpu_share is not None and e.off_cpu_share > most) or \
        (e.steal_share is not None and e.steal_share > threshold_pct / 100)


def busy(counted: int, still_disturbed: int) -> bool:
    """Most runs stayed disturbed after their retakes: measuring on would spend the budget on
    the machine's noise."""
    return counted >= BUSY_MIN_RUNS and still_disturbed > BUSY_SHARE * counted


def busy_reason(metric: str, counted: int, still_disturbed: int, threshold_pct: float = 1.0) -> str:
    most = limit(metric, threshold_pct) or 0.0
    advice = (" --metric cpu is not disturbed by waiting for the CPU (single-threaded "
              "workloads); or" if metric == "wall_s" else "")
    return (f"the machine is busy: {still_disturbed} of {counted} runs waited for the CPU more "
            f"than {100 * most:.2g}% of their time even after {MAX_RETAKES} retakes each, so "
            f"their {metric} measures the other work, not the binaries; stopped early.{advice} "
            "measure when the machine is quieter (flagsweep system shows what runs)")
