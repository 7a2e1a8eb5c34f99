"""Faults a sweep must survive: a variant that fails to build, binaries removed or changed
before a resume, option values that mean nothing, a results file that cannot be written. Each
ends in a clear message and a run that is complete, failed or resumable, never stuck `running`
and never a traceback."""

from __future__ import annotations

import csv
import html
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
import procs
from tiny_target import TINY_SRC, write_tiny_target

from flagsweep import cli, files

pytestmark = pytest.mark.integration      # every sweep here builds tiny for real

# Compiles, then ld finds no such library (a flag the flag rule accepts: -lNAME).
BAD_LINK = "-O2 -lflagsweep_no_such_library"


@pytest.fixture
def tiny(tmp_path) -> Path:
    return write_tiny_target(tmp_path / "tiny")


def _flags(*sets: str) -> list[str]:
    return [a for s in sets for a in ("--flags", s)]


def _by_flags(out: Path) -> dict[str, dict]:
    doc = json.loads((out / "results.json").read_text())
    return {" ".join(v["flags"]) + (" aa" if v.get("aa_of") else ""): v for v in doc["variants"]}


def _run(db: Path, out: Path) -> tuple[str, str]:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT run_id, status FROM runs WHERE out_dir = ? ORDER BY started DESC",
                         (str(out),)).fetchone()


def _interrupt(db: Path, run_id: str, from_round: int) -> int:
    """Make a finished run look interrupted before `from_round`; returns the samples left."""
    with sqlite3.connect(db) as c:
        c.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", (run_id,))
        c.execute("DELETE FROM samples WHERE run_id = ? AND round >= ?", (run_id, from_round))
        return c.execute("SELECT COUNT(*) FROM samples WHERE run_id = ?", (run_id,)).fetchone()[0]


def _samples(db: Path, run_id: str) -> int:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT COUNT(*) FROM samples WHERE run_id = ?", (run_id,)).fetchone()[0]


def _assert_failed_link_recorded(out: Path, stderr: str) -> dict:
    """The variant that did not link: failed with ld's reason, never checked or timed."""
    v = _by_flags(out)
    broken = v[BAD_LINK]
    assert broken["build"]["status"] == "failed"
    assert "ld returned 1 exit status" in broken["build"]["detail"]
    assert broken["vs_baseline"]["verdict"] == "not-measured"
    assert broken["vs_baseline"]["why"].startswith("build failed: ")
    # ld's own line names the cause; gcc's "collect2: ... ld returned 1" after it does not.
    assert "cannot find -lflagsweep_no_such_library" in broken["vs_baseline"]["why"]
    assert broken["check"] is None and broken["summary"]["n"] == 0 and broken["failures"] == []
    rows = list(csv.DictReader(open(out / "samples.csv")))
    assert rows and broken["id"] not in {r["variant"] for r in rows}
    warning = f"Build failed for {broken['id']} (build failed: "
    assert warning in stderr and warning in (out / "index.html").read_text()
    return v


def test_a_variant_that_fails_to_link_is_recorded_and_the_others_measured(tiny, tmp_path,
                                                                           isolated_cache, main):
    out, db = tmp_path / "run", isolated_cache / "store.sqlite"
    code, err = main("run", str(tiny), *_flags("-O2", BAD_LINK, "-O1"), "--runs", "2",
                     "--warmup", "0", "--quick", "--seed", "3", "--schedule", "serial",
                     "--out", str(out))   # a round's three runs, counted below
    assert code == 0, err
    v = _assert_failed_link_recorded(out, err)
    assert json.loads((out / "results.json").read_text())["status"] == "complete"
    assert v["-O1"]["summary"]["n"] == 2 and v["-O1"]["vs_baseline"]["n_pairs"] == 2
    assert v["-O2"]["summary"]["n"] == 2 and v["-O2 aa"]["summary"]["n"] == 2
    # Resumed, the failed variant is skipped again and the others get their missing round.
    run_id, _ = _run(db, out)
    left = _interrupt(db, run_id, from_round=1)
    code, err = main("run", "--resume", run_id)
    assert code == 0, err
    v = _assert_failed_link_recorded(out, err)
    assert _run(db, out) == (run_id, "complete")
    assert v["-O1"]["summary"]["n"] == 2 and _samples(db, run_id) == left + 3


def test_a_make_built_variant_that_fails_to_link_is_recorded_too(tmp_path, main):
    """The same with plain make: the link error comes out of make, not CMake."""
    src = tmp_path / "mk" / "src"
    shutil.copytree(TINY_SRC, src, ignore=shutil.ignore_patterns("CMakeLists.txt"))
    (src / "Makefile").write_text("tiny: main.o kernel.o\n\t$(CC) $(CFLAGS) -o $@ main.o kernel.o -lm\n"
                                  "%.o: %.c kernel.h\n\t$(CC) $(CFLAGS) -c $< -o $@\n")
    target = write_tiny_target(tmp_path / "t", name="tinymake").joinpath("target.toml")
    target.write_text(target.read_text().replace('system = "cmake"', 'system = "make"')
                      .replace(f'path = "{TINY_SRC}"', f'path = "{src}"'))
    out = tmp_path / "run"
    code, err = main("run", str(target), *_flags("-O2", BAD_LINK), "--runs", "1",
                     "--warmup", "0", "--quick", "--schedule", "serial", "--out", str(out))
    assert code == 0, err
    v = _assert_failed_link_recorded(out, err)
    assert v["-O2"]["summary"]["n"] == 1


def test_a_failed_baseline_fails_the_run_with_its_reason(tiny, tmp_path, isolated_cache, main):
    out = tmp_path / "run"
    code, err = main("run", str(tiny), *_flags(BAD_LINK, "-O1"), "--runs", "1", "--quick",
                     "--out", str(out))
    assert code == 2
    assert "flagsweep: the baseline gcc-O2-lflagsweep_no_such_library" in err
    assert "did not build (failed: " in err and "ld: cannot find -lflagsweep_no_such_library" in err
    doc = json.loads((out / "results.json").read_text())
    assert doc["status"] == "failed" and "did not build" in doc["stop_reason"]
    assert _run(isolated_cache / "store.sqlite", out)[1] == "failed"


def test_resume_reverifies_each_binary_against_its_recorded_code(tiny, tmp_path, isolated_cache,
                                                                 main):
    out, db = tmp_path / "run", isolated_cache / "store.sqlite"
    assert main("run", str(tiny), *_flags("-O2", "-O1"), "--runs", "2", "--warmup", "0",
                "--quick", "--schedule", "serial", "--out", str(out))[0] == 0
    v = _by_flags(out)
    o1, o2 = Path(v["-O1"]["build"]["binary"]), Path(v["-O2"]["build"]["binary"])
    recorded = v["-O1"]["build"]["code_sha256"][:16]
    run_id, _ = _run(db, out)
    left = _interrupt(db, run_id, from_round=1)
    o1.rename(o1.with_name("kept"))          # removed, as a cleaned builds folder has it
    code, err = main("run", "--resume", run_id)
    assert code == 2
    assert (f"cannot resume run {run_id}: the binary of gcc-O1, {o1}, is missing; the build "
            f"recorded code sha256 {recorded}...") in err
    shutil.copy2(o2, o1)                     # another program where the variant's binary was
    code, err = main("run", "--resume", run_id)
    assert code == 2
    assert f"the binary of gcc-O1, {o1}, has changed since the run started" in err
    # Neither attempt measured anything or closed the run: it is still there to resume.
    assert _run(db, out) == (run_id, "interrupted") and _samples(db, run_id) == left
    o1.with_name("kept").replace(o1)
    assert main("run", "--resume", run_id)[0] == 0
    v = _by_flags(out)
    assert _run(db, out) == (run_id, "complete") and v["-O1"]["summary"]["n"] == 2
    assert v["-O1"]["failures"] == []


@pytest.mark.parametrize("option, value, expected", [
    ("--seed", "-1", "-1 is not in the range 0<=x<=9223372036854775807"),
    ("--threshold", "nan", "'nan' is not a finite number"),
    ("--threshold", "-inf", "-inf is not in the range 0.01<=x<100"),
    ("--threshold", "100", "100.0 is not in the range 0.01<=x<100"),
    ("--precision", "nan", "'nan' is not a finite number"),
    ("--budget", "inf", "'inf' is not a finite number"),
    ("--out", "", "an empty path is not a folder"),
    ("--source-dir", " ", "an empty path is not a folder"),
    ("--jobs", "99999999999", "99999999999 is not in the range 1<=x<=4096"),
    # bounds that held before the rest were added
    ("--runs", "0", "0 is not in the range x>=1"),
    ("--warmup", "-1", "-1 is not in the range x>=0"),
    ("--cpu", "-1", "-1 is not in the range x>=0"),
])
def test_meaningless_option_values_are_refused_before_any_work(tiny, tmp_path, option, value,
                                                                expected):
    args = ["run", str(tiny), "--flags", "-O2", "--quick", option, value]
    if option != "--out":
        args += ["--out", str(tmp_path / "run")]
    result = CliRunner().invoke(cli.cli, args)
    assert result.exit_code == 2
    assert f"Invalid value for '{option}'" in result.output and expected in result.output
    assert not (tmp_path / "run").exists() and not Path("builds").exists()


@pytest.mark.breaks_contract   # an empty "{}" stands where a folder is expected
def test_an_existing_file_is_no_output_folder(tmp_path):
    results = tmp_path / "results.json"
    results.write_text("{}")
    for args in (["run", "tiny", "--out", str(results)],
                 ["merge", str(results), str(results), "--out", str(results)],
                 ["report", str(results), "--out", str(results)]):
        result = CliRunner().invoke(cli.cli, args)
        assert result.exit_code == 2
        assert f"Invalid value for '--out': Directory '{results}' is a file" in result.output


@pytest.mark.parametrize("command", ["pick", "suite", "history"])
def test_other_commands_refuse_a_threshold_that_is_not_a_number(command, tmp_path):
    args = [command, "x", "--threshold", "nan"] + (["--out", str(tmp_path)]
                                                    if command == "suite" else [])
    result = CliRunner().invoke(cli.cli, args)
    assert result.exit_code == 2
    assert "Invalid value for '--threshold': 'nan' is not a finite number" in result.output


def test_an_unbalanced_quote_in_flags_names_the_flag(tiny, tmp_path, main):
    code, err = main("run", str(tiny), *_flags("-O2", "-O2 '-DX"), "--out", str(tmp_path / "r"))
    assert code == 2
    assert err.splitlines()[-1].startswith("flagsweep: --flags \"-O2 '-DX\": no closing "
                                           "quotation; quote flags as in a shell")
    assert not (tmp_path / "r").exists()


def test_an_unbalanced_quote_in_a_recipe_names_the_key(tmp_path):
    from flagsweep.errors import ConfigError
    from flagsweep.experiment import recipe

    path = tmp_path / "r.toml"
    path.write_text('summary = "s"\nbaseline = { opt = "-O2" }\n[axes]\nopt = ["-O2", "-O3 \\"-DX"]\n')
    with pytest.raises(ConfigError, match=r"key 'axes': '-O3 \"-DX': no closing quotation"):
        recipe.load(str(path))
    path.write_text('summary = "s"\nbaseline = { flags = "-O2" }\n'
                    '[[include]]\nflags = "-O2"\nfactors = { flags = "-O2" }\n'
                    '[[include]]\nflags = "-O3 \\\\"\nfactors = { flags = "x" }\n')
    with pytest.raises(ConfigError, match=r"include.*'-O3 \\\\': no escaped character"):
        recipe.load(str(path))


def test_results_that_cannot_be_written_leave_the_run_failed_and_resumable(tiny, tmp_path,
                                                                           isolated_cache, main):
    """A complete run is one with its results.json: when writing it fails, the run is marked
    failed with the reason, keeps every sample, and a resume writes the results."""
    out, db = tmp_path / "run", isolated_cache / "store.sqlite"
    assert main("run", str(tiny), "--flags", "-O2", "--runs", "2", "--warmup", "0", "--quick",
                "--schedule", "serial", "--out", str(out))[0] == 0
    run_id, _ = _run(db, out)
    taken = _interrupt(db, run_id, from_round=9)       # every sample kept
    (out / "results.json").unlink()
    (out / "results.json").mkdir()                     # no file can be renamed over it
    code, err = main("run", "--resume", run_id)
    assert code == 2
    assert (f"flagsweep: run {run_id}: every sample is taken, but results.json was not written "
            f"(cannot write {out / 'results.json'}: Is a directory)") in err
    assert f"`flagsweep run --resume {run_id}` writes the results" in err
    assert _run(db, out) == (run_id, "failed") and (out / "results.json").is_dir()
    (out / "results.json").rmdir()
    assert main("run", "--resume", run_id)[0] == 0
    assert _run(db, out) == (run_id, "complete") and _samples(db, run_id) == taken
    assert json.loads((out / "results.json").read_text())["status"] == "complete"
    # A run recorded with a seed flagsweep no longer takes (older versions took --seed -1):
    # merge, which writes a run named by id from the store, names it instead of crashing.
    from flagsweep.results import store
    db_store = store.Store()
    db_store.set_option(run_id, "measure", {**db_store.run(run_id).options.measure,
                                            "seed": -1})
    code, err = main("merge", run_id, str(out), "--out", str(tmp_path / "m"))
    assert code == 2
    assert (f"flagsweep: {run_id}: the results of run {run_id} (status complete) cannot be "
            "written from the store") in err
    assert "ValueError: expected non-negative integer" in err


def test_an_unexpected_error_while_measuring_leaves_the_run_failed_not_running(
        tiny, tmp_path, isolated_cache, main, monkeypatch):
    """Not only flagsweep's own errors: whatever stops the rounds marks the run failed with the
    reason (it stayed `running` when --seed -1 crashed the stopping rule), samples kept."""
    out, db = tmp_path / "run", isolated_cache / "store.sqlite"
    assert main("run", str(tiny), "--flags", "-O2", "--runs", "2", "--warmup", "0", "--quick",
                "--schedule", "serial", "--out", str(out))[0] == 0
    run_id, _ = _run(db, out)
    left = _interrupt(db, run_id, from_round=1)
    shutil.rmtree(out / "scratch", ignore_errors=True)    # a complete run leaves none
    (out / "scratch").write_text("")         # where every timed run writes its output
    code, err = main("run", "--resume", run_id)    # and no traceback: main() asserts it
    assert code == 2 and f"flagsweep: {out / 'scratch'}" in err
    with sqlite3.connect(db) as c:
        status, reason = c.execute("SELECT status, stop_reason FROM runs WHERE run_id = ?",
                                   (run_id,)).fetchone()
    assert status == "failed" and "scratch" in reason and _samples(db, run_id) == left
    (out / "scratch").unlink()
    assert main("run", "--resume", run_id)[0] == 0 and _run(db, out) == (run_id, "complete")


def test_sigterm_while_building_ends_the_build_and_says_how_to_go_on(tmp_path, isolated_cache):
    """SIGTERM before any run exists: no traceback or click's bare "Aborted!", the build's own
    processes end with flagsweep, and the message says the folder cannot be reused."""
    import signal
    import time

    src = tmp_path / "mk" / "src"
    shutil.copytree(TINY_SRC, src, ignore=shutil.ignore_patterns("CMakeLists.txt"))
    started = tmp_path / "compiling.pid"
    # Each compile step appends its shell's pid, then sleeps: a build still running when the
    # signal comes. Appended, since make runs the two compiles at once and one must not
    # truncate what the other wrote.
    (src / "Makefile").write_text(
        "tiny: main.o kernel.o\n\t$(CC) $(CFLAGS) -o $@ main.o kernel.o -lm\n"
        f"%.o: %.c kernel.h\n\techo $$$$ >> {started}; sleep 60\n\t$(CC) $(CFLAGS) -c $< -o $@\n")
    target = write_tiny_target(tmp_path / "t", name="tinyslow").joinpath("target.toml")
    target.write_text(target.read_text().replace('system = "cmake"', 'system = "make"')
                      .replace(f'path = "{TINY_SRC}"', f'path = "{src}"'))
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "flagsweep", "run", str(target), "--flags",
                             "-O2", "--runs", "1", "--quick", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _written_pids(started):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "Traceback" not in err and "Aborted!" not in err
    assert "interrupted before measuring; no run was recorded" in err and str(out) in err
    assert not any(procs.alive(pid) for pid in _written_pids(started))


def _written_pids(path: Path) -> list[int]:
    """The pids whole lines of `path` hold (a line still being written is not one yet)."""
    text = path.read_text() if path.exists() else ""
    return [int(line) for line in text.split("\n")[:-1] if line.strip()]


# A program that, in a timed run of the variant built with -DSWAP (flagsweep pads the timed
# runs' environment, not the check's), renames another program over its own binary: every
# later sample of that variant times /bin/sh doing nothing.
SWAPPING_SRC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int main(int argc, char **argv)
{
    double x = 0;
    for (long i = 1; i < 3000000; i++)
        x += 1.0 / (double)i;
#ifdef SWAP
    if (getenv("FLAGSWEEP_PAD")) {
        char other[4096];
        snprintf(other, sizeof other, "%s.other", argv[0]);
        FILE *f = fopen(other, "w");
        fputs("#!/bin/sh\nexit 0\n", f);
        fclose(f);
        chmod(other, 0755);
        rename(other, argv[0]);
    }
#endif
    printf("%.6f\n", x);
    return 0;
}
"""


def _swapping_target(folder: Path) -> Path:
    src = folder / "src"
    src.mkdir(parents=True)
    (src / "prog.c").write_text(SWAPPING_SRC)
    (src / "Makefile").write_text("prog: prog.c\n\t$(CC) $(CFLAGS) -o prog prog.c\n")
    (folder / "target.toml").write_text(
        'summary = "a program that replaces its own binary"\nversion = "1"\nname = "swapper"\n'
        '[source]\npath = "src"\n[build]\nsystem = "make"\nbinary = "prog"\n'
        '[inputs]\nkind = "corpus"\nmegabytes = 0.1\nquick_megabytes = 0.1\n'
        '[run]\nargv = ["{binary}"]\nstdout = "compared"\ntimeout = 20\n[check]\nmethod = "exact"\n')
    return folder


def test_a_binary_replaced_during_the_rounds_gets_no_verdict(tmp_path, isolated_cache, main):
    """The workload of `-O1 -DSWAP` renames a shell script over its own binary in its first
    timed run. Its samples after that timed the script (about 100% faster), and the sweep
    used to call it faster and recommend it, with the old code hash in results.json."""
    out = tmp_path / "run"
    code, err = main("run", str(_swapping_target(tmp_path / "t")), *_flags("-O2", "-O1 -DSWAP"),
                     "--runs", "3", "--warmup", "0", "--quick", "--out", str(out),
                     # CPU time, serial: a loaded machine cannot stop it busy (exit 3)
                     "--metric", "cpu", "--schedule", "serial")
    assert code == 0, err
    doc = json.loads((out / "results.json").read_text())
    v = _by_flags(out)
    swapped = v["-O1 -DSWAP"]
    binary, recorded = swapped["build"]["binary"], swapped["build"]["code_sha256"]
    now = files.sha256_file(Path(binary))           # the script: not ELF, hashed whole
    assert swapped["replaced"] == {
        "binary": binary, "recorded_sha256": recorded, "now_sha256": now,
        "why": f"its binary {binary} now has code sha256 {now[:16]}..., but its build "
               f"recorded code sha256 {recorded[:16]}..."}
    assert swapped["vs_baseline"]["verdict"] == "not-measured"
    assert swapped["vs_baseline"]["why"].startswith(
        f"replaced during the sweep: its binary {binary} now has code sha256 {now[:16]}")
    assert swapped["summary"]["n"] == 3              # what was timed is kept, not judged
    rec = doc["recommendation"]
    assert rec["variant"] != swapped["id"] and swapped["id"] in rec["why"]
    assert f"warning: {swapped['id']}: its binary {binary} now has code sha256" in err
    flat = " ".join(err.split())                     # the terminal wraps long lines
    assert f"no verdict for {swapped['id']} (its binary {binary}" in flat
    page = (out / "index.html").read_text()
    assert f"no verdict for {swapped['id']} (its binary {html.escape(binary)}" in page
    # The baseline and its twin were left alone and are judged as ever.
    assert v["-O2 aa"]["vs_baseline"]["verdict"] != "not-measured"


def _explainable(tiny, tmp_path, main) -> tuple[Path, dict, dict]:
    """A finished -O2/-O1 sweep's results.json, its document and its -O1 entry, given a
    verdict to explain whatever the timing said."""
    out = tmp_path / "run"
    assert main("run", str(tiny), *_flags("-O2", "-O1"), "--runs", "2", "--warmup", "0",
                "--quick", "--schedule", "serial", "--out", str(out))[0] == 0
    path = out / "results.json"
    doc = json.loads(path.read_text())
    o1 = next(v for v in doc["variants"] if v["flags"] == ["-O1"])
    o1["vs_baseline"]["verdict"] = "faster"
    return path, doc, o1


def test_explain_refuses_a_variant_whose_binary_was_swapped(tiny, tmp_path, isolated_cache,
                                                            main):
    """`explain` profiled whatever stood at a variant's path: a -57.5% variant whose binary
    had been swapped was explained as "no function changed"."""
    path, doc, o1 = _explainable(tiny, tmp_path, main)
    base = next(v for v in doc["variants"] if v["id"] == doc["baseline"])
    path.write_text(json.dumps(doc))
    shutil.copy2(base["build"]["binary"], o1["build"]["binary"])   # another program in its place
    code, err = main("explain", str(path), "--with", "cachegrind", "--no-remarks")
    assert code == 0, err
    entry = json.loads(path.read_text())
    entry = next(v for v in entry["variants"] if v["id"] == o1["id"])["explain"]
    recorded, now = o1["build"]["code_sha256"], base["build"]["code_sha256"]
    assert entry["status"] == "failed"
    assert entry["failure"] == (
        f"{o1['id']} is not profiled: its binary {o1['build']['binary']} now has code sha256 "
        f"{now[:16]}..., but its build recorded code sha256 {recorded[:16]}... (key "
        f"'variants[{o1['id']}].build.code_sha256'); it is not the program the sweep timed")
    assert f"explain: {o1['id']}: {o1['id']} is not profiled" in err


# flagsweep, killed by SIGKILL the moment it starts writing results.json: the window between
# the last round and the files, reproduced exactly.
KILLED_WHEN_WRITING = """
import os, signal, sys
from flagsweep import cli
from flagsweep.results import writer

writer.write = lambda *args, **kw: os.kill(os.getpid(), signal.SIGKILL)
sys.argv = ["flagsweep", *sys.argv[1:]]
cli.main()
"""


def test_a_kill_between_the_last_round_and_the_files_leaves_a_run_that_resumes(
        tiny, tmp_path, isolated_cache, main):
    """The run used to be marked complete before its files were written: killed in between,
    it stayed complete with no results.json, and `--resume` said "already complete"."""
    out, db = tmp_path / "run", isolated_cache / "store.sqlite"
    killed = subprocess.run([sys.executable, "-c", KILLED_WHEN_WRITING, "run", str(tiny),
                             *_flags("-O2", "-O1"), "--runs", "2", "--warmup", "0", "--quick",
                             "--schedule", "serial", "--out", str(out)],
                            capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr
    assert not (out / "results.json").exists()
    run_id, status = _run(db, out)
    assert status != "complete"
    taken = _samples(db, run_id)
    code, err = main("run", "--resume", run_id)
    assert code == 0, err
    doc = json.loads((out / "results.json").read_text())
    assert doc["status"] == "complete" and _run(db, out) == (run_id, "complete")
    assert _samples(db, run_id) == taken                 # nothing measured twice, nothing lost
    assert all(v["summary"]["n"] == 2 for v in doc["variants"])


def test_the_results_of_a_complete_run_are_written_again_from_the_store(
        tiny, tmp_path, isolated_cache, main):
    """A complete run whose results.json is gone (a kill before the files, with an older
    flagsweep; a folder cleaned by hand): `report RUN_ID` and `run --resume RUN_ID` write it
    from the store, which holds every sample. Both used to refuse."""
    out, db = tmp_path / "run", isolated_cache / "store.sqlite"
    assert main("run", str(tiny), *_flags("-O2", "-O1"), "--runs", "2", "--warmup", "0",
                "--quick", "--schedule", "serial", "--out", str(out))[0] == 0
    first = json.loads((out / "results.json").read_text())
    run_id, _ = _run(db, out)
    for written in ("results.json", "samples.csv", "index.html"):
        (out / written).unlink()
    code, err = main("report", run_id)
    assert code == 0, err
    assert f"run {run_id} is complete, but {out / 'results.json'} is missing: written again " \
           "from the store" in " ".join(err.split())
    again = json.loads((out / "results.json").read_text())
    assert again["status"] == "complete" and (out / "samples.csv").is_file()
    assert (out / "index.html").is_file()
    assert [v["summary"] for v in again["variants"]] == [v["summary"] for v in first["variants"]]
    (out / "results.json").unlink()
    code, err = main("run", "--resume", run_id)
    assert code == 0, err
    assert json.loads((out / "results.json").read_text())["status"] == "complete"
    assert _run(db, out) == (run_id, "complete")
    # With its results.json in place, a complete run is not resumed again.
    code, err = main("run", "--resume", run_id)
    assert code == 2 and f"run {run_id} is already complete" in err


def test_explain_of_a_hostile_results_folder_runs_nothing_it_names(tiny, tmp_path,
                                                                   isolated_cache, main):
    """A results folder can come from anyone: explain ran the binary its results.json named
    (an absolute path anywhere), the run command of any target file it named, and wrote its
    profiles through an `explain` link planted in the folder."""
    path, clean, o1 = _explainable(tiny, tmp_path, main)
    out = path.parent

    elsewhere = tmp_path / "elsewhere"          # the same program, outside the folder
    elsewhere.mkdir()
    shutil.copy2(o1["build"]["binary"], elsewhere / "prog")
    doc = json.loads(json.dumps(clean))
    next(v for v in doc["variants"] if v["id"] == o1["id"])["build"]["binary"] = \
        str(elsewhere / "prog")
    path.write_text(json.dumps(doc))
    assert main("explain", str(path), "--with", "cachegrind", "--no-remarks")[0] == 0
    entry = next(v for v in json.loads(path.read_text())["variants"] if v["id"] == o1["id"])
    assert entry["explain"]["status"] == "failed"
    assert "is outside the results folder" in entry["explain"]["failure"]

    # A target file another user could have written (a world-writable folder, no sticky bit).
    shared = tmp_path / "shared"
    shutil.copytree(Path(clean["workload"]["target_file"]).parent, shared)
    shared.chmod(0o777)
    doc = json.loads(json.dumps(clean))
    doc["workload"]["target_file"] = str(shared / "target.toml")
    path.write_text(json.dumps(doc))
    code, err = main("explain", str(path), "--with", "cachegrind", "--no-remarks")
    assert code == 2 and "Traceback" not in err
    assert f"the target file {shared / 'target.toml'} (key 'workload.target_file') is not " \
           f"run: {shared} is writable by every user" in err

    victim = tmp_path / "victim"
    victim.mkdir()
    shutil.rmtree(out / "explain")                  # the first explain's profiles
    (out / "explain").symlink_to(victim)
    path.write_text(json.dumps(clean))
    code, err = main("explain", str(path), "--with", "cachegrind", "--no-remarks")
    assert code == 2 and f"{out / 'explain'} is a symbolic link" in err
    assert list(victim.iterdir()) == []
