"""Workload inputs: the file a target's run reads, generated from a seed or given, and cached.

Generated inputs (a WAV for lame, a mixed corpus for gzip) are a pure function of the generator
version, the kind, the size and the seed, so two machines sweeping the same target measure the
same bytes. They land in `<cache>/inputs/<sha256>.<ext>`; a small index
`<cache>/inputs/keys/<sha256 of the generation key>.json` maps each key to that content hash, so
a second `prepare` is a lookup and a re-hash, not a regeneration. A `file` input is copied into
the same store, so editing the original later cannot silently change a sweep's input.

The generators are wav.py and corpus.py, their randomness randomness.py (the same bytes on
every machine and numpy version). The store is the cache layout of flagsweep/caches.py
(caches.INPUTS).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from flagsweep import files
from flagsweep.caches import INPUTS
from flagsweep.compilation.superbuild import Training
from flagsweep.errors import ConfigError
from flagsweep.experiment.target import CorpusInput, FileInput, InputSpec, Target, WavInput
from flagsweep.workload import corpus, wav

log = logging.getLogger("flagsweep.workload.inputs")

# Bump whenever a generator's output changes: old cache entries then stop matching their key.
GENERATOR_VERSION = 1
MB = 1_000_000


@dataclass(frozen=True)
class Input:
    path: Path          # the generated (or given) file, inside the cache
    sha256: str
    size_bytes: int
    description: str    # e.g. "wav: 200 s stereo 44.1 kHz 16-bit, seed 2003"


# The key of a generated input's size in a target file, quick and full, and its unit.
SIZE_KEYS = {"corpus": ("quick_megabytes", "megabytes", "MB"),
             "wav": ("quick_seconds", "seconds", "s")}


def size_of(spec: InputSpec | None, quick: bool) -> tuple[str | None, float | None, str]:
    """The target file's key that sets its input's size for this run, its value and unit; a
    given file (or none) has no size to set: (None, None, "")."""
    keys = SIZE_KEYS.get(getattr(spec, "kind", None))
    if keys is None:
        return None, None, ""
    key = keys[0] if quick else keys[1]
    return key, getattr(spec, key), keys[2]


def prepare(target: Target, quick: bool = False, cache: Path | None = None,
            seed_offset: int = 0, size: float | None = None) -> Input:
    """The target's workload input, generated deterministically from its seed (plus
    `seed_offset`) and cached by content hash (`quick` picks the smaller size; `size`, in the
    target's unit, another one: a run length chosen by measure.length). A given file has one
    size."""
    spec = target.spec.inputs
    store = INPUTS.folder(cache)
    if isinstance(spec, FileInput):
        return _copy_given(target, spec, store)
    seed = spec.seed + seed_offset
    if size is not None:
        quick = size == size_of(spec, True)[1]
    if isinstance(spec, WavInput):
        seconds = size if size is not None else spec.quick_seconds if quick else spec.seconds
        frames = round(seconds * wav.RATE)
        key = {"generator": GENERATOR_VERSION, "kind": "wav", "frames": frames,
               "seed": seed, "quick": quick}
        description = f"wav: {seconds:g} s stereo 44.1 kHz 16-bit, seed {seed}"
        return _generated(store, key, "wav", description, lambda: wav.wav_bytes(frames, seed))
    assert isinstance(spec, CorpusInput)
    megabytes = size if size is not None else spec.quick_megabytes if quick else spec.megabytes
    size = round(megabytes * MB)
    key = {"generator": GENERATOR_VERSION, "kind": "corpus", "bytes": size,
           "seed": seed, "quick": quick}
    description = f"corpus: {megabytes:g} MB mixed text and binary, seed {seed}"
    return _generated(store, key, "bin", description, lambda: corpus.corpus_bytes(size, seed))


def quick_note(target: Target) -> str | None:
    """What --quick does to this target's input, when that is nothing: a given file has one
    size only, so a quick run measures it whole."""
    spec = target.spec.inputs
    if isinstance(spec, FileInput):
        return (f"--quick: input {spec.path} is a file; it has no quick size, the full input "
                "is used")
    return None


def training(target: Target, cache: Path | None = None) -> Training:
    """What a profile-guided build trains on: the target's input made from the next seed at
    the quick size, so the profile comes from other data than the measured input (a program
    trained on its benchmark input is tuned to it). A file input has no other: the file
    itself, and the description says so."""
    made = prepare(target, quick=True, cache=cache, seed_offset=1)
    what = made.description
    if isinstance(target.spec.inputs, FileInput):
        what += " (the measured file itself: a file input has no other to train on)"
    return Training(made.path, made.sha256, f"{what} (training)")


# --- the content store ---------------------------------------------------------------------

def _generated(store: Path, key: dict, ext: str, description: str,
               generate: Callable[[], bytes]) -> Input:
    """The cached input for key if its bytes still hash right, else generate and store it."""
    index = store / "keys" / f"{files.key_sha256(key)}.json"
    found = _lookup(store, index, key, description)
    if found is not None:
        return found
    started = time.monotonic()
    data = generate()
    log.info("generated %s (%d bytes) in %.2f s", description, len(data),
             time.monotonic() - started)
    sha = files.sha256_bytes(data)
    path = store / f"{sha}.{ext}"
    # Another key (or process) may have produced the same bytes already.
    if not INPUTS.usable(path, _hashes_to(sha)):
        INPUTS.write(path, data, root=store.parent)
    entry = {"key": key, "sha256": sha, "file": path.name, "size_bytes": len(data)}
    index.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(index, json.dumps(entry, indent=1, sort_keys=True).encode())
    return Input(path, sha, len(data), description)


def _hashes_to(sha: str) -> Callable[[Path], bool]:
    return lambda path: path.is_file() and files.sha256_file(path) == sha


def _lookup(store: Path, index: Path, key: dict, description: str) -> Input | None:
    """The indexed input if the index is sound and the file still has its recorded hash."""
    try:
        entry = json.loads(index.read_text())
        sha, path = entry["sha256"], INPUTS.entry(entry["file"], store.parent)
        if entry["key"] != key:
            return None
    except (OSError, ValueError, KeyError, TypeError, ConfigError):
        return None
    if not INPUTS.usable(path, _hashes_to(sha)):
        return None
    log.debug("using cached input %s", path)
    return Input(path, sha, path.stat().st_size, description)


def _copy_given(target: Target, spec: FileInput, store: Path) -> Input:
    """Hash the target's own input file and keep a copy of exactly those bytes in the store."""
    source = target.folder / spec.path
    if not source.is_file():
        raise ConfigError(f"{target.path}: key 'inputs.path': {source} "
                          f"{'is not a file' if source.exists() else 'does not exist'}")
    sha = files.sha256_file(source)
    if spec.sha256 is not None and sha != spec.sha256:
        # The input is part of what a sweep measures: other bytes are another workload.
        raise ConfigError(f"{target.path}: key 'inputs.sha256': {source} has sha256 {sha}, "
                          f"the target expects {spec.sha256}; if you changed the input on "
                          f"purpose, put sha256 = \"{sha}\" in the target file")
    ext = source.suffix[1:] if source.suffix[1:].isalnum() else "bin"
    path = store / f"{sha}.{ext}"
    if not INPUTS.usable(path, _hashes_to(sha)):
        with INPUTS.draft(store.parent) as draft:
            shutil.copyfile(source, draft)
            # The copy is what gets measured, so it must be the bytes that were hashed.
            if files.sha256_file(draft) != sha:
                raise ConfigError(f"{target.path}: key 'inputs.path': {source} changed while "
                                  f"it was being copied; try again")
            INPUTS.publish(draft, path, store.parent)
    return Input(path, sha, path.stat().st_size, f"file: {spec.path}")
