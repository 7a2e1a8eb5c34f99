"""Unpacking a source tarball safely: every member checked before anything is written (names,
links, device files), the unpack limits that refuse a tarball bomb member by member, and the
leading folders strip_components removes, which must hold every member (ssdeep's orig has its
files at its top: stripping one level dropped them all, silently)."""

from __future__ import annotations

import copy
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from flagsweep import files
from flagsweep.errors import FetchError


# tarfile's extraction filters arrived in 3.11.4; Debian 12's python3 is 3.11.2.
_HAS_TAR_FILTERS = hasattr(tarfile, "data_filter")

# What a tarball may unpack to (docs/targets.md): a 621-byte tarball held a 10 GB sparse file
# and a 14 MB one 3.1 GB of zeros. Real source trees are far below these (gcc's is ~1 GB).
UNPACK_LIMITS = {"FLAGSWEEP_UNPACK_FILE_MB": 1024.0,     # one member, by its unpacked size
                 "FLAGSWEEP_UNPACK_TOTAL_MB": 8192.0,    # every member together
                 "FLAGSWEEP_UNPACK_RATIO": 100.0}        # unpacked bytes per tarball byte
# Below this many unpacked megabytes the ratio does not matter: a small file of zeros is no bomb.
RATIO_FLOOR_MB = 64


def unpack_limits() -> dict[str, float]:
    """The limits, each from its environment variable when set."""
    limits = {}
    for name, default in UNPACK_LIMITS.items():
        raw = os.environ.get(name)
        try:
            value = float(raw) if raw else default
        except ValueError:
            value = float("nan")
        if not 0 < value < float("inf"):
            raise FetchError(f"{name}={raw!r}: expected a number above 0 "
                             f"(default {default:g})")
        limits[name] = value
    return limits


def file_limit() -> tuple[int, str]:
    """The most bytes one file flagsweep takes in may hold (a tarball's member, a user's
    input for `new`), and the words a refusal names it by."""
    mb = unpack_limits()["FLAGSWEEP_UNPACK_FILE_MB"]
    return round(mb * 1e6), _file_limit(mb)


def _file_limit(mb: float) -> str:
    return f"the limit of {mb:g} MB for one file (FLAGSWEEP_UNPACK_FILE_MB)"


class _Budget:
    """The limits, checked member by member as each header is read: a member beyond them is
    refused before its data is unpacked, so refusing a bomb costs no more than the limits."""

    def __init__(self, tarball: Path):
        self.tarball, self.limits = tarball, unpack_limits()
        try:
            self.packed = max(1, tarball.stat().st_size)
        except OSError:
            self.packed = 1          # tarfile.open names what is wrong with it
        self.total = 0

    def take(self, member: tarfile.TarInfo) -> None:
        if not member.isreg():
            return
        self.total += member.size
        file_mb = self.limits["FLAGSWEEP_UNPACK_FILE_MB"]
        total_mb = self.limits["FLAGSWEEP_UNPACK_TOTAL_MB"]
        ratio = self.limits["FLAGSWEEP_UNPACK_RATIO"]
        mb = files.megabytes
        what = f"{mb(member.size)}{' (a sparse file)' if member.sparse is not None else ''}"
        if member.size > file_mb * 1e6:
            self._refuse(member, f"it unpacks to {what}, beyond {_file_limit(file_mb)}")
        if self.total > total_mb * 1e6:
            self._refuse(member, f"it unpacks to {what}, which brings the tree to "
                                 f"{mb(self.total)}, beyond the limit of {total_mb:g} MB "
                                 "(FLAGSWEEP_UNPACK_TOTAL_MB)")
        if self.total > RATIO_FLOOR_MB * 1e6 and self.total > ratio * self.packed:
            self._refuse(member, f"it unpacks to {what}, which brings the tree to "
                                 f"{mb(self.total)} from a {mb(self.packed)} tarball, "
                                 f"{self.total / self.packed:.0f} times its size, beyond the "
                                 f"limit of {ratio:g} (FLAGSWEEP_UNPACK_RATIO)")

    def _refuse(self, member: tarfile.TarInfo, why: str) -> None:
        raise FetchError(f"{self.tarball}: refusing member {member.name!r}: {why}; nothing "
                         "was unpacked. A source tree this large is not expected: if it is "
                         "right, raise the limit (docs/targets.md)")


def extract(tarball: Path, dest: Path, strip_components: int = 1) -> Path:
    """Safely extract tarball (.tar.gz/.xz/.bz2, detected from content) into dest and return it.

    dest must be empty or absent. Every member is checked before anything is written, so a
    refused tarball leaves no partial tree: absolute names, '..' components, links leading
    outside dest, and device files raise FetchError. Each member is checked again against the
    tree as extracted so far, which catches links that only escape through earlier links.
    Modes are tamed as tarfile.data_filter does; mtimes are kept (autotools trees need them,
    or make tries to re-run automake). A member beyond the unpack limits (a file too large,
    sparse or not, a tree too large, or too many times the tarball's size) is refused too,
    and so is a strip_components that would drop a member or merge two folders (_check_strip).
    """
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise FetchError(f"cannot extract {tarball} into {dest}: it exists and is not an "
                         f"empty directory")
    budget = _Budget(tarball)
    existed = dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    member_filter = _member_filter(tarball, strip_components)
    try:
        with tarfile.open(tarball, "r:*") as tar:
            tar.errorlevel = 2  # every extraction error raises; none is only logged
            for member in tar:  # header by header: a member is judged before its data is read
                budget.take(member)
                member_filter(member, str(dest))
            _check_strip(tarball, tar.getmembers(), strip_components)
            if _HAS_TAR_FILTERS:
                tar.extractall(dest, filter=member_filter)
            else:
                _extract_one_by_one(tar, dest, member_filter)
    except BaseException as err:
        shutil.rmtree(dest, ignore_errors=True)
        if existed:
            dest.mkdir()
        if isinstance(err, (tarfile.TarError, OSError, EOFError)):
            raise FetchError(f"cannot extract {tarball}: {err}") from err
        raise
    return dest


def _member_filter(tarball: Path, strip_components: int):
    """The extraction filter: refuse unsafe members, strip leading components."""
    def member_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        _refuse_unsafe_name(tarball, member.name, member.name)
        name = _strip(member.name, strip_components)
        if name is None:
            return None  # the top directory itself: its contents are what we want
        stripped = copy.copy(member)
        stripped.name = name
        if member.islnk():
            # Hard link targets are archive member names, so they lose the same prefix.
            _refuse_unsafe_name(tarball, member.name, member.linkname)
            target = _strip(member.linkname, strip_components)
            if target is None:
                raise FetchError(f"{tarball}: hard link {member.name!r} points at "
                                 f"{member.linkname!r}, which strip_components removes")
            stripped.linkname = target
        try:
            if _HAS_TAR_FILTERS:
                return tarfile.data_filter(stripped, dest)
            return _legacy_data_filter(stripped, dest)
        except (tarfile.TarError, ValueError) as err:  # FilterError is a TarError
            raise FetchError(f"{tarball}: refusing member {member.name!r}: {err}") from err
    return member_filter


def _refuse_unsafe_name(tarball: Path, member: str, path: str) -> None:
    # data_filter would silently strip a leading '/'; a tarball with one is not to be trusted.
    if path.startswith("/"):
        raise FetchError(f"{tarball}: refusing member {member!r}: {path!r} is an absolute path")
    if ".." in path.split("/"):
        raise FetchError(f"{tarball}: refusing member {member!r}: {path!r} contains '..'")


def _parts(name: str) -> list[str]:
    """A member name's components ('.' components do not count, as in './pkg-1.0/configure')."""
    return [p for p in name.split("/") if p not in ("", ".")]


def _strip(name: str, count: int) -> str | None:
    """name without its first count components; None when nothing is left."""
    rest = _parts(name)[count:]
    return "/".join(rest) if rest else None


@dataclass(frozen=True)
class Layout:
    """What a tarball holds at its top: the names there, and whether the one name there is a
    folder that every member sits in (a release tarball's pkg-1.0/)."""

    top: tuple[str, ...]        # the distinct first components, in the tarball's order
    one_folder: bool

    @property
    def strip_components(self) -> int:
        """The strip that unpacks this tarball's tree whole: its one folder removed, or none."""
        return 1 if self.one_folder else 0

    def said(self) -> str:
        if not self.top:
            return "it has no members"
        if self.one_folder:
            return f"its members all sit in one folder, {_shown(self.top[0])}/"
        shown = ", ".join(_shown(name) for name in self.top[:4])
        more = ", ..." if len(self.top) > 4 else ""
        return (f"its members do not all sit in one folder: its top holds {len(self.top)} "
                f"name{'s' if len(self.top) != 1 else ''} ({shown}{more})")


def _shown(name: str) -> str:
    """A member's name as a one-line message or a target file's comment may hold it."""
    return name if name.isprintable() else repr(name)


def _layout(members: list[tarfile.TarInfo]) -> Layout:
    top: dict[str, None] = {}       # a dict keeps the order names came in
    folder = True
    for member in members:
        parts = _parts(member.name)
        if parts:
            top.setdefault(parts[0], None)
            folder = folder and (len(parts) > 1 or member.isdir())
    return Layout(tuple(top), folder and len(top) == 1)


def layout(tarball: Path) -> Layout:
    """The tarball's layout, from its members' headers, read as extract reads them (the unpack
    limits checked header by header); nothing is written."""
    budget = _Budget(tarball)
    try:
        with tarfile.open(tarball, "r:*") as tar:
            for member in tar:
                budget.take(member)
            return _layout(tar.getmembers())
    except (tarfile.TarError, OSError, EOFError) as err:
        raise FetchError(f"cannot read {tarball}: {err}") from err


def _check_strip(tarball: Path, members: list[tarfile.TarInfo], count: int) -> None:
    """Refuse a strip that does not fit the tarball: a member with nothing left of its name
    once count leading folders are removed is dropped (unless it is one of those folders), and
    members under two different leading folders would be merged into one tree, where one
    file can overwrite another. FetchError naming the member and the strip that fits."""
    kept: tuple[list[str], str] | None = None      # the leading folders, and who had them first
    for member in members:
        parts = _parts(member.name)
        if len(parts) > count:
            if kept is None:
                kept = parts[:count], member.name
            elif parts[:count] != kept[0]:
                _misfit(tarball, members, count,
                        f"members {kept[1]!r} and {member.name!r} are in "
                        f"different folders, which it would merge into one tree")
        elif not member.isdir():
            _misfit(tarball, members, count,
                    f"member {member.name!r} would be dropped: nothing of its name is left "
                    f"once {'its first part is' if count == 1 else f'its first {count} parts are'}"
                    " removed")
    for member in members:
        parts = _parts(member.name)
        if parts and len(parts) <= count and (kept is None or parts != kept[0][:len(parts)]):
            _misfit(tarball, members, count,
                    f"folder {member.name!r} would be dropped: it is not one of the "
                    f"leading folders removed")


def _misfit(tarball: Path, members: list[tarfile.TarInfo], count: int, why: str) -> NoReturn:
    fits = _layout(members)
    said = fits.said()
    raise FetchError(f"{tarball}: refusing strip_components = {count}: {why}; nothing was "
                     f"unpacked. {said[0].upper()}{said[1:]}: set strip_components = "
                     f"{fits.strip_components} in the target's [source]")


def _legacy_data_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """The checks of tarfile.data_filter, for Pythons that lack it (member is our copy)."""
    root = os.path.realpath(dest)

    def refuse_outside(path: str, what: str) -> None:
        resolved = os.path.realpath(os.path.join(root, path))
        if os.path.commonpath([resolved, root]) != root:
            raise ValueError(f"{what} {resolved!r} is outside the destination")

    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        raise ValueError(f"{member.name!r} is a special file")
    refuse_outside(member.name, "it would be extracted to")
    if member.issym() or member.islnk():
        if os.path.isabs(member.linkname):
            raise ValueError(f"{member.name!r} is a link to an absolute path")
        base = os.path.dirname(member.name) if member.issym() else ""
        refuse_outside(os.path.join(base, member.linkname), "it would link to")
    # As data_filter: no setuid/sticky or group/other write bits, owner can read and write,
    # and files belong to whoever extracts them.
    member.mode = (member.mode & 0o755) | (0o600 if member.isreg() else 0)
    member.uid, member.gid, member.uname, member.gname = os.getuid(), os.getgid(), "", ""
    return member


def _extract_one_by_one(tar: tarfile.TarFile, dest: Path, member_filter) -> None:
    """extractall(filter=...) for Pythons without filters: each member is checked against
    the tree extracted so far, and directory mtimes are set last, as extractall does, so
    that writing their contents does not bump them."""
    directories = []
    for member in tar.getmembers():
        safe = member_filter(member, str(dest))
        if safe is None:
            continue
        tar.extract(safe, dest, set_attrs=not safe.isdir())
        if safe.isdir():
            directories.append(safe)
    for directory in sorted(directories, key=lambda d: d.name, reverse=True):
        os.utime(dest / directory.name, (directory.mtime, directory.mtime))
