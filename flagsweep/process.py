"""The one way flagsweep starts programs: argv lists, never a shell, always logged.

Every external command (compilers, cmake, apt-get, perf) goes through `run`, so a debug log
shows exactly what was executed, and no argument is ever re-parsed by /bin/sh.
"""

from __future__ import annotations

import errno
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

log = logging.getLogger("flagsweep.process")
END_GRACE_S = 10.0   # how long an interrupted program's group has to end before SIGKILL
# What `run` raises when timeout passes (the program's group is ended by then); callers catch
# it by this name, so no other module needs subprocess.
TimeoutExpired = subprocess.TimeoutExpired


@dataclass(frozen=True)
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, lines: int = 20) -> str:
        """The last lines of stderr (or stdout when stderr is empty): what a user needs to see."""
        text = self.stderr.strip() or self.stdout.strip()
        return "\n".join(text.splitlines()[-lines:])


def run(
    argv: Sequence[str | os.PathLike],
    *,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float | None = None,
    log_file: Path | None = None,
    guard: bool = False,
    keep_stdout: bool = True,
) -> Result:
    """Run argv and capture its output; never raises on a nonzero exit (callers decide).

    With log_file, stdout and stderr go (interleaved, as the program wrote them) to that file
    instead of memory: build logs are long and must survive a crash of flagsweep itself.
    Raises FileNotFoundError when the program does not exist, so callers can name it.
    The program runs in a process group of its own, ended whole (see `_end_group`) if the
    wait is cut short: a timeout, Ctrl-C, or SIGTERM, which ends the wait as Ctrl-C does.
    With guard, it runs under flagsweep/guard.py, which ends it and everything it started when
    flagsweep itself dies, even by SIGKILL: for long commands (a build, a profile); the guard's
    interpreter start is too dear for every short probe.
    Without keep_stdout, stdout is thrown away as it is written (a timed program's output
    neither fills memory nor costs the timing a copy); Result.stdout is then "".
    """
    args = [os.fspath(a) for a in argv]
    log.debug("run: %s (cwd=%s)", shlex.join(args), cwd or ".")
    spawned = _guarded(args, env, cwd) if guard else args
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "ab") as out:
            out.write(f"$ {shlex.join(args)}\n".encode())
            out.flush()
            returncode, _, _ = _run_grouped(spawned, cwd=cwd, env=env, timeout=timeout,
                                            stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        return Result(args, returncode, "", "")
    returncode, stdout, stderr = _run_grouped(
        spawned, cwd=cwd, env=env, timeout=timeout, input=input,
        stdout=subprocess.PIPE if keep_stdout else subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, errors="replace",
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL)
    return Result(args, returncode, stdout, stderr)


GUARD = Path(__file__).resolve().with_name("guard.py")


def _guarded(args: list[str], env: Mapping[str, str] | None,
             cwd: str | os.PathLike | None) -> list[str]:
    """args run by the guard. A missing program is FileNotFoundError here, as without it (the
    guard itself could only exit nonzero)."""
    if os.sep in args[0]:
        found = os.access(os.path.join(cwd or ".", args[0]), os.X_OK)
    else:
        found = shutil.which(args[0], path=(env if env is not None else os.environ)
                             .get("PATH", os.defpath)) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), args[0])
    return [sys.executable, "-I", "-S", str(GUARD), str(os.getpid()), "--", *args]


def _run_grouped(args: list[str], *, timeout: float | None, input: str | None = None,
                 **popen) -> tuple[int, str, str]:
    """subprocess.run in a new process group, the group ended on any way out of the wait."""
    with sigterm_as_interrupt(), subprocess.Popen(args, process_group=0, **popen) as proc:
        try:
            stdout, stderr = proc.communicate(input, timeout=timeout)
        except BaseException:
            _end_group(proc)
            raise
    return proc.returncode, stdout or "", stderr or ""


def _end_group(proc: subprocess.Popen) -> None:
    """End the program and everything it started, and wait until none of it runs.

    SIGTERM first, so a build tool passes it on; SIGKILL what still runs after END_GRACE_S.
    The program's own group is not enough: ninja gives every job a group of its own, a build
    step run by this module gives its make another, and `cmake -E env` blocks SIGTERM. When the
    leader ends first (cmake --build, ninja) those groups live on as orphans, so the family is
    followed through /proc (parents and groups, again on every pass, as they change) and every
    group in it is signalled. A zombie counts as ended: an orphan's zombie waits for init, and
    some inits never reap."""
    family = {proc.pid: proc.pid}      # pid -> its process group, once seen (the leader's own)
    signalled: set[int] = set()        # groups sent SIGTERM
    deadline = time.monotonic() + END_GRACE_S
    while True:
        table = _processes()
        _grow(family, table)
        groups = set(family.values()) - {os.getpgrp()}   # never this process's own group
        for group in groups - signalled:
            _signal_group(group, signal.SIGTERM)
        signalled |= groups
        if not any(table.get(pid, (0, 0, "X"))[2] not in "ZX" for pid in family):
            return
        if time.monotonic() > deadline:
            break
        proc.poll()                    # reap the leader
        time.sleep(0.02)
    for group in signalled:
        _signal_group(group, signal.SIGKILL)
    proc.wait()


def _processes() -> dict[int, tuple[int, int, str]]:
    """Every process's (parent pid, process group, state), read from /proc/PID/stat."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue                   # it ended meanwhile
        # The command name may hold spaces and ")": the fields start after its last ")".
        state, ppid, pgid = stat[stat.rindex(")") + 2:].split()[:3]
        table[int(entry.name)] = (int(ppid), int(pgid), state)
    return table


def _grow(family: dict[int, int], table) -> None:
    """Add to family (pid -> group) the descendants of its processes and the members of its
    groups, as far as table shows them."""
    groups = set(family.values()) - {os.getpgrp()}
    changed = True
    while changed:
        changed = False
        for pid, (ppid, pgid, _) in table.items():
            if pid not in family and (ppid in family or pgid in groups):
                family[pid] = pgid
                groups.add(pgid)
                changed = True


def _signal_group(pgid: int, sig: int) -> bool:
    """Signal a process group; False when it has no process left."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


@contextmanager
def sigterm_as_interrupt():
    """While it lasts, SIGTERM raises KeyboardInterrupt (where nothing else handles it: in the
    main thread, with SIGTERM's default action), so whatever is ended on Ctrl-C is ended the
    same way on SIGTERM: a sweep keeps its samples and is marked interrupted, and a running
    child's group is ended instead of being left running by a process that simply vanished
    (ninja sends SIGTERM to the build steps it runs, this module among them). Nested, the
    outer one holds: a program run during a sweep ends as the sweep does."""
    mine = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
    if mine:
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        if mine:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _interrupt(signum, frame):
    raise KeyboardInterrupt
