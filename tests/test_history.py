"""History: steps judged against the history's own spread (unit), and end to end a planted
regression in a newer build of the tiny target caught by `flagsweep history --check`, an
unchanged build not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tiny_target import write_tiny_target
from flagsweep import history



def _series(medians: list[float], cv: float = 0.003, n: int = 10) -> history.Series:
    rng = np.random.default_rng(7)
    s = history.Series("gcc-O2", ["-O2"], "cpu")
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
    assert s.latest["verdict"] == "inconclusive"
    assert "within the history's own sweep-to-sweep spread" in s.latest["why"]
    assert history.regressions([s]) == []


def test_a_step_beyond_the_spread_is_a_regression_and_names_what_changed():
    s = _series([1.00, 1.01, 0.99, 1.00, 1.01, 1.15])
    history._detect([s], threshold_pct=1.0)
    assert s.latest["verdict"] == "slower"
    step = s.steps[-1]
    assert step.run_id == "r5" and 1.13 < step.ratio < 1.17
    assert step.changed == ["gcc 12.2.0 -> 13.1.0"]
    assert history.regressions([s]) == [s]


def test_after_a_step_the_new_level_is_the_reference():
    s = _series([1.00, 1.00, 1.20, 1.20, 1.20])
    history._detect([s], threshold_pct=1.0)
    assert [st.run_id for st in s.steps] == ["r2"]
    assert s.latest["against"] == ["r2", "r3"]


# ---------------------------------------------------------------------------------------------
# End to end: the real CLI, the real tiny target, a store of its own.
# ---------------------------------------------------------------------------------------------

def _tiny(folder: Path, version: str, project_flags: str = "") -> Path:
    return write_tiny_target(folder, version=version, megabytes=4, quick_megabytes=4, repeats=3,
                             timeout=30, build_extra=project_flags)


def _flagsweep(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flagsweep", *args], capture_output=True,
                          text=True, env=env)


@pytest.mark.integration
def test_history_check_catches_a_planted_regression(tmp_path, monkeypatch):
    import os

    env = {**os.environ, "FLAGSWEEP_DB": f"sqlite:///{tmp_path / 'history.sqlite'}"}
    same = _tiny(tmp_path / "same", "1.0")
    # The newer build repeats its kernels over an extra 30% of the input: about 30% slower, far
    # beyond the 5% threshold even on a busy CI runner.
    slower = _tiny(tmp_path / "slower", "1.1", 'project_flags = ["-DTINY_EXTRA_PERMILLE=300"]')
    run = ["--flags", "-O2", "--runs", "8", "--warmup", "1", "--seed", "3"]
    for i, folder in enumerate([same, same]):
        r = _flagsweep("run", str(folder), *run, "--out", str(tmp_path / f"run{i}"), env=env)
        assert r.returncode == 0, r.stderr[-2000:]
    unchanged = _flagsweep("history", "tiny", "--check", "--threshold", "5", env=env)
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    assert "regression:" not in unchanged.stderr

    r = _flagsweep("run", str(slower), *run, "--out", str(tmp_path / "run2"), env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    caught = _flagsweep("history", "tiny", "--check", "--threshold", "5", env=env)
    assert caught.returncode == 1, caught.stdout + caught.stderr
    assert "regression: gcc-O2 +" in caught.stderr and "target 1.0 -> 1.1" in caught.stderr
    # The newest sweep's results and report carry the history too.
    doc = json.loads((tmp_path / "run2" / "results.json").read_text())
    (latest,) = [h for h in doc["history"] if h["variant"] == "gcc-O2"]
    assert latest["latest"]["verdict"] == "slower" and len(latest["points"]) == 3
    html = (tmp_path / "run2" / "index.html").read_text()
    assert 'id="history"' in html and "Slower than this target&#39;s earlier sweeps" in html
