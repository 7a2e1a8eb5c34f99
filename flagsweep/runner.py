"""The runner: one pinned, timed execution of a workload, and the shuffled rounds around it.

One execution: posix_spawn of the workload (no shell, a minimal environment padded by a random
number of bytes, stdin from /dev/null), in its own process group, waited for with wait4 for
user/sys/maxrss; a pidfd gives the timeout without a helper thread. With perf available the
workload runs under `perf stat -x,` and its counters are parsed.

Rounds (statistics.md choice 1): each round runs every binary once in a freshly shuffled order.
The order comes from a seeded generator per round, so a resumed sweep recomputes exactly the
order it was following. After each round the stopping rule checks precision: every variant's
median CI half-width under the target, never a significance test (choice 9).
"""

from __future__ import annotations

import os
import random
import select
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from . import probes, stats
from .store import Sample

ENV_PAD_MAX = 4095
STDERR_TAIL_LINES = 5
# perf stat exits 0 when its workload dies of a signal and reports it only as "<cmd>: <strsignal>"
# on its stderr; map those descriptions back to signal names.
SIGNAL_TEXT = {signal.strsignal(s): s.name for s in signal.Signals if signal.strsignal(s)}


@dataclass(frozen=True)
class Execution:
    wall_s: float | None
    user_s: float | None
    sys_s: float | None
    maxrss_kb: int | None
    counters: dict | None
    multiplexed: bool
    failure: str | None


def run_once(argv: list[str], *, env: dict[str, str], timeout: float, stderr_path: Path,
             stdout_path: Path | None = None, perf: probes.Preflight | None = None,
             perf_csv: Path | None = None, stdin_path: Path | None = None) -> Execution:
    """Execute argv once and measure it; a crash, a timeout or a nonzero exit is a failure."""
    use_perf = perf is not None and perf.mode != "none" and perf_csv is not None
    full = [*probes.perf_prefix(perf, perf_csv), *argv] if use_perf else list(argv)
    actions = [(os.POSIX_SPAWN_OPEN, 0, str(stdin_path or os.devnull), os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, str(stdout_path or os.devnull),
                os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
               (os.POSIX_SPAWN_OPEN, 2, str(stderr_path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)]
    start = time.perf_counter_ns()
    try:
        pid = os.posix_spawn(full[0], full, env, file_actions=actions, setpgroup=0)
    except OSError as e:
        return _failed(f"could not start {full[0]}: {e.strerror}")
    timed_out = _wait_or_kill(pid, timeout)
    _, status, usage = os.wait4(pid, 0)
    wall = (time.perf_counter_ns() - start) / 1e9
    counters, multiplexed, perf_signal = None, False, None
    if use_perf:
        counters, multiplexed, perf_wall = _read_perf(perf_csv)
        wall = _trusted_duration(perf_wall, counters, wall)
        perf_signal = _perf_signal(stderr_path, argv[0])
    if not use_perf:  # the software events perf would count, as the kernel reports them anyway
        counters = {"context_switches": usage.ru_nvcsw + usage.ru_nivcsw,
                    "page_faults": usage.ru_minflt + usage.ru_majflt}
    failure = _failure(status, timed_out, timeout, perf_signal, stderr_path)
    return Execution(wall_s=None if failure else wall, user_s=usage.ru_utime, sys_s=usage.ru_stime,
                     # under perf, ru_maxrss would be perf's own peak, not the workload's
                     maxrss_kb=None if use_perf else usage.ru_maxrss,
                     counters=counters, multiplexed=multiplexed, failure=failure)


def _wait_or_kill(pid: int, timeout: float) -> bool:
    """Block until the process exits or the timeout passes (then kill its whole group)."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    if ready:
        return False
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return True


def _trusted_duration(duration: float | None, counters: dict | None, wall: float) -> float:
    """perf's duration_time excludes perf's own start-up (~7 ms here), so it is the better wall
    time, but perf 6.1 sometimes starts that clock late (seen here: 3-6% of runs read far too
    short). A pinned workload's elapsed time can be neither less than its CPU time nor more than
    the elapsed time around perf, so outside those bounds our own clock is used instead."""
    cpu = (counters or {}).get("task_clock_s")
    if duration is None or cpu is None or not (cpu * 0.999 <= duration <= wall):
        return wall
    return duration


def _read_perf(csv: Path) -> tuple[dict | None, bool, float | None]:
    try:
        text = csv.read_text(errors="replace")
    except FileNotFoundError:
        return None, False, None
    metrics, multiplexed = probes.sample_metrics(probes.parse_perf_csv(text))
    return metrics, multiplexed, metrics.get("duration_s")


def _perf_signal(stderr_path: Path, program: str) -> str | None:
    """The signal that killed perf's workload: perf exits 0 then, and only prints
    "<program>: <signal description>" on its stderr (which is the workload's stderr file)."""
    try:
        lines = stderr_path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return None
    prefix = f"{program}: "
    for line in reversed(lines[-20:]):
        if line.startswith(prefix) and line[len(prefix):].strip() in SIGNAL_TEXT:
            return SIGNAL_TEXT[line[len(prefix):].strip()]
    return None


def _failure(status: int, timed_out: bool, timeout: float, perf_signal: str | None,
             stderr_path: Path) -> str | None:
    if timed_out:
        what = f"timeout after {timeout:g} s (killed)"
    elif os.WIFSIGNALED(status):
        what = f"crashed: {signal.Signals(os.WTERMSIG(status)).name}"
    elif perf_signal:
        what = f"crashed: {perf_signal}"
    elif os.WEXITSTATUS(status) != 0:
        what = f"exit status {os.WEXITSTATUS(status)}"
    else:
        return None
    tail = _tail(stderr_path)
    return f"{what}; stderr: {tail}" if tail else what


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except FileNotFoundError:
        return ""
    return " | ".join(line.strip() for line in lines[-STDERR_TAIL_LINES:])


def _failed(why: str) -> Execution:
    return Execution(None, None, None, None, None, False, why)


def padded_env(base: dict[str, str], pad: int) -> dict[str, str]:
    """The workload's environment: minimal, plus `pad` bytes that shift the initial stack.

    Mytkowicz et al. (ASPLOS 2009) showed environment size alone moves run time enough to flip
    conclusions; a random size per run turns that bias into noise the statistics can see.
    """
    return {**base, "FLAGSWEEP_PAD": "x" * pad}


MINIMAL_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": "/tmp"}


# ---- pinning -------------------------------------------------------------------------------

def choose_cpu(isolated: list[int]) -> int:
    """An isolated CPU if the kernel has any, else the last CPU this process may use (CPU 0
    takes most interrupts and housekeeping on Linux)."""
    if isolated:  # outside the default affinity mask by design; pinning to it is allowed
        return isolated[0]
    return sorted(os.sched_getaffinity(0))[-1]


@contextmanager
def pinned(cpu: int) -> Iterator[None]:
    """Pin this process, and so every workload it spawns, to one CPU; restore afterwards."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


# ---- rounds --------------------------------------------------------------------------------

@dataclass
class Plan:
    variant_ids: list[str]
    seed: int
    warmup: int = 1
    min_runs: int = 5
    max_runs: int = 30
    budget_s: float | None = None
    precision: float = 0.01          # target CI half-width of the median, relative
    metric: str = "wall_s"


@dataclass
class Outcome:
    rounds: int
    stop_reason: str
    half_widths: dict[str, float] = field(default_factory=dict)


def order(plan: Plan, round_no: int) -> list[str]:
    """The shuffled order of one round: a function of the seed and the round alone."""
    ids = sorted(plan.variant_ids)
    random.Random(f"{plan.seed}:{round_no}").shuffle(ids)
    return ids


def env_pad(plan: Plan, variant_id: str, round_no: int) -> int:
    return random.Random(f"{plan.seed}:pad:{variant_id}:{round_no}").randint(0, ENV_PAD_MAX)


def rounds(plan: Plan, done: set[tuple[str, int]], measure: Callable[[str, int, int, int], Sample],
           values: Callable[[], dict[str, list[float]]],
           progress: Callable[[str, int, int], None] | None = None) -> Outcome:
    """Warmup rounds (negative numbers), then counted rounds until the stopping rule says stop.

    `measure(variant, round, position, pad)` takes and stores one sample; `values()` returns the
    primary metric's good values per variant so far; pairs in `done` are skipped (resume).
    """
    started = time.monotonic()
    round_s = None
    for r in range(-plan.warmup, plan.max_runs):
        if r >= 0 and plan.budget_s is not None and round_s is not None \
                and time.monotonic() - started + round_s > plan.budget_s:
            return Outcome(r, f"time budget of {plan.budget_s:g} s reached after {r} rounds",
                           _widths(values(), plan))
        t0 = time.monotonic()
        for pos, vid in enumerate(order(plan, r)):
            if (vid, r) in done:
                continue
            if progress:
                progress(vid, r, pos)
            measure(vid, r, pos, env_pad(plan, vid, r))
        round_s = time.monotonic() - t0 if r >= 0 else round_s
        if r + 1 >= plan.min_runs:
            widths = _widths(values(), plan)
            if widths and all(w <= plan.precision for w in widths.values()):
                worst = max(widths.values())
                return Outcome(r + 1, f"precision reached after {r + 1} rounds: every median's "
                               f"95% CI half-width <= {100 * plan.precision:g}% "
                               f"(worst {100 * worst:.2f}%)", widths)
    widths = _widths(values(), plan)
    worst = max(widths.values(), default=float("inf"))
    return Outcome(plan.max_runs, f"max runs ({plan.max_runs}) reached; worst CI half-width "
                   f"{100 * worst:.2f}% (target {100 * plan.precision:g}%)", widths)


def _widths(values: dict[str, list[float]], plan: Plan) -> dict[str, float]:
    out = {}
    for vid in plan.variant_ids:
        ci = stats.median_ci(values.get(vid, []))
        out[vid] = ci.half_width_rel if ci else float("inf")
    return out
