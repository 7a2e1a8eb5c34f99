"""A nightly series as a user runs one: each night the real tiny target built and checked,
timed through the executor seam at planted speeds (no timing real), in a store of its own.
The default reference arm, nights the sweep measured badly (an A/A arm that failed, a machine
too busy), and a night whose --metric auto chose the other time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from synthetic import Synthetic
from tiny_target import write_tiny_target

from flagsweep import files
from flagsweep.jobs import sweep
from flagsweep.across import history, merge, pick, suite
from flagsweep.compilation import selection
from flagsweep.cli import cli
from flagsweep.errors import FlagsweepError
from flagsweep.host.executor import Execution, Executor
from flagsweep.results.store import Store

pytestmark = pytest.mark.integration


@pytest.fixture
def nights(tmp_path, monkeypatch):
    """night(i, speeds, **options) -> results.json: one sweep of -O2 (and its twin, and the
    kept reference once there is one), 10 rounds; speeds by variant id (1.0 unless given)."""
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp_path / 'nightly.sqlite'}")
    tiny = write_tiny_target(tmp_path / "tiny", version="1.0", megabytes=1, quick_megabytes=1,
                             repeats=1, timeout=60)

    def night(i: int, speeds: dict[str, float], execute=None, **options) -> Path:
        t, r, m, build_opts = selection.prepare(selection.Selection(
            str(tiny), flag_sets=("-O2",), out_dir=tmp_path / f"night{i}"), lambda _: None)
        opts = sweep.MeasureOptions(**{"runs": 10, "min_runs": 10, "max_runs": 10, "warmup": 1,
                                       "seed": 3 + i, "quick": True, "metric": "cpu", **options})
        return sweep.start(t, r, m, build_opts, opts, Store(), lambda _: None,
                           execute=execute or Synthetic(speeds))
    return night


def _check(*args: str):
    return CliRunner().invoke(cli, ["history", "tiny", "--check", "--threshold", "5", *args])


def _variant(path: Path, vid: str) -> dict | None:
    return next((v for v in json.loads(path.read_text())["variants"] if v["id"] == vid), None)


def test_a_nightly_series_keeps_its_reference_arm_and_the_machines_drift_divides_out(nights):
    """The first night's baseline binary is kept; every later night measures it beside its own
    build without being asked. A night on which the whole machine runs 30% slower (every
    binary alike) is then no regression; a night on which only the program does is one."""
    first = nights(0, {})
    kept = Path(_variant(first, "gcc-O2")["build"]["binary"])
    assert _variant(first, "gcc-O2.ref") is None            # nothing kept before it
    second = nights(1, {})
    ref = _variant(second, "gcc-O2.ref")
    assert ref is not None and ref["build"]["reference_sha256"] == files.sha256_file(kept)
    # with the baseline's own flags, it is named for what it is wherever results are shown
    from flagsweep.results import names, reader
    doc = reader.load(second)
    by_id = {v.id: v for v in doc.variants}
    assert names.label(by_id["gcc-O2.ref"], doc) == "-O2 (reference)"
    assert names.label(by_id["gcc-O2"], doc) == "-O2"
    slow_machine = {"gcc-O2": 1.3, "gcc-O2.aa": 1.3, "gcc-O2.ref": 1.3}
    third = nights(2, slow_machine)
    drifted = _check()
    assert drifted.exit_code == 0, drifted.output
    assert "regression" not in drifted.output
    assert _junit(third) == {"gcc-O2": "passed"}
    (series,) = [s for s in history.collect(Store(), "tiny") if s.variant == "gcc-O2"]
    assert series.reference == ref["build"]["reference_sha256"] and len(series.points) == 3
    fourth = nights(3, {"gcc-O2": 1.3, "gcc-O2.aa": 1.3})  # the program, not the machine
    caught = _check()
    assert caught.exit_code == 1, caught.output
    assert "regression: gcc-O2 +" in caught.output
    # the run folder's junit.xml fails the same variant the gate failed, and only it
    assert _junit(fourth) == {"gcc-O2": "failure"}


def _junit(results: Path) -> dict[str, str]:
    """The run folder's junit.xml, as junitparser reads it: variant id -> outcome."""
    import junitparser

    (suite,) = list(junitparser.JUnitXml.fromfile(str(results.parent / "junit.xml")))
    return {c.name.rsplit(" [", 1)[1][:-1]:
            "failure" if c.is_failure else "skipped" if c.is_skipped else "passed" for c in suite}


def test_without_a_reference_arm_the_check_says_it_cannot_tell(nights):
    nights(0, {}, no_reference=True)
    nights(1, {}, no_reference=True)
    assert Store().reference("tiny", history.machine_key(Store().runs_of("tiny")[0].machine),
                             "gcc-O2") is None            # --no-reference keeps none either
    result = _check()
    assert result.exit_code == 3, result.output
    assert "cannot check gcc-O2: no reference arm" in result.output
    assert "drift" in result.output
    slower = nights(2, {"gcc-O2": 1.3, "gcc-O2.aa": 1.3}, no_reference=True)
    step = _check()
    assert step.exit_code == 3, step.output                # neither a pass nor a fail
    assert "slower, unconfirmed: gcc-O2 +" in step.output
    assert _junit(slower) == {"gcc-O2": "skipped"}         # and so is its junit.xml case


def test_a_night_whose_aa_arm_failed_is_neither_a_pass_nor_a_regression(nights):
    nights(0, {})
    nights(1, {})
    # The program reads 30% slower, and so does nothing else: not even its own binary again,
    # the A/A twin. The machine moved under that binary, not the program.
    shaky = nights(2, {"gcc-O2": 1.3})
    assert json.loads(shaky.read_text())["aa"]["unstable"]
    assert _junit(shaky) == {"gcc-O2": "skipped"}
    result = _check()
    assert result.exit_code == 3, result.output
    assert "regression:" not in result.output and "unconfirmed" not in result.output
    assert "A/A arm" in result.output and "unstable" in result.output
    (series,) = [s for s in history.collect(Store(), "tiny") if s.variant == "gcc-O2"]
    assert [p.run_id for p in series.unjudged] == [json.loads(shaky.read_text())["run_id"]]
    assert series.latest.verdict == "unjudged" and len(series.points) == 2


def test_a_regression_that_comes_with_a_metric_flip_is_compared_with_the_series(nights):
    nights(0, {})
    nights(1, {})
    nights(2, {})
    # --metric auto chose wall time that night (as when the program starts a thread): the
    # series measured CPU time, and every sample carries it, so the night is read in it.
    nights(3, {"gcc-O2": 1.3, "gcc-O2.aa": 1.3}, metric="wall")
    result = _check()
    assert result.exit_code == 1, result.output
    assert "regression: gcc-O2 +" in result.output
    series = [s for s in history.collect(Store(), "tiny") if s.variant == "gcc-O2"]
    assert [(s.metric, len(s.points)) for s in series] == [("cpu_s", 4)]


class Busy(Executor):
    """Every run waited for the CPU half its time: the machine is too busy to measure on."""

    def __call__(self, argv, **kw) -> Execution:
        return Execution(1.0, 0.49, 0.01, 1000, {"run_delay_s": 0.5, "steal_s": 0.0,
                                                 "on_cpu_s": 0.5}, False, None)


def test_a_sweep_stopped_as_busy_is_stored_as_busy_and_kept_out_unless_asked(nights, tmp_path):
    busy = nights(0, {}, execute=Busy(), metric="wall")
    doc = json.loads(busy.read_text())
    assert doc["status"] == "busy" and doc["stop_reason"].startswith("the machine is busy")
    assert Store().run(doc["run_id"]).status == "busy"
    # Not the first point of the target's history, and its baseline is not kept as the
    # reference later nights are measured against.
    assert history.collect(Store(), "tiny") == []
    assert Store().references_of("tiny") == {}
    result = CliRunner().invoke(cli, ["history", "tiny"])
    assert result.exit_code != 0 and "no complete sweep" in str(result.exception)
    assert [s.variant for s in history.collect(Store(), "tiny", partial=True)
            if s.points] == ["gcc-O2"]
    for refused in (lambda p: suite.load_all([p]), lambda p: merge.load_all([p, p]),
                    lambda p: pick.pick([p])):
        with pytest.raises(FlagsweepError, match=r"status busy .*--partial takes it"):
            refused(busy)
    assert suite.load_all([busy], partial=True)
    cli_suite = CliRunner().invoke(cli, ["suite", str(busy), "--out", str(tmp_path / "s")])
    assert cli_suite.exit_code != 0 and "--partial" in str(cli_suite.exception)
    partial = CliRunner().invoke(cli, ["suite", str(busy), "--partial", "--out",
                                       str(tmp_path / "s")])
    assert partial.exit_code == 0, partial.output


class Kept:
    """A store that keeps one reference row; `shared`: why others could write it."""

    def __init__(self, row: dict, shared: str | None = None):
        self.row, self.why = row, shared

    def reference(self, target, machine, baseline):
        from flagsweep.results.store import KeptReference
        return KeptReference(**{"target": target, "machine": machine, "baseline": baseline,
                                "name": "binary", "kept": 0.0, **self.row})

    def shared(self):
        return self.why


def test_a_kept_reference_is_written_under_a_fixed_name_and_only_with_its_sha256(
        tmp_path, monkeypatch):
    """The store is not trusted: its reference row named the file written into the run folder
    (a path in it wrote elsewhere), and its bytes were run whatever sha256 it was kept with."""
    import hashlib

    from flagsweep.jobs import controls
    from flagsweep.errors import ConfigError

    monkeypatch.setenv("FLAGSWEEP_CACHE", str(tmp_path / "cache"))
    data = b"\x7fELF not really"
    row = {"name": "../../escaped", "binary": data, "sha256": hashlib.sha256(data).hexdigest(),
           "run_id": "r1", "flags": ["-O2"]}
    kept = Kept(row)

    out = tmp_path / "run"
    out.mkdir()
    path, flags = controls.kept_reference(kept, "t", {}, "gcc-O2", out, lambda _: None)
    assert path == out / "reference" / "binary" and path.read_bytes() == data
    assert not (tmp_path / "escaped").exists() and flags == ["-O2"]
    row["binary"] = b"something else"
    with pytest.raises(ConfigError, match="does not have the sha256 it was kept with"):
        controls.kept_reference(kept, "t", {}, "gcc-O2", tmp_path / "run2", lambda _: None)


def test_a_store_others_can_write_never_hands_flagsweep_a_program_to_run(tmp_path, monkeypatch):
    """A shared store (PostgreSQL, a SQLite file others can write) could plant a binary with
    its own sha256 beside it: only this machine's own copy, kept when the reference was, runs."""
    import hashlib
    import os

    from flagsweep.jobs import controls

    monkeypatch.setenv("FLAGSWEEP_CACHE", str(tmp_path / "cache"))
    planted = b"#!/bin/sh\ntouch /tmp/pwned\n"
    row = {"binary": planted, "sha256": hashlib.sha256(planted).hexdigest(), "run_id": "r1",
           "flags": ["-O2"]}
    said: list[str] = []
    out = tmp_path / "run"
    assert controls.kept_reference(Kept(row, "the store is writable by every user"), "t", {},
                                   "gcc-O2", out, said.append) is None
    assert not (out / "reference").exists()
    assert "runs no program from a store others can write (the store is writable" in said[-1]
    # this machine's own copy, kept with the reference, runs
    mine = b"\x7fELF the real baseline"
    sha = hashlib.sha256(mine).hexdigest()
    copy = controls.kept_copy(sha)
    copy.parent.mkdir(parents=True)
    copy.write_bytes(mine)
    copy.chmod(0o755)
    row.update(sha256=sha)
    path, _ = controls.kept_reference(Kept(row, "shared"), "t", {}, "gcc-O2", out, said.append)
    assert path.read_bytes() == mine
    # a SQLite store says when others could write it
    db = tmp_path / "shared" / "store.sqlite"
    db.parent.mkdir()
    store = Store(f"sqlite:///{db}")
    assert store.shared() is None
    os.chmod(db, 0o666)
    assert "writable by every user" in store.shared()
