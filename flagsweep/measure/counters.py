"""Which counters measure a sweep's samples: perf (hardware or software events) or wait4's
rusage alone, and the requests this machine cannot serve, refused before anything is built."""

from __future__ import annotations

from typing import Callable

from flagsweep.errors import FlagsweepError
from flagsweep.host import probes


def refuse_unusable(counters: str, metric: str) -> None:
    """Refuse counter requests (--counters, --metric) this machine cannot serve, probing only
    when the answer depends on it."""
    if counters == "none" and metric == "cycles":
        raise FlagsweepError("--metric cycles needs perf counters; drop --counters none")
    if counters == "none" or (counters == "auto" and metric != "cycles"):
        return
    pre = probes.preflight()
    if pre.mode != "hardware" and (counters == "hardware" or metric == "cycles"):
        what = "--metric cycles" if metric == "cycles" else "--counters hardware"
        raise FlagsweepError(f"{what} needs hardware counters: " + "; ".join(pre.reasons)
                             + " (--metric instructions falls back to Cachegrind's count)")
    if pre.mode == "none":
        raise FlagsweepError("--counters software: " + "; ".join(pre.reasons))


def setup(choice: str, say: Callable[[str], None]) -> probes.Preflight | None:
    """Which perf setup measures the samples, or None for wait4's rusage alone.

    auto: perf only with hardware counters. Without a PMU, perf's software events repeat what
    the launcher's wait4 already reports (task-clock ~ user+sys, page faults, context switches)
    at about 7 ms of perf start-up per run (bench/overhead.py), so rusage alone is used;
    --counters software asks for perf anyway.
    """
    if choice == "none":
        say("counters: off (--counters none); times and rusage from wait4")
        return None
    pre = probes.preflight()
    if choice != "auto" or pre.mode == "hardware":
        say(probes.counters_available_text(pre))
    if choice == "hardware" and pre.mode != "hardware":
        raise FlagsweepError("--counters hardware: " + "; ".join(pre.reasons))
    if choice == "software" and pre.mode == "none":
        raise FlagsweepError("--counters software: " + "; ".join(pre.reasons))
    if choice == "auto" and pre.mode != "hardware":
        why = "; ".join(pre.reasons) or "no hardware counters"
        say(f"counters: perf not used ({why}); times, context switches and page faults come "
            "from wait4 (--counters software runs perf anyway)")
        return None
    return pre
