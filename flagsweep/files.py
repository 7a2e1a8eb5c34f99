"""Writing output files so that a full disk or a folder that cannot be written costs nothing.

A file is written beside its final name and renamed over it: a reader sees the old file or the
new one, never a truncated one (a full disk left a 0-byte index.html). Every failure becomes a
FlagsweepError naming the path and the reason, not a traceback. A file a user names to be
copied in (`new --input`) is read as root should: no link followed, no more than a limit,
sparsely, its permissions kept.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import shutil
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from flagsweep.errors import FlagsweepError


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> Path:
    """Write data (text as UTF-8) to path through a temporary file and a rename; `mode` sets
    the file's permissions before it appears (an executable is never seen half-written)."""
    path = Path(path)
    try:
        with replacing(path) as draft:
            with open(draft, "xb") as f:
                f.write(data.encode() if isinstance(data, str) else data)
            if mode is not None:
                draft.chmod(mode)
    except OSError as e:
        raise FlagsweepError(f"cannot write {path}: {reason(e)}") from None
    return path


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A name beside path for the block to write the new file under (itself, or by a compiler's
    -o, a copy, a download); renamed over path when the block ends, removed when it raises.

    The name is unique (pid and a random part), so two writers of one path, in two processes
    or two threads, never write into each other's draft: the last rename wins whole. Not
    mkstemp: its 0600 would make every report private."""
    path = Path(path)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        yield draft
        os.replace(draft, path)
    finally:
        try:
            draft.unlink(missing_ok=True)
        except OSError:
            pass  # the folder refuses even that: nothing was left in it


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


def others_can_change(path: Path) -> str | None:
    """Why someone other than root and this user could change what path names (the file or
    folder a link leads to, every folder above it and above the link), or None: what root
    runs or reads as code must be its own or the user's, as OpenSSH's StrictModes asks of a
    key file."""
    real = path.resolve()
    for p in dict.fromkeys([real, *real.parents, *path.absolute().parents]):
        if why := foreign(p, p.stat()):
            return why
    return None


def foreign(p: Path, st: os.stat_result) -> str | None:
    """Why users other than root and this one could change p (its stat), or None."""
    me = os.geteuid()
    if st.st_uid not in (0, me):
        return f"{p} is owned by uid {st.st_uid}, not by root or by uid {me} (you)"
    sticky = stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX
    if st.st_mode & 0o002 and not sticky:
        return f"{p} is writable by every user"
    if st.st_mode & 0o020 and st.st_gid != 0 and not sticky:
        return f"{p} is writable by group {st.st_gid}"
    return None


def copy_sparse(src: Path, dst: Path) -> bool:
    """Copy src's data extents only, leaving its holes as holes, with its permissions and
    times; False (nothing done) when src is not sparse or its file system cannot say where
    its data is."""
    with open(src, "rb") as fin:
        st = os.fstat(fin.fileno())
        extents = _extents(fin.fileno(), st.st_size) if _sparse(st) else None
        if extents is None:
            return False
        with open(dst, "wb") as fout:
            _copy_extents(fin, fout, extents, st.st_size)
    shutil.copystat(src, dst)
    return True


def copy_given(source: Path, dest: Path, most: int, limit: str, what: str) -> None:
    """Copy a file a user named (an input) to dest, as root may: see `check_given`; its holes
    stay holes, and the copy has at most the source's permissions (a 0600 file is not made
    readable by everyone). Written beside dest and renamed over it, so a link planted at
    dest is replaced, never written through."""
    with _given(source, most, limit, what) as (fin, st):
        extents = _extents(fin.fileno(), st.st_size) if _sparse(st) else None
        if extents is None:
            extents = [(0, st.st_size)]
        try:
            with replacing(dest) as draft:
                fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, stat.S_IMODE(st.st_mode) & 0o777)
                with open(fd, "wb") as fout:
                    _copy_extents(fin, fout, extents, st.st_size)
        except OSError as e:
            raise FlagsweepError(f"cannot write {dest}: {reason(e)}") from None


def check_given(source: Path, most: int, limit: str, what: str) -> None:
    """Refuse a file a user named (what: e.g. "--input") that a copy could not take safely:
    a symbolic link (root would read what it leads to, a secret of someone else's, say, and
    the copy would hand it on), anything but a regular file, or a file larger than `most`
    bytes (`limit`: the limit's words, with its variable), a sparse one counted at its full
    length (a program reads every byte of it)."""
    with _given(source, most, limit, what):
        pass


@contextmanager
def _given(source: Path, most: int, limit: str,
           what: str) -> Iterator[tuple[BinaryIO, os.stat_result]]:
    """The file `check_given` accepts, open, with its status: judged on the open file, so
    the name cannot be swapped for a link between the check and the read."""
    try:
        # O_NONBLOCK: a FIFO planted under the name must not hang the open
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FlagsweepError(f"{what} {source}: a symbolic link, which is not followed; "
                                 "name the file itself") from None
        if e.errno == errno.ENOENT:
            raise FlagsweepError(f"{what} {source}: no such file") from None
        raise FlagsweepError(f"{what} {source}: cannot read it ({reason(e)})") from None
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FlagsweepError(f"{what} {source}: not a file")
        if st.st_size > most:
            raise FlagsweepError(f"{what} {source}: {megabytes(st.st_size)}"
                                 f"{' (a sparse file)' if _sparse(st) else ''}, beyond {limit}")
        yield f, st


def megabytes(size: int) -> str:
    """A size in words: MB with one decimal, or bytes when small."""
    return f"{size / 1e6:.1f} MB" if size >= 1e5 else f"{size} bytes"


def _sparse(st: os.stat_result) -> bool:
    return st.st_blocks * 512 < st.st_size


def _extents(fd: int, size: int) -> list[tuple[int, int]] | None:
    """(start, end) of each data extent of a file; None without SEEK_DATA support."""
    extents, at = [], 0
    while at < size:
        try:
            start = os.lseek(fd, at, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:      # only a hole is left
                break
            return None
        at = os.lseek(fd, start, os.SEEK_HOLE)
        extents.append((start, at))
    return extents


def _copy_extents(fin: BinaryIO, fout: BinaryIO, extents: list[tuple[int, int]],
                  size: int) -> None:
    """The extents' bytes at their offsets, the rest left holes, the copy `size` long."""
    for start, end in extents:
        fin.seek(start)
        fout.seek(start)
        while start < end:
            chunk = fin.read(min(end - start, 1 << 20))
            if not chunk:
                break
            fout.write(chunk)
            start += len(chunk)
    fout.truncate(size)


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


def sha256_tree(folder: Path, only: Callable[[str], bool] | None = None) -> str:
    """The sha256 of a tree: every file's path in it and the sha256 of its bytes, in name
    order (`only`, given a file's path in the tree, picks which files count). A symlink counts
    by what it points at, wherever that is (a program built from the tree reads the target),
    with its own text (a link moved to another file is another tree); a linked folder counts
    by what is in it. A link that leads nowhere or back into a folder above it counts by its
    text alone."""
    h = hashlib.sha256()
    for name, content in _tree_files(Path(folder).resolve(), "", frozenset()):
        if only is None or only(name):
            h.update(name.encode(errors="surrogateescape") + b"\0" + content.encode() + b"\0")
    return h.hexdigest()


def _tree_files(folder: Path, prefix: str, above: frozenset) -> Iterator[tuple[str, str]]:
    """(path in the tree, what decides its content) for every file reachable in the tree."""
    here = folder.stat()
    above = above | {(here.st_dev, here.st_ino)}
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        name, path = prefix + entry.name, Path(entry.path)
        link = f"link {os.readlink(path)}: " if entry.is_symlink() else ""
        try:
            st = path.stat()
        except OSError:
            yield name, f"{link}nothing"
            continue
        if stat.S_ISDIR(st.st_mode):
            if (st.st_dev, st.st_ino) in above:
                yield name, f"{link}a folder above it"
            else:
                if link:
                    yield name, link
                yield from _tree_files(path, name + "/", above)
        elif stat.S_ISREG(st.st_mode):
            yield name, link + _content(path)


def _content(path: Path) -> str:
    try:
        return sha256_file(path)
    except OSError as e:    # a reader of the tree cannot read it either; it stays what it is
        return f"unreadable ({e.strerror})"
