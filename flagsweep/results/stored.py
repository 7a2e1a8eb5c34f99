"""A stored run (or tune) as values flagsweep may act on: what the store says, checked as typed
input is.

A store is data (docs/faults.md, "Trust model"): other users may write it (a shared PostgreSQL,
an SQLite file in a shared folder), and flagsweep, often root, resumes runs and tunes and writes
their files again from its rows. So no door takes a row's word for where to write or what to
run; each value is checked as the same value typed by the user would be, before anything runs
or is written:

- the folder a row names (a run's `out_dir`, a tune's `out`) is the run's own: an absolute path
  reached through no link, one this process may write (as --out), holding the record flagsweep
  wrote there when the run started (RECORD, naming its id; from before the record, a run's
  results.json or a tune's tune.json naming it);
- a target file is one only root or this user could have written (`toolchain.replaceable`, as
  `explain` asks of a results folder's), with the bytes the run started with;
- a compiler shows it is one (`toolchain.resolve`, as recipes and --compiler do);
- a binary runs only from the run's own builds folder, its code hash recorded and matching.

Anything else stops the command with one line naming the row, the key and the check.
`run --resume`, `report RUN_ID`, a run's files written again, a confirmation writing into the
run it confirms and a tune's resumed sweeps come through `run` and `out_dir`; a tune's own
record is checked with the same functions (jobs.tune).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from flagsweep import files
from flagsweep.compilation import fingerprint, superbuild
from flagsweep.errors import ConfigError, FlagsweepError
from flagsweep.experiment import target as targets
from flagsweep.experiment.strict import quoted
from flagsweep.host import toolchain
from flagsweep.measure.options import MeasureOptions, from_store
from flagsweep import model
from flagsweep.results.store import Store

# The record a run's (or a tune's) folder holds from its start is {"run_id": ID} or {"tune_id":
# ID}; beside it, the document that names the same id once written (for a folder from before
# the record).
RECORD = superbuild.RECORD
DOCUMENTS = {"run_id": "results.json", "tune_id": "tune.json"}
RECORD_MAX = 256 << 20      # bytes: a document longer than this proves nothing


@dataclass
class Run:
    """A stored run, checked: its row, its own folder, its variants and measuring options, and
    its target (the caller's, or the one its row names)."""

    run_id: str
    row: model.RunRecord
    options: model.RunOptions
    out: Path
    docs: list[model.Variant]
    measure: MeasureOptions
    target: targets.Target


def row_of(store: Store, run_id: str) -> str:
    """How messages name a run's row."""
    return f"run {run_id}'s row in the store {store.url}"


def run(store: Store, run_id: str, t: targets.Target | None = None) -> Run:
    """The run as values to act on: its folder, target file, compilers and measuring options
    checked (`t`: the target the caller already checked, as a tune's; None: the row's own)."""
    row = store.run(run_id)
    where = row_of(store, run_id)
    out = out_dir(store, run_id, row)
    o = row.options
    measure = from_store(o.measure, f"{where}, key 'options.measure'")
    if t is None:
        t = target(o.target_path, o.target_sha256, where, "options.target_path", f"run {run_id}")
    try:
        docs = store.variants(run_id)
    except ValidationError as e:
        first = e.errors()[0]
        raise FlagsweepError(f"{where}, key 'variants' ({'.'.join(map(str, first['loc']))}): "
                             f"{first['msg']}") from None
    for d in docs:
        compiler(d.compiler, where, f"variants[{d.id}].compiler")
    return Run(run_id, row, o, out, docs, measure, t)


def out_dir(store: Store, run_id: str, row: model.RunRecord | None = None) -> Path:
    """The folder a run's row names, once it shows it is that run's (`folder`)."""
    row = row or store.run(run_id)
    return folder(row.out_dir, "run_id", run_id, row_of(store, run_id), "out_dir")


def claim(path: Path, key: str, name: str) -> None:
    """Write the record that makes `path` the folder of run (key run_id) or tune (tune_id)
    `name`: what `folder` asks of a folder a row names before anything is written there."""
    files.write_atomic(path / RECORD, json.dumps({key: name}) + "\n")


def folder(value: object, key: str, name: str, where: str, field: str) -> Path:
    """The folder a row's `field` names, as the folder of run (or tune) `name`; FlagsweepError
    naming the row, the key and the check when it is not: a row naming another folder (a web
    site's, another run's) must not choose where flagsweep writes, or what it deletes."""
    why = _not_own(value, key, name)
    if why:
        whose = key.removesuffix("_id")
        raise FlagsweepError(f"{where}, key '{field}': {quoted(value)} is not the folder of "
                             f"{whose} {name}: {why}; flagsweep writes a {whose}'s files only "
                             f"into the folder it started in")
    return Path(value)


def _not_own(value: object, key: str, name: str) -> str | None:
    if not isinstance(value, str) or not os.path.isabs(value):
        return "not an absolute path"
    path = Path(value)
    if path.is_symlink():
        return "it is a symbolic link"
    if not path.is_dir():
        return "no such folder"
    if path.resolve() != path:
        return f"it is reached through a symbolic link (it is {path.resolve()})"
    try:
        files.check_writable(path, "the folder")
    except FlagsweepError as e:
        return str(e)
    if not any(_names(path / doc, key, name) for doc in (RECORD, DOCUMENTS[key])):
        return f"it holds no {RECORD} (nor {DOCUMENTS[key]}) naming {key} {name!r}"
    return None


def _names(path: Path, key: str, name: str) -> bool:
    """Whether the file at path is a plain file (not a link) whose JSON says key is name.
    Opened without waiting: a FIFO planted under the name would block the open."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return False
        head = f.read(RECORD_MAX)
    try:
        doc = json.loads(head)
    except (ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and doc.get(key) == name


def target(value: object, sha256: object, where: str, field: str, whose: str) -> targets.Target:
    """The target file a row names, loaded, once only root or this user could have written it
    (its run command and its build are run) and it still has the bytes recorded (`sha256`,
    when the row has one: another file would measure something else)."""
    if not isinstance(value, str) or not value:
        raise FlagsweepError(f"{where}, key '{field}': expected a target file's path, got "
                             f"{quoted(value)}")
    try:
        t = targets.load(value)
    except ConfigError as e:
        raise ConfigError(f"{where}, key '{field}': {e}") from None
    if why := toolchain.replaceable(t.path, program=False):
        raise FlagsweepError(f"{where}, key '{field}': the target file {t.path} is not run: "
                             f"{why}; flagsweep runs only a target file root or you could "
                             "have written")
    if sha256 and files.sha256_file(t.path) != sha256:
        raise FlagsweepError(f"{t.path} changed since {whose} started; what it measures next "
                             "would not be the program it measured so far. Start a new "
                             f"{whose.split()[0]}")
    return t


def compiler(name: object, where: str, field: str) -> toolchain.Toolchain:
    """The compiler a row names, once it shows it is one (as a recipe's and --compiler do)."""
    if not isinstance(name, str) or not name:
        raise FlagsweepError(f"{where}, key '{field}': expected a compiler's name or path, got "
                             f"{quoted(name)}")
    try:
        return toolchain.resolve(name)
    except ConfigError as e:
        raise ConfigError(f"{where}, key '{field}': {e}") from None


def binary(d: model.Variant, out: Path, where: str) -> Path:
    """The binary of a stored variant, to be run: one in the run's own builds folder whose
    code its build recorded and still has. A binary elsewhere (a row can name any path), or one
    whose hash is gone, is never run: what it is cannot be known."""
    path = Path(d.build.binary or "")
    builds = out / "builds"
    if not (path.is_absolute() and path.resolve().is_relative_to(builds.resolve())):
        raise FlagsweepError(f"{where}: the binary of {d.id}, {path}, is not in the run's "
                             f"builds folder {builds} (key 'variants[{d.id}].build.binary'); "
                             "flagsweep runs only the binaries the sweep built there")
    changed = fingerprint.recheck(d.build.dump(), path)
    if changed is None:
        return path
    if not changed.recorded:
        raise FlagsweepError(f"{where}: the binary of {d.id}, {path}, {changed.state} (key "
                             f"'variants[{d.id}].build.code_sha256'); flagsweep runs only a "
                             "binary whose code its build recorded")
    what = (f"has changed since the run started (its {changed.kind} is now "
            f"{changed.now[:16]}...)" if changed.now else changed.state)
    raise FlagsweepError(f"{where}: the binary of {d.id}, {path}, {what}; the build recorded "
                         f"{changed.kind} {changed.recorded[:16]}... The remaining samples "
                         "would not time the program the sweep started with: restore its "
                         "builds folder, or start a new run")

