"""flagsweep's caches: one layout for every folder under files.cache_dir() that keeps work
for the next run (tarballs, source trees, builds, inputs, tools, ...).

A cache is a folder of entries, one file or folder per key, named by it. An entry is made as
a draft inside the folder (a hidden name, so it is never taken for an entry) and published by
a rename: a reader sees a whole entry or none, and of two writers of one key one whole entry
stays. An entry is checked before use (its owner knows how: a sha256, a key file), and one that
fails is removed and made again. Using an entry touches it, and a cache with a limit drops its
least recently used entries when a new one takes it past the limit. `flagsweep cache` lists
every cache here, and `--clear` empties them all.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from flagsweep import files
from flagsweep.errors import ConfigError

log = logging.getLogger("flagsweep.caches")


@dataclass(frozen=True)
class Cache:
    name: str                       # its folder under the cache root
    holds: str                      # what an entry is, for `flagsweep cache` ("builds")
    default_mb: float | None = None  # None: no limit unless its variable sets one
    why_unbounded: str = ""         # for `flagsweep cache`, when there is no default limit
    others: tuple[str, ...] = ()    # folders in it that are not entries (an index, a quarantine)
    limit_var: str = ""             # default: FLAGSWEEP_<NAME>_CACHE_MB

    def folder(self, root: Path | None = None) -> Path:
        return (root or files.cache_dir()) / self.name

    def entry(self, name: str, root: Path | None = None) -> Path:
        """Where the entry named name (a key, or a name made from one) lives."""
        if not name or "/" in name or name.startswith(".") or name in self.others:
            raise ConfigError(f"{name!r} cannot name an entry of the {self.name} cache")
        return self.folder(root) / name

    def entries(self, root: Path | None = None) -> list[Path]:
        """The published entries (not drafts, not the folders that are not entries)."""
        try:
            found = list(self.folder(root).iterdir())
        except OSError:
            return []
        return [p for p in found if not p.name.startswith(".") and p.name not in self.others]

    def variable(self) -> str:
        return self.limit_var or f"FLAGSWEEP_{self.name.upper().replace('-', '_')}_CACHE_MB"

    def limit_mb(self) -> float | None:
        """The limit in MB: its variable's value when set, else the default (None: none)."""
        value = os.environ.get(self.variable())
        if not value:
            return self.default_mb
        try:
            return float(value)
        except ValueError:
            raise ConfigError(f"{self.variable()}={value!r}: expected a size in MB") from None

    def usable(self, path: Path, check: Callable[[Path], bool] | None = None) -> bool:
        """Whether the entry at path is there and passes check; touched when it does (it is
        then the last to go when the cache is trimmed), removed when it fails."""
        if not path.exists():
            return False
        if check is not None and not check(path):
            log.warning("%s cache entry %s is damaged; making it again", self.name, path)
            remove(path)
            return False
        with contextlib.suppress(OSError):
            os.utime(path)
        return True

    @contextlib.contextmanager
    def draft(self, root: Path | None = None, folder: bool = False) -> Iterator[Path]:
        """A hidden name in the cache's folder to make an entry under (a folder already made
        when folder is set), removed at the end unless it was published."""
        # A plain OSError when the folder cannot be made: the command line names the cache
        # folder and the variables that move it.
        where = self.folder(root)
        where.mkdir(parents=True, exist_ok=True)
        if folder:
            path = Path(tempfile.mkdtemp(dir=where, prefix=".draft-"))
            path.chmod(0o755)          # mkdtemp's 0700 would hide the entry from other users
        else:
            fd, name = tempfile.mkstemp(dir=where, prefix=".draft-")
            os.close(fd)
            path = Path(name)
        try:
            yield path
        finally:
            remove(path)

    def publish(self, draft: Path, path: Path, root: Path | None = None) -> Path:
        """Rename draft into place as the entry at path, then trim the cache. A file replaces
        what was there; a folder does not: of two writers of one key, the first one's whole
        entry stays (theirs is as good as ours)."""
        try:
            if draft.is_dir():
                draft.rename(path)
            else:
                os.replace(draft, path)
        except OSError:
            if not path.is_dir():
                raise
        with contextlib.suppress(OSError):
            os.utime(path)
        self.trim(root)
        return path

    def write(self, path: Path, data: str | bytes, mode: int | None = None,
              root: Path | None = None) -> Path:
        """Publish data as the file entry at path."""
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_atomic(path, data, mode)
        self.trim(root)
        return path

    def usage(self, root: Path | None = None) -> tuple[int, int]:
        """Entries and bytes."""
        found = self.entries(root)
        return len(found), sum(size(p) for p in found)

    def trim(self, root: Path | None = None, limit_mb: float | None = None) -> int:
        """Remove the least recently used entries until the cache fits its limit; returns how
        many went."""
        limit = limit_mb if limit_mb is not None else self.limit_mb()
        if limit is None:
            return 0
        entries = sorted(self.entries(root), key=_mtime)
        sizes = {e: size(e) for e in entries}
        total, gone = sum(sizes.values()), 0
        for entry in entries:
            if total <= limit * 1e6:
                break
            remove(entry)
            total -= sizes[entry]
            gone += 1
        return gone

    def clear(self, root: Path | None = None) -> int:
        """Empty the cache; returns how many entries went."""
        count = len(self.entries(root))
        shutil.rmtree(self.folder(root), ignore_errors=True)
        return count


def size(path: Path) -> int:
    """Bytes in a file, or in every file of a folder (links not followed)."""
    try:
        if not path.is_dir() or path.is_symlink():
            return path.lstat().st_size
        return sum(f.lstat().st_size for f in path.rglob("*") if f.is_file())
    except OSError:
        return 0


def remove(path: Path) -> None:
    """Remove a file or a folder, whatever is left of it."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


IN_USE = "a running sweep reads its entries"
DOWNLOADS = Cache("downloads", "tarballs", 4096, others=("quarantine",))
SOURCES = Cache("src", "source trees", why_unbounded="a running build reads its trees")
BUILDS = Cache("builds", "builds", 2048, limit_var="FLAGSWEEP_BUILD_CACHE_MB")
OWN_FLAGS = Cache("own-flags", "projects' own builds", why_unbounded="a few KB each")
INPUTS = Cache("inputs", "inputs", why_unbounded=IN_USE, others=("keys",))
REFERENCES = Cache("references", "reference binaries", 1024)
TOOLS = Cache("tools", "tools", why_unbounded="one launcher")
REMARKS = Cache("remarks", "remarks records", why_unbounded="a few KB per build's compiles")
WRAPPERS = Cache("wrappers", "compiler wrappers", why_unbounded="a few per compiler")
CONFIGURED = Cache("configured", "configured trees", why_unbounded=IN_USE)
CCACHE = Cache("ccache", "ccache folders", why_unbounded="ccache bounds it itself")
APT = Cache("apt", "private apt trees", why_unbounded="one, with its package lists")
FLEET = Cache("fleet", "worker folders", why_unbounded=IN_USE)
TRIAL_RUNS = Cache("trial-runs", "trial corpora", why_unbounded="a few sizes")

ALL = (DOWNLOADS, SOURCES, BUILDS, OWN_FLAGS, INPUTS, REFERENCES, TOOLS, REMARKS, WRAPPERS,
       CONFIGURED, CCACHE, APT, FLEET, TRIAL_RUNS)
