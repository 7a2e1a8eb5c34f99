"""The build cache: a verified variant build, kept under the key of everything that decides its
binary, so that building it again is a copy.

ccache makes compiles cheap, but a warm rebuild of gzip's five variants still took 49% of the
cold one (configure, link, the audit's preprocessing). A variant whose key is here is not
configured, compiled or linked again: its binary, build log, compile log and audit are reused
and the build says so (`reused` in builds.json and results.json).

The key is a sha256 over: the source (the tarball's sha256, with how it was unpacked when not
as most are (Source.unpacking), or every file of a local or
--source-dir tree, path and bytes, a symlinked file or folder by what it points at, even outside
the tree), the target file's bytes, the compiler (path and version),
the variant's flags, what -march=native means here when a flag asks for it, the variables of
the build's environment that can change the code (environment.KEYED: PATH, SOURCE_DATE_EPOCH
and HOME; a build sees no other variable of the environment), and this builder's own code (the step
driver, wrapper, superbuild, audit and fingerprint files), so a change to any of them is a miss.

Only verified builds are kept (a failure may be a missing package the user then installs).
The entries follow flagsweep/caches.py (caches.BUILDS): written to a draft folder and renamed
into place, so two sweeps storing the same key at once keep one whole entry; a reused entry's
binary is checked against its recorded sha256 first. The cache is bounded: past its size
($FLAGSWEEP_BUILD_CACHE_MB, default 2048) the least recently used entries go. `flagsweep cache`
shows its size and `--clear` empties it.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from flagsweep import files, shipped
from flagsweep.caches import BUILDS
from flagsweep.host import environment
from flagsweep.host import cpu

FORMAT = 2
# The builder's own code: a change to how a variant is built is a change to every key.
BUILDER = ("steps.py", "wrapper.c", "wrapper.py", "variants.py", "audit.py", "cmdline.py",
           "fingerprint.py", "own_build.py", "records.py", "provenance.py", "binaries.py",
           "pragmas.py", "snapshots.py", "driver.py", "superbuild.py", "manifest.py",
           "dependency.py")
ENTRY = "entry.json"


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
    return "tree:" + files.sha256_tree(tree)


def builder_hash() -> str:
    here = Path(__file__).parent
    code = [here / name for name in BUILDER] + [
        Path(shipped.SUPERBUILD, "CMakeLists.txt"),
        Path(environment.__file__)]                       # what a build's environment holds
    return files.key_sha256([[path.name, files.sha256_file(path)] for path in code])


def load(k: str, cache: Path | None = None) -> tuple[dict, Path] | None:
    """The entry under key k (its record and folder), or None; an entry whose binary no longer
    has its recorded bytes is removed and missed."""
    entry = BUILDS.entry(k, cache)
    if not BUILDS.usable(entry, _sound):
        return None
    return json.loads((entry / ENTRY).read_text()), entry


def _sound(entry: Path) -> bool:
    """Whether the entry's record reads and its binary still has the recorded bytes."""
    try:
        record = json.loads((entry / ENTRY).read_text())
        return files.sha256_file(entry / "binary") == record.get("binary_sha256")
    except (OSError, ValueError, AttributeError):
        return False


def store(k: str, record: dict, binary: Path, logs: dict[str, Path],
          cache: Path | None = None) -> None:
    """Keep a verified build under k: its binary, its record, and its logs by name."""
    with BUILDS.draft(cache, folder=True) as draft:
        shutil.copy2(binary, draft / "binary")
        for name, path in logs.items():
            if path.is_file():
                shutil.copy2(path, draft / name)
        (draft / ENTRY).write_text(json.dumps({**record, "stored": time.time(),
                                               "binary_sha256": files.sha256_file(binary)}))
        BUILDS.publish(draft, BUILDS.entry(k, cache), cache)
