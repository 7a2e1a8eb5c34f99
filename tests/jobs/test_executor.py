"""Whole sweeps of the real tiny program (really built, really checked) whose timed executions
come from a stand-in executor: the decisions above the launcher (verdicts, the A/A twin,
resume) are tested on exact, seeded executions, so load cannot flip them."""

from __future__ import annotations

import json
import math

from pathlib import Path

import pytest
from synthetic import Synthetic
from tiny_target import write_tiny_target

from flagsweep.host.executor import Execution
from flagsweep.jobs import sweep
from flagsweep.compilation import selection
from flagsweep.results import reader
from flagsweep.results.store import Store


def _start(tmp_path: Path, execute, out: str = "run", say=lambda _: None, **options) -> Path:
    tmp_path.mkdir(exist_ok=True)
    folder = write_tiny_target(tmp_path / "tiny", megabytes=0.25, quick_megabytes=0.25)
    t, r, m, build_opts = selection.prepare(selection.Selection(
        str(folder), flag_sets=("-O2", "-O1"), out_dir=tmp_path / out), lambda _: None)
    opts = sweep.MeasureOptions(min_runs=5, max_runs=12, warmup=1, seed=11, quick=True, **options)
    return sweep.start(t, r, m, build_opts, opts, Store(), say, execute=execute)


@pytest.mark.integration
def test_a_planted_effect_is_called_and_the_twin_is_not(tmp_path):
    path = _start(tmp_path, Synthetic({"gcc-O1": 1.10}))
    doc = reader.load(path).dump()
    by_id = {v["id"]: v for v in doc["variants"]}
    o1 = by_id["gcc-O1"]["vs_baseline"]
    assert o1["verdict"] == "slower" and 1.09 < o1["ratio"] < 1.11
    assert by_id["gcc-O2.aa"]["vs_baseline"]["verdict"] == "equivalent"
    # -O1's stop would come at round 9, the sweep's own floor: a stop in its last round saves
    # nothing (the stops spend a share of alpha, so their first look is no earlier)
    assert doc["stop_reason"] == "decided after 9 rounds: 1 equivalent, 1 slower"


@pytest.mark.integration
def test_an_interrupted_sweep_resumes_with_exactly_the_missing_samples(tmp_path):
    from flagsweep.errors import Interrupted

    with pytest.raises(Interrupted):
        _start(tmp_path, Synthetic({"gcc-O1": 1.10}, stop_after=10))
    db = Store()
    run_id = db.find_run(str(tmp_path / "run"))
    before = {(s.variant_id, s.round) for s in db.samples(run_id)}
    assert len(before) == 10 and db.run(run_id).status == "interrupted"
    path = sweep.resume(run_id, db, lambda _: None, execute=Synthetic({"gcc-O1": 1.10}))
    after = [(s.variant_id, s.round) for s in db.samples(run_id)]
    assert len(after) == len(set(after)) and before <= set(after)
    doc = reader.load(path).dump()
    assert doc["status"] == "complete"
    assert {v["id"]: v for v in doc["variants"]}["gcc-O1"]["vs_baseline"]["verdict"] == "slower"


@pytest.mark.integration
def test_rounds_end_at_the_until_time_whatever_the_builds_took_and_a_hand_resume_drops_it(
        tmp_path):
    """A tune's proof gives its sweep a wall-clock end: here already past once the builds are
    done, so one round is timed and the budget ends the sweep. Resumed by hand, the sweep has
    its own --budget again and goes on to a verdict."""
    import time

    from flagsweep.errors import Interrupted

    path = _start(tmp_path, Synthetic({"gcc-O1": 1.10}), until=time.time())
    doc = reader.load(path).dump()
    assert doc["stop_reason"].startswith("time budget of 0 s reached after 1 rounds")
    assert {v["id"]: len(v["samples"]["round"]) for v in doc["variants"]} == \
        {"gcc-O2": 1, "gcc-O1": 1, "gcc-O2.aa": 1}

    with pytest.raises(Interrupted):      # stopped in the warmup round, before the end
        _start(tmp_path / "again", Synthetic({"gcc-O1": 1.10}, stop_after=2),
               until=time.time())
    db = Store()
    run_id = db.find_run(str(tmp_path / "again" / "run"))
    path = sweep.resume(run_id, db, lambda _: None, execute=Synthetic({"gcc-O1": 1.10}))
    doc = reader.load(path).dump()
    assert doc["stop_reason"].startswith("decided after ")     # not the tune's end: a verdict
    assert {v["id"]: v for v in doc["variants"]}["gcc-O1"]["vs_baseline"]["verdict"] == "slower"


@pytest.mark.integration
def test_calibrate_finds_the_planted_effects_and_no_false_alarm(tmp_path):
    """calibrate's own decisions on executions of known speed: the shipped tiny program's
    planted variants really built, each timed at exactly its planted factor (CV 0.3%)."""
    from flagsweep.jobs import calibration
    from flagsweep.compilation import variants
    from flagsweep.experiment import matrix, recipe

    ids = [v.id for v in matrix.expand(recipe.from_flags(calibration.flag_sets(), ["gcc"])).variants]
    factors = {vid: 1 + pct / 100 for vid, pct in zip(ids[1:], calibration.PLANTED_PCT)}
    opts = sweep.MeasureOptions(runs=10, min_runs=10, max_runs=10, quick=True, seed=5)
    path, rows = calibration.run(variants.Options(out_dir=tmp_path / "cal", jobs=2), opts,
                                 Store(), lambda _: None, execute=Synthetic(factors))
    outcome = {r.planted_pct: r.outcome for r in rows}
    assert outcome[0] == "correct" and outcome[3] == "found" and outcome[10] == "found"
    assert {r.planted_pct: round(r.ratio, 2) for r in rows}[10] == 1.10
    assert calibration.smallest_found(rows).startswith("smallest planted effect detected: +")


@pytest.mark.integration
def test_a_complete_run_drops_its_program_outputs_unless_asked_to_keep_them(tmp_path):
    said = []
    path = _start(tmp_path, Synthetic({"gcc-O1": 1.10}), say=said.append)
    scratch = path.parent / "scratch"
    # Only a program's non-empty stderr would stay: tiny says nothing, so nothing is left.
    assert not scratch.exists()
    assert any(line.startswith("scratch: ") and "--keep-scratch" in line for line in said)
    assert reader.load(path).dump()["status"] == "complete"      # nothing the results show is lost
    kept = _start(tmp_path / "again", Synthetic({"gcc-O1": 1.10}), keep_scratch=True)
    assert [p.name for p in (kept.parent / "scratch").iterdir() if p.suffix in (".out", ".stdout")]


@pytest.mark.integration
def test_the_reproduce_line_repeats_every_option_that_changed_the_measurement(tmp_path):
    """A sweep with options off their defaults; its report's Reproduce line, parsed by the real
    `run` command's parser, starts a second sweep whose stored measurement options are the
    same (the line once left out --metric and --cpu)."""
    import shlex

    from flagsweep.compilation import selection as chosen
    from flagsweep.cli.params import selection
    from flagsweep.cli.sweeping import _measure_options, run_cmd
    from flagsweep.report.method import reproduce_command

    first = _start(tmp_path, Synthetic({"gcc-O1": 1.10}), metric="cpu", cpu=0, threshold_pct=2.0,
                   counters="none", precision_pct=1.5, budget=900.0)
    doc = reader.load(first).dump()
    line = reproduce_command(reader.load(first))
    for option in ("--metric cpu", "--cpu 0", "--threshold 2", "--counters none", "--seed 11",
                   "--compiler gcc", "--quick"):
        assert option in line, (option, line)
    argv = shlex.split(line)
    assert argv[:2] == ["flagsweep", "run"]
    kw = run_cmd.make_context("run", argv[2:] + ["--out", str(tmp_path / "again")]).params
    t, r, m, build_opts = chosen.prepare(selection(kw), lambda _: None)
    # Another machine's store, as the line would be run elsewhere: this one keeps the first
    # sweep's baseline as a reference arm, which would change the design measured.
    elsewhere = Store(f"sqlite:///{tmp_path / 'elsewhere.sqlite'}")
    again = sweep.start(t, r, m, build_opts, _measure_options(kw), elsewhere, lambda _: None,
                        execute=Synthetic({"gcc-O1": 1.10}))
    redo = reader.load(again).dump()
    assert redo["measurement"] == doc["measurement"]
    assert [v["flags"] for v in redo["variants"]] == [v["flags"] for v in doc["variants"]]
    assert reproduce_command(reader.load(again)) == line


def _start3(tmp_path: Path, execute, **options) -> Path:
    """-O2 (baseline), -O0 planted far slower, -O1 +1.05%, just beyond the threshold: a
    precision no interval reaches keeps -O1 open to max runs, while -O0 stops at a final
    verdict."""
    folder = write_tiny_target(tmp_path / "tiny", megabytes=0.25, quick_megabytes=0.25)
    t, r, m, build_opts = selection.prepare(selection.Selection(
        str(folder), flag_sets=("-O2", "-O0", "-O1"), out_dir=tmp_path / "run"), lambda _: None)
    # No reference arm: sweeps of one test share a store, and a second would measure the
    # first one's baseline binary beside its own.
    opts = sweep.MeasureOptions(min_runs=5, max_runs=20, warmup=1, seed=11, quick=True,
                                precision_pct=0.01, no_reference=True, **options)
    return sweep.start(t, r, m, build_opts, opts, Store(), lambda _: None, execute=execute)


FACTORS = {"gcc-O0": 2.0, "gcc-O1": 1.0105}


@pytest.mark.integration
def test_a_decided_variant_stops_early_and_says_so_in_the_results(tmp_path):
    path = _start3(tmp_path, Synthetic(FACTORS))
    doc = reader.load(path).dump()
    by_id = {v["id"]: v for v in doc["variants"]}
    o0 = by_id["gcc-O0"]
    assert o0["vs_baseline"]["verdict"] == "slower"
    ran = by_id["gcc-O2"]["summary"]["n"]
    assert o0["summary"]["stopped_at"] == o0["summary"]["n"] < ran
    assert o0["summary"]["stopped_why"].startswith("slower beyond any later round")
    assert by_id["gcc-O2.aa"]["summary"]["stopped_at"] is None       # a control never stops
    assert doc["measurement"]["runs_saved"] == sum(
        ran - v["summary"]["stopped_at"] for v in doc["variants"] if v["summary"]["stopped_at"])
    db = Store()
    rounds_o0 = {s.round for s in db.samples(doc["run_id"]) if s.variant_id == "gcc-O0"}
    assert max(rounds_o0) == o0["summary"]["stopped_at"] - 1
    # the page and the terminal say which stopped, what it saved, and what is still open
    from flagsweep.report import terminal, view
    model = reader.load(path)
    said = "\n".join(terminal._findings(model, view.build(model, path, path.parent)))
    stopped = f"-O0 after {o0['summary']['stopped_at']} of {ran} rounds (slower)"
    assert stopped in said and f"; {doc['measurement']['runs_saved']} runs not spent" in said
    page = (path.parent / "index.html").read_text()
    assert stopped in page and '<span class="stopped">stopped</span>' in page


@pytest.mark.integration
def test_a_fixed_design_stops_nothing_and_reaches_the_same_verdicts(tmp_path):
    adaptive = reader.load(_start3(tmp_path / "a", Synthetic(FACTORS))).dump()
    fixed = reader.load(_start3(tmp_path / "f", Synthetic(FACTORS), runs=20)).dump()
    assert fixed["measurement"]["runs_saved"] == 0
    # the stops' share of alpha is out of the final analysis's; one look tests at 0.05
    assert fixed["measurement"]["sequential"] == {"alpha": 0.05, "stops_alpha": 0.0,
                                                  "tost_level": 0.05}
    spent = adaptive["measurement"]["sequential"]
    assert math.isclose(spent["alpha"] + spent["stops_alpha"], 0.05) and spent["stops_alpha"] > 0
    assert spent["tost_level"] < 0.05
    assert all(v["summary"]["stopped_at"] is None for v in fixed["variants"])
    verdicts = [{v["id"]: v["vs_baseline"] and v["vs_baseline"]["verdict"] for v in d["variants"]}
                for d in (adaptive, fixed)]
    assert verdicts[0] == verdicts[1]


@pytest.mark.integration
def test_a_sweep_interrupted_after_a_stop_resumes_without_measuring_the_stopped_variant(tmp_path):
    from flagsweep.errors import Interrupted

    whole = reader.load(_start3(tmp_path / "whole", Synthetic(FACTORS))).dump()
    at = {v["id"]: v for v in whole["variants"]}["gcc-O0"]["summary"]["stopped_at"]
    cut = 4 * (1 + at) + 1             # the warmup and the rounds up to the stop, then one more

    with pytest.raises(Interrupted):
        _start3(tmp_path / "cut", Synthetic(FACTORS, stop_after=cut))
    db = Store()
    run_id = db.find_run(str(tmp_path / "cut" / "run"))
    path = sweep.resume(run_id, db, lambda _: None, execute=Synthetic(FACTORS))
    doc = reader.load(path).dump()
    o0 = {v["id"]: v for v in doc["variants"]}["gcc-O0"]
    ran = {v["id"]: v for v in doc["variants"]}["gcc-O2"]["summary"]["n"]
    assert o0["summary"]["stopped_at"] == at and doc["measurement"]["runs_saved"] >= ran - at
    assert max(s.round for s in db.samples(run_id) if s.variant_id == "gcc-O0") == at - 1


class Loaded(Synthetic):
    """Synthetic executions whose scheduler evidence says that every call after the first
    `quiet` waited for its CPU 60% of its time: disturbed for any metric (measure.disturbance),
    retaken, still disturbed, until the sweep stops busy."""

    def __init__(self, factors: dict[str, float], quiet: int):
        super().__init__(factors)
        self.quiet = quiet

    def __call__(self, argv, **kw) -> Execution:
        e = super().__call__(argv, **kw)
        if self.calls <= self.quiet:
            return e
        return Execution(e.wall_s, e.user_s, e.sys_s, e.maxrss_kb,
                         {"run_delay_s": 0.6 * e.wall_s}, False, None)


def _every_cpu_busy(monkeypatch) -> None:
    """The machine as the busy stop measures it: CPUs 0 and 1 both fully busy over the window,
    a task pinned to CPU 0 (so CPU 1 ranks first among them), whatever this machine holds."""
    from flagsweep.host import load, placement

    pinned = load.Task(77, "other", 10, 0, True, 0)
    ticks = iter([{0: (100, 1000), 1: (100, 1000)}, {0: (100, 1050), 1: (100, 1050)}])
    monkeypatch.setattr(load, "snapshot", lambda *a, **k: load.Snapshot(next(ticks),
                                                                        {77: pinned}, 0.0))
    monkeypatch.setattr(placement, "_candidates", lambda: ([0, 1], []))


@pytest.mark.integration
def test_a_sweep_stopped_busy_has_no_answer_exits_3_and_its_resume_counts_on(
        tmp_path, monkeypatch, capsys):
    """A busy stop is no answer: the recommendation says so and what would give one (every
    view of it reads it), `run` exits 3, the advice names no CPU that is not idle, and the
    resumed sweep's progress lines go on from the round it measures next."""
    from flagsweep.cli.sweeping import NO_ANSWER, _exit_unanswered, _finish

    _every_cpu_busy(monkeypatch)
    path = _start(tmp_path, Loaded({"gcc-O1": 1.10}, quiet=3), metric="wall", cpu=0)
    doc = reader.load(path)
    assert doc.status == "busy" and doc.recommendation.flags is None
    why = doc.recommendation.why
    assert why.startswith("No answer yet: the machine was busy, so the sweep stopped after 4 "
                          "of at most 12 rounds, before its stopping rule could judge; its "
                          "verdicts so far (")
    assert why.endswith(f"`flagsweep run --resume {doc.run_id}` continues it once the machine "
                        "is quieter (`flagsweep system` shows what runs).")
    assert doc.recommendation.confirmation is None          # nothing to confirm yet
    assert "is free now" not in doc.stop_reason
    assert "no other CPU is free and idle" in doc.stop_reason
    for view in ("summary.md", "index.html"):
        assert "No answer yet: the machine was busy" in (path.parent / view).read_text()
    capsys.readouterr()
    with pytest.raises(SystemExit) as ended:
        _finish(path)
    assert ended.value.code == NO_ANSWER == 3
    assert "recommendation: No answer yet" in capsys.readouterr().err
    # beside a complete sweep (run --all, a fleet): still no answer, the busy one named
    done = json.loads(path.read_text()) | {"status": "complete", "run_id": "other"}
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "results.json").write_text(json.dumps(done))
    with pytest.raises(SystemExit) as ended:
        _exit_unanswered([tmp_path / "other" / "results.json", path])
    assert ended.value.code == NO_ANSWER
    assert (f"no answer yet from 1 of 2 sweeps: {doc.run_id} (busy) (exit status 3; "
            "--resume each)") in capsys.readouterr().err
    _exit_unanswered([tmp_path / "other" / "results.json"])          # all complete: exit 0

    resumed = sweep.resume(doc.run_id, Store(), lambda _: None,
                           execute=Synthetic({"gcc-O1": 1.10}))
    counted = [line.split(":")[0] for line in capsys.readouterr().err.splitlines()
               if line.startswith("round ")]
    assert counted[0] == "round 5/12"                   # not "round 1/12" again
    assert reader.load(resumed).status == "complete"
    assert reader.load(resumed).recommendation.why.startswith("no variant was significantly")
