"""merge and pick on results from two simulated machines (fixture results whose CPUs differ:
one runs x86-64-v3, one only v2), and their refusals."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
import report_fixture as rf
from click.testing import CliRunner

from flagsweep import report
from flagsweep.across import merge, pick
from flagsweep.cli import cli
from flagsweep.errors import FlagsweepError
from flagsweep.host import cpu

V3 = "gcc-O2-march-x86-64-v3"


def _machine_doc(name: str, level: str, seed: int, scale: dict | None = None) -> dict:
    """Fixture results on a CPU of `level`, with -O2 -march=x86-64-v3 in place of -Os."""
    rf_plan = dict(rf.PLAN)
    try:
        rf.PLAN.pop("gcc-Os")
        rf.PLAN[V3] = (["-O2", "-march=x86-64-v3"], 0.95, 0.004)   # 5% faster where it runs
        doc = rf.results_doc(seed=seed, scale=scale)
    finally:
        rf.PLAN.clear()
        rf.PLAN.update(rf_plan)
    doc["target"] = "tiny"
    doc["run_id"] = f"tiny-{name}"
    doc["machine"].update(hostname=name, cpu_model=f"{name} CPU",
                          cpu_flags=sorted(cpu.LEVELS[level]))
    return doc


@pytest.fixture
def two_machines(tmp_path):
    a = rf.write(tmp_path / "a", _machine_doc("alpha", "x86-64-v3", seed=1))
    b = rf.write(tmp_path / "b", _machine_doc("beta", "x86-64-v3", seed=2, scale={"gcc-O3": 1.25}))
    return a, b


def test_merge_lays_out_variant_by_machine(two_machines, tmp_path):
    page = report.write_merge(merge.load_all(list(two_machines)), tmp_path / "m")
    data = json.loads((tmp_path / "m" / "merged.json").read_text())
    assert [m["machine"]["hostname"] for m in data["machines"]] == ["alpha", "beta"]
    o3 = next(v for v in data["variants"] if v["id"] == "gcc-O3")
    assert [c["verdict"] for c in o3["per_machine"]] == ["faster", "slower"]
    html = page.read_text()
    assert 'id="merge-table"' in html and "<strong>" in html and rf.EVIL not in html


def test_merge_refuses_what_does_not_compare(tmp_path):
    a = _machine_doc("alpha", "x86-64-v3", seed=1)
    b = _machine_doc("beta", "x86-64-v3", seed=2)
    b["workload"]["input_sha256"] = "cd" * 32
    paths = [rf.write(tmp_path / "a", a), rf.write(tmp_path / "b", b)]
    with pytest.raises(FlagsweepError, match=r"differ in input \(sha256\).*not merged"):
        merge.load_all(paths)


def test_pick_keeps_to_flags_every_cpu_runs(tmp_path):
    a = rf.write(tmp_path / "a", _machine_doc("alpha", "x86-64-v3", seed=1))
    b = rf.write(tmp_path / "b", _machine_doc("beta", "x86-64-v2", seed=2))
    p = pick.pick([a, b])
    by_id = {c.id: c for c in p.candidates}
    assert "beta CPU" in by_id[V3].excluded and "avx2" in by_id[V3].excluded
    assert p.chosen.id == "gcc-O3"                        # 10% faster on both
    assert 0.88 < p.chosen.ratio < 0.92 and p.chosen.ci95[1] < 0.99
    assert p.chosen.losses == []


def test_pick_lists_where_the_pick_loses_and_answers_the_v3_question(two_machines):
    p = pick.pick(list(two_machines))
    # -O3: 10% faster on alpha, 1.25 x 0.9 = 12.5% slower on beta; -march=x86-64-v3 5% on both.
    assert p.chosen.id == V3
    o3 = next(c for c in p.candidates if c.id == "gcc-O3")
    assert [loss.machine.split(",")[1].strip() for loss in o3.losses] == ["beta CPU 1"]
    assert any(line.startswith("tiny: -O2 -march=x86-64-v3 -5.") and "2 machine(s)" in line
               for line in p.levels)


def test_pick_with_a_baseline_isa_refuses_v3(two_machines):
    p = pick.pick(list(two_machines), baseline_isa="x86-64-v2")
    v3 = next(c for c in p.candidates if c.id == V3)
    assert v3.excluded.startswith("not every x86-64-v2 CPU can run it")
    assert p.chosen is None or p.chosen.id != V3


def test_pick_command_prints_the_table(two_machines):
    result = CliRunner().invoke(cli, ["pick", *map(str, two_machines)])
    assert result.exit_code == 0, result.output
    assert "pick: -O2 -march=x86-64-v3" in result.output


def test_pick_json_is_pure_json_on_stdout(two_machines):
    out = subprocess.run([sys.executable, "-m", "flagsweep", "pick", *map(str, two_machines),
                          "--json"], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["chosen"]["flags"] == ["-O2", "-march=x86-64-v3"]


@pytest.mark.breaks_contract
def test_merge_and_pick_refuse_a_ratio_that_is_not_a_number(two_machines, tmp_path):
    """Both took a string or a boolean ratio: merge with a traceback, pick silently (a ratio of
    true counted as 1)."""
    a, b = two_machines
    doc = json.loads(b.read_text())
    o3 = next(i for i, v in enumerate(doc["variants"]) if v["id"] == "gcc-O3")
    doc["variants"][o3]["vs_baseline"]["ratio"] = True
    b.write_text(json.dumps(doc))
    why = f"{b}: key 'variants[{o3}].vs_baseline.ratio': expected a number or null, got true"
    for args in (["merge", str(a), str(b), "--out", str(tmp_path / "m")], ["pick", str(a), str(b)]):
        done = subprocess.run([sys.executable, "-m", "flagsweep", *args], capture_output=True,
                              text=True)
        assert (done.returncode, done.stderr) == (2, f"flagsweep: {why}\n")
    assert not (tmp_path / "m").exists()


def test_pick_shows_each_candidates_skew_worst_loss_and_costs(two_machines, tmp_path):
    """-O3 is 10% faster on alpha and 12.5% slower on beta: a mean hides that, the skew does
    not; its text size and build CPU against the baseline's sit beside it."""
    docs = [json.loads(p.read_text()) for p in two_machines]
    for doc in docs:
        for v in doc["variants"]:
            grow = {"gcc-O3": 1.3, V3: 1.02}.get(v["id"], 1.0)
            v["build"].update(sizes={"text": int(100_000 * grow), "data": 10, "bss": 5},
                              cpu_seconds=10.0 * grow)
    paths = [rf.write(tmp_path / name, doc) for name, doc in zip("ab", docs)]
    p = pick.pick(paths)
    o3 = next(c for c in p.candidates if c.id == "gcc-O3")
    assert o3.skew == pick.Skew(faster=1, equivalent=0, slower=1, undecided=0)
    assert "beta CPU 1" in o3.worst.machine and o3.worst.ratio > 1.1
    assert o3.size_ratio == pytest.approx(1.3) and o3.build_cpu_ratio == pytest.approx(1.3)
    assert "-O3: " in p.answer and "faster on 1, equivalent on 0, slower on 1" in p.answer
    assert "worst tiny +" in p.answer and "text size +30.0%; build CPU +30.0%" in p.answer
    result = CliRunner().invoke(cli, ["pick", *map(str, paths)])
    assert result.exit_code == 0, result.output
    assert "1/0/1/0" in result.output and "+30.0%" in result.output


def test_results_from_the_store_are_never_written_through_a_planted_link(tmp_path):
    """merge and suite write a stored run's results into OUT/runs/<id>/: a link planted there
    had them renamed into the folder it points to."""
    from flagsweep.results import writer
    from flagsweep.results.store import Store

    db = Store(f"sqlite:///{tmp_path}/store.sqlite")
    db.create_run("tiny-stored", "tiny", "olevels", tmp_path / "run", {}, {})
    elsewhere, out = tmp_path / "elsewhere", tmp_path / "out"
    elsewhere.mkdir()
    out.mkdir()
    (out / "runs").symlink_to(elsewhere)
    with pytest.raises(FlagsweepError, match=rf"^{out}/runs is a symbolic link; the results of "
                                             "run tiny-stored are written only into"):
        writer.located("tiny-stored", out / "runs", db)
    assert list(elsewhere.iterdir()) == []


def _candidate(i: int, ratio: float, half: float) -> pick.Candidate:
    """One candidate measured on two programs at `ratio`, each 95% interval +-half (log)."""
    import math
    ci = (ratio * math.exp(-half), ratio * math.exp(half))
    c = pick.Candidate(f"v{i}", "gcc", ["-O2", f"-fflag{i}"],
                       [pick.Pair(p, "m", ratio, ci, "inconclusive") for p in ("a", "b")])
    pick._combine(c)
    return c


def test_pick_adjusts_the_winners_interval_for_choosing_among_the_candidates():
    """Ten candidates: one whose pooled 95% interval just clears -1% is not a pick among ten
    (its interval adjusted for the choice, 1 - 0.05/10, reaches into the band), and is one
    when it is the only candidate; a clear winner is picked among ten with that interval."""
    near = [_candidate(0, 0.98, 0.012)] + [_candidate(i, 1.0, 0.012) for i in range(1, 10)]
    assert near[0].ci95[1] < 0.99              # unadjusted, it would have been the pick
    chosen, why = pick._choose(near, "gcc-O2", 1.0)
    assert chosen is None and "adjusted for choosing among them" in why
    alone, _ = pick._choose([_candidate(0, 0.98, 0.012)], "gcc-O2", 1.0)
    assert alone is not None and alone.id == "v0"
    clear = [_candidate(0, 0.95, 0.012)] + near[1:]
    chosen, why = pick._choose(clear, "gcc-O2", 1.0)
    assert chosen.id == "v0" and chosen.ci_fcr[1] < 0.99
    assert chosen.ci_fcr[0] < chosen.ci95[0]       # wider than its own 95% interval
    assert "99.5% interval, adjusted for choosing among 10" in why


def test_pick_json_of_a_file_with_escape_sequences_is_the_json_as_it_was(tmp_path, main):
    """JSON writes every control character as \\u00XX already: --json passes as it is."""
    path = rf.write(tmp_path / "run", rf.escaping_doc())
    code, _ = main("pick", str(path), "--json")
    assert code == 0
    expected = json.dumps(dataclasses.asdict(pick.pick([path])), indent=1) + "\n"
    assert main.out == expected and "\\u001b]0;owned\\u0007" in expected
