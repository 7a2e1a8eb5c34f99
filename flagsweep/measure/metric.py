"""The primary metric of a sweep when the user leaves it to flagsweep (--metric auto).

CPU time (user + sys of the workload and its waited-for children) is what stays right on a busy
machine: waiting for the CPU does not enter it, while it inflates wall time one for one. Measured
with bench/under_load.py on this project's VM (docs/measurement.md): under the seeded bursty
load of bench/load.py, gzip's wall-time CV rose from ~6% to 13-20% and a sweep's A/A copy moved
by 5%, while CPU time kept its quiet CV and median, and showed no growth with the time spent
waiting (slope 0.000 +- 0.037 per unit off-CPU share).

CPU time is only the right measure of a program that does nothing but compute on one thread: it
does not see time spent sleeping, in I/O, or waiting for other threads, and it sums threads, so a
parallel speed-up would read as no change (or a slow-down). So `choose` looks at each binary's
uncounted first run and picks CPU time only when the kernel's figures show such a workload:

- its main thread was on the CPU or waiting for it for all but BLOCKED_SHARE of the wall time
  and a millisecond for starting it (on_cpu + run_delay from schedstat, with the launcher's own
  wait to be woken at the end; the rest is sleep, I/O or waiting on another thread);
- user + sys is no more than the main thread's own on-CPU time (plus OTHER_THREADS_SHARE and a
  millisecond of accounting slack): no other thread or child process did the work.

Otherwise, or where the kernel gives no schedstat figures, the metric is wall time, and the sweep
says why; the disturbance rule then protects wall time as far as it can.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from flagsweep.measure import pairs
from flagsweep.measure.sample import SAMPLE_METRICS, Sample

# --metric's names and the sample column or counter each one reads.
COLUMNS = {"wall": "wall_s", "cpu": "cpu_s", "cycles": "cycles", "instructions": "instructions"}

BLOCKED_SHARE = 0.02
OTHER_THREADS_SHARE = 0.02
SLACK_S = 0.001


def column(option: str) -> str:
    """The sample column a run's --metric reads; "auto" not chosen yet (a run interrupted in
    its warmup round) reads wall time, what every sample has."""
    return COLUMNS.get(option, "wall_s" if option == "auto" else option)


@dataclass(frozen=True)
class MetricChoice:
    metric: str          # "cpu" or "wall" (MeasureOptions.metric)
    why: str

    def to_json(self) -> dict:
        return {"metric": self.metric, "why": self.why}


def choose(probes: list[Sample]) -> MetricChoice:
    """CPU time when every probed binary ran single-threaded and CPU-bound, else wall time."""
    good = [s for s in probes if s.ok and s.wall_s]
    if not good:
        return MetricChoice("wall", "wall time: no probe run succeeded, so nothing shows the workload "
                              "to be single-threaded and CPU-bound")
    for s in good:
        why = _not_cpu_bound(s)
        if why:
            return MetricChoice("wall", f"wall time: {why}; CPU time would not measure what users "
                                  "wait for (--metric cpu forces it)")
    return MetricChoice("cpu", "CPU time (user + sys): every binary ran single-threaded and "
                         "CPU-bound, and CPU time does not grow while another program holds the "
                         "CPU, as wall time does (--metric wall forces wall time)")


def _not_cpu_bound(s: Sample) -> str | None:
    c = s.counters or {}
    on_cpu, delay = c.get("on_cpu_s"), c.get("run_delay_s")
    if on_cpu is None or delay is None or s.user_s is None or s.sys_s is None:
        return "this kernel gives no per-process scheduler figures (/proc/PID/schedstat)"
    blocked = s.wall_s - on_cpu - delay
    if blocked > BLOCKED_SHARE * s.wall_s + SLACK_S:
        return (f"{s.variant_id} spent {100 * blocked / s.wall_s:.0f}% of its wall time neither "
                "running nor waiting for the CPU (sleep, I/O, or waiting for another thread)")
    others = s.user_s + s.sys_s - on_cpu
    if others > OTHER_THREADS_SHARE * on_cpu + SLACK_S:
        return (f"{s.variant_id} used {others:.3f} s of CPU in other threads or child processes "
                f"({100 * others / on_cpu:.0f}% beyond its main thread)")
    return None


def metric_of(s: Sample, metric: str) -> float | None:
    """One sample's value of a metric name: a column, user+sys for cpu_s, or a counter."""
    if metric == "cpu_s":
        return s.user_s + s.sys_s if s.user_s is not None and s.sys_s is not None else None
    if metric in SAMPLE_METRICS:
        return getattr(s, metric)
    value = (s.counters or {}).get(metric)
    return value if isinstance(value, (int, float)) else None


def values_by_round(samples: list[Sample], metric_of: Callable[[Sample], float | None],
                    positive_only: bool = True) -> dict[str, dict[int, float]]:
    """variant -> {round: value} for good, counted samples (positive ones only by default: the
    comparisons work on logs). The store keeps one sample per (variant, round) outside pairs, so
    no value is lost to the dict; the runs of duet pairs (Sample.pair) come as their pairs make
    them (measure.pairs.values). What the stopping rule watches and what the analysis compares."""
    out: dict[str, dict[int, float]] = {}
    paired = []
    for s in samples:
        value = metric_of(s) if s.ok and s.round >= 0 else None
        if value is None or (value <= 0 and positive_only):
            continue
        if s.pair:
            if value > 0:       # a ratio needs both runs positive
                paired.append((s, value))
        else:
            out.setdefault(s.variant_id, {})[s.round] = value
    for vid, by_round in pairs.values(paired).items():
        out.setdefault(vid, {}).update(by_round)
    return out
