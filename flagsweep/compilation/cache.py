"""The build cache: a verified variant build, kept under the key of everything that decides its
binary, so that building it again is a copy.

ccache makes compiles cheap, but a warm rebuild of gzip's five variants still took 49% of the
cold one (configure, link, the audit's preprocessing). A variant whose key is here is not
configured, compiled or linked again: its binary, build log, compile log and audit are reused
and the build says so (`reused` in builds.json and results.json).

The key is a sha256 over: the source (the tarball's sha256, or every file of a local or
--source-dir tree, path and bytes, a symlinked file or folder by what it points at, even outside
the tree), the target file's bytes, the compiler (path and version),
the variant's flags, what -march=native means here when a flag asks for it, the variables of
the build's environment that can still change the code (environment.KEYED: the rest are
dropped), and this builder's own code (the step
driver, wrapper, superbuild, audit and fingerprint files), so a change to any of them is a miss.

Only verified builds are kept (a failure may be a missing package the user then installs).
Entries are written to a temporary folder and renamed into place, so two sweeps storing the same
key at once keep one whole entry; a reused entry's binary is checked against its recorded sha256
first. The cache is bounded: past its size ($FLAGSWEEP_BUILD_CACHE_MB, default 2048) the least
recently used entries go. `flagsweep cache` shows its size and `--clear` empties it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Iterator

from flagsweep import files, shipped
from flagsweep.host import environment
from flagsweep.host import cpu

log = logging.getLogger("flagsweep.compilation.cache")

FORMAT = 2
DEFAULT_MB = 2048
# The builder's own code: a change to how a variant is built is a change to every key.
BUILDER = ("steps.py", "wrapper.c", "wrapper.py", "variants.py", "audit.py", "cmdline.py",
           "fingerprint.py", "own_build.py")
ENTRY = "entry.json"


def folder(cache: Path | None = None) -> Path:
    return (cache or files.cache_dir()) / "builds"


def key(source_id: str, target_file: Path, compiler: dict, flags: list[str]) -> str:
    """The key of one variant's build (see the module's docstring for what goes in)."""
    parts = {
        "format": FORMAT, "builder": builder_hash(), "source": source_id,
        "target": files.sha256_file(target_file), "compiler": compiler, "flags": flags,
        "native": (cpu.march_native(compiler.get("name", "gcc"))
                   if any("native" in f for f in flags) else None),
        "env": environment.keyed(),
    }
    return files.key_sha256(parts)


def source_id(tarball_sha256: str | None, tree: Path) -> str:
    """The tarball's sha256, or for a local tree the hash of every file's path and bytes (a
    --source-dir copy with one file patched is another source)."""
    if tarball_sha256:
        return tarball_sha256
    h = hashlib.sha256()
    for name, content in _tree_files(tree.resolve(), "", frozenset()):
        h.update(name.encode(errors="surrogateescape") + b"\0" + content.encode() + b"\0")
    return "tree:" + h.hexdigest()


def _tree_files(folder: Path, prefix: str, above: frozenset) -> Iterator[tuple[str, str]]:
    """(path in the tree, what decides its content) for every file the build can read through
    the tree. A symlink counts by what it points at, wherever that is (the build reads the
    target, so a change there is a change of source), with its own text (a link moved to
    another file is another source); a linked folder counts by what is in it. A link that
    leads nowhere or back into a folder above it counts by its text alone."""
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
        return files.sha256_file(path)
    except OSError as e:    # the build cannot read it either; it stays what it is
        return f"unreadable ({e.strerror})"


def builder_hash() -> str:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in BUILDER:
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
    h.update(Path(shipped.SUPERBUILD, "CMakeLists.txt").read_bytes())
    h.update(Path(environment.__file__).read_bytes())     # what a build's environment holds
    return h.hexdigest()


def load(k: str, cache: Path | None = None) -> tuple[dict, Path] | None:
    """The entry under key k (its record and folder), or None; an entry whose binary no longer
    has its recorded bytes is removed and missed."""
    entry = folder(cache) / k
    try:
        record = json.loads((entry / ENTRY).read_text())
    except (OSError, ValueError):
        return None
    binary = entry / "binary"
    if not binary.is_file() or files.sha256_file(binary) != record.get("binary_sha256"):
        log.warning("build cache entry %s is damaged; building again", entry)
        shutil.rmtree(entry, ignore_errors=True)
        return None
    os.utime(entry)      # used now: the last to go when the cache is trimmed
    return record, entry


def store(k: str, record: dict, binary: Path, logs: dict[str, Path],
          cache: Path | None = None) -> None:
    """Keep a verified build under k: its binary, its record, and its logs by name."""
    root = folder(cache)
    root.mkdir(parents=True, exist_ok=True)
    draft = Path(tempfile.mkdtemp(dir=root, prefix=".draft-"))
    try:
        shutil.copy2(binary, draft / "binary")
        for name, path in logs.items():
            if path.is_file():
                shutil.copy2(path, draft / name)
        (draft / ENTRY).write_text(json.dumps({**record, "stored": time.time(),
                                               "binary_sha256": files.sha256_file(binary)}))
        try:
            draft.rename(root / k)
        except OSError:
            pass    # another sweep stored the same key meanwhile: one whole entry is enough
    finally:
        shutil.rmtree(draft, ignore_errors=True)
    trim(cache)


def size(cache: Path | None = None) -> tuple[int, int]:
    """Entries and bytes."""
    entries = [p for p in folder(cache).glob("*") if p.is_dir() and not p.name.startswith(".")]
    return len(entries), sum(f.stat().st_size for e in entries for f in e.rglob("*") if f.is_file())


def trim(cache: Path | None = None, limit_mb: float | None = None) -> int:
    """Remove the least recently used entries until the cache fits; returns how many went."""
    limit = (limit_mb if limit_mb is not None
             else float(os.environ.get("FLAGSWEEP_BUILD_CACHE_MB") or DEFAULT_MB)) * 1e6
    entries = sorted((p for p in folder(cache).glob("*") if p.is_dir()
                      and not p.name.startswith(".")), key=lambda p: p.stat().st_mtime)
    sizes = {e: sum(f.stat().st_size for f in e.rglob("*") if f.is_file()) for e in entries}
    total, gone = sum(sizes.values()), 0
    for entry in entries:
        if total <= limit:
            break
        shutil.rmtree(entry, ignore_errors=True)
        total -= sizes[entry]
        gone += 1
    return gone


def clear(cache: Path | None = None) -> int:
    n, _ = size(cache)
    shutil.rmtree(folder(cache), ignore_errors=True)
    return n
