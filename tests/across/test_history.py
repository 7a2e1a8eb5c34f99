"""History: steps judged against the history's own spread (unit); nightly sweeps of the real
tiny target timed through the executor seam, a planted regression in a newer build caught by
`flagsweep history --check` and an unchanged build not; and end to end the reference arm."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tiny_target import write_tiny_target

from flagsweep.across import history
from flagsweep.model import Build, Variant


def _series(medians: list[float], cv: float = 0.003, n: int = 10) -> history.VariantSeries:
    rng = np.random.default_rng(7)
    s = history.VariantSeries("gcc-O2", ["-O2"], "cpu")
    for i, m in enumerate(medians):
        values = list(m * np.exp(rng.normal(0, cv, n)))
        s.points.append(history.Point(f"r{i}", float(i), values, float(np.median(values)), None,
                                      {"target": "1.0", "gcc": "12.2.0" if i < len(medians) - 1 else "13.1.0"}))
    return s


def test_a_step_the_history_has_seen_before_is_not_a_regression():
    # Five sweeps that wander by +-3% from day to day, then one 4% up: significant on the
    # samples alone, but no bigger than the machine's own sweep-to-sweep spread.
    s = _series([1.00, 1.03, 0.97, 1.02, 0.98, 1.04])
    history._detect([s], threshold_pct=1.0)
    assert s.latest.verdict == "inconclusive"
    assert "within the history's own sweep-to-sweep spread" in s.latest.why
    assert history.regressions([s]) == []


def test_a_step_beyond_the_spread_is_a_regression_and_names_what_changed():
    s = _series([1.00, 1.01, 0.99, 1.00, 1.01, 1.15])
    history._detect([s], threshold_pct=1.0)
    assert s.latest.verdict == "slower"
    step = s.steps[-1]
    assert step.run_id == "r5" and 1.13 < step.ratio < 1.17
    assert step.changed == ["gcc 12.2.0 -> 13.1.0"]
    assert history.regressions([s]) == [s]


def test_after_a_step_the_new_level_is_the_reference():
    s = _series([1.00, 1.00, 1.20, 1.20, 1.20])
    history._detect([s], threshold_pct=1.0)
    assert [st.run_id for st in s.steps] == ["r2"]
    assert s.latest.against == ["r2", "r3"]


def test_an_alternating_machine_is_not_a_regression():
    """1.00, 1.03, 1.00, 1.03, then 1.07 at --threshold 3: the successive differences are all
    about 3%, which a MAD about their median once read as a spread of 0.14% (z = 39)."""
    s = _series([1.00, 1.03, 1.00, 1.03, 1.07])
    history._detect([s], threshold_pct=3.0)
    assert s.latest.verdict == "inconclusive" and s.steps == []
    assert "within the history's own sweep-to-sweep spread" in s.latest.why
    assert history.regressions([s]) == []


def test_a_step_that_stays_is_found_and_placed_on_its_night():
    """Ten nights wandering +-2%, then a 5% step. Its first night is within the spread (t test of
    one night); two nights later the three nights together are not, and the step is placed on
    its first night, which names the version that changed there."""
    wander = [1.00, 1.02, 0.98, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99]
    s = _series(wander + [1.05, 1.06, 1.05])
    for i, p in enumerate(s.points):
        p.versions = {"target": "1.1" if i >= 10 else "1.0"}
    for night in range(11, 14):
        part = history.VariantSeries(s.variant, s.flags, s.machine, s.points[:night])
        history._detect([part], threshold_pct=1.0)
        fired = history.regressions([part])
        assert bool(fired) == (night == 13), night
    (step,) = part.steps
    assert (step.run_id, step.found_in, step.verdict) == ("r10", "r12", "slower")
    assert step.changed == ["target 1.0 -> 1.1"] and 1.04 < step.ratio < 1.07
    assert "over the last 3 sweeps" in step.why


def test_zero_spread_does_not_switch_the_guard_off():
    """An exact count repeats to the last digit: its spread is 0, and any shift beyond the
    threshold stands out from it (the guard once skipped itself when the spread was 0)."""
    s = history.VariantSeries("gcc-O2", ["-O2"], "cpu")
    for i, x in enumerate([1e9] * 10 + [1.02e9]):
        s.points.append(history.Point(f"r{i}", float(i), [x] * 5, x, None, {"target": "1.0"}))
    history._detect([s], threshold_pct=1.0)
    assert [(st.run_id, st.verdict) for st in s.steps] == [("r10", "slower")]



@pytest.mark.parametrize("metric", ["instructions", "cpu_s"])
def test_a_second_night_is_judged_only_in_an_instruction_count(metric):
    """One earlier sweep gives no sweep-to-sweep spread: a timed series calls nothing on its
    second night; an instruction count has no drift to measure and is judged. Its runs may
    differ by a few instructions (the environment the program starts in), as Cachegrind's do."""
    s = history.VariantSeries("gcc-O2", ["-O2"], "cpu", metric=metric)
    for i, x in enumerate([1e9, 1.3e9]):
        values = [x + k for k in range(5)]
        s.points.append(history.Point(f"r{i}", float(i), values, x, None, {"target": f"1.{i}"}))
    history._detect([s], threshold_pct=5.0)
    exact = metric == "instructions"
    assert [(st.run_id, st.verdict) for st in s.steps] == ([("r1", "slower")] if exact else [])
    assert s.latest.verdict == ("slower" if exact else "inconclusive")

# ---------------------------------------------------------------------------------------------
# End to end: the real CLI, the real tiny target, a store of its own.
# ---------------------------------------------------------------------------------------------

def _tiny(folder: Path, version: str, project_flags: str = "") -> Path:
    # A twentieth of a megabyte: under Cachegrind (counted instructions) each run costs seconds
    # per megabyte, and a count's ratio is exact at any size.
    return write_tiny_target(folder, version=version, megabytes=0.05, quick_megabytes=0.05,
                             repeats=1, timeout=60, build_extra=project_flags)


@pytest.mark.integration
def test_history_check_catches_a_planted_regression(tmp_path, monkeypatch):
    """Three nightly sweeps of the real tiny target (really built and checked) in a store of
    their own, timed through the executor seam at planted speeds: two alike, then version 1.1
    30% slower. `history --check` passes after the second and fails after the third, naming
    the step and what changed; load cannot flip it, since no timing is real."""
    from click.testing import CliRunner
    from synthetic import Synthetic

    from flagsweep.jobs import sweep
    from flagsweep.compilation import selection
    from flagsweep.cli import cli
    from flagsweep.results.store import Store

    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp_path / 'history.sqlite'}")
    same, slower = _tiny(tmp_path / "same", "1.0"), _tiny(tmp_path / "slower", "1.1")

    def night(folder: Path, i: int, factor: float) -> Path:
        t, r, m, build_opts = selection.prepare(selection.Selection(
            str(folder), flag_sets=("-O2",), out_dir=tmp_path / f"run{i}"), lambda _: None)
        opts = sweep.MeasureOptions(runs=10, min_runs=10, max_runs=10, warmup=1, seed=3 + i,
                                    quick=True, metric="cpu")
        speeds = {"gcc-O2": factor, "gcc-O2.aa": factor}
        return sweep.start(t, r, m, build_opts, opts, Store(), lambda _: None,
                           execute=Synthetic(speeds))

    night(same, 0, 1.0)
    night(same, 1, 1.0)
    unchanged = CliRunner().invoke(cli, ["history", "tiny", "--check", "--threshold", "5"])
    assert unchanged.exit_code == 0, unchanged.output
    assert "regression:" not in unchanged.output

    latest = night(slower, 2, 1.3)
    caught = CliRunner().invoke(cli, ["history", "tiny", "--check", "--threshold", "5"])
    assert caught.exit_code == 1, caught.output
    assert "regression: gcc-O2 +" in caught.output and "target 1.0 -> 1.1" in caught.output
    as_json = CliRunner().invoke(cli, ["history", "tiny", "--threshold", "5", "--json"])
    series = json.loads(as_json.stdout)      # the regression line is on stderr, not in the JSON
    assert "gcc-O2" in {s["variant"] for s in series} and "regression:" in as_json.stderr
    # The newest sweep's results and report carry the history too.
    doc = json.loads(latest.read_text())
    (gcc_o2,) = [h for h in doc["history"] if h["variant"] == "gcc-O2"]
    assert gcc_o2["latest"]["verdict"] == "slower" and len(gcc_o2["points"]) == 3
    assert 1.29 < gcc_o2["latest"]["ratio"] < 1.31
    html = (latest.parent / "index.html").read_text()
    assert 'id="history"' in html and "Slower than this target&#39;s earlier sweeps" in html


def test_a_reference_arm_divides_the_nights_drift_out():
    """Fifteen nights whose level swings by 3% (the same for every program on the machine that
    night), then a 5% step. Alone the step is inside the swing on its night; divided by a fixed
    binary measured in the same rounds, the swing cancels and the step stands out that night."""
    rng = np.random.default_rng(3)
    swing = [0.03, -0.03, 0.02, -0.02, 0.03, -0.03, 0.0, 0.03, -0.03, 0.02, -0.02, 0.03,
             -0.03, 0.01, -0.03, -0.03]
    docs = [_variant("gcc-O2"), _variant("gcc-O2.ref", reference_sha256="ab" * 32)]
    plain, divided = (history.VariantSeries("gcc-O2", ["-O2"], "cpu") for _ in range(2))
    for night, level in enumerate(swing):
        step = np.log(1.05) if night == 15 else 0.0
        values = {"gcc-O2": dict(enumerate(np.exp(level + step + rng.normal(0, 0.005, 10)))),
                  "gcc-O2.ref": dict(enumerate(np.exp(level + rng.normal(0, 0.005, 10))))}
        ratios, sha = history._against_reference(docs, values)
        assert sha == "ab" * 32 and set(ratios) == {"gcc-O2", "gcc-O2.ref"}
        for s, v in ((plain, values["gcc-O2"]), (divided, ratios["gcc-O2"])):
            x = [float(y) for y in v.values()]
            s.points.append(history.Point(f"r{night}", float(night), x, float(np.median(x)), None,
                                          {"target": "1.1" if night == 15 else "1.0"}))
    for s in (plain, divided):
        history._detect([s], threshold_pct=3.0)
    assert history.regressions([plain]) == []
    assert history.regressions([divided]) == [divided]
    assert [(st.run_id, st.changed) for st in divided.steps] == [("r15", ["target 1.0 -> 1.1"])]
    # No reference arm (or none with a recorded binary hash): the values as they were.
    bare = {"gcc-O2": {0: 1.0}}
    assert history._against_reference([_variant("gcc-O2")], bare) == (bare, None)


def _variant(vid: str, **build) -> Variant:
    return Variant(id=vid, compiler="gcc", flags=["-O2"], build=Build(status="ok", **build))


@pytest.mark.integration
def test_run_with_a_reference_measures_it_and_history_divides_by_it(tmp_path, main,
                                                                    monkeypatch):
    import hashlib
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp_path / 'history.sqlite'}")
    same = _tiny(tmp_path / "same", "1.0")
    slower = _tiny(tmp_path / "slower", "1.1", 'project_flags = ["-DTINY_EXTRA_PERMILLE=1000"]')
    run = ["--flags", "-O2", "--metric", "instructions", "--runs", "3", "--seed", "3"]
    code, err = main("run", str(same), *run, "--reference", str(tmp_path / "nowhere"),
                     "--out", str(tmp_path / "bad"))
    assert code != 0 and "--reference" in err and "nowhere" in err
    assert not (tmp_path / "bad" / "builds").exists()          # refused before building
    code, err = main("run", str(same), *run, "--out", str(tmp_path / "run0"))
    assert code == 0, err[-2000:]
    first = json.loads((tmp_path / "run0" / "results.json").read_text())
    kept = next(v for v in first["variants"] if v["id"] == "gcc-O2")["build"]["binary"]
    code, err = main("run", str(slower), *run, "--reference", str(tmp_path / "run0"),
                     "--out", str(tmp_path / "run1"))
    assert code == 0, err[-2000:]
    doc = json.loads((tmp_path / "run1" / "results.json").read_text())
    ref = next(v for v in doc["variants"] if v["id"] == "gcc-O2.ref")
    assert ref["build"]["reference_sha256"] == hashlib.sha256(Path(kept).read_bytes()).hexdigest()
    assert doc["measurement"]["reference"] == str(tmp_path / "run0")
    # Today's build runs its kernels over the input twice (one whole extra pass: a part of a
    # pass costs what that part of the input holds, not its share), the kept one once: the
    # reference reads faster (3 rounds are too few for a verdict; the ratio is exact with
    # counted instructions).
    assert ref["vs_baseline"]["ratio"] < 0.85
    assert doc["recommendation"]["variant"] != "gcc-O2.ref"
    assert main("history", "tiny", "--json")[0] == 0
    series = json.loads(main.out)
    by_ref = {s["reference"]: s for s in series if s["variant"] == "gcc-O2"}
    # The first run's baseline is the reference (the store kept it too, by default): its A/A
    # twin, a copy of that binary, makes the first night a point of the same series.
    assert set(by_ref) == {ref["build"]["reference_sha256"]}
    first_night, point = by_ref[ref["build"]["reference_sha256"]]["points"]
    assert first_night["median"] == pytest.approx(1.0, abs=0.01)
    assert 1.8 < point["median"] < 2.2                         # the ratio to the kept binary


def test_history_shows_a_planted_rows_escape_sequences_and_obeys_none(tmp_path, main,
                                                                       monkeypatch):
    """Two nights of tiny in a store, copied, and in the copy a variant's id (its row, its
    document, its samples) rewritten with sqlite3 to set the window's title and clear the
    screen. Before: the id reached root's terminal raw, in the table and in the `cannot
    check` line."""
    import shutil
    import sqlite3

    import report_fixture as rf
    from conftest import raw_controls

    from flagsweep.results.store import Store

    real = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    rf.two_nights(real, tmp_path)
    real.engine.dispose()
    planted = tmp_path / "planted.sqlite"
    shutil.copy(tmp_path / "store.sqlite", planted)
    evil = f"gcc-O3{rf.TITLE}{rf.CLEAR}"
    with sqlite3.connect(planted) as db:
        db.execute("UPDATE variants SET variant_id = ?, doc = json_set(doc, '$.id', ?) "
                   "WHERE variant_id = 'gcc-O3'", (evil, evil))
        db.execute("UPDATE samples SET variant_id = ? WHERE variant_id = 'gcc-O3'", (evil,))
    db.close()
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{planted}")
    code, err = main("history", "tiny")
    assert code == 0, err
    assert raw_controls(err + main.out) == []
    shown = r"gcc-O3\x1b]0;owned\x07\x1b[2J"
    assert [line for line in err.splitlines() if line.startswith(r"gcc-O3\x1b]0;owned")]
    assert f"cannot check {shown}: no reference arm" in err, err
