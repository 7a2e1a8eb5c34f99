"""The guard: runs one long command (a build, a profile) so that nothing of it outlives flagsweep.

    python -I -S guard.py FLAGSWEEP_PID -- PROGRAM [ARGS...]

`process.run(..., guard=True)` starts it by path, standard library only. Killed by SIGKILL,
flagsweep can end nothing itself: the superbuild it had started (cmake, ninja, each variant's
step, make, the compilers) built on under PID 1 for over a minute with the measurement lock
already free, so another sweep measured beside it. The kernel tells this process instead
(PR_SET_PDEATHSIG, sent when the thread that started it ends; process.run waits in that very
thread), and as a child subreaper (PR_SET_CHILD_SUBREAPER) it inherits every process of the
command whose parent dies: it kills the command, then each orphan as it is handed over, until
none is left, as the launcher does for a workload (host/launch.c).

While flagsweep lives, the guard stays out of the way: the command runs in the guard's process
group, so process.run's SIGTERM to the group reaches it as before; the guard passes a SIGTERM
sent to itself on, waits, and exits with the command's status (a signal death as the same
signal). What the command leaves running after it exits is killed, so no part of a build runs
beside the measurements.
"""

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PARENT_GONE = signal.SIGUSR1    # not SIGTERM: that one asks for the graceful end, passed on
DYING_S = 120                   # how long killed processes may take to exit before the guard stops waiting
child = 0
ending = False


def main(argv: list[str]) -> int:
    parent, command = int(argv[1]), argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(PARENT_GONE, _parent_gone)
    signal.signal(signal.SIGTERM, _pass_on)
    libc.prctl(PR_SET_PDEATHSIG, int(PARENT_GONE), 0, 0, 0)
    if os.getppid() != parent:       # flagsweep died before the signal was asked for
        return 1
    global child
    try:
        child = os.posix_spawnp(command[0], command, os.environ)
    except OSError as e:
        print(f"flagsweep guard: cannot run {command[0]}: {e.strerror}", file=sys.stderr)
        return 127
    _, status = os.waitpid(child, 0)
    child = 0
    _end_orphans()
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status)


def _pass_on(signum, frame) -> None:
    _signal(child, signum)


def _parent_gone(signum, frame) -> None:
    """Runs once: the signal comes again for every thread of flagsweep that ends after the one
    that started the guard (the kernel hands the guard to the next live thread and signals it
    when that one ends too), and a second run inside the first found the command already reaped
    and died of it, leaving the rest of the build to PID 1."""
    global ending
    if ending:
        return
    ending = True
    signal.signal(PARENT_GONE, signal.SIG_IGN)
    _signal(child, signal.SIGKILL)
    _end_orphans()
    os._exit(1)


def _signal(pid: int, signum: int) -> None:
    if pid:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:      # reaped already: nothing left of it to signal
            pass


def _end_orphans() -> None:
    """Kill and reap this process's children until it has none: each killed one hands its own
    children over to this subreaper, so a whole tree ends level by level."""
    deadline = time.monotonic() + DYING_S
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0]:
                continue
        except ChildProcessError:
            return
        killed = _kill_children()
        if not killed:
            # Every child is exiting right now: a zombie whose other threads still run cannot
            # be reaped yet, and on a loaded machine they may not run for a while. Giving up
            # after 1 s left their children to PID 1, still building.
            if time.monotonic() > deadline:
                return
            time.sleep(0.005)
            continue
        for _ in range(killed):
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                return


def _kill_children() -> int:
    me, n = os.getpid(), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
        if int(ppid) == me and state not in "ZX":
            try:
                os.kill(int(entry), signal.SIGKILL)
                n += 1
            except ProcessLookupError:
                pass
    return n


if __name__ == "__main__":
    sys.exit(main(sys.argv))
