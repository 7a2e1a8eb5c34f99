"""Finding a test's own processes by a unique argument: nothing else on the machine is touched."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path


def marker() -> str:
    """A `sleep` duration no other process uses: the test's processes are found by it."""
    return f"{random.randrange(10**6, 10**7)}.5"


def running(mark: str) -> list[int]:
    """Pids of the live `sleep MARK` processes (a zombie has no command line; the processes
    that started them, with the mark somewhere in their arguments, are not counted)."""
    want = f"sleep\0{mark}\0".encode()
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes() == want:
                    found.append(int(d.name))
            except OSError:
                continue
    return found


def alive(pid: int) -> bool:
    """Whether pid is a process that can still run: gone or a zombie is not. An orphan's zombie
    stays until init reaps it, and an init that never reaps (some containers' and VMs' PID 1)
    leaves it there for good, so `os.kill(pid, 0)` succeeding says nothing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def wait_for(predicate, what: str, seconds: float = 60.0):
    """Poll until predicate() is true (it returns the value); a liveness check, not a timing."""
    deadline = time.monotonic() + seconds
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {seconds:g} s for {what}")
        time.sleep(0.05)
    return value


def kill_all(mark: str) -> None:
    """Clean up after a failing test: only this test's `sleep MARK` processes."""
    for pid in running(mark):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def own_sweeps() -> set[int]:
    """Pids of this process's live children running a flagsweep command that measures or
    builds (`python -m flagsweep run|tune|build ...`)."""
    me, found = os.getpid(), set()
    # Asked twice a test: plain os calls, and the command line read only of this process's
    # children.
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            fields = stat[stat.rindex(b")") + 2:].split()
            if int(fields[1]) != me or fields[0] in b"ZX":
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 3 and argv[1:3] == [b"-m", b"flagsweep"] and \
                argv[3] in (b"run", b"tune", b"build"):
            found.add(int(pid))
    return found


def end(pids) -> None:
    """Kill and reap `pids`, children of this process."""
    for pid in pids:
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def flagsweep(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The installed CLI, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "flagsweep", *args], capture_output=True,
                          text=True, check=check)
