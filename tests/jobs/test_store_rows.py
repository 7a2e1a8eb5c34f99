"""A store row is data on every path: rows planted in a copy of a real store (one real sweep of
tiny and one real tune, made once for the module) choose no folder to write in, no target file,
compiler or scheduler to run, and no binary whose code the run did not record. Each door
(`run --resume`, `report RUN_ID`, `tune --resume`, a tune's resumed batch, a confirmation
writing into the run it confirms) stops with one line naming the row, the key and the check,
before anything runs or is written."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sqlite3
import sys
import threading
from pathlib import Path

import pytest
from tiny_target import TINY_SRC, write_tiny_target

from flagsweep import cli
from flagsweep.errors import Interrupted
from flagsweep.experiment import target
from flagsweep.results.store import Store
from flagsweep.tune import search, tune

MARKER_SCRIPT = "#!/bin/sh\necho planted >> {marker}\n"


def _environment(mp: pytest.MonkeyPatch, cache: Path, db: Path) -> None:
    """What the suite's isolated_cache sets for a test, for a fixture made once a module."""
    mp.setenv("FLAGSWEEP_CACHE", str(cache))
    mp.setenv("FLAGSWEEP_LOCK_DIR", str(cache))
    mp.setenv("FLAGSWEEP_DB", f"sqlite:///{db}")
    mp.setenv("XDG_CONFIG_HOME", str(cache / "config"))


@pytest.fixture(scope="module")
def swept(session_cache, tmp_path_factory) -> Path:
    """A real sweep of tiny, -O2 against -O1 in two rounds: its folder `run`, its target `tiny`
    and its store `store.sqlite` in the folder returned. Tests copy it (_copied)."""
    home = tmp_path_factory.mktemp("swept")
    tiny = write_tiny_target(home / "tiny", megabytes=0.2, quick_megabytes=0.1)
    with pytest.MonkeyPatch.context() as mp:
        _environment(mp, session_cache, home / "store.sqlite")
        mp.setattr(sys, "argv", ["flagsweep", "run", str(tiny), "--flags", "-O2", "--flags",
                                 "-O1", "--runs", "2", "--warmup", "0", "--quick",
                                 "--no-reference", "--schedule", "serial",
                                 "--out", str(home / "run")])
        with pytest.raises(SystemExit) as e:
            cli.main()
    assert e.value.code in (0, None)
    return home


class Stopped:
    """The module tune's executor: Ctrl-C at its first measured run, so the tune stops in its
    first batch's rounds with the batch built and its outputs checked."""

    def __call__(self, argv, **kw):
        raise KeyboardInterrupt


@pytest.fixture(scope="module")
def tuned(session_cache, tmp_path_factory) -> Path:
    """A real tune of tiny, interrupted in its first batch: its folder `tuned` (the tune's name)
    and its store `store.sqlite` in the folder returned. Tests copy it (_copied)."""
    home = tmp_path_factory.mktemp("tuned")
    t = target.load(str(write_tiny_target(home / "tiny", megabytes=0.2, quick_megabytes=0.1)))
    space = home / "space.toml"
    space.write_text('summary = "two"\nbase = "-O2"\n'
                     'switches = ["-funroll-loops", "-fpeel-loops"]\n')
    opts = tune.TuneOptions(space=str(space), budget_s=3600, seed=5, batch=2, trials=4,
                            layouts=2, runners_up=1,
                            measure={"max_runs": 3, "metric": "wall", "cpu": 0})
    with pytest.MonkeyPatch.context() as mp:
        _environment(mp, session_cache, home / "store.sqlite")
        with pytest.raises(Interrupted):
            tune.start(t, opts, home / "tuned", Store(), lambda _: None, execute=Stopped())
    return home


def _copied(made: Path, folder: str, tmp_path: Path, db: Path) -> Path:
    """The module's run (or tune) folder copied under tmp_path and its store into this test's
    store (`db`), every path the rows hold moved to the copy; the copy's folder."""
    out = tmp_path / folder
    shutil.copytree(made / folder, out, symlinks=True)
    with sqlite3.connect(made / "store.sqlite") as source, sqlite3.connect(db) as copy:
        source.backup(copy)
    old, new = str(made / folder), str(out)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE runs SET out_dir = replace(out_dir, ?, ?), "
                  "options = replace(options, ?, ?)", (old, new, old, new))
        c.execute("UPDATE variants SET doc = replace(doc, ?, ?)", (old, new))
        if c.execute("SELECT name FROM sqlite_master WHERE name = 'study_user_attributes'"
                     ).fetchone():
            c.execute("UPDATE study_user_attributes SET value_json = replace(value_json, ?, ?)",
                      (old, new))
    return out


def _sql(db: Path, statement: str, *args) -> list:
    with sqlite3.connect(db) as c:
        return c.execute(statement, args).fetchall()


def _run_id(db: Path) -> str:
    (run_id,), = _sql(db, "SELECT run_id FROM runs")
    return run_id


def _interrupted(db: Path, run_id: str) -> None:
    """The run as a kill leaves it: interrupted before its second round."""
    _sql(db, "UPDATE runs SET status = 'interrupted' WHERE run_id = ?", run_id)
    _sql(db, "DELETE FROM samples WHERE run_id = ? AND round >= 1", run_id)


def _planted(path: Path, marker: Path) -> str:
    """A program at path that leaves `marker` when it runs; its sha256 (what a row would record
    for a file that is not ELF)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MARKER_SCRIPT.format(marker=marker))
    path.chmod(0o755)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _set(db: Path, table: str, column: str, where: str, path: str, value, *args) -> None:
    """json_set (or json_remove, value None) of one key of a JSON column."""
    if value is None:
        _sql(db, f"UPDATE {table} SET {column} = json_remove({column}, ?) WHERE {where}",
             path, *args)
    else:
        _sql(db, f"UPDATE {table} SET {column} = json_set({column}, ?, json(?)) WHERE {where}",
             path, json.dumps(value), *args)


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("flagsweep: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return " ".join(err.split())


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


# ---- run --resume ------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["hash removed", "elsewhere"])
def test_a_resume_runs_no_binary_its_row_does_not_vouch_for(how, swept, tmp_path,
                                                             isolated_cache, main):
    """A variant whose row lost its code hash was not checked at all: the planted program in
    its place ran as root. A row may also name a binary anywhere, with the hash of whatever is
    there."""
    db = isolated_cache / "store.sqlite"
    out = _copied(swept, "run", tmp_path, db)
    run_id = _run_id(db)
    _interrupted(db, run_id)
    marker = tmp_path / "marker"
    (binary,), = _sql(db, "SELECT json_extract(doc, '$.build.binary') FROM variants "
                          "WHERE variant_id = 'gcc-O1'")
    if how == "hash removed":
        _planted(Path(binary), marker)
        _set(db, "variants", "doc", "variant_id = 'gcc-O1'", "$.build.code_sha256", None)
        expected = (f"cannot resume run {run_id}: the binary of gcc-O1, {binary}, has no "
                    "recorded code sha256 to check its code against (key "
                    "'variants[gcc-O1].build.code_sha256')")
    else:
        elsewhere = tmp_path / "elsewhere" / "tiny"
        sha = _planted(elsewhere, marker)
        _set(db, "variants", "doc", "variant_id = 'gcc-O1'", "$.build.binary", str(elsewhere))
        _set(db, "variants", "doc", "variant_id = 'gcc-O1'", "$.build.code_sha256", sha)
        expected = (f"cannot resume run {run_id}: the binary of gcc-O1, {elsewhere}, is not in "
                    f"the run's builds folder {out / 'builds'} (key "
                    "'variants[gcc-O1].build.binary')")
    left = _sql(db, "SELECT COUNT(*) FROM samples")
    code, err = main("run", "--resume", run_id)
    assert not marker.exists()
    assert code == 2 and expected in _one_line(err)
    assert _sql(db, "SELECT status FROM runs") == [("interrupted",)]
    assert _sql(db, "SELECT COUNT(*) FROM samples") == left


def test_a_resume_runs_no_target_file_others_could_write(swept, tmp_path, isolated_cache, main):
    """The target file a row names is run (its output check, its run command): one in a folder
    any user can write ran its planted roundtrip command as root."""
    db = isolated_cache / "store.sqlite"
    _copied(swept, "run", tmp_path, db)
    run_id = _run_id(db)
    _interrupted(db, run_id)
    marker = tmp_path / "marker"
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    text = (swept / "tiny" / "target.toml").read_text()
    planted = text[:text.index("[check]")] + (
        '[check]\nmethod = "roundtrip"\n'
        f'roundtrip_argv = ["/bin/sh", "-c", "echo planted >> {marker}", "{{output}}"]\n')
    (shared / "target.toml").write_text(planted)
    _set(db, "runs", "options", "1", "$.target_path", str(shared / "target.toml"))
    _set(db, "runs", "options", "1", "$.target_sha256",
         hashlib.sha256(planted.encode()).hexdigest())
    _sql(db, 'UPDATE variants SET "check" = NULL')         # so the resume checks them again
    code, err = main("run", "--resume", run_id)
    assert not marker.exists()
    assert code == 2
    assert (f"run {run_id}'s row in the store sqlite:///{db}, key 'options.target_path': the "
            f"target file {shared / 'target.toml'} is not run: {shared} is writable by every "
            "user") in _one_line(err)


def test_report_and_resume_write_into_no_folder_a_row_names(swept, tmp_path, isolated_cache,
                                                            main):
    """`report RUN_ID` (and `run --resume` of a complete run) wrote the run's files into
    whatever folder its row named: another site's index.html was replaced."""
    db = isolated_cache / "store.sqlite"
    out = _copied(swept, "run", tmp_path, db)
    run_id = _run_id(db)
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>another site</h1>\n")
    other = tmp_path / "other-run"           # another run's folder, with its own results
    other.mkdir()
    doc = json.loads((out / "results.json").read_text())
    (other / "results.json").write_text(json.dumps({**doc, "run_id": "another"}))
    (other / "index.html").write_text("<h1>another run</h1>\n")
    for victim in (site, other):
        before = _files(victim)
        _sql(db, "UPDATE runs SET out_dir = ?", str(victim))
        for args in (("report", run_id), ("run", "--resume", run_id)):
            code, err = main(*args)
            assert _files(victim) == before
            assert code == 2, err
            assert (f"run {run_id}'s row in the store sqlite:///{db}, key 'out_dir': "
                    f"'{victim}' is not the folder of run {run_id}: it holds no "
                    f"flagsweep.json (nor results.json) naming run_id '{run_id}'; flagsweep "
                    "writes a run's files only into the folder it started in"
                    ) in _one_line(err)
            assert _files(victim) == before
    # Its own folder, named by its row, is written again as before.
    _sql(db, "UPDATE runs SET out_dir = ?", str(out))
    (out / "results.json").unlink()
    code, err = main("report", run_id)
    assert code == 0, err
    assert json.loads((out / "results.json").read_text())["run_id"] == run_id


def test_a_confirmation_writes_into_no_folder_the_confirmed_runs_row_names(
        swept, tmp_path, isolated_cache, main):
    """A confirmation sweep, once done, writes the run it confirms again: into the folder that
    run's row names, which must be that run's."""
    db = isolated_cache / "store.sqlite"
    _copied(swept, "run", tmp_path, db)
    run_id = _run_id(db)
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>another site</h1>\n")
    _sql(db, "INSERT INTO runs SELECT 'confirmed', target, recipe, ?, started, finished, "
             "status, stop_reason, json_set(options, '$.confirmation', json(?)), machine "
             "FROM runs WHERE run_id = ?", str(site),
         json.dumps({"status": "running", "variant": "gcc-O1", "layouts": 4}), run_id)
    _sql(db, "INSERT INTO variants SELECT 'confirmed', variant_id, position, doc, \"check\" "
             "FROM variants WHERE run_id = ?", run_id)
    columns = ", ".join(c for _, c, *_ in _sql(db, "PRAGMA table_info(samples)")
                        if c not in ("id", "run_id"))
    _sql(db, f"INSERT INTO samples (run_id, {columns}) SELECT 'confirmed', {columns} "
             "FROM samples WHERE run_id = ?", run_id)
    _set(db, "runs", "options", "run_id = ?", "$.confirms", {"run_id": "confirmed", "began": 0},
         run_id)
    _interrupted(db, run_id)
    code, err = main("run", "--resume", run_id)
    assert _files(site) == {"index.html": b"<h1>another site</h1>\n"}
    assert code == 2
    assert (f"run confirmed's row in the store sqlite:///{db}, key 'out_dir': '{site}' is not "
            "the folder of run confirmed") in _one_line(err)


# ---- tune --resume -----------------------------------------------------------------------------

def _tune_record(db: Path) -> dict:
    """The tune's record: its study's one user attribute (tune.search.RECORD)."""
    (value,), = _sql(db, "SELECT value_json FROM study_user_attributes WHERE key = ?",
                     search.RECORD)
    return json.loads(value)


def _tune_key(db: Path, key: str, value) -> None:
    _sql(db, "UPDATE study_user_attributes SET value_json = ? WHERE key = ?",
         json.dumps({**_tune_record(db), key: value}), search.RECORD)


def _tune_value(db: Path, key: str):
    return _tune_record(db)[key]


def test_a_tune_resume_builds_no_target_file_others_could_write(tuned, tmp_path, isolated_cache,
                                                                main):
    """The target file a tune's record names is built: one in a folder any user can write had
    its Makefile run as root. `explain` refused exactly this; the resumes did not."""
    db = isolated_cache / "store.sqlite"
    _copied(tuned, "tuned", tmp_path, db)
    marker = tmp_path / "marker"
    shared = tmp_path / "shared"
    src = shared / "src"
    shutil.copytree(TINY_SRC, src, ignore=shutil.ignore_patterns("CMakeLists.txt"))
    (src / "Makefile").write_text(f"tiny: main.c kernel.c\n\techo planted >> {marker}\n"
                                  "\t$(CC) $(CFLAGS) -o $@ main.c kernel.c -lm\n")
    text = (tuned / "tiny" / "target.toml").read_text()
    text = text.replace('system = "cmake"', 'system = "make"').replace(str(TINY_SRC), str(src))
    (shared / "target.toml").write_text(text)
    shared.chmod(0o777)
    _tune_key(db, "target_path", str(shared / "target.toml"))
    _tune_key(db, "target_sha256", hashlib.sha256(text.encode()).hexdigest())
    code, err = main("tune", "--resume", "tuned")
    assert not marker.exists()
    assert code == 2
    assert (f"tune tuned's record in the store sqlite:///{db}, key 'target_path': the target "
            f"file {shared / 'target.toml'} is not run: {shared} is writable by every user"
            ) in _one_line(err)


@pytest.mark.parametrize("how", ["a folder any user can write", "a file another user owns"])
def test_a_tune_resume_builds_no_source_tree_others_could_change(how, tuned, tmp_path,
                                                                 isolated_cache, main):
    """The source tree a tune's record names (its --source-dir) is configured and built: its
    CMakeLists.txt runs as root, so every file of it must be one only root or you can change."""
    db = isolated_cache / "store.sqlite"
    _copied(tuned, "tuned", tmp_path, db)
    marker = tmp_path / "marker"
    src = tmp_path / "shared-src"
    shutil.copytree(TINY_SRC, src)
    lists = src / "CMakeLists.txt"
    lists.write_text(f'execute_process(COMMAND sh -c "echo planted >> {marker}")\n'
                     + lists.read_text())
    if how == "a folder any user can write":
        src.chmod(0o777)
        why = f"{src} is writable by every user"
    else:
        if os.geteuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(lists, 65534, 65534)
        why = f"{lists} is owned by uid 65534, not by root or by uid 0 (you)"
    _tune_key(db, "options", {**_tune_value(db, "options"), "source_dir": str(src)})
    code, err = main("tune", "--resume", "tuned")
    assert not marker.exists()
    assert code == 2
    assert (f"tune tuned's record in the store sqlite:///{db}, key 'options.source_dir': the "
            f"source tree {src} is not built: {why}") in _one_line(err)


def test_a_tune_resume_runs_only_a_compiler_that_shows_it_is_one(tuned, tmp_path,
                                                                 isolated_cache, main):
    """The compiler a tune's record names ran without the compiler check (`python3 -Q
    --help=target` ran). Here a program that logs how it is run: it may be run to show it is a
    compiler, as a typed --compiler is, and for nothing else."""
    db = isolated_cache / "store.sqlite"
    _copied(tuned, "tuned", tmp_path, db)
    log = tmp_path / "ran"
    planted = tmp_path / "bin" / "cc"
    planted.parent.mkdir()
    planted.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec /usr/bin/python3 "$@"\n')
    planted.chmod(0o755)
    space = _tune_value(db, "space")
    _tune_key(db, "space", {**space, "compiler": str(planted)})
    code, err = main("tune", "--resume", "tuned")
    assert log.read_text().splitlines() == ["-dM -E -x c -"]
    assert code == 2
    assert (f"tune tuned's record in the store sqlite:///{db}, key 'space.compiler': compiler "
            f"'{planted}' ({planted}) is not a C compiler that identifies itself as gcc or "
            "clang") in _one_line(err)


def test_a_tune_resume_writes_into_no_folder_its_record_names(tuned, tmp_path, isolated_cache,
                                                              main):
    """A tune's record chose where its resume wrote (and what it emptied: a batch's folder is
    removed before it is built again)."""
    db = isolated_cache / "store.sqlite"
    _copied(tuned, "tuned", tmp_path, db)
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>another site</h1>\n")
    _tune_key(db, "out", str(site))
    code, err = main("tune", "--resume", "tuned")
    assert _files(site) == {"index.html": b"<h1>another site</h1>\n"}
    assert code == 2
    assert (f"tune tuned's record in the store sqlite:///{db}, key 'out': '{site}' is not the "
            f"folder of tune tuned: it holds no flagsweep.json (nor tune.json) naming tune_id "
            "'tuned'") in _one_line(err)


def test_tune_resume_of_a_folder_takes_the_tune_started_there_not_one_of_its_name(
        tuned, tmp_path, isolated_cache, main):
    """`tune --resume DIR` took DIR's name alone: any folder called like a tune resumed that
    tune (and its error named an option, --budget-s, that does not exist)."""
    db = isolated_cache / "store.sqlite"
    out = _copied(tuned, "tuned", tmp_path, db)
    namesake = tmp_path / "elsewhere" / "tuned"
    namesake.mkdir(parents=True)
    code, err = main("tune", "--resume", str(namesake))
    assert code == 2
    assert (f"no tune in the store sqlite:///{db} was started in the folder {namesake} (tunes "
            "there: tuned)") in _one_line(err)
    # Its own folder finds it (a complete tune says where its tune.json is).
    _tune_key(db, "phase", "done")
    code, err = main("tune", "--resume", str(out))
    assert code == 0 and f"tune tuned is complete: {out / 'tune.json'}" in err


@pytest.mark.parametrize("key, value, expected", [
    ("seed", "5", "keys 'sampler' and 'seed': expected one of tpe, ga, random, tpe-local and "
                  "a whole number, got 'tpe' and '5'"),
    ("spent_s", "a while", "key 'spent_s': expected a valid number"),
    ("space", {"base": "-O2", "compiler": "gcc", "source": "x", "dimensions": [["-fpeel-loops"]]},
     "missing key 'space.dimensions.0.1'"),
    ("options", {"budget_s": "an hour"}, "key 'options.budget_s': expected a valid number"),
    ("options", {"measure": {"max_runs": [3]}},
     "key 'options.measure': key 'max_runs': Input should be a valid integer"),
    ("planted", "a key the record does not have", "unknown key 'planted'"),
])
def test_a_tampered_tune_record_is_one_line_naming_its_key(key, value, expected, tuned, tmp_path,
                                                           isolated_cache, main):
    db = isolated_cache / "store.sqlite"
    _copied(tuned, "tuned", tmp_path, db)
    if key == "options":
        value = {**_tune_value(db, "options"), **value}
    _tune_key(db, key, value)
    code, err = main("tune", "--resume", "tuned")
    assert code == 2
    assert f"tune tuned's record in the store sqlite:///{db}" in _one_line(err)
    assert expected in _one_line(err)


def test_a_tunes_resumed_batch_runs_no_binary_its_row_does_not_vouch_for(
        tuned, tmp_path, isolated_cache, main):
    """A tune resumes its interrupted batch's sweep: that sweep's rows are checked as any
    resumed run's."""
    db = isolated_cache / "store.sqlite"
    _copied(tuned, "tuned", tmp_path, db)
    marker = tmp_path / "marker"
    (run_id,), = _sql(db, "SELECT run_id FROM runs WHERE status = 'interrupted'")
    vid, binary = _sql(db, "SELECT variant_id, json_extract(doc, '$.build.binary') FROM "
                           "variants WHERE run_id = ? AND position > 0 AND "
                           "json_extract(doc, '$.build.identical_to') IS NULL", run_id)[0]
    _planted(Path(binary), marker)
    _set(db, "variants", "doc", "variant_id = ?", "$.build.code_sha256", None, vid)
    code, err = main("tune", "--resume", "tuned")
    assert not marker.exists()
    assert code == 2
    assert (f"cannot resume run {run_id}: the binary of {vid}, {binary}, has no recorded code "
            "sha256") in _one_line(err)


def test_a_tune_resume_connects_to_no_scheduler_its_record_names(tuned, tmp_path,
                                                                 isolated_cache, main):
    """A fleet's scheduler runs code on the driver (it sends what the driver unpickles): the
    address a record names is connected to only when the user names it again. The planted
    address here is a listener that counts who connects and hangs up on them."""
    db = isolated_cache / "store.sqlite"
    _copied(tuned, "tuned", tmp_path, db)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    callers: list = []
    done = threading.Event()

    def answer() -> None:
        while not done.is_set():
            try:
                conn, peer = listener.accept()
            except TimeoutError:
                continue
            callers.append(peer)
            conn.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    address = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    _tune_key(db, "options", {**_tune_value(db, "options"), "scheduler": address,
                              "cpu_label": "planted"})
    try:
        code, err = main("tune", "--resume", "tuned")
    finally:
        done.set()
        thread.join()
        listener.close()
    assert callers == []
    assert code == 2
    assert (f"tune tuned's record in the store sqlite:///{db}, key 'options.scheduler': "
            f"tune tuned runs on the fleet at '{address}', and flagsweep connects only to a "
            "scheduler you name") in _one_line(err)


def test_a_run_id_the_store_names_climbs_out_of_no_folder(swept, tmp_path, isolated_cache,
                                                         main):
    """merge, suite and pick write a stored run's results into OUT/runs/<run id>: a planted id
    with '..' in it wrote them outside OUT."""
    db = isolated_cache / "store.sqlite"
    out = _copied(swept, "run", tmp_path, db)
    run_id = _run_id(db)
    for table in ("runs", "variants", "samples"):
        _sql(db, f"UPDATE {table} SET run_id = '../../escaped' WHERE run_id = ?", run_id)
    (out / "results.json").unlink()
    merged = tmp_path / "merged" / "out"
    code, err = main("merge", str(out), str(out), "--out", str(merged))
    assert not os.path.lexists(tmp_path / "merged" / "escaped")
    assert code == 2
    assert (f"run '../../escaped' in the store sqlite:///{db} has an id that is not a plain "
            "folder name") in _one_line(err)
