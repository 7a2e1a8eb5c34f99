"""A workload shorter than a sample resolves is timed with a warning that says so and names the
input size that would fix it; and the run's metric is always one of its sample columns. Real
tiny builds, executions from the stand-in executor (tests/synthetic.py), so no timing decides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from synthetic import Synthetic
from tiny_target import write_tiny_target

from flagsweep.jobs import sweep
from flagsweep.compilation import selection
from flagsweep.measure import resolution
from flagsweep.report import headline
from flagsweep.results import reader
from flagsweep.results.store import Store


def _sweep(tmp_path: Path, seconds: float, metric: str = "auto") -> Path:
    folder = write_tiny_target(tmp_path / "tiny", megabytes=2, quick_megabytes=0.25)
    t, r, m, build_opts = selection.prepare(selection.Selection(
        str(folder), flag_sets=("-O2", "-O1"), out_dir=tmp_path / "run"), lambda _: None)
    opts = sweep.MeasureOptions(min_runs=5, max_runs=6, warmup=1, seed=3, quick=True,
                                metric=metric)
    path = sweep.start(t, r, m, build_opts, opts, Store(), lambda _: None,
                       execute=Synthetic({"gcc-O1": 1.05}, seconds=seconds))
    return path


@pytest.mark.integration
def test_a_run_shorter_than_a_sample_resolves_is_warned_with_the_input_size_that_fixes_it(tmp_path):
    doc = reader.load(_sweep(tmp_path, seconds=0.0007))
    short = doc.measurement.short_run
    assert short.input_key == "quick_megabytes" and short.input_size == 0.25
    # The input scaled by limit / measured time: 0.25 MB x 10 ms / 0.7 ms, rounded up.
    scale = resolution.SHORTEST_S / short.median_s
    assert 0.25 * scale <= short.input_needed <= 0.25 * scale * 1.05
    assert abs(short.median_s - 0.0007) < 0.0007 * 0.05
    text = short.warning
    assert "0.7 ms" in text and f"{1e3 * resolution.SHORTEST_S:g} ms" in text
    assert f"`inputs.quick_megabytes` to {short.input_needed:g}" in text
    assert str(tmp_path / "tiny" / "target.toml") in text
    assert ("short", text) in [(w.kind, w.text) for w in headline.warnings(doc)]


@pytest.mark.integration
def test_a_run_long_enough_gets_no_short_run_warning(tmp_path):
    doc = reader.load(_sweep(tmp_path, seconds=0.1))
    assert doc.measurement.short_run is None
    assert "short" not in [w.kind for w in headline.warnings(doc)]


@pytest.mark.integration
def test_the_run_s_metric_is_a_sample_column_of_every_measured_variant(tmp_path):
    path = _sweep(tmp_path, seconds=0.1, metric="cpu")
    doc = json.loads(path.read_text())     # the file as any consumer reads it
    assert doc["metric"] == "cpu_s"
    measured = [v for v in doc["variants"] if v["samples"].get("round")]
    assert len(measured) == 3           # the baseline, -O1 and the A/A twin
    for v in measured:
        s = v["samples"]
        assert s["cpu_s"] == pytest.approx([u + k for u, k in zip(s["user_s"], s["sys_s"])])
        assert len(s["cpu_s"]) == len(s["round"]) == v["summary"]["n"]
    # A results.json written before the metric was always a column gets it when loaded.
    for v in doc["variants"]:
        v["samples"].pop("cpu_s", None)
    path.write_text(json.dumps(doc))
    for v in reader.load(path).dump()["variants"]:
        s = v["samples"]
        if s.get("round"):
            assert s["cpu_s"] == pytest.approx([u + k for u, k in zip(s["user_s"], s["sys_s"])])
