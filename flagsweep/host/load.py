"""Which CPUs are busy now, with what, and which one a sweep should measure on.

A sweep pins every timed run to one CPU, so the CPU it picks decides how much other work shares
its runs. The last CPU used to be the default (CPU 0 takes most interrupts), but a machine where
other work is pinned to the last CPU then measures that work. So the default is measured: two
snapshots of /proc half a second apart give each CPU's idle share over the window (the kernel's
per-CPU idle and iowait ticks against all its ticks, steal counted as busy: the host took that
time), how many tasks are runnable there at the end (state R, last on that CPU) and how many
user tasks may run only there (their affinity is that CPU alone: work that comes back to it
however quiet it looks now). The same window names the busiest processes for `flagsweep system`.

Everything is read from /proc, no agent and no dependency. The snapshots go through one seam
(`measure(take=...)`), so the choice is tested on recorded /proc/stat text, never on the load
of the machine the tests run on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

WINDOW_S = 0.5
# /proc/stat counts in USER_HZ ticks (100 a second on Linux), so over WINDOW_S a CPU has 50 and
# one tick is 2 points of idle share; a daemon's wake-up moves a CPU by a tick or two. CPUs
# within this many points of the quietest are as quiet as it: the pinned and runnable tasks,
# then the CPU number, decide between them rather than a tick of chance.
TIE_POINTS = 5.0
# A CPU at least this idle over the window is one a sweep could measure on now: a share of
# other work under a tenth of the CPU, the load advice.warnings tolerates at the default 1%
# threshold (0.1 a CPU). Advice never names a CPU busier than that, however it ranks.
IDLE_PCT = 90.0
PF_KTHREAD = 0x00200000      # task flags (include/linux/sched.h): a kernel thread
BUSIEST = 5                  # processes `flagsweep system` lists


@dataclass(frozen=True)
class Task:
    """One process as /proc/PID/stat shows it at one moment."""

    pid: int
    name: str
    ticks: int              # utime + stime of all its threads, in USER_HZ ticks
    cpu: int                # the CPU its main thread last ran on
    runnable: bool          # state R: running or waiting for a CPU
    pinned_to: int | None   # the one CPU its affinity allows; None: several, unknown, kthread


@dataclass(frozen=True)
class Snapshot:
    """/proc at one moment: each CPU's (idle ticks, all ticks) and the processes."""

    cpus: dict[int, tuple[int, int]]
    tasks: dict[int, Task] = field(default_factory=dict)
    taken: float = 0.0      # time.monotonic() when read


@dataclass(frozen=True)
class CpuWindow:
    cpu: int
    idle_pct: float | None  # share of the window the CPU was idle; None: not seen in both
    runnable: int           # tasks running or waiting there at the window's end
    pinned: int             # user tasks whose affinity is this CPU alone

    @property
    def busy_pct(self) -> float:
        """What the ranking compares: unknown counts as fully busy."""
        return 100.0 - self.idle_pct if self.idle_pct is not None else 100.0


@dataclass(frozen=True)
class ProcessLoad:
    pid: int
    name: str
    cpu_pct: float          # of one CPU over the window (past 100 for several threads)
    cpu: int                # the CPU it last ran on


@dataclass(frozen=True)
class Load:
    """The machine over one window."""

    seconds: float
    cpus: dict[int, CpuWindow]
    busiest: list[ProcessLoad]


# --- reading /proc ----------------------------------------------------------------------------

def parse_stat(text: str) -> dict[int, tuple[int, int]]:
    """/proc/stat's cpuN lines as (idle ticks, all ticks) per CPU (proc(5): user nice system idle
    iowait irq softirq steal guest guest_nice; guest time is already inside user, so the first
    eight are all the CPU's time, and idle + iowait is the time nothing ran)."""
    cpus = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not (name.startswith("cpu") and name[3:].isdigit()):
            continue
        ticks = [int(x) for x in rest.split()[:8]]
        cpus[int(name[3:])] = (sum(ticks[3:5]), sum(ticks))
    return cpus


def parse_task(text: str, pinned_to: int | None = None) -> Task | None:
    """One /proc/PID/stat line (proc(5)); the name is between the first '(' and the last ')',
    since a process may put either in its name. None for a line that does not parse."""
    try:
        pid = int(text[:text.index("(")])
        name = text[text.index("(") + 1:text.rindex(")")]
        rest = text[text.rindex(")") + 2:].split()
        flags, utime, stime, cpu = int(rest[6]), int(rest[11]), int(rest[12]), int(rest[36])
    except (ValueError, IndexError):
        return None
    return Task(pid, name, utime + stime, cpu, rest[0] == "R",
                None if flags & PF_KTHREAD else pinned_to)


def snapshot(root: Path = Path("/"), tasks: bool = True) -> Snapshot:
    """This machine's /proc now (under root, for a fake tree)."""
    proc = Path(root) / "proc"
    cpus = parse_stat(_text(proc / "stat") or "")
    found = _tasks(proc) if tasks else {}
    return Snapshot(cpus, found, time.monotonic())


def _tasks(proc: Path) -> dict[int, Task]:
    found = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        text = _text(Path(entry.path) / "stat")
        task = parse_task(text, _only_cpu(int(entry.name))) if text else None
        if task is not None:
            found[task.pid] = task
    return found


def _only_cpu(pid: int) -> int | None:
    """The CPU a process may run on when its affinity allows just one (a syscall, no file)."""
    try:
        allowed = os.sched_getaffinity(pid)
    except OSError:            # gone, or another user's in a hardened container
        return None
    return next(iter(allowed)) if len(allowed) == 1 else None


def _text(path: Path) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:            # a process that ended between listing and reading
        return None


# --- a window ---------------------------------------------------------------------------------

def between(before: Snapshot, after: Snapshot) -> Load:
    """What happened between two snapshots."""
    me = os.getpid()         # running while it reads /proc: not load
    cpus = {cpu: CpuWindow(cpu, _idle_pct(before.cpus.get(cpu), ticks),
                         _count(after, lambda t: t.runnable and t.cpu == cpu and t.pid != me),
                         _count(after, lambda t: t.pinned_to == cpu))
            for cpu, ticks in sorted(after.cpus.items())}
    return Load(after.taken - before.taken, cpus, _busiest(before, after))


def _idle_pct(before: tuple[int, int] | None, after: tuple[int, int]) -> float | None:
    if before is None or after[1] <= before[1]:
        return None
    return 100.0 * (after[0] - before[0]) / (after[1] - before[1])


def _count(s: Snapshot, which: Callable[[Task], bool]) -> int:
    return sum(1 for t in s.tasks.values() if which(t))


def _busiest(before: Snapshot, after: Snapshot, top: int = BUSIEST) -> list[ProcessLoad]:
    """The processes that used most CPU over the window, as a share of one CPU: ticks against
    the ticks each CPU counted in the same window (so no clock rate is assumed)."""
    spans = [a[1] - before.cpus[c][1] for c, a in after.cpus.items() if c in before.cpus]
    span = sum(spans) / len(spans) if spans else 0
    if span <= 0:
        return []
    used = [(t.ticks - before.tasks[pid].ticks, t) for pid, t in after.tasks.items()
            if pid in before.tasks and t.ticks > before.tasks[pid].ticks]
    used.sort(key=lambda pair: (-pair[0], pair[1].pid))
    return [ProcessLoad(t.pid, t.name, round(100.0 * ticks / span, 1), t.cpu)
            for ticks, t in used[:top]]


def measure(window_s: float | None = None, take: Callable[[], Snapshot] = snapshot,
            sleep: Callable[[float], None] = time.sleep) -> Load:
    """The machine over window_s (WINDOW_S, read when called): the seam tests feed with
    recorded snapshots."""
    before = take()
    sleep(WINDOW_S if window_s is None else window_s)
    return between(before, take())
