"""`flagsweep run --input-size auto`: the real tiny program built and checked, its timed runs
from a stand-in executor whose noise is planted (a part every run carries, and a fixed part per
run), so the pilot's choice of input size is a decision on known spreads, never on this
machine's timing."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from tiny_target import write_tiny_target

from flagsweep.compilation import selection
from flagsweep.errors import Interrupted
from flagsweep.host.executor import Execution
from flagsweep.jobs import sweep
from flagsweep.report import terminal
from flagsweep.results import reader
from flagsweep.results.store import Store

SECONDS_PER_MB = 0.2          # the quick input (0.25 MB) runs 0.05 s, the full (1 MB) 0.2 s


class Planted:
    """Runs as long as their input is big (SECONDS_PER_MB), each with a relative noise of sd
    `relative` and an absolute one of sd `fixed_s` seconds, so an A/A pair's log ratio has an
    sd of about sqrt(2) times sqrt(relative^2 + (fixed_s / L)^2); single-threaded and CPU-bound
    (schedstat figures say so). The input is the argument that names an existing file."""

    def __init__(self, relative: float, fixed_s: float, stop_after: int | None = None):
        self.relative, self.fixed_s, self.stop_after = relative, fixed_s, stop_after
        self.rng, self.calls, self.inputs = random.Random(5), 0, []

    def __call__(self, argv, *, env, timeout, stderr_path, perf=None, perf_csv=None):
        self.calls += 1
        stderr_path.touch()              # as the launcher does: its folder must be there
        if self.stop_after is not None and self.calls > self.stop_after:
            raise KeyboardInterrupt
        given = next(Path(a) for a in argv[1:] if Path(a).is_file())
        self.inputs.append(given)
        length = SECONDS_PER_MB * given.stat().st_size / 1e6
        t = length * math.exp(self.rng.gauss(0, self.relative)) + \
            self.rng.gauss(0, self.fixed_s)
        t = max(t, 0.2 * length)
        return Execution(t, t, 0.0, 2000, {"on_cpu_s": t, "run_delay_s": 0.0}, False, None)


def _start(tmp_path: Path, execute, said: list[str], **options) -> Path:
    folder = write_tiny_target(tmp_path / "tiny", megabytes=1, quick_megabytes=0.25)
    t, r, m, build_opts = selection.prepare(selection.Selection(
        str(folder), flag_sets=("-O2", "-O1"), out_dir=tmp_path / "run"), lambda _: None)
    opts = sweep.MeasureOptions(runs=6, warmup=1, seed=3, input_size="auto", **options)
    return sweep.start(t, r, m, build_opts, opts, Store(), said.append, execute=execute)


@pytest.mark.integration
def test_noise_every_run_carries_whatever_its_length_chooses_the_quick_input(tmp_path, capsys):
    said: list[str] = []
    path = _start(tmp_path, Planted(relative=0.03, fixed_s=0.0), said)
    doc = reader.load(path)
    chosen = doc.measurement.run_length
    assert doc.measurement.input_size == "auto"
    assert (chosen.size, chosen.unit, chosen.metric) == (0.25, "MB", "cpu_s")
    assert [p.size for p in chosen.measured] == [0.25, 1]
    assert [p.pairs for p in chosen.measured] == [8, 8]
    assert chosen.fixed_s < 0.003 and 0.02 < chosen.relative < 0.08     # as planted, about
    # The sweep measured the chosen input, and says why in every place it reports.
    assert doc.workload.input.startswith("corpus: 0.25 MB")
    assert any(line.startswith("input size: a pilot of 8 A/A pairs") for line in said)
    reason = next(line for line in said if line.startswith("input size: 0.25 MB, the quick input"))
    assert "against +-" in reason and reason.endswith("with the full input")
    page = (path.parent / "index.html").read_text()
    assert 'id="run-length">Input size: 0.25 MB, the quick input' in page
    assert "Input size: 0.25 MB, the quick input" in (path.parent / "summary.md").read_text()
    terminal.show(path)
    assert "input size: 0.25 MB, the quick input (runs of about" in capsys.readouterr().err


@pytest.mark.integration
def test_a_fixed_part_per_run_that_dominates_keeps_the_full_input_and_a_resume_keeps_it(
        tmp_path):
    said: list[str] = []
    # 20 ms of noise per run: 40% of a quick run, 10% of a full one. Interrupted in the rounds,
    # after the pilot's 32 runs, the output check's and the warmup's.
    with pytest.raises(Interrupted):
        _start(tmp_path, Planted(relative=0.0, fixed_s=0.02, stop_after=40), said)
    db = Store()
    run_id = db.find_run(str(tmp_path / "run"))
    kept = db.run(run_id).options.measure["run_length"]
    assert kept["size"] == 1 and kept["why"].startswith("1 MB, the full input")
    again: list[str] = []
    resumed = Planted(relative=0.0, fixed_s=0.02)
    path = sweep.resume(run_id, db, again.append, execute=resumed)
    assert not any("pilot" in line for line in again)      # chosen once, kept with the run
    assert {p.stat().st_size for p in resumed.inputs} == {1_000_000}
    doc = reader.load(path)
    assert doc.status == "complete" and doc.measurement.run_length.size == 1


def test_a_count_or_a_missing_baseline_needs_no_pilot_and_says_so(tmp_path):
    """Cachegrind's instructions are the same at every length, and a baseline that did not
    build has nothing to pilot: the full input, and why, with nothing run."""
    from flagsweep.experiment import target
    from flagsweep.measure import length

    t = target.load(str(write_tiny_target(tmp_path / "tiny")))
    never = Planted(0.03, 0.0, stop_after=0)
    said: list[str] = []
    count = length.for_sweep(t, tmp_path / "tiny-bin", never, tmp_path, 1, "instructions", 0,
                             said.append)
    missing = length.for_sweep(t, None, never, tmp_path, 1, "auto", 0, said.append)
    assert count.size is None and missing.size is None and never.calls == 0
    assert said == ["input size: the full input (a count (--metric instructions) is the same "
                    "at every length)", "input size: the full input (the baseline did not build)"]


def test_quick_and_another_input_size_together_is_a_usage_error(main):
    code, err = main("run", "tiny", "--quick", "--input-size", "auto")
    assert code == 2 and "--quick is --input-size quick: not with --input-size auto" in err
    code, err = main("run", "tiny", "--input-size", "auto", "--scheduler", "tcp://x:1",
                     "--cpu-label", "a")
    assert code == 2 and "--input-size auto pilots on this machine" in err
