"""Writing output files so that a full disk or a folder that cannot be written costs nothing.

A file is written beside its final name and renamed over it: a reader sees the old file or the
new one, never a truncated one (a full disk left a 0-byte index.html). Every failure becomes a
FlagsweepError naming the path and the reason, not a traceback.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
from pathlib import Path

from flagsweep.errors import FlagsweepError


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> Path:
    """Write data (text as UTF-8) to path through a temporary file and a rename; `mode` sets
    the file's permissions before it appears (an executable is never seen half-written).

    The temporary name is unique (pid and a random part, created exclusively), so two writers
    of one path, in two processes or two threads, never write into each other's draft: the
    last rename wins whole. Not mkstemp: its 0600 would make every report private."""
    path = Path(path)
    tmp: Path | None = None
    try:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        with open(tmp, "xb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        if mode is not None:
            tmp.chmod(mode)
        os.replace(tmp, path)
    except OSError as e:
        try:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
        except OSError:
            pass  # the folder refuses even that: nothing was left in it
        raise FlagsweepError(f"cannot write {path}: {reason(e)}") from None
    return path


def create_new(path: Path) -> int:
    """A new, empty file at path, open for writing (an fd, not inherited by children): what
    was there is removed first, and the name is created exclusively without following a link,
    so a link planted under the name (to /etc/shadow, say) is replaced, never written through."""
    path = Path(path)
    try:
        try:
            path.unlink()            # removes a link itself, never what it points to
        except FileNotFoundError:
            pass
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                       0o644)
    except OSError as e:
        raise FlagsweepError(f"cannot write {path}: {reason(e)}") from None


def make_dir(path: Path, what: str = "folder") -> Path:
    """mkdir -p, with a failure named (what: e.g. "the --out folder")."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FlagsweepError(f"cannot create {what} {path}: {reason(e)}") from None
    return path


def check_writable(path: Path, what: str) -> None:
    """Refuse, before any work and without creating anything, a folder that could not be made
    or written: its nearest existing ancestor must be a folder this process may write in."""
    path = Path(path).absolute()
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise FlagsweepError(f"{what} {path}: {existing} is a file, not a folder; choose "
                             "another folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        why = ("a read-only file system" if os.statvfs(existing).f_flag & os.ST_RDONLY
               else "no permission to write there")
        raise FlagsweepError(f"{what} {path}: cannot write in {existing} ({why}); choose a "
                             "writable folder")


FULL_BELOW = 64 << 10   # bytes: a file system this close to full already refuses writes (tmpfs)


def disk_full(path: Path) -> bool:
    """Whether the file system holding path has (next to) no room left for this process."""
    st = os.statvfs(path)
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize < FULL_BELOW


def reason(e: OSError) -> str:
    """An OSError's reason in words, with what to do when the disk is full."""
    text = e.strerror or str(e)
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        text += " (the disk is full: free space there and run the command again)"
    return text


def cache_dir() -> Path:
    """$FLAGSWEEP_CACHE if set, else $XDG_CACHE_HOME/flagsweep, else ~/.cache/flagsweep."""
    if os.environ.get("FLAGSWEEP_CACHE"):
        return Path(os.environ["FLAGSWEEP_CACHE"])
    # The XDG spec says an empty value means unset.
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "flagsweep"
    return Path.home() / ".cache" / "flagsweep"


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in blocks (tarballs and inputs run to gigabytes)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def key_sha256(key: object) -> str:
    """The sha256 of a cache key: its JSON with sorted keys, so equal keys hash alike whatever
    order their dicts were built in."""
    return sha256_bytes(json.dumps(key, sort_keys=True).encode())
