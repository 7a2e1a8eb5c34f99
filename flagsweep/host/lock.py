"""One sweep measures on a machine at a time.

Two sweeps timing on the same CPUs would measure each other. The lock is an flock on a file in
/tmp (shared by every user of the machine; the kernel releases it when the holder dies, even by
kill -9), and the holder writes who it is into the file so the second sweep can say who to wait
for. $FLAGSWEEP_LOCK overrides the path (tests).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from flagsweep.errors import FlagsweepError

DEFAULT = Path("/tmp/flagsweep-measure.lock")


class MeasureLock:
    def __init__(self, what: str, path: Path | None = None):
        self.path = path or Path(os.environ.get("FLAGSWEEP_LOCK") or DEFAULT)
        self.what = what
        self.fd: int | None = None

    def __enter__(self) -> "MeasureLock":
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:
            raise FlagsweepError(f"cannot open the measurement lock {self._named()}: another "
                                 "user created it without write permission for others; ask "
                                 "them (or root) to remove it") from None
        except OSError as e:
            raise FlagsweepError(f"cannot open the measurement lock {self._named()}: "
                                 f"{e.strerror}; expected a file that can be created and "
                                 "written, in an existing folder") from None
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o666)  # the umask trimmed it: every user of the machine must lock it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise FlagsweepError(f"another sweep is measuring on this machine ({holder}); "
                                 "wait for it to finish or stop it, then try again") from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "what": self.what,
                                     "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode())
        except OSError:
            pass  # a full /tmp: the lock holds all the same, a waiting sweep names no holder
        self.fd = fd
        return self

    def _named(self) -> str:
        """The lock's path, and where it came from when the user chose it."""
        return (f"{self.path} ($FLAGSWEEP_LOCK)" if os.environ.get("FLAGSWEEP_LOCK")
                and self.path == Path(os.environ["FLAGSWEEP_LOCK"]) else str(self.path))

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']}: {info['what']}, since {info['since']}"
    except (ValueError, KeyError):
        return "holder unknown"
