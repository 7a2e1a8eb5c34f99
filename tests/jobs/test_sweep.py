"""`flagsweep run` end to end on the tiny target: broken variants show up as such, an interrupted
sweep (kill -9, SIGTERM) keeps every sample and resumes without loss or duplication, and two
sweeps never measure at once."""

from __future__ import annotations

import csv
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny_target import write_tiny_target

from flagsweep.host.lock import MeasureLock

pytestmark = pytest.mark.integration


@pytest.fixture
def tiny(tmp_path) -> Path:
    """The tiny target with a short timeout, so a hanging variant costs seconds, not a minute."""
    return write_tiny_target(tmp_path / "tiny")


@pytest.fixture
def flagsweep(main):
    """`flagsweep ARGS` run in this process as the script runs it (the `main` fixture), returned
    as a finished process: an interpreter start per call tests nothing these tests ask. A test
    about a process of its own (a signal, a sweep waiting beside another) starts one instead."""
    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        code, err = main(*args)
        if check and code != 0:
            raise AssertionError(f"flagsweep {' '.join(args)} exited {code}:\n{err[-3000:]}")
        return subprocess.CompletedProcess(["flagsweep", *args], code, main.out, err)
    return run


def _flags(*sets: str) -> list[str]:
    return [a for s in sets for a in ("--flags", s)]


def _results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def _by_id(doc: dict) -> dict[str, dict]:
    return {v["id"]: v for v in doc["variants"]}


def test_crash_hang_and_wrong_output_show_up_as_such(tiny, tmp_path, flagsweep):
    out = tmp_path / "run"
    result = flagsweep("run", str(tiny), *_flags("-O2", "-O2 -DTINY_CRASH", "-O2 -DTINY_HANG",
                                                 "-O2 -DTINY_WRONG", "-O2 -mfpmath=sse"),
                       "--runs", "3", "--warmup", "0", "--quick", "--seed", "11",
                       "--schedule", "serial", "--no-confirm", "--out", str(out))
    doc = _results(out)
    # The run ends with the report's path; the verdicts table went to stderr.
    assert result.stdout.splitlines()[-1] == str(out.resolve() / "index.html")
    assert (out / "summary.md").exists() and "crashed: SIGSEGV" in (out / "index.html").read_text()
    assert "recommendation:" in result.stderr
    v = _by_id(doc)
    assert doc["schema"] == "flagsweep/2" and doc["status"] == "complete"
    assert v["gcc-O2"]["check"]["status"] == "ok" and v["gcc-O2"]["summary"]["n"] == 3
    crash = v["gcc-O2-DTINY_CRASH"]
    assert crash["check"]["status"] == "failed"
    assert "crashed: SIGSEGV" in crash["check"]["detail"] and crash["summary"]["n"] == 0
    hang = v["gcc-O2-DTINY_HANG"]
    assert hang["check"]["status"] == "failed"
    assert "timeout after 3 s (killed)" in hang["check"]["detail"] and hang["summary"]["n"] == 0
    wrong = v["gcc-O2-DTINY_WRONG"]
    assert wrong["check"]["status"] == "differs"  # shown, and by default still timed
    assert "differs by" in wrong["check"]["detail"] and wrong["summary"]["n"] == 3
    same = v["gcc-O2-mfpmath-sse"]
    assert same["build"]["identical_to"] == "gcc-O2" and same["summary"]["n"] == 0
    assert same["check"]["detail"] == "identical code to gcc-O2: reference output (the baseline's)"
    assert same["check"]["status"] == "ok"
    assert wrong["check"]["output_sha256"] != v["gcc-O2"]["check"]["output_sha256"]
    # Every counted sample came from a shuffled round on the pinned CPU; --metric auto takes
    # its one warmup round even with --warmup 0; a run the machine disturbed is kept as well.
    rows = list(csv.DictReader(open(out / "samples.csv")))
    counted = [r for r in rows if r["warmup"] == "0" and r["retaken"] == "0"]
    assert len(counted) == 3 * 3   # (O2, WRONG, O2's A/A twin) x three rounds
    assert sorted(r["round"] for r in rows if r["warmup"] == "1") == ["-1"] * 3
    assert len(rows) == 3 * 4 + doc["measurement"]["retaken"]
    # tiny runs on one thread and only computes, but whether its one probe run shows that is up
    # to the machine (a busy CI runner can block it); metric.choose's rule is tested on planted
    # samples in tests/measure. Here: the metric is the recorded choice, and it says why.
    choice = doc["measurement"]["metric_choice"]
    assert doc["metric"] == {"cpu": "cpu_s", "wall": "wall_s"}[choice["metric"]]
    assert choice["why"].startswith("CPU time" if choice["metric"] == "cpu" else "wall time: ")
    assert doc["machine"]["pinned_cpu"] == doc["measurement"]["cpu"]
    assert doc["workload"]["argv"] == ["{binary}", "{input}", "2"]


def test_strict_check_does_not_time_wrong_output(tiny, tmp_path, flagsweep):
    out = tmp_path / "run"
    # The default --schedule auto, end to end with the real launcher (the other sweeps here
    # are serial, so as not to pay for a pilot they do not test): chosen, and said why.
    result = flagsweep("run", str(tiny), *_flags("-O2", "-O2 -DTINY_WRONG"), "--runs", "2",
                       "--warmup", "0", "--quick", "--strict-check", "--out", str(out))
    assert _results(out)["measurement"]["schedule"]["asked"] == "auto"
    assert "schedule: " in result.stderr
    v = _by_id(_results(out))
    assert v["gcc-O2-DTINY_WRONG"]["check"]["status"] == "differs"
    assert v["gcc-O2-DTINY_WRONG"]["summary"]["n"] == 0 and v["gcc-O2"]["summary"]["n"] == 2


def _samples(db: Path, run_id: str) -> list[tuple]:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT variant_id, round, taken_at FROM samples WHERE run_id = ?",
                         (run_id,)).fetchall()


def _run_id(db: Path, out: Path) -> str:
    """The id the sweep writing into `out` was given (it registers before it measures)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(db) as c:
                row = c.execute("SELECT run_id FROM runs WHERE out_dir = ?", (str(out),)).fetchone()
            if row:
                return row[0]
        except sqlite3.OperationalError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"no run registered for {out}")


def _wait_for_samples(db: Path, run_id: str, n: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        try:
            if len(_samples(db, run_id)) >= n:
                return
        except sqlite3.OperationalError:
            pass  # the table does not exist yet
        time.sleep(0.05)
    raise AssertionError("the sweep took no samples")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_interrupted_sweep_resumes_without_loss_or_duplicates(tiny, tmp_path, how, isolated_cache,
                                                              flagsweep):
    db = isolated_cache / "store.sqlite"
    out = tmp_path / f"run-{how.name}"
    proc = subprocess.Popen([sys.executable, "-m", "flagsweep", "run", str(tiny),
                             *_flags("-O2", "-O1"), "--runs", "8", "--warmup", "1", "--quick",
                             "--schedule", "serial",      # duets resume: test_duet_sweep.py
                             # -O1 against -O2 can read faster or slower by chance, and then
                             # the resumed sweep confirms it over 16 layouts (a minute and
                             # more): the confirmation's resume is test_confirmation.py's
                             "--no-confirm",
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    run_id = _run_id(db, out)
    _wait_for_samples(db, run_id, 5, proc)
    proc.send_signal(how)
    _, err = proc.communicate(timeout=60)
    before = _samples(db, run_id)
    assert 5 <= len(before) < 3 * 9
    if how == signal.SIGTERM:  # a clean stop: marked, files written, told how to go on
        assert proc.returncode == 2
        assert f"flagsweep run --resume {run_id}" in err
        assert _results(out)["status"] == "interrupted"
        assert "The sweep is interrupted" in (out / "index.html").read_text()
    resumed = flagsweep("run", "--resume", str(out) if how == signal.SIGKILL else run_id,
                        check=False)                                        # either works
    after = _samples(db, run_id)
    assert set(before) <= set(after)  # nothing lost: the same rows, same timestamps
    pairs = [(v, r) for v, r, _ in after]
    assert len(pairs) == len(set(pairs))        # nothing duplicated
    doc = _results(out)
    assert doc["status"] in ("complete", "busy")
    # a sweep that ended busy has no answer, and says so by its exit status (3)
    assert resumed.returncode == (3 if doc["status"] == "busy" else 0), resumed.stderr[-3000:]
    if doc["status"] == "busy":
        # Under a heavy load the resumed sweep may stop early, as it must when most runs stay
        # disturbed (measure.disturbance.busy): then it has taken more, and lost nothing.
        assert len(after) > len(before)
        return
    # (O2, O1, O2's A/A twin) x (1 warmup + 8 rounds)
    assert len(pairs) == 3 * 9
    assert {v["id"]: v["summary"]["n"] for v in doc["variants"]} == {
        "gcc-O2": 8, "gcc-O1": 8, "gcc-O2.aa": 8}


def test_a_second_sweep_on_the_same_cpu_is_refused_one_on_another_runs(tiny, tmp_path, flagsweep):
    with MeasureLock("gzip gzip-20261122-101312", 0):
        refused = flagsweep("run", str(tiny), "--flags", "-O2", "--runs", "1", "--quick",
                            "--cpu", "0", "--out", str(tmp_path / "x"), check=False)
        beside = flagsweep("run", str(tiny), "--flags", "-O2", "--runs", "1", "--quick",
                           "--cpu", "1", "--out", str(tmp_path / "y"), check=False)
    assert refused.returncode == 2
    assert "another sweep is measuring on CPU 0 (pid" in refused.stderr
    assert "gzip gzip-20261122-101312" in refused.stderr and "--wait" in refused.stderr
    assert beside.returncode == 0, beside.stderr[-2000:]
    assert "warning: another sweep measures on CPU 0 (pid" in beside.stderr


def test_a_sweep_with_wait_starts_when_the_holder_ends(tiny, tmp_path):
    """The third sweep of the acceptance: on a busy CPU, --wait queues instead of refusing."""
    out = tmp_path / "waited"
    with MeasureLock("gzip first", 0):
        waiter = subprocess.Popen([sys.executable, "-m", "flagsweep", "run", str(tiny), "--flags",
                                   "-O2", "--runs", "1", "--quick", "--cpu", "0", "--wait",
                                   "--schedule", "serial", "--out", str(out)],
                                  stderr=subprocess.PIPE, text=True)
        before = [waiter.stderr.readline()]
        while before[-1] and not before[-1].startswith("waiting for CPU"):
            before.append(waiter.stderr.readline())
        assert not (out / "results.json").exists()   # nothing measured while it waits
    rest = waiter.stderr.read()
    assert waiter.wait(timeout=300) == 0, rest[-2000:]
    assert before[-1].startswith("waiting for CPU 0: pid ") and "gzip first" in before[-1]
    assert "CPU 0 is free after " in rest
    assert _results(out)["status"] == "complete"


def test_resuming_an_unknown_run_says_what_run_ids_are(flagsweep):
    result = flagsweep("run", "--resume", "nosuch-run", check=False)
    assert result.returncode == 2 and "no run 'nosuch-run'" in result.stderr


def test_counter_paths_on_this_machine(tiny, tmp_path, flagsweep):
    """auto without a PMU: wait4's rusage (maxrss kept); software: perf's live software events."""
    auto, soft = tmp_path / "auto", tmp_path / "soft"
    flagsweep("run", str(tiny), "--flags", "-O2", "--runs", "2", "--warmup", "0", "--quick",
              "--schedule", "serial", "--out", str(auto))
    doc = _results(auto)
    samples = doc["variants"][0]["samples"]
    if doc["machine"]["hw_counters"]:
        pytest.skip("this machine has hardware counters: auto uses perf here")
    assert {"wall_s", "user_s", "maxrss_kb", "page_faults", "context_switches"} <= set(samples)
    flagsweep("run", str(tiny), "--flags", "-O2", "--runs", "2", "--warmup", "0", "--quick",
              "--counters", "software", "--schedule", "serial", "--out", str(soft))
    samples = _results(soft)["variants"][0]["samples"]
    assert {"task_clock_s", "page_faults", "duration_s"} <= set(samples)
    assert all(0 < kb < 64 * 1024 for kb in samples["maxrss_kb"])  # tiny's own, not perf's
    assert all(t > 0 for t in samples["task_clock_s"])


@pytest.mark.skipif(not Path("/usr/bin/valgrind").exists(), reason="valgrind is not installed")
def test_instructions_without_a_pmu_come_from_cachegrind(tiny, tmp_path, flagsweep):
    out = tmp_path / "cg"
    result = flagsweep("run", str(tiny), *_flags("-O2", "-O0"), "--metric", "instructions",
                       "--quick", "--out", str(out))
    doc = _results(out)
    if doc["machine"]["hw_counters"]:
        pytest.skip("this machine has hardware counters: perf counts instructions")
    assert "a deterministic change detector, not a speed" in result.stderr
    v = _by_id(doc)
    o2, o0 = v["gcc-O2"]["samples"]["instructions"], v["gcc-O0"]["samples"]["instructions"]
    assert len(o2) == len(o0) == 1 and o0[0] > 2 * o2[0]  # -O0 executes far more instructions
    assert doc["metric"] == "instructions"


def test_a_missing_input_file_fails_before_anything_is_built(tiny, tmp_path, flagsweep):
    text = (tiny / "target.toml").read_text()
    (tiny / "target.toml").write_text(text.replace(
        'kind = "corpus"\nmegabytes = 1\nquick_megabytes = 0.5\nseed = 7', 'kind = "file"\npath = "nope.bin"'))
    out = tmp_path / "run"
    result = flagsweep("run", str(tiny), "--flags", "-O2", "--out", str(out), check=False)
    assert result.returncode == 2
    assert f"{tiny / 'target.toml'}: key 'inputs.path': {tiny / 'nope.bin'} does not exist" in result.stderr
    assert not (out / "builds").exists()


def test_a_cpu_that_is_not_online_is_refused_clearly(tiny, tmp_path, flagsweep):
    result = flagsweep("run", str(tiny), "--flags", "-O2", "--cpu", "4095", "--out",
                       str(tmp_path / "x"), check=False)
    assert result.returncode == 2 and "--cpu 4095: not an online CPU here (online: 0" in result.stderr


def test_variants_with_the_same_output_are_grouped(tiny, tmp_path, flagsweep):
    """Like lame's -ffast-math baseline: all strict variants differ from it, but agree together."""
    out = tmp_path / "run"
    flagsweep("run", str(tiny), *_flags("-O2 -DTINY_WRONG", "-O2", "-O1"), "--runs", "1",
              "--warmup", "0", "--quick", "--schedule", "serial", "--out", str(out))
    v = _by_id(_results(out))
    o2, o1 = v["gcc-O2"]["check"], v["gcc-O1"]["check"]
    assert o2["status"] == o1["status"] == "differs"
    assert o1["same_output_as"] == "gcc-O2" and o1["detail"].endswith("; same output as gcc-O2")
    assert "same_output_as" not in o2


def test_resume_takes_no_other_options_and_refuses_an_edited_target(tiny, tmp_path, isolated_cache,
                                                                    flagsweep):
    out = tmp_path / "run"
    flagsweep("run", str(tiny), "--flags", "-O2", "--runs", "1", "--warmup", "0", "--quick",
              "--schedule", "serial", "--out", str(out))
    mixed = flagsweep("run", "--resume", str(out), "--runs", "3", check=False)
    assert mixed.returncode == 2 and "it takes no other arguments (got --runs)" in mixed.stderr
    db = isolated_cache / "store.sqlite"
    with sqlite3.connect(db) as c:  # pretend it was interrupted
        c.execute("UPDATE runs SET status = 'interrupted' WHERE out_dir = ?", (str(out),))
    (tiny / "target.toml").write_text((tiny / "target.toml").read_text().replace("timeout = 3", "timeout = 4"))
    edited = flagsweep("run", "--resume", str(out), check=False)
    assert edited.returncode == 2 and "target.toml changed since run run" in edited.stderr
    assert "Start a new run" in edited.stderr


def test_nothing_measurable_is_an_error_not_an_empty_success(tiny, tmp_path, flagsweep):
    result = flagsweep("run", str(tiny), "--flags", "-O2 -DTINY_CRASH", "--runs", "1", "--quick",
                       "--out", str(tmp_path / "x"), check=False)
    assert result.returncode == 2 and "nothing to measure" in result.stderr
    assert _results(tmp_path / "x")["status"] == "failed"


def test_cycles_without_hardware_counters_is_refused_before_building(tiny, tmp_path, flagsweep):
    from flagsweep.host import probes
    if probes.preflight().hw_counters:
        pytest.skip("this machine has hardware counters")
    result = flagsweep("run", str(tiny), "--flags", "-O2", "--metric", "cycles", "--out",
                       str(tmp_path / "x"), check=False)
    assert result.returncode == 2 and "--metric cycles needs hardware counters" in result.stderr
    assert not (tmp_path / "x" / "builds").exists()


def test_calibrate_plants_effects_and_reports_what_it_found(tmp_path, flagsweep):
    result = flagsweep("calibrate", "--runs", "6", "--quick", "--out", str(tmp_path / "cal"))
    lines = result.stdout.splitlines()
    assert lines[0] == "planted effects on this machine (6 rounds, threshold 1%):"
    rows = {line.split()[0]: line for line in lines[2:6]}
    assert set(rows) == {"0%", "+1%", "+3%", "+10%"}
    outcomes = ("found", "not resolved", "missed (called equivalent)", "correct", "FALSE ALARM")
    assert all(any(o in line for o in outcomes) for line in rows.values())
    assert lines[6].startswith("smallest planted effect detected: ")
    doc = _results(tmp_path / "cal")
    ten = next(v for v in doc["variants"] if v["flags"] == ["-O2", "-DTINY_EXTRA_PERMILLE=100"])
    # Measured, every round: the ratio itself is a timing, which six quick rounds on a noisy
    # machine can move anywhere (a planted +10% read +1.2% once), so it is not asserted here.
    # (A machine busy enough ends the rounds early, saying so: every round taken still pairs.)
    rounds = ten["summary"]["n"] if doc["stop_reason"].startswith("the machine is busy") else 6
    assert ten["summary"]["n"] == rounds == ten["vs_baseline"]["n_pairs"]
    assert ten["build"]["code_sha256"] != doc["variants"][0]["build"]["code_sha256"]


def test_a_sweep_with_stderr_not_a_terminal_says_each_build_and_each_round(tiny, tmp_path,
                                                                           flagsweep):
    """Redirected to a file, the live bar is not drawn; a plain line per built variant and per
    counted round takes its place, so a long sweep in a log is not silent until its end."""
    result = flagsweep("run", str(tiny), "--flags", "-O2", "--flags", "-O1", "--runs", "3",
                       "--warmup", "0", "--quick", "--seed", "1",
                       "--rebuild", "--out", str(tmp_path / "x"),    # built, not reused
                       # CPU time, serial: a loaded machine cannot stop it busy
                       "--metric", "cpu", "--schedule", "serial", "--no-confirm")
    lines = result.stderr.splitlines()
    built = sorted(line for line in lines if line.startswith("built "))
    assert [line.split()[1] for line in built] == ["1/2:", "2/2:"]
    assert {line.split()[2] for line in built} == {"gcc-O2", "gcc-O1"}
    assert all(" ok in " in line for line in built)
    rounds = [line for line in lines if line.startswith("round ")]
    assert [line.split(":")[0] for line in rounds] == ["round 1/3", "round 2/3", "round 3/3"]
    # Each says what the stopping rule sees: the verdicts so far (the A/A twin is compared too).
    said = [line.split(": ", 1)[1] for line in rounds]
    assert all(said) and _results(tmp_path / "x")["stop_reason"].endswith(said[-1])
