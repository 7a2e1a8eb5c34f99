"""Disturbance: whether the machine, not the binary, took part of a run's time.

The evidence is the kernel's, read by the launcher for every run (runner._scheduler): run_delay,
the time the workload was runnable but waiting for its CPU (schedstat), and the host's steal
time on that CPU. Nothing is guessed from the measured value itself: re-running the runs that
came out slow would bias every comparison towards fast.

What counts as disturbed depends on the metric, because waiting does not inflate every metric
alike. Measured with bench/under_load.py on this project's 2-vCPU VM (docs/measurement.md has
the tables), as the least-squares growth of a metric per unit of off-CPU share (run_delay / wall):

- wall time: +1.49 +- 0.04 and +1.53 +- 0.04 (two runs of the bench) over quiet and loaded
  runs together. Every moment spent waiting is in it. So a wall-time run is disturbed once that
  growth at its share would pass the practical threshold: share > threshold / WALL_GROWTH
  (0.67% at the default 1%; quiet runs stayed under 0.2%, their 99th percentile).
- CPU time (user + sys): +0.05 +- 0.06 and +0.06 +- 0.06 within 150 loaded runs each (shares
  up to 41% and 42%); its median moved +0.2% and +1.6% between quiet and loaded, alike for every
  run (the other CPU's memory traffic, which pairing by round cancels). Waiting is not in CPU
  time, and up to CPU_TRUSTED_SHARE (the loaded runs' 90th percentile, 33.3% and 35.6%, where
  the measurement still has many runs) being descheduled did not measurably move it. Past it the
  few runs there used 3.6% more CPU than those at 25-35% (8 runs), so a CPU-time run that waited
  more is disturbed.

Steal time is the host taking the CPU from this VM, unseen by the guest's scheduler, so it may
be inside either metric one for one: a steal share past the threshold disturbs too. /proc/stat
counts steal in whole ticks (10 ms), so a run's difference of two readings can show one tick
that mostly fell outside it; one tick is taken off before judging (in a gzip sweep on this VM
without the load, 17 of 203 runs showed exactly one tick of steal, and none more).

A wait of under QUIET_WAIT_S never disturbs: quiet runs waited up to 0.8 ms (the rule bench's
quiet maximum, 0.2% of 0.41 s: wake-ups, kernel threads), which is a large share of a workload
of a few milliseconds but no sign of another program.

A disturbed run is taken again inside its round (measure.sampler.Sampler), at most MAX_RETAKES
times; the attempts set aside stay in the store. When even then most runs stay disturbed, the machine is
too busy for this metric and the sweep stops early (BUSY_SHARE) instead of spending its budget.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from flagsweep.stats.threshold import THRESHOLD_PCT, fraction

WALL_GROWTH = 1.49         # wall time per unit of off-CPU share, measured (see above)
CPU_TRUSTED_SHARE = 0.35   # CPU time: no measured growth up to this off-CPU share
QUIET_WAIT_S = 0.001      # waits up to this long happen on a quiet machine too
STEAL_TICK_S = 1 / os.sysconf("SC_CLK_TCK")
MAX_RETAKES = 3
BUSY_SHARE = 0.5          # of the counted runs so far, disturbed after their retakes
BUSY_MIN_RUNS = 12        # judge "most" only once this many runs are in


def limit(metric: str, threshold_pct: float) -> float | None:
    """The off-CPU share past which a run of `metric` is disturbed; None: never judged (counts
    such as instructions and cycles are per process and hold no one else's time)."""
    if metric == "wall_s":
        return fraction(threshold_pct) / WALL_GROWTH
    if metric == "cpu_s":
        return CPU_TRUSTED_SHARE
    return None


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
              threshold_pct: float = THRESHOLD_PCT) -> bool:
    """Whether a run's value of `metric` was inflated by others past the practical threshold,
    by the kernel's evidence."""
    most = limit(metric, threshold_pct)
    if most is None:
        return False
    e = evidence(wall_s, counters)
    waited = e.off_cpu_share is not None and e.off_cpu_share > most \
        and e.off_cpu_share * wall_s > QUIET_WAIT_S
    return waited or \
        (e.steal_share is not None and e.steal_share > fraction(threshold_pct))


def busy(counted: int, still_disturbed: int) -> bool:
    """Most runs stayed disturbed after their retakes: measuring on would spend the budget on
    the machine's noise."""
    return counted >= BUSY_MIN_RUNS and still_disturbed > BUSY_SHARE * counted


def busy_reason(metric: str, counted: int, still_disturbed: int, threshold_pct: float = THRESHOLD_PCT) -> str:
    most = limit(metric, threshold_pct) or 0.0
    advice = (" --metric cpu is not disturbed by waiting for the CPU (single-threaded "
              "workloads); or" if metric == "wall_s" else "")
    return (f"the machine is busy: {still_disturbed} of {counted} runs waited for the CPU more "
            f"than {100 * most:.2g}% of their time even after {MAX_RETAKES} retakes each, so "
            f"their {metric} measures the other work, not the binaries; stopped early.{advice} "
            "measure when the machine is quieter (flagsweep system shows what runs)")
