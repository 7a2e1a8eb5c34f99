"""`flagsweep calibrate --qualify`: a runner qualified from planted samples (recorded as a
sweep records them, report_fixture), never from timings of this machine. A clean runner gets
a small threshold; a noisy one a larger threshold or more rounds; one whose A/A twin moves is
held off by its false calls; the command line writes qualify.json under its closed schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import report_fixture as rf

from flagsweep import model, stats
from flagsweep.jobs import calibration, qualification

BASE, *PLANTS = calibration.flag_sets()
RUNS, REPEATS = 10, 8


def _doc(cv: float, twin: float = 1.0, seed: int = 3) -> model.Results:
    """A calibrate run of RUNS x REPEATS rounds: every arm's noise CV `cv`, the A/A twin at
    `twin` x the baseline's speed, each plant at its planted share."""
    plan = {"gcc-base": (BASE.split(), 1.0, cv), "gcc-base.aa": (BASE.split(), twin, cv)}
    for pct, flags in zip(calibration.PLANTED_PCT, PLANTS):
        plan[f"gcc-plant{pct}"] = (flags.split(), 1 + pct / 100, cv)
    return rf.model(rf.sweep_doc(plan, rounds=RUNS * REPEATS, seed=seed))


def _qualify(doc: model.Results, threshold_pct: float = 1.0) -> model.Qualification:
    planted = {pct: f"gcc-plant{pct}" for pct in calibration.PLANTED_PCT}
    return qualification.qualify(doc, planted, RUNS, threshold_pct, Path("results.json"))


def test_a_clean_runner_qualifies_with_a_small_threshold():
    q = _qualify(_doc(0.003))
    assert q.qualified and q.comparisons == REPEATS and q.runs == RUNS
    assert q.gate_threshold_pct <= 1.0 and q.gate_max_runs <= RUNS * REPEATS
    gate = next(s for s in q.settings if s.threshold_pct == q.gate_threshold_pct)
    assert gate.aa_false_calls == 0 and gate.aa_false_ci95[0] == 0
    assert gate.aa_false_ci95[1] == pytest.approx(100 * (1 - 0.025 ** (1 / REPEATS)))
    found = {p.planted_pct: p.found for p in q.planted}
    assert found[3] == found[10] == REPEATS
    lines = qualification.lines(q)
    assert lines[0] == f"on this runner, at {RUNS} rounds, threshold 1%:"
    assert lines[1].startswith(f"  A/A false calls: 0 of {REPEATS} comparisons, 0% (95% CI 0-")
    assert lines[-1].startswith(f"gate: flagsweep run ... --max-runs {q.gate_max_runs}; "
                                f"flagsweep history --check --threshold {q.gate_threshold_pct:g}")


def test_a_noisy_runner_needs_a_larger_threshold_or_more_rounds():
    clean, noisy = _qualify(_doc(0.003)), _qualify(_doc(0.03))
    quiet, loud = (next(s for s in q.settings if s.threshold_pct == 1.0) for q in (clean, noisy))
    assert loud.detectable_pct is None or loud.detectable_pct > quiet.detectable_pct
    if noisy.qualified:
        assert ((noisy.gate_threshold_pct, noisy.gate_max_runs)
                > (clean.gate_threshold_pct, clean.gate_max_runs))
    else:
        assert noisy.why.startswith("no threshold up to 20% qualifies")


def test_a_twin_that_moves_is_held_off_by_its_false_calls():
    """The runner's A/A twin 2% slower (a position, a CPU): a gate below that fails on
    nothing every night, and the false calls say so."""
    q = _qualify(_doc(0.003, twin=1.02))
    by = {s.threshold_pct: s for s in q.settings}
    assert by[1.0].aa_false_calls == REPEATS and not by[1.0].acceptable
    assert by[1.0].aa_false_ci95[0] == pytest.approx(100 * 0.025 ** (1 / REPEATS))
    assert q.qualified and q.gate_threshold_pct >= 2.0     # not below the offset it has


def test_too_few_rounds_for_two_comparisons_are_refused():
    from flagsweep.errors import FlagsweepError

    planted = {pct: f"gcc-plant{pct}" for pct in calibration.PLANTED_PCT}
    with pytest.raises(FlagsweepError, match="expected at least 160"):
        qualification.qualify(_doc(0.003), planted, RUNS * REPEATS, 1.0, Path("r.json"))


def test_the_exact_binomial_interval():
    """Clopper-Pearson, checked against its closed forms at k = 0 and k = n and a table value
    (3 of 10: 6.67%..65.2%)."""
    assert stats.binomial_interval(0, 10) == (0.0, pytest.approx(1 - 0.025 ** 0.1))
    assert stats.binomial_interval(10, 10) == (pytest.approx(0.025 ** 0.1), 1.0)
    low, high = stats.binomial_interval(3, 10)
    assert (round(low, 4), round(high, 4)) == (0.0667, 0.6525)
    with pytest.raises(ValueError):
        stats.binomial_interval(3, 2)


def test_calibrate_qualify_prints_the_gate_and_writes_qualify_json(tmp_path, monkeypatch,
                                                                  main):
    """The command's wiring around the sweep (calibration.run, the part that builds and times,
    stands in with a recorded clean run): the answer on stdout, then qualify.json under the
    schema `flagsweep schema qualify` prints."""
    from conftest import contract_validator

    path = rf.write(tmp_path / "cal", _doc(0.003).dump())
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp_path / 'store.sqlite'}")
    asked = {}

    def sweep(build_opts, opts, store, say, execute=None):
        asked.update(runs=opts.runs, max_runs=opts.max_runs)
        return path, []
    monkeypatch.setattr(calibration, "run", sweep)
    code, err = main("calibrate", "--qualify", "--runs", str(RUNS), "--repeats", str(REPEATS),
                     "--out", str(tmp_path / "cal"))
    assert code == 0, err
    assert asked == {"runs": RUNS * REPEATS, "max_runs": RUNS * REPEATS}
    out = main.out.splitlines()
    assert f"on this runner, at {RUNS} rounds, threshold 1%:" in out
    assert any(line.startswith("gate: flagsweep run ... --max-runs ") for line in out)
    written = Path(out[-1])
    assert written == path.parent / "qualify.json"
    doc = json.loads(written.read_text())
    assert doc["schema"] == model.QUALIFY_SCHEMA and doc["qualified"] is True
    assert [e.message for e in contract_validator("qualify").iter_errors(doc)] == []
    assert model.Qualification.model_validate(doc).gate_threshold_pct == doc["gate_threshold_pct"]


def test_repeats_without_qualify_is_a_usage_error(main):
    code, err = main("calibrate", "--repeats", "10")       # even the default, when given
    assert code == 2 and "--repeats" in err and "--qualify" in err


@pytest.mark.integration
def test_qualify_through_the_executor_seam_clean_and_noisy(tmp_path):
    """The shipped tiny program's planted variants really built and checked once per runner,
    each timed through the sweep's executor seam at its planted factor: a clean runner (CV
    0.3% a run) and a noisy one (3% more a run, drawn per run). The clean one qualifies at
    1% or below; the noisy one needs a larger threshold or more rounds, or does not qualify."""
    from synthetic import Synthetic

    from flagsweep.compilation import variants
    from flagsweep.experiment import matrix, recipe
    from flagsweep.jobs import sweep
    from flagsweep.results.store import Store

    ids = [v.id for v in matrix.expand(recipe.from_flags(calibration.flag_sets(), ["gcc"])).variants]
    factors = {vid: 1 + pct / 100 for vid, pct in zip(ids[1:], calibration.PLANTED_PCT)}
    runs, repeats = 6, 5
    found = {}
    for name, cv in (("clean", 0.0), ("noisy", 0.03)):
        opts = sweep.MeasureOptions(runs=runs * repeats, min_runs=runs * repeats,
                                    max_runs=runs * repeats, quick=True, seed=5)
        path, _ = calibration.run(variants.Options(out_dir=tmp_path / name, jobs=2), opts,
                                  Store(), lambda _: None,
                                  execute=Synthetic(factors, moment_cv=cv))
        found[name] = calibration.qualified(path, runs, 1.0)
    clean, noisy = found["clean"], found["noisy"]
    assert clean.qualified and clean.gate_threshold_pct <= 1.0 and clean.comparisons == repeats
    assert {p.planted_pct: p.found for p in clean.planted}[10] == repeats
    if noisy.qualified:
        assert ((noisy.gate_threshold_pct, noisy.gate_max_runs)
                > (clean.gate_threshold_pct, clean.gate_max_runs))
