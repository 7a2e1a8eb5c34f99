"""One sweep measures on a CPU at a time.

Two sweeps timing on the same CPU would measure each other; two on different CPUs of one machine
only share caches, memory bandwidth and (for SMT siblings) a core, which is worth a warning, not
a refusal. So the lock is per CPU: an flock on <folder>/flagsweep-cpu<N>.lock (the kernel
releases it when the holder dies, even by kill -9). The holder writes who it is into the file so
a second sweep can say who to wait for, and `--wait` queues behind it. $FLAGSWEEP_LOCK_DIR puts
the lock files in another folder (tests).

The folder: root's sweeps lock in /run/flagsweep, a folder only root can reach; anyone else's in
/tmp, shared by every user of the machine. In /tmp any local user can create and hold the lock
as long as they like, and a sweep as root would wait for them or be refused: so root does not
lock there. /run/flagsweep is made by flagsweep (mode 0700, in /run, which only root can write)
and checked before each use (a folder, not a link; root's; no access for anyone else), so no
other user can plant or hold a lock in it. The price: a root sweep and another user's sweep do
not hold each other off; the root sweep warns when one of theirs holds its CPU.

In /tmp the sweep may still run as root (FLAGSWEEP_LOCK_DIR=/tmp), so the lock file is opened
without following a link (one planted to /etc/shadow would otherwise be emptied and made
world-writable) and must be a plain file with one name: nothing else in the folder is ever
truncated, written or chmodded. A lock file another user created is still a lock file (the lock
is shared by design between users who are not root); a user can hold it as long as they like,
as they could load the CPU, and the refusal names the holder's pid.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import time
from pathlib import Path
from typing import Callable

from flagsweep.errors import FlagsweepError
from flagsweep.host import system

DEFAULT_DIR = Path("/tmp")
ROOT_DIR = Path("/run/flagsweep")      # root's sweeps: a folder no other user can reach
POLL_S = 1.0          # how often a waiting sweep tries the lock again
PROGRESS_S = 60.0     # how often it says it is still waiting


def folder() -> Path:
    if os.environ.get("FLAGSWEEP_LOCK_DIR"):
        return Path(os.environ["FLAGSWEEP_LOCK_DIR"])
    return ROOT_DIR if os.geteuid() == 0 else DEFAULT_DIR


def root_folder() -> None:
    """Make ROOT_DIR if it is not there, then refuse it unless it is a folder (not a link),
    root's, that no one else can reach."""
    try:
        os.mkdir(ROOT_DIR, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise FlagsweepError(f"cannot make the measurement lock folder {ROOT_DIR}: "
                             f"{e.strerror}; set FLAGSWEEP_LOCK_DIR to a folder only root can "
                             "write") from None
    info = os.lstat(ROOT_DIR)
    why = ("is not a folder (a link?)" if not stat.S_ISDIR(info.st_mode)
           else f"is owned by uid {info.st_uid}, not root" if info.st_uid != 0
           else f"has mode {stat.S_IMODE(info.st_mode):04o}, open to other users"
           if info.st_mode & 0o077 else "")
    if why:
        raise FlagsweepError(f"the measurement lock folder {ROOT_DIR} {why}: root's sweeps lock "
                             "in a folder only root can reach, which flagsweep makes itself; "
                             "remove it, or set FLAGSWEEP_LOCK_DIR")


def lock_path(cpu: int, where: Path | None = None) -> Path:
    return (where or folder()) / f"flagsweep-cpu{cpu}.lock"


class MeasureLock:
    """Held from before the machine state is read to the end of the sweep.

    wait: queue behind a holder (saying who, every PROGRESS_S) instead of refusing.
    say: where the waiting line and the shared-machine warning go.
    own: the other CPUs the same sweep holds (a duet's two), which it does not warn about.
    """

    def __init__(self, what: str, cpu: int, wait: bool = False,
                 say: Callable[[str], None] | None = None, where: Path | None = None,
                 own: tuple[int, ...] = ()):
        self.cpu, self.own = cpu, own
        self.path = lock_path(cpu, where)
        self.what = what
        self.wait = wait
        self.say = say or (lambda line: None)
        self.fd: int | None = None

    def __enter__(self) -> "MeasureLock":
        fd = self._open()
        try:
            self._acquire(fd)
        except BaseException:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "what": self.what,
                                     "cpu": self.cpu,
                                     "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode())
        except OSError:
            pass  # a full /tmp: the lock holds all the same, a waiting sweep names no holder
        self.fd = fd
        for line in neighbours(self.cpu, self.path.parent, self.own):
            self.say(f"warning: {line}")
        return self

    def _open(self) -> int:
        if self.path.parent == ROOT_DIR:
            root_folder()
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
        except OSError as e:
            if e.errno == errno.ELOOP or self.path.is_symlink():  # some kernels say EACCES
                raise FlagsweepError(self._not_a_lock("is a symbolic link")) from None
            raise self._unopened(e) from None
        wrong = _not_plain(os.fstat(fd))
        if wrong:
            os.close(fd)
            raise FlagsweepError(self._not_a_lock(wrong))
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o666)  # the umask trimmed it: every user of the machine must lock it
        return fd

    def _unopened(self, e: OSError) -> FlagsweepError:
        if isinstance(e, PermissionError):
            return FlagsweepError(f"cannot open the measurement lock {self._named()}: another "
                                  "user created it without write permission for others; ask "
                                  "them (or root) to remove it")
        return FlagsweepError(f"cannot open the measurement lock {self._named()}: {e.strerror}; "
                              "expected a file that can be created and written, in an existing "
                              "folder")

    def _not_a_lock(self, what: str) -> str:
        return (f"the measurement lock {self._named()} {what}, not a plain lock file; "
                "flagsweep neither follows nor writes it (someone may have planted it to have "
                "another file overwritten): remove it, or ask root to")

    def _acquire(self, fd: int) -> None:
        """Take the lock now, or (with wait) once the holder lets go, saying so as time passes."""
        began = time.monotonic()
        last_said: float | None = None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if last_said is not None:
                    self.say(f"CPU {self.cpu} is free after {_duration(time.monotonic() - began)}"
                             "; starting")
                return
            except BlockingIOError:
                pass
            holder = _read_holder(fd)
            if not self.wait:
                raise FlagsweepError(
                    f"another sweep is measuring on CPU {self.cpu} ({holder}); add --wait to "
                    "start when it ends, or pin this one to another CPU with --cpu N "
                    f"(free here: {_free_list(self.path.parent, self.cpu)})")
            now = time.monotonic()
            if last_said is None or now - last_said >= PROGRESS_S:
                self.say(f"waiting for CPU {self.cpu}: {holder} "
                         f"(waited {_duration(now - began)})")
                last_said = now
            time.sleep(POLL_S)

    def _named(self) -> str:
        """The lock's path, and where its folder came from when the user chose it."""
        return (f"{self.path} ($FLAGSWEEP_LOCK_DIR)" if os.environ.get("FLAGSWEEP_LOCK_DIR")
                and self.path.parent == Path(os.environ["FLAGSWEEP_LOCK_DIR"]) else str(self.path))

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def holders(where: Path | None = None) -> dict[int, str]:
    """Every CPU another sweep measures on now, and who holds it."""
    busy = {}
    for path in sorted((where or folder()).glob("flagsweep-cpu*.lock")):
        try:
            cpu = int(path.name[len("flagsweep-cpu"):-len(".lock")])
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except (ValueError, OSError):
            continue
        try:
            if _not_plain(os.fstat(fd)):
                continue   # not read: a link or a FIFO planted to show another file or hang
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            busy[cpu] = _read_holder(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
    return busy


def neighbours(cpu: int, where: Path | None = None, own: tuple[int, ...] = ()) -> list[str]:
    """Warnings for sweeps measuring on other CPUs of this machine at the same time, and for
    a root sweep, another user's holding its own CPU in /tmp; `own`: the other CPUs this sweep
    holds itself (its duets'), no neighbours."""
    siblings = set(system.smt_siblings(cpu))
    lines = []
    for other, holder in holders(where).items():
        if other == cpu or other in own:
            continue
        shared = ("its SMT sibling, so the two share one core" if other in siblings
                  else "they share caches and memory bandwidth")
        lines.append(f"another sweep measures on CPU {other} ({holder}): {shared}; both "
                     "sweeps' timings include some of the other's")
    if (where or folder()) == ROOT_DIR and (holder := holders(DEFAULT_DIR).get(cpu)):
        lines.append(f"a sweep of another user holds CPU {cpu}'s lock in {DEFAULT_DIR} "
                     f"({holder}): root's sweeps lock in {ROOT_DIR}, so it does not hold this "
                     "one off; if it is measuring, both sweeps' timings include the other's")
    return lines


def _not_plain(info: os.stat_result) -> str:
    """Why an opened lock file is not one flagsweep may write: '' when it is."""
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if info.st_nlink != 1:
        return f"has {info.st_nlink} names (a hard link to another file?)"
    return ""


def _free_list(where: Path, cpu: int) -> str:
    online = system.online_cpus()
    busy = holders(where)
    free = [c for c in online if c != cpu and c not in busy]
    return ", ".join(map(str, free)) or "none"


def _duration(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def _read_holder(fd: int) -> str:
    """Who holds the lock, as the holder wrote it. Any local user can write the file, so what
    is not an object with the three keys is "holder unknown" (4096 bytes of brackets nest too
    deep for json, which says so by RecursionError), and what it says is data: printed, it is
    shown (flagsweep.screen), never obeyed."""
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (ValueError, RecursionError):
        return "holder unknown"
    if not isinstance(info, dict) or not {"pid", "what", "since"} <= info.keys():
        return "holder unknown"
    return f"pid {info['pid']}: {info['what']}, since {info['since']}"
