"""Duet rounds in whole sweeps of the real tiny program (really built, really checked) whose
timed runs come from the executor seam (tests/synthetic.py): the host's noise of a moment, a
side bias and contention are planted, so the schedule's choice and the verdicts it leads to are
tested on exact, seeded executions, never on a timing. The last test is a real duet sweep."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import contract_validator
from synthetic import Synthetic
from tiny_target import write_tiny_target

from flagsweep.compilation import selection
from flagsweep.errors import FlagsweepError, Interrupted
from flagsweep.jobs import sweep
from flagsweep.measure import rounds
from flagsweep.results import reader
from flagsweep.results.store import Store

CPU = sorted(os.sched_getaffinity(0))[-1]
# The duets' second CPU, given: the stand-in executor pins nothing, so these tests do not need
# a second CPU on the machine that runs them (only its lock file, in the test's lock folder).
OTHER = CPU + 1
EFFECT = 1.03                         # gcc-O1 planted 3% slower
MOMENT = 0.05                         # the host's noise of a moment: 5%, shared by a duet


def _start(tmp_path: Path, execute, schedule: str, say=lambda _: None,
           flags: tuple[str, ...] = ("-O2", "-O1"), **options) -> Path:
    tmp_path.mkdir(exist_ok=True)
    folder = write_tiny_target(tmp_path / "tiny", megabytes=0.25, quick_megabytes=0.25)
    t, r, m, build_opts = selection.prepare(selection.Selection(
        str(folder), flag_sets=flags, out_dir=tmp_path / "run"), lambda _: None)
    opts = sweep.MeasureOptions(**{"min_runs": 5, "max_runs": 12, "warmup": 1, "seed": 11,
                                   "quick": True, "cpu": CPU, "partner_cpu": OTHER,
                                   "schedule": schedule, "no_reference": True, **options})
    return sweep.start(t, r, m, build_opts, opts, Store(), say, execute=execute)


def _doc(path: Path) -> dict:
    doc = json.loads(path.read_text())
    assert not list(contract_validator("results").iter_errors(doc))   # flagsweep schema's
    return doc


def _verdicts(doc: dict) -> dict:
    return {v["id"]: (v["vs_baseline"] or {}).get("verdict") for v in doc["variants"]}


@pytest.fixture(scope="module")
def shared_noise(session_cache, tmp_path_factory) -> dict:
    """The same planted machine, a 3% effect under 5% of noise each moment, measured with
    --schedule auto (the pilot finds duet narrower) and with --schedule serial. Made once a
    module, in the environment the suite's isolated_cache gives each test."""
    said: list[str] = []
    base = tmp_path_factory.mktemp("shared")
    auto = Synthetic({"gcc-O1": EFFECT}, moment_cv=MOMENT)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLAGSWEEP_CACHE", str(session_cache))
        mp.setenv("FLAGSWEEP_LOCK_DIR", str(base))
        mp.setenv("FLAGSWEEP_DB", f"sqlite:///{base / 'store.sqlite'}")
        mp.setenv("XDG_CONFIG_HOME", str(session_cache / "config"))
        path = _start(base / "auto", auto, "auto", said.append)
        serial = _start(base / "serial", Synthetic({"gcc-O1": EFFECT}, moment_cv=MOMENT),
                        "serial")
    return {"auto": path, "serial": serial, "said": said, "executor": auto}


@pytest.mark.integration
def test_auto_chooses_duet_where_the_pilot_finds_it_narrower_and_says_why(shared_noise):
    doc = _doc(shared_noise["auto"])
    s = doc["measurement"]["schedule"]
    assert (s["asked"], s["schedule"], s["cpus"]) == ("auto", "duet", [CPU, OTHER])
    assert s["reason"].startswith("duet: +-") and "agree on every comparison" in s["reason"]
    p = s["pilot"]
    assert p["duet"]["sd_pct"] < p["serial"]["sd_pct"] / 5
    assert p["duet"]["minute_pct"] < p["serial"]["minute_pct"]
    assert [b["variant"] for b in p["bias"]] == ["gcc-O1", "gcc-O2.aa"]
    assert all(b["agrees"] for b in p["bias"]) and s["warning"] is None
    assert "paired with a run of the baseline of its own" in s["design"]
    assert f"schedule: {s['reason']}" in shared_noise["said"]
    page = (shared_noise["auto"].parent / "index.html").read_text()
    assert 'id="schedule"' in page and "schedule pilot" in page
    assert s["reason"] in (shared_noise["auto"].parent / "summary.md").read_text()


@pytest.mark.integration
def test_the_moment_a_duet_shares_cancels_where_serial_rounds_keep_it(shared_noise):
    """The planted 3% is found in duet; serial rounds, whose runs each meet their own moment,
    stay inconclusive within the same rounds. The A/A twin runs in duet too and is equivalent."""
    duet, serial = _doc(shared_noise["auto"]), _doc(shared_noise["serial"])
    assert _verdicts(duet) == {"gcc-O2": None, "gcc-O1": "slower", "gcc-O2.aa": "equivalent"}
    o1 = {v["id"]: v for v in duet["variants"]}["gcc-O1"]["vs_baseline"]
    assert 1.025 < o1["ratio"] < 1.035
    assert duet["aa"]["verdict"] == "equivalent"
    assert _verdicts(serial)["gcc-O1"] == "inconclusive"
    assert serial["measurement"]["schedule"]["reason"] == "serial: --schedule serial"


@pytest.mark.integration
def test_a_duets_pairs_are_balanced_over_the_cpus_and_recorded_in_samples_csv(shared_noise):
    rows = list(csv.DictReader((shared_noise["auto"].parent / "samples.csv").open()))
    counted = [r for r in rows if int(r["round"]) >= 0]
    assert {r["pair"] for r in counted} == {"gcc-O1", "gcc-O2.aa"}
    # each counted duet: the variant and the baseline, each the other's partner, two CPUs
    for pair in ("gcc-O1", "gcc-O2.aa"):
        runs = [r for r in counted if r["pair"] == pair]
        by_round = Counter(r["round"] for r in runs)
        assert set(by_round.values()) == {2}
        variant = [r for r in runs if r["variant"] == pair]
        assert {r["partner"] for r in variant} == {"gcc-O2"}
        assert {r["partner"] for r in runs if r["variant"] == "gcc-O2"} == {pair}
        sides = Counter(r["cpu"] for r in variant)
        assert abs(sides[str(CPU)] - sides[str(OTHER)]) <= 1
    assert {r["pilot"] for r in rows if int(r["round"]) <= -1000} == {"serial", "duet"}
    # what the executor was handed: every duet's two binaries, each pinned to its own CPU
    assert all({cpu for _, cpu in d} == {CPU, OTHER} for d in shared_noise["executor"].duets)


@pytest.mark.integration
def test_a_resumed_duet_sweep_replays_the_same_pairs_and_sides(tmp_path):
    with pytest.raises(Interrupted):
        _start(tmp_path, Synthetic({"gcc-O1": EFFECT}, stop_after=70, moment_cv=MOMENT),
               "duet", runs=8)
    db = Store()
    run_id = db.find_run(str(tmp_path / "run"))
    before = {(s.variant_id, s.round, s.pair, s.cpu) for s in db.samples(run_id)}
    path = sweep.resume(run_id, db, lambda _: None,
                        execute=Synthetic({"gcc-O1": EFFECT}, moment_cv=MOMENT))
    after = [(s.variant_id, s.round, s.pair, s.cpu) for s in db.samples(run_id)]
    assert before <= set(after) and len(after) == len(set(after))
    doc = _doc(path)
    assert doc["status"] == "complete" and doc["measurement"]["schedule"]["schedule"] == "duet"
    plan = rounds.Plan(["gcc-O2", "gcc-O1", "gcc-O2.aa"], seed=11, baseline="gcc-O2",
                       duet=(CPU, OTHER))
    for vid, rnd, pair, cpu in after:
        if rnd >= 0:        # every counted run on the side its duet's seed and round give it
            d = rounds.duet(plan, pair, rnd)
            assert cpu == d.cpus[0 if vid == pair else 1]
    assert {rnd for _, rnd, _, _ in after if rnd >= 0} == set(range(8))


@pytest.mark.integration
@pytest.mark.parametrize("planted, reason", [
    ({"duet_factors": {"gcc-O1": 1.05}}, "serial: the duet bias check failed: gcc-O1 reads "),
    ({"duet_cv": 0.03}, "serial: duet is not narrower here: +-"),
], ids=["side-bias", "contention"])
def test_auto_stays_serial_where_a_duet_is_biased_or_wider(tmp_path, planted, reason):
    path = _start(tmp_path, Synthetic({"gcc-O1": EFFECT}, **planted), "auto", runs=6)
    s = _doc(path)["measurement"]["schedule"]
    assert s["schedule"] == "serial" and s["cpus"] == [CPU] and s["reason"].startswith(reason)
    assert s["pilot"]["serial"]["pairs"] == s["pilot"]["duet"]["pairs"] == 12
    rows = list(csv.DictReader((path.parent / "samples.csv").open()))
    assert all(r["pair"] == "" and r["cpu"] == str(CPU) for r in rows if int(r["round"]) >= 0)


@pytest.mark.integration
def test_a_pilot_where_duet_is_clearly_wider_stops_halfway(tmp_path):
    """Four comparisons whose duets contend (5% of noise each run): after 3 pairs duet reads
    well over 1.25x as wide, so the pilot keeps serial there and says so; serial needs no bias
    check. (With two comparisons, above, the pilot takes all its pairs.)"""
    said: list[str] = []
    path = _start(tmp_path, Synthetic({"gcc-O1": EFFECT}, duet_cv=0.05), "auto", said.append,
                  flags=("-O2", "-O1", "-O3", "-Os"), runs=5)
    s = _doc(path)["measurement"]["schedule"]
    assert s["schedule"] == "serial" and s["pilot"]["comparisons"] == 4
    assert s["pilot"]["pairs"] == 3
    assert s["pilot"]["serial"]["pairs"] == s["pilot"]["duet"]["pairs"] == 12
    assert s["reason"].endswith("(the pilot stopped after 3 pairs: duet 1.25x as wide or more)")
    assert any("after 3, none more where duet is 1.25x as wide" in line for line in said)


@pytest.mark.integration
def test_a_forced_duet_still_checks_its_bias_and_warns(tmp_path):
    said: list[str] = []
    path = _start(tmp_path, Synthetic({"gcc-O1": EFFECT}, duet_factors={"gcc-O1": 1.05}),
                  "duet", said.append, runs=6)
    doc = _doc(path)
    s = doc["measurement"]["schedule"]
    assert s["schedule"] == "duet" and s["warning"].startswith("the duet bias check failed")
    assert f"warning: {s['warning']}" in said
    assert "The duet bias check failed" in (path.parent / "summary.md").read_text()


def test_one_usable_cpu_makes_auto_serial_and_refuses_duet_in_one_line(tmp_path):
    """This process may use one CPU only (as on a 1-vCPU runner, or under taskset -c N)."""
    from flagsweep.jobs import schedule

    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {CPU})
    try:
        opts = sweep.MeasureOptions(cpu=CPU, schedule="auto")
        schedule.prepare(opts, Synthetic({}), lambda _: None)
        assert opts.partner_cpu is None
        assert opts.partner_why == f"this sweep may use one CPU only (CPU {CPU})"
        assert schedule.serial(opts, opts.partner_why).reason == \
            f"serial: this sweep may use one CPU only (CPU {CPU})"
        with pytest.raises(FlagsweepError) as e:
            schedule.prepare(sweep.MeasureOptions(cpu=CPU, schedule="duet"), Synthetic({}),
                             lambda _: None)
    finally:
        os.sched_setaffinity(0, before)
    assert str(e.value) == (f"--schedule duet: no duets here: this sweep may use one CPU only "
                            f"(CPU {CPU}) (--schedule auto or serial measures one run at a time)")


def test_what_a_duet_cannot_do_is_serial_without_a_pilot():
    from flagsweep.jobs import schedule

    assert "layout" in schedule.no_duet(sweep.MeasureOptions(layouts=2))
    assert "counted, not timed" in schedule.no_duet(sweep.MeasureOptions(metric="instructions"))
    one_at_a_time = lambda argv, **kw: None      # noqa: E731 - an executor without `together`
    assert "one workload at a time" in schedule.no_duet(sweep.MeasureOptions(), one_at_a_time)
    assert schedule.no_duet(sweep.MeasureOptions(), Synthetic({})) is None


def test_the_command_line_refuses_duet_with_layouts_or_a_fleet(main):
    code, err = main("run", "tiny", "--schedule", "duet", "--layouts", "2")
    assert code == 2 and "--schedule duet runs two binaries at once" in err
    code, err = main("run", "tiny", "--schedule", "duet", "--scheduler", "tcp://x:1",
                     "--cpu-label", "a")
    assert code == 2 and "not with --scheduler" in err


@pytest.mark.integration
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                    reason="a real duet needs two CPUs this process may use")
def test_a_real_duet_sweep_of_tiny(tmp_path):
    """The launcher's own duets, end to end: two runs at once, each pinned to its CPU. What
    the timings say (and whether a loaded machine stops the sweep busy) is not asserted."""
    out = tmp_path / "out"
    tiny = write_tiny_target(tmp_path / "tiny", megabytes=0.1, quick_megabytes=0.05)
    done = subprocess.run([sys.executable, "-m", "flagsweep", "run", str(tiny), "--quick",
                           "--flags", "-O2", "--flags", "-O1", "--runs", "2", "--warmup", "0",
                           "--schedule", "duet", "--no-confirm", "--no-reference",
                           "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    doc = _doc(out / "results.json")
    s = doc["measurement"]["schedule"]
    assert s["schedule"] == "duet" and len(set(s["cpus"])) == 2
    assert "schedule: duet" in done.stderr
    rows = [r for r in csv.DictReader((out / "samples.csv").open())
            if int(r["round"]) >= 0 and r["retaken"] == "0"]
    duets: dict[tuple, list[dict]] = {}
    for r in rows:
        duets.setdefault((r["round"], r["pair"]), []).append(r)
    assert duets and all(len(d) == 2 and {int(r["cpu"]) for r in d} == set(s["cpus"])
                         and {r["partner"] for r in d} == {r["variant"] for r in d}
                         for d in duets.values())
    assert {pair for _, pair in duets} <= {v["id"] for v in doc["variants"]} - {doc["baseline"]}
