"""The launcher: one pinned, timed execution of a workload.

posix_spawn of the small launcher (launch.c), which forks and execs the workload (no shell, a
minimal environment padded by a random number of bytes, stdin from /dev/null) and reports its
wait status, wall time and rusage; all in their own process group. A timeout (a pidfd, no helper
thread) or an interrupt stops the launcher, which ends everything the workload started; it does
the same when flagsweep dies, and after a workload's own exit. With perf in use, perf stat -x,
runs the launcher, and adds its counters; the launcher's report stays the source of truth.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from flagsweep import files
from flagsweep.errors import FlagsweepError
from flagsweep.host import native, probes
from flagsweep.host.executor import Execution, Executor, Launch, Together

log = logging.getLogger("flagsweep.host.launcher")
ENV_PAD_MAX = 4095
STDERR_TAIL_LINES = 5
STOP_GRACE_S = 5.0      # how long a stopped launcher has to end its workload's processes
# What every launcher report holds (launch.c); the scheduler's fields may be -1 (unknown).
REPORTED = ("status", "wall_ns", "utime_us", "stime_us", "maxrss_kb", "nvcsw", "nivcsw",
            "minflt", "majflt")

def run_once(argv: list[str], *, env: dict[str, str], timeout: float, stderr_path: Path,
             stdout_path: Path | None = None, perf: probes.Preflight | None = None,
             perf_csv: Path | None = None, stdin_path: Path | None = None) -> Execution:
    """Execute argv once and measure it; a crash, a timeout or a nonzero exit is a failure.
    The executor every sweep uses (host.executor.Executor)."""
    started = _spawn(argv, env, stderr_path, stdout_path, perf, perf_csv, stdin_path)
    return started if isinstance(started, Execution) else _reaped(started, timeout)


def run_together(launches: list[Launch], *, timeout: float,
                 perf: probes.Preflight | None = None) -> list[Execution]:
    """Start every launch at once, each pinned to its own CPU, and measure each; the timeout
    runs from their common start (host.executor.Together). Each child inherits the affinity
    this process has when it is spawned, so the affinity is set before each spawn and put back
    after: the workloads start a spawn apart (about a millisecond), never on the wrong CPU."""
    before = os.sched_getaffinity(0)
    started: list[_Running | Execution] = []
    try:
        for one in launches:
            os.sched_setaffinity(0, {one.cpu})
            started.append(_spawn(one.argv, one.env, one.stderr_path, None, perf,
                                  one.perf_csv, None))
    except BaseException:
        _stop_all(started)
        raise
    finally:
        os.sched_setaffinity(0, before)
    deadline = time.monotonic() + timeout
    out: list[Execution] = []
    try:
        for one in started:
            out.append(one if isinstance(one, Execution)
                       else _reaped(one, max(0.0, deadline - time.monotonic())))
    except BaseException:  # Ctrl-C while waiting for one: leave none of the others behind
        _stop_all(started[len(out) + 1:])
        raise
    return out


def together_of(execute: Executor) -> Together | None:
    """How a sweep whose executor is `execute` runs workloads at once: the launcher's
    run_together for the launcher, a stand-in's own `together`; None for an executor that runs
    one workload at a time (a test's recordings), whose sweeps are serial."""
    if execute is run_once:
        return run_together
    return getattr(execute, "together", None)


@dataclass
class _Running:
    """A launcher started and not yet reaped."""
    pid: int
    command: str            # the workload's program, for the log
    report: Path
    record: Path
    stderr_path: Path
    perf_csv: Path | None   # perf's counters, when perf runs the launcher


def _spawn(argv: list[str], env: dict[str, str], stderr_path: Path, stdout_path: Path | None,
           perf: probes.Preflight | None, perf_csv: Path | None,
           stdin_path: Path | None) -> _Running | Execution:
    """The launcher started on argv (under perf, when used), or the failure to start it."""
    use_perf = perf is not None and perf.mode != "none" and perf_csv is not None
    report = stderr_path.with_name(stderr_path.name + ".launch")
    # perf (when used) outside, the launcher inside: the launcher's report of the workload's
    # status, wall time and rusage then never depends on perf, which on this project's VM
    # misses its workload's start now and then (2% of runs: no counts, no signal reported).
    launch = [str(native.launcher()), str(report), *argv]
    if use_perf:
        launch = [*probes.perf_prefix(perf, perf_csv), *launch]
    stop_leftovers(stderr_path.parent)    # first: a launcher stopped there writes its report
    # Every file this run writes is made new, never opened through a link found under its name
    # (the launcher creates its report the same way): flagsweep runs as root, and a link in
    # the folder would otherwise have it truncate whatever file the link points to.
    report.unlink(missing_ok=True)
    if use_perf:
        perf_csv.unlink(missing_ok=True)
    opened = [files.create_new(stderr_path)]
    try:
        opened.append(files.create_new(stdout_path) if stdout_path
                      else os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC))
        actions = [(os.POSIX_SPAWN_OPEN, 0, str(stdin_path or os.devnull), os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_DUP2, opened[1], 1), (os.POSIX_SPAWN_DUP2, opened[0], 2)]
        pid = os.posix_spawn(launch[0], launch, env, file_actions=actions, setpgroup=0)
    except OSError as e:
        return _failed(f"could not start {launch[0]}: {e.strerror}")
    finally:
        for fd in opened:
            os.close(fd)
    return _Running(pid, argv[0], report, _record(stderr_path, pid), stderr_path,
                    perf_csv if use_perf else None)


def _reaped(run: _Running, timeout: float) -> Execution:
    """Wait for a started launcher (stopping it at the timeout) and read what it measured."""
    try:
        timed_out = _wait_or_kill(run.pid, timeout)
        _, launched = os.waitpid(run.pid, 0)
    except BaseException:  # Ctrl-C or SIGTERM mid-run: leave no workload behind
        _stop(run.pid)
        os.waitpid(run.pid, 0)
        raise
    finally:
        run.record.unlink(missing_ok=True)
    used = _read_report(run.report)
    if used is None:
        return _failed(_failure(0, timed_out, timeout, run.stderr_path)
                       or _unreported(run.report, launched, run.stderr_path))
    if used.get("leftover"):
        log.info("%s left %d process(es) running when it exited; the launcher killed them",
                 run.command, used["leftover"])
    counters, multiplexed = _read_perf(run.perf_csv) if run.perf_csv else ({}, False)
    # The software events perf would count, as the kernel reports them for the workload alone,
    # and the scheduler's evidence of disturbance (flagsweep.measure.disturbance judges it).
    counters = {**counters, "context_switches": used["nvcsw"] + used["nivcsw"],
                "page_faults": used["minflt"] + used["majflt"], **_scheduler(used)}
    failure = _failure(used["status"], timed_out, timeout, run.stderr_path)
    return Execution(wall_s=None if failure else used["wall_ns"] / 1e9,
                     user_s=used["utime_us"] / 1e6, sys_s=used["stime_us"] / 1e6,
                     maxrss_kb=used["maxrss_kb"], counters=counters, multiplexed=multiplexed,
                     failure=failure)


def _stop_all(started: list[_Running | Execution]) -> None:
    for one in started:
        if isinstance(one, _Running):
            _stop(one.pid)
            os.waitpid(one.pid, 0)
            one.record.unlink(missing_ok=True)


def _scheduler(used: dict[str, int]) -> dict[str, float | int]:
    """What the kernel's scheduler saw of this run: involuntary switches (preempted), time
    runnable but waiting for the CPU (the workload's, plus the launcher's own wait around it,
    which the wall time also holds), time on it, moves between CPUs, and the host's steal time
    on this CPU. A value the kernel did not offer (-1 from the launcher) is left out."""
    out: dict[str, float | int] = {"involuntary_switches": used["nivcsw"]}
    if used.get("run_delay_ns", -1) >= 0:
        out["run_delay_s"] = (used["run_delay_ns"] + max(0, used.get("own_delay_ns", 0))) / 1e9
    if used.get("exec_ns", -1) >= 0:
        out["on_cpu_s"] = used["exec_ns"] / 1e9
    if used.get("migrations", -1) >= 0:
        out["cpu_migrations"] = used["migrations"]
    if used.get("steal_ticks", -1) >= 0:
        out["steal_s"] = used["steal_ticks"] / os.sysconf("SC_CLK_TCK")
    return out


def _read_report(path: Path) -> dict[str, int] | None:
    """The launcher's one line of "name value" pairs, or None when it never wrote it or its
    line is cut short (a full disk truncates it)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    words = text.split()
    try:
        used = {name: int(value) for name, value in zip(words[::2], words[1::2])}
    except ValueError:
        return None
    complete = text.endswith("\n") and len(words) % 2 == 0 and all(k in used for k in REPORTED)
    return used if complete else None


def _unreported(report: Path, launched: int, stderr_path: Path) -> str:
    """Why a run has no report from the launcher. A full disk fails every run that follows
    too, so it stops the sweep (to be resumed) instead of recording failed samples."""
    state = "incomplete" if report.exists() else "missing"
    if files.disk_full(report.parent):
        raise FlagsweepError(f"the disk holding {report.parent} is full (the launcher's report "
                             f"{report.name} is {state}): free space there, then run again "
                             "(flagsweep run --resume continues a sweep)")
    code = os.waitstatus_to_exitcode(launched)
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    tail = _tail(stderr_path)
    return (f"the launcher's report {report} is {state} (launcher: {how})"
            + (f"; stderr: {tail}" if tail else ""))


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait_or_kill(pid: int, timeout: float) -> bool:
    """Block until the process exits or the timeout passes (then stop it)."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    if ready:
        return False
    _stop(pid)
    return True


def _stop(pid: int) -> None:
    """End a launcher (or the perf around one) and everything its workload started: SIGTERM
    has the launcher kill the workload and every process that one left, even outside its
    process group, and reap them. Its group is killed if that takes over STOP_GRACE_S."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        signal.pidfd_send_signal(fd, signal.SIGTERM)
        ended = bool(select.select([fd], [], [], STOP_GRACE_S)[0])
    except ProcessLookupError:
        ended = True
    finally:
        os.close(fd)
    if not ended:
        _kill_group(pid)
    # With perf outside the launcher, perf may end first while the launcher inside is still
    # killing and reaping the workload (seen on a busy machine): wait until the whole group,
    # which the workload's processes share, has ended.
    deadline, killed = time.monotonic() + STOP_GRACE_S, not ended
    while _group_running(pid) and time.monotonic() < deadline:
        if not killed and time.monotonic() > deadline - 1.0:
            _kill_group(pid)             # the last second: SIGKILL, then its teardown
            killed = True
        time.sleep(0.01)


def _group_running(pgid: int) -> bool:
    """Whether any live (not zombie) process is in process group pgid."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        state, _ppid, pgrp = text[text.rindex(")") + 2:].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            return True
    return False


# ---- workloads left by a flagsweep that was killed -------------------------------------------
#
# While a launcher runs, a record beside its report names it and the flagsweep process that
# started it (each with its start time, so a reused pid is never mistaken for it). The kernel
# stops the launcher when flagsweep dies (PR_SET_PDEATHSIG), but not when perf stands between
# them; a record whose flagsweep is gone and whose launcher still runs is such a leftover, and
# the next run in that folder (a resumed sweep's) stops it before measuring beside it.

_checked_folders: set[Path] = set()


def _record(stderr_path: Path, pid: int) -> Path:
    path = stderr_path.with_name(stderr_path.name + ".running")
    try:
        with os.fdopen(files.create_new(path), "w") as f:
            f.write(f"{pid} {_started(pid)} {os.getpid()} {_started(os.getpid())}\n")
    except (OSError, FlagsweepError):
        pass  # a full disk: the launcher still ends with flagsweep, through PR_SET_PDEATHSIG
    return path


def stop_leftovers(folder: Path) -> None:
    """Stop every launcher a killed flagsweep left running in folder (once per folder)."""
    if folder in _checked_folders:
        return
    _checked_folders.add(folder)
    for record in folder.glob("*.running"):
        try:
            pid, started, owner, owner_started = map(int, record.read_text().split())
        except OSError:
            continue
        except ValueError:  # cut short, or its launcher had ended before it was written
            record.unlink(missing_ok=True)
            continue
        if _started(owner) == owner_started:
            continue  # its flagsweep is alive: that run is not left over
        if _started(pid) == started:
            log.warning("a workload started by flagsweep process %d, which is gone, was still "
                        "running (launcher pid %d, recorded in %s); stopping it before measuring "
                        "beside it", owner, pid, record)
            _stop(pid)
        record.unlink(missing_ok=True)


def _started(pid: int) -> int | None:
    """A process's start time (clock ticks since boot), or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])


def _read_perf(csv: Path) -> tuple[dict, bool]:
    """perf's counters; empty when perf wrote nothing (its CSV is missing or has no counts)."""
    try:
        text = csv.read_text(errors="replace")
    except FileNotFoundError:
        return {}, False
    metrics, multiplexed = probes.sample_metrics(probes.parse_perf_csv(text))
    return {k: v for k, v in metrics.items() if v is not None}, multiplexed


def _failure(status: int, timed_out: bool, timeout: float, stderr_path: Path) -> str | None:
    if timed_out:
        what = f"timeout after {timeout:g} s (killed)"
    elif os.WIFSIGNALED(status):
        what = f"crashed: {signal.Signals(os.WTERMSIG(status)).name}"
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
