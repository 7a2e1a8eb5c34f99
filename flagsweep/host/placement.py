"""The CPU a sweep measures on when --cpu does not say: the quietest one no other sweep holds.

An isolated CPU (isolcpus=) still wins: the kernel keeps other tasks off it, which no half-second
look can promise for any other. Among the candidates (the free isolated CPUs, else the free CPUs
this process may use) the one with the least busy share over the window (host.load) is taken;
CPUs within load.TIE_POINTS of it count as just as quiet, and then the one with fewer tasks
pinned to it (work that returns there however idle it looks now), then fewer runnable tasks,
then the highest-numbered (CPU 0 takes most interrupts and housekeeping on Linux) wins. A CPU
another sweep holds (host.lock) is never chosen while one is free: the lock would refuse it.

The choice and its reason go into results.json's machine block (`cpu_choice`), and the reason
is one line the sweep prints, naming what made the others worse.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from flagsweep.host import load, lock, system

MAX_NAMED = 4                # other CPUs the reason names before "and N more"


@dataclass(frozen=True)
class Placement:
    cpu: int
    how: str                         # given (--cpu) | isolated | quietest
    why: str                         # the line a sweep prints
    measured: load.Load | None = None
    held: dict[int, str] | None = None
    isolated: tuple[int, ...] = ()
    cost_s: float = 0.0              # what choosing took, the window included

    def doc(self) -> dict:
        """results.json's machine.cpu_choice."""
        held = self.held or {}
        cpus = self.measured.cpus.values() if self.measured else ()
        return {"cpu": self.cpu, "how": self.how, "why": self.why,
                "window_s": round(self.measured.seconds, 3) if self.measured else None,
                "cost_s": round(self.cost_s, 3),
                "cpus": [{"cpu": c.cpu, "idle_pct": _rounded(c.idle_pct), "runnable": c.runnable,
                          "pinned": c.pinned, "isolated": c.cpu in self.isolated,
                          "held_by": held.get(c.cpu)} for c in cpus]}


def given(cpu: int) -> Placement:
    return Placement(cpu, "given", f"measuring on CPU {cpu}: --cpu {cpu}")


def default(window_s: float | None = None, take: Callable[[], load.Snapshot] | None = None,
            sleep: Callable[[float], None] = time.sleep) -> Placement:
    """Measure this machine over window_s and choose (take/sleep: the snapshot seam; take is
    load.snapshot, looked up when called so a test can stand in for /proc)."""
    began = time.monotonic()
    measured = load.measure(window_s, take or load.snapshot, sleep)
    chosen = choose(measured, *_candidates(), lock.holders())
    return replace(chosen, cost_s=time.monotonic() - began)


def partner(cpu: int, window_s: float | None = None,
            take: Callable[[], load.Snapshot] | None = None,
            sleep: Callable[[float], None] = time.sleep) -> Placement | str:
    """The second CPU of a sweep's duets beside `cpu`: chosen as `default` chooses, among the
    other CPUs this process may use that no other sweep holds (a free isolated one first);
    or, when there is none, why. An SMT sibling of `cpu` is taken when nothing else is free,
    and said: the schedule's pilot measures what sharing a core costs."""
    allowed, isolated = _candidates()
    held = lock.holders()
    others = [c for c in allowed if c != cpu and c not in held]
    if not others:
        busy = sorted(c for c in held if c != cpu and c in allowed)
        return (f"every other CPU this sweep may use is held by another sweep (CPU "
                f"{', '.join(map(str, busy))})" if busy
                else f"this sweep may use one CPU only (CPU {cpu})")
    began = time.monotonic()
    measured = load.measure(window_s, take or load.snapshot, sleep)
    siblings = set(system.smt_siblings(cpu)) - {cpu}
    apart = [c for c in others if c not in siblings] or others
    chosen = choose(measured, apart, [c for c in isolated if c in apart], held)
    why = f"the duet's second CPU is {chosen.cpu}: {chosen.why.partition(': ')[2]}"
    if chosen.cpu in siblings:
        why += f"; it is CPU {cpu}'s SMT sibling (no other is free), which the pilot weighs"
    return replace(chosen, how="duet partner", why=why, cost_s=time.monotonic() - began)


def after_busy(cpu: int, window_s: float | None = None,
               take: Callable[[], load.Snapshot] | None = None,
               sleep: Callable[[float], None] = time.sleep) -> str:
    """What to do once a sweep on `cpu` (whose lock it still holds) stopped because the machine
    was busy, measured now; call it unpinned, or the CPUs this process may use are just `cpu`."""
    measured = load.measure(window_s, take or load.snapshot, sleep)
    others = {c: who for c, who in lock.holders().items() if c != cpu}
    return instead(cpu, measured, *_candidates(), others)


def instead(cpu: int, measured: load.Load, allowed: list[int], isolated: list[int],
            held: dict[int, str]) -> str:
    """That CPU's load over the window, and the CPU a new sweep would take now if another
    (held: the CPUs other sweeps hold)."""
    here = measured.cpus.get(cpu) or load.CpuWindow(cpu, None, 0, 0)
    now = (f"CPU {cpu}, where it measured, was {here.busy_pct:.0f}% busy over "
           f"{measured.seconds:.2g} s after it stopped" if here.idle_pct is not None
           else f"CPU {cpu}, where it measured, has no load figure")
    best = choose(measured, allowed, isolated, held)
    idle = measured.cpus[best.cpu].idle_pct if best.cpu in measured.cpus else None
    # The quietest other CPU can be as busy as this one (every CPU loaded, a tie broken by
    # pinned tasks): moving there would measure the same other work.
    if best.cpu == cpu or best.cpu in held or idle is None or idle < load.IDLE_PCT:
        return (f"{now}, and no other CPU is free and idle (at least {load.IDLE_PCT:.0f}% idle): "
                "measure when the machine is quieter")
    return (f"{now}; CPU {best.cpu} is free now ({idle:.0f}% idle, no other sweep): run again "
            f"with --cpu {best.cpu}")


def _candidates() -> tuple[list[int], list[int]]:
    """The online CPUs this process may use, and the online isolated ones."""
    online = set(system.online_cpus())
    mine = os.sched_getaffinity(0)
    allowed = sorted(mine & online if online else mine)
    return allowed, [c for c in system.isolated_cpus() if not online or c in online]


def choose(measured: load.Load, allowed: list[int], isolated: list[int],
           held: dict[int, str]) -> Placement:
    """The CPU to measure on, from a window's load, the CPUs this process may use, the isolated
    ones and those other sweeps hold (CPU -> holder)."""
    free_isolated = [c for c in isolated if c not in held]
    if free_isolated:
        pool, how = free_isolated, "isolated"
    else:
        pool, how = [c for c in allowed if c not in held] or list(allowed), "quietest"
    loads = {c: measured.cpus.get(c) or load.CpuWindow(c, None, 0, 0)
             for c in sorted({*allowed, *isolated})}
    cpu = min(pool, key=lambda c: _rank(loads[c], loads, pool))
    why = _reason(cpu, how, loads, pool, held, measured.seconds, isolated)
    return Placement(cpu, how, why, measured, dict(held), tuple(isolated))


def _rank(c: load.CpuWindow, loads: dict[int, load.CpuWindow], pool: list[int]) -> tuple:
    quietest = min(loads[p].busy_pct for p in pool)
    return (c.busy_pct > quietest + load.TIE_POINTS, c.pinned, c.runnable, -c.cpu)


def _reason(cpu: int, how: str, loads: dict[int, load.CpuWindow], pool: list[int],
            held: dict[int, str], seconds: float, isolated: list[int]) -> str:
    head = f"measuring on CPU {cpu}: {_state(loads[cpu], seconds, cpu in isolated)}"
    head += (f", held by another sweep ({_who(held[cpu])}): no CPU is free" if cpu in held
             else ", no other sweep")
    others = [o for o in loads if o != cpu and (how != "isolated" or o in isolated)]
    quietest = min(loads[p].busy_pct for p in pool)
    why_not = {o: _against(loads[o], loads[cpu], held, o in pool, quietest) for o in others}
    said = [line for line in why_not.values() if line]
    tied = [o for o, line in why_not.items() if not line]
    if tied:
        said.append(f"CPU {', '.join(map(str, tied))} as quiet: the highest-numbered quiet CPU "
                    "is taken, as CPU 0 takes most interrupts")
    if len(said) > MAX_NAMED:
        said = said[:MAX_NAMED] + [f"and {len(said) - MAX_NAMED} more"]
    return "; ".join([head, *said])


def _state(c: load.CpuWindow, seconds: float, isolated: bool) -> str:
    idle = (f"{c.idle_pct:.0f}% idle over {seconds:.2g} s" if c.idle_pct is not None
            else "its load unknown")
    extra = [f"{_tasks(c.pinned)} pinned there"] if c.pinned else []
    extra += [f"{_tasks(c.runnable)} runnable"] if c.runnable else []
    return ", ".join((["isolated"] if isolated else []) + [idle] + extra)


def _against(o: load.CpuWindow, chosen: load.CpuWindow, held: dict[int, str], free: bool,
             quietest: float) -> str:
    """What made another CPU worse than the chosen one, in a few words ("" for a tie);
    quietest: the least busy share among the candidates, as `_rank` compares."""
    if o.cpu in held and o.cpu != chosen.cpu:
        return f"CPU {o.cpu} is held by another sweep ({_who(held[o.cpu])})"
    if o.idle_pct is None:
        return f"CPU {o.cpu} not measured"
    if o.busy_pct > quietest + load.TIE_POINTS or not free:
        return f"CPU {o.cpu} was {o.busy_pct:.0f}% busy"
    if o.pinned > chosen.pinned:
        return f"CPU {o.cpu} as quiet but {_tasks(o.pinned)} pinned there"
    if o.runnable > chosen.runnable:
        return f"CPU {o.cpu} as quiet but {_tasks(o.runnable)} runnable"
    return ""               # as quiet in every way: the CPU number decided


def _who(holder: str) -> str:
    """A lock holder's pid ("pid 11523: gzip demo, since ..." -> "pid 11523")."""
    return holder.partition(":")[0]


def _tasks(n: int) -> str:
    return f"{n} task{'s' if n != 1 else ''}"


def _rounded(pct: float | None) -> float | None:
    return None if pct is None else round(pct, 1)
