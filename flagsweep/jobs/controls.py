"""A sweep's control arms: the A/A twin and the reference arm, measured beside the variants.

The twin (a copy of the baseline's binary) shows what the harness alone does to a comparison;
the reference arm (a kept binary, the same every night) carries the machine's drift, so a
nightly history divides it out. The reference a store keeps for a target, machine and baseline,
and this machine's own copy of it, live here too.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

from flagsweep import caches, files
from flagsweep.across import history
from flagsweep.compilation import binaries
from flagsweep.errors import ConfigError, FlagsweepError
from flagsweep.host import toolchain
from flagsweep.measure.options import MeasureOptions
from flagsweep.results import reader
from flagsweep.model import AA_SUFFIX, REF_SUFFIX, Machine, Variant
from flagsweep.results.store import Store

# The suffixes that make the baseline's control arms' ids, the A/A twin's first: every round
# is paired with them, and they are never stopped early (measure.plan.plan_for).
SUFFIXES = (AA_SUFFIX, REF_SUFFIX)


def aa_twin(docs: list[Variant], baseline: str, out: Path) -> list[Variant]:
    """The A/A arm (statistics.md choice 7): a second copy of the baseline's binary, measured
    and compared like any variant. It must come out equivalent or inconclusive; if it does not,
    the machine, not the flags, is moving the numbers. (A copy, not a rebuild with another link
    order: a layout change is a real change, and this arm must show the harness alone.)"""
    base = next(d for d in docs if d.id == baseline)
    if base.build.status != "ok":
        return []
    twin_id = baseline + AA_SUFFIX
    binary = Path(base.build.binary)
    folder = out / "builds" / twin_id
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / binary.name
    changes = {}
    if base.build.libraries:
        copy, changes = _twin_with_libraries(binary, base.build.libraries, out / "builds",
                                             folder)
    else:
        shutil.copy2(binary, copy)
    return [_arm(base, {"binary": str(copy), "identical_to": None, **changes,
                        "detail": f"A/A twin: a copy of {baseline}'s binary"},
                 id=twin_id, aa_of=baseline)]


def _twin_with_libraries(binary: Path, libraries: list[str], builds: Path,
                         folder: Path) -> tuple[Path, dict]:
    """A twin of a binary that loads shared libraries from its build tree: the binary and those
    libraries copied to the same places under the twin's folder, so that a run path relative to
    the binary ($ORIGIN) finds the copies, and an absolute one the baseline's own: either way
    the baseline's code. Its record names the libraries the copy loads."""
    home = next((d for d in binary.parents if d.parent == builds), None)   # builds/<baseline>
    if home is None:        # built elsewhere (a fleet's worker): the binary alone, as before
        shutil.copy2(binary, folder / binary.name)
        return folder / binary.name, {}
    copy = folder / binary.relative_to(home)
    for path in (binary, *map(Path, libraries)):
        if path.resolve().is_relative_to(home.resolve()):
            place = folder / path.resolve().relative_to(home.resolve())
            place.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, place)
    loaded = binaries.loaded(copy, builds).inside
    return copy, {"libraries": [str(p) for p in loaded]}


def reference_arm(docs: list[Variant], baseline: str, out: Path,
                  reference: tuple[Path, list[str] | None] | None) -> list[Variant]:
    """The reference arm (--reference): a kept binary, the same every night, measured beside
    the baseline in the same shuffled rounds. Whatever moves the machine from one night to the
    next moves it too, so the history divides it out (across.history) and a nightly job sees the
    program's own steps, not the machine's drift; Chromium's performance bots ran a fixed
    "reference build" beside every build under test for the same reason. Its comparison with
    the baseline says how far today's build is from the kept one."""
    if reference is None:
        return []
    base = next(d for d in docs if d.id == baseline)
    if base.build.status != "ok":
        return []
    source, flags = reference
    folder = out / "builds" / (baseline + REF_SUFFIX)
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / Path(base.build.binary).name      # the run command's own name for it
    shutil.copy2(source, copy)
    sha = files.sha256_file(copy)
    return [_arm(base, {"binary": str(copy), "identical_to": None, "reference_sha256": sha,
                        "detail": f"reference arm: {source} (sha256 {sha[:12]}), measured, "
                                  "not built"},
                 id=baseline + REF_SUFFIX, reference_of=baseline,
                 flags=flags if flags is not None else base.flags)]


def _arm(base: Variant, build: dict, **changes) -> Variant:
    """A control arm: the baseline's record with these changes, and its build's with `build`."""
    return Variant.model_validate({**base.dump(), **changes,
                                   "build": {**base.build.dump(), **build}})


def kept_reference_applies(opts: MeasureOptions) -> bool:
    """A nightly series keeps a reference arm by default: not when one is named
    (--reference), refused (--no-reference), or with --layouts (no reference arm there)."""
    return not (opts.reference or opts.no_reference or opts.layouts)


def kept_reference(store: Store, target_name: str, machine: dict, baseline: str, out: Path,
                   say: Callable[[str], None]) -> tuple[Path, list[str] | None] | None:
    """The reference binary the store keeps for this target, machine and baseline (the first
    complete sweep's baseline binary, see keep_reference), written into the run's folder for
    reference_arm; None when none is kept yet, or none may run. Without it a nightly history
    cannot tell the machine's drift from the program's (docs/history.md).

    A store is data, and other users may write it (a shared PostgreSQL, a SQLite file in a
    shared folder): flagsweep, often root, must not run a program planted there. So the binary
    that runs is this machine's own copy (kept_copy, written when it was kept), checked against
    the store's sha256; the store's own bytes run only from a store no one else can write."""
    kept = _kept(store, target_name, machine, baseline)
    if kept is None:
        return None
    copy = kept_copy(kept.sha256)
    if copy.is_file() and toolchain.replaceable(copy) is None \
            and files.sha256_file(copy) == kept.sha256:
        data = copy.read_bytes()
    elif (shared := store.shared()) is None:
        data = kept.binary
    else:
        say(f"warning: reference arm left out: the store keeps {baseline}'s binary from run "
            f"{kept.run_id} (sha256 {kept.sha256[:12]}), but this machine has no copy of "
            f"it ({copy}) and flagsweep runs no program from a store others can write "
            f"({shared}); put the binary there, or pass --reference or --no-reference")
        return None
    if files.sha256_bytes(data) != kept.sha256:
        raise ConfigError(f"the store's kept reference of {target_name} (run {kept.run_id}) "
                          f"does not have the sha256 it was kept with; run with --no-reference")
    folder = files.make_dir(out / "reference", "the kept reference's folder")
    # A fixed name: the stored one is the store's word, and a path in it would write elsewhere.
    path = folder / "binary"
    files.write_atomic(path, data, mode=0o755)
    say(f"reference arm: {baseline}'s binary kept from run {kept.run_id} (sha256 "
        f"{kept.sha256[:12]}), measured beside this build (--no-reference: without it)")
    return path, list(kept.flags)


def _kept(store: Store, target_name: str, machine: Machine | dict, baseline: str):
    """The kept reference of this target, machine and baseline (store.KeptReference), or
    None: under the CPU's identity, else under the key an older flagsweep kept it by, with the
    microcode in it (across.history: the microcode is now the environment's), so a series
    keeps its reference across the upgrade instead of starting a new one."""
    return (store.reference(target_name, history.machine_key(machine), baseline)
            or store.reference(target_name, history.machine_key(machine, microcode=True),
                               baseline))


def kept_copy(sha256: str) -> Path:
    """Where this machine keeps its own copy of a kept reference binary: flagsweep's cache,
    named by content (a sha256 is 64 hex digits, so the store's word cannot make it a path)."""
    if not (len(sha256) == 64 and all(ch in "0123456789abcdef" for ch in sha256)):
        raise ConfigError(f"the store's kept reference has sha256 {sha256[:80]!r}: expected "
                          "64 hex digits")
    return caches.REFERENCES.entry(sha256)


def keep_reference(store: Store, run_id: str, target_name: str, builds: list[Variant],
                   baseline: str, say: Callable[[str], None]) -> None:
    """After a complete sweep without a reference arm: keep its baseline binary in the store as
    the reference every later sweep of this target, machine and baseline measures beside its
    own build, unless one is kept already. The A/A twin is a copy of that binary, so this very
    sweep is the series' first point against it (across.history). Only for a sweep
    kept_reference_applies to."""
    if any(d.id.endswith(REF_SUFFIX) for d in builds):
        return
    base = next(d for d in builds if d.id == baseline)
    binary = Path(base.build.binary or "")
    if base.build.status != "ok" or not binary.is_file():
        return
    if base.build.libraries:
        # a kept reference is the binary alone, and later sweeps would time it with whatever
        # library its run path finds then (another build's, or none), not this build's code
        say(f"reference arm: {baseline}'s binary not kept: it loads "
            f"{', '.join(Path(p).name for p in base.build.libraries)} from its build tree")
        return
    row = store.run(run_id)
    if _kept(store, target_name, row.machine or Machine(), baseline) is not None:
        return                      # kept under the older key, and not measured this night
    key = history.machine_key(row.machine or Machine())
    sha = files.sha256_file(binary)
    if store.keep_reference(target_name, key, baseline, binary, list(base.flags), run_id, sha):
        caches.REFERENCES.write(kept_copy(sha), binary.read_bytes(), mode=0o755)
        say(f"reference arm: {baseline}'s binary kept in the store; later sweeps of "
            f"{target_name} on this machine measure it beside their own build")


def reference_binary(where: Path) -> tuple[Path, list[str] | None]:
    """(the binary, its flags when known) from --reference: a file, or a run's folder whose
    results.json names its baseline's binary. Checked before anything is built."""
    if where.is_file():
        if not os.access(where, os.X_OK):
            raise FlagsweepError(f"--reference {where}: not executable; expected a built "
                                 "program or an earlier run's folder")
        return where.resolve(), None
    doc_path = where / "results.json"
    if not doc_path.is_file():
        raise FlagsweepError(f"--reference {where}: neither a file nor a run's folder with "
                             "results.json; expected a built program or an earlier run's folder")
    doc = reader.load(doc_path)
    ref = next((v for v in doc.variants if v.id == doc.baseline), None)
    binary = Path(ref.build.binary or "") if ref else Path()
    binary = binary if binary.is_absolute() else where / binary
    if ref is None or not binary.is_file():
        raise FlagsweepError(f"--reference {where}: its results.json names no baseline binary "
                             f"that still exists ({binary or 'none'}); keep the binary itself "
                             "and pass its path")
    if ref.build.libraries:
        raise FlagsweepError(f"--reference {where}: its baseline's binary loads "
                             f"{', '.join(Path(p).name for p in ref.build.libraries)} from its "
                             "build tree (key 'build.libraries'), and the reference arm is the "
                             "binary alone; expected a program built static")
    return binary, list(ref.flags)
