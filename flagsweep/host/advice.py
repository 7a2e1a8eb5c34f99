"""Advice: what in a machine's state (host.system.machine_state) adds noise, in plain words.

Pure functions of the recorded state, so the report can repeat them for any results.json
without touching the machine it runs on.
"""

from __future__ import annotations

from flagsweep.model import Machine
from flagsweep.stats.threshold import THRESHOLD_PCT

TUNE_COMMAND = "`flagsweep system --tune`"


def warnings(state: Machine | dict, threshold_pct: float = THRESHOLD_PCT) -> list[str]:
    """Plain-words warnings about what in `state` (from `machine_state`, or a results.json's
    machine) adds noise, each naming the setting and what to do. Only settings present in
    `state` are judged.

    threshold_pct is the smallest effect the sweep should resolve (the practical threshold of
    docs/statistics, default 1%). It sets how much background load is tolerated: the 1-minute
    load average per CPU may be at most threshold_pct / 10 (0.1 at 1%: an idle machine's
    daemons stay under it; a sweep chasing 5% effects tolerates 0.5).
    """
    state = Machine.model_validate(state)
    out: list[str] = []
    pinned = state.pinned_cpu
    where = f"on CPU {pinned}" if pinned is not None else "on the measured CPU"

    governor = state.governor
    if governor is not None and governor != "performance":
        out.append(f"CPU frequency governor is {governor!r} {where}: timings drift with load; "
                   f"run {TUNE_COMMAND} (as root) to set 'performance'.")

    if state.boost is True:
        out.append("Turbo boost is on: clock speed depends on temperature and other cores; "
                   f"{TUNE_COMMAND} turns it off.")

    out.extend(_isolation_warnings(state))

    load = state.load_avg
    ncpu = state.cpu_count or 1
    if load and load[0] / ncpu > threshold_pct / 10:
        out.append(f"Load average is {load[0]:.1f} on {ncpu} CPU{'s' if ncpu != 1 else ''}: "
                   "other work is running; measure on an idle machine.")

    if state.smt is True:
        out.append("SMT (hyper-threading) is on: the measured CPU's sibling thread shares its "
                   "core's caches and execution units; keep the sibling idle (isolate both "
                   "threads of the core) or turn SMT off "
                   "(`echo off | sudo tee /sys/devices/system/cpu/smt/control`).")

    if state.hypervisor is True:
        out.append("Running under a hypervisor: neighbours on the host add noise, and hardware "
                   "counters are usually unavailable.")

    aslr = state.aslr
    if aslr is not None and aslr != 2:
        what = "off" if aslr == 0 else "partial"
        out.append(f"ASLR is {what} (randomize_va_space={aslr}): layout effects are frozen "
                   "into one arbitrary layout; flagsweep expects it on (2): "
                   "`sudo sysctl kernel.randomize_va_space=2`.")

    if state.nmi_watchdog:
        out.append("NMI watchdog is on: it interrupts every CPU periodically (and holds a "
                   f"hardware counter); {TUNE_COMMAND} turns it off.")

    paranoid = state.perf_event_paranoid
    if paranoid is not None and paranoid > 2:
        out.append(f"perf_event_paranoid is {paranoid}: unprivileged processes cannot use "
                   f"hardware counters at all; {TUNE_COMMAND} sets 1.")
    return out


def _isolation_warnings(state: Machine) -> list[str]:
    ncpu = state.cpu_count or 1
    isolated = state.isolated_cpus
    if isolated is None:
        return []
    pinned = state.pinned_cpu
    if ncpu <= 1:
        return ["Only one CPU: every other process runs on the measured CPU; measure on a "
                "machine with at least two."]
    if not isolated:
        # The CPU measured on (or the one a sweep would take now), but never CPU 0: the
        # kernel refuses nohz_full there and keeps its housekeeping on it.
        n = (pinned if pinned is not None else _quietest(state)) or ncpu - 1
        return [f"No isolated CPU: other processes share the measured CPU{_named(pinned)}; for "
                f"quieter runs boot with isolcpus={n} (and nohz_full={n}, rcu_nocbs={n}): "
                "flagsweep then measures on it without --cpu."]
    listed = ",".join(map(str, isolated))
    free = free_isolated(state)
    if pinned is None:
        return [f"CPU {listed} {'is' if len(isolated) == 1 else 'are'} isolated but the run is "
                f"not pinned: {_pass(free, isolated)}."]
    if pinned not in isolated:
        return [f"The measured CPU {pinned} is not isolated (isolated: {listed}): other "
                f"processes share it; {_pass(free, isolated)}."]
    if pinned not in (state.nohz_full or []):
        return [f"The measured CPU {pinned} is isolated but still takes the scheduler tick: "
                f"add nohz_full={pinned} rcu_nocbs={pinned} to the kernel command line."]
    return []


def free_isolated(state: Machine | dict) -> int | None:
    """The quietest isolated CPU no other sweep held when the state was taken (its
    `cpu_choice`, host.placement), else the first isolated one; None without one free."""
    state = Machine.model_validate(state)
    isolated = state.isolated_cpus or []
    choice = state.cpu_choice
    cpus = {c.cpu: c for c in (choice.cpus if choice else None) or ()}
    free = [c for c in isolated if not (c in cpus and cpus[c].held_by)]
    return min(free, key=lambda c: -((cpus[c].idle_pct if c in cpus else None) or 0),
               default=None)


def _pass(free: int | None, isolated: list[int]) -> str:
    if free is None:
        return (f"every isolated CPU is held by another sweep: pass --cpu {isolated[0]} --wait "
                "to measure there once it ends")
    return f"pass --cpu {free}"


def _quietest(state: Machine) -> int | None:
    """The CPU the state's placement measured as the one to take."""
    return state.cpu_choice.cpu if state.cpu_choice else None


def _named(cpu: int | None) -> str:
    return f" {cpu}" if cpu is not None else ""
