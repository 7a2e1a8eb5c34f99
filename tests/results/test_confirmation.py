"""A small "Use X" confirmed over code layouts before it is printed (flagsweep.results.confirmation,
the stage in flagsweep.jobs.sweep): tiny really built, checked and relinked in seeded layouts; every
execution from the stand-in executor at a planted speed per binary, so each test plants what one
build and what each layout would show, and the decisions above the seam are tested without timing."""

from __future__ import annotations

import html
import io
import json
import math

import pytest
from pathlib import Path
from rich.console import Console
from synthetic import Synthetic
from tiny_target import write_tiny_target

from flagsweep import stats
from flagsweep.jobs import sweep
from flagsweep.compilation import layout as link
from flagsweep.compilation import selection
from flagsweep.errors import Interrupted
from flagsweep.host.executor import Execution
from flagsweep.report import terminal
from flagsweep import model
from flagsweep.results import confirmation, reader
from flagsweep.results.store import Store

K = 2                   # layouts a side in the tests' confirmations: the fewest that give a spread


def _layouts_of(vid: str, levels: list[float]) -> dict[str, float]:
    """The confirmation's binaries of `vid`, one planted level per layout seed."""
    return {f"{vid}{link.MARK}{seed}": level for seed, level in enumerate(levels, 1)}


def _twin(levels: list[float]) -> dict[str, float]:
    return {f"gcc-O2.aa{link.MARK}{seed}": level
            for seed, level in enumerate(levels, len(levels) + 1)}


def _run(tmp_path, name: str, planted: dict[str, float], stop_after: int | None = None,
         flag_sets: tuple[str, ...] = ("-O2", "-O1"), k: int = K, execute=None, **opts):
    """tiny at -O2 (the baseline) and -O1 (or `flag_sets`), 8 fixed rounds; a target name of
    its own, so no other test's layout spread is found in the session's store."""
    if link.unavailable("gcc"):
        pytest.skip(link.unavailable("gcc"))
    folder = write_tiny_target(tmp_path / name, name=name, megabytes=0.25, quick_megabytes=0.25)
    t, r, m, build_opts = selection.prepare(selection.Selection(
        str(folder), flag_sets=flag_sets, out_dir=tmp_path / "run"), lambda _: None)
    o = sweep.MeasureOptions(runs=8, min_runs=8, max_runs=8, warmup=1, seed=5, quick=True,
                             confirm_layouts=k, **opts)
    said: list[str] = []
    path = sweep.start(t, r, m, build_opts, o, Store(), said.append,
                       execute=execute or Synthetic(planted, stop_after=stop_after))
    return reader.load(path).dump(), path, said


class BusyLayouts(Synthetic):
    """Planted speeds; every run of a relinked layout waited for its CPU 60% of its time, as
    the scheduler's evidence says it (measure.disturbance): the confirmation stops busy."""

    def _run(self, argv, moment: float, cpu: int | None = None) -> Execution:
        e = super()._run(argv, moment, cpu)
        if link.MARK not in Path(argv[0]).parts[Path(argv[0]).parts.index("builds") + 1]:
            return e
        return Execution(e.wall_s, e.user_s, e.sys_s, e.maxrss_kb,
                         {"run_delay_s": 0.6 * e.wall_s}, False, None)


def _terminal(path) -> str:
    buf = io.StringIO()
    terminal.show(path, Console(file=buf, width=400, highlight=False))
    return buf.getvalue()


def _page(path) -> str:
    return html.unescape((path.parent / "index.html").read_text())


@pytest.mark.integration
def test_a_small_win_that_layout_swallows_is_not_recommended(tmp_path):
    """One build a variant: -O1 3% faster (a "Use -O1" of 95% CI within the 5% default reach).
    Relinked, -O1's layouts land at +3% and -4%, the baseline's at -3% and +4%: over the layouts
    there is no effect. The answer is the baseline, "not distinguishable from layout luck",
    with both intervals, on the page and in the terminal; the main sweep stays complete."""
    planted = {"gcc-O1": 0.97, **_layouts_of("gcc-O1", [1.03, 0.96]),
               **_layouts_of("gcc-O2", [0.97, 1.04]), **_twin([1.02, 0.98])}
    doc, path, said = _run(tmp_path, "tinyluck", planted)
    rec = doc["recommendation"]
    c = rec["confirmation"]
    assert c["status"] == confirmation.LUCK and c["variant"] == "gcc-O1"
    assert rec["variant"] == "gcc-O2" and rec["flags"] == ["-O2"]
    assert c["reach_pct"] == confirmation.DEFAULT_REACH_PCT and "default" in c["reach_source"]
    one, over = c["one_layout"], c["over_layouts"]
    assert one["ci95"][1] < 0.99 and over["layouts"] == K and over["verdict"] != "faster"
    assert over["ci95"][0] < 1 < over["ci95"][1]
    both = (f"not distinguishable from layout luck: {_change(one)} in one layout, but "
            f"{_change(over)} over {K} layouts each")
    assert both in rec["why"]
    for text in (_page(path), _terminal(path)):
        assert f"Keep -O2: -O1 is {both}" in text
        assert "Use -O1" not in text
    assert doc["status"] == "complete"
    child = Store().run(c["run_id"])
    assert child.status == "complete" and child.options.measure["layouts"] == K
    assert child.options.confirms.run_id == doc["run_id"]
    assert any("confirm: -O1: not distinguishable from layout luck" in line for line in said)


def _change(c: dict) -> str:
    return stats.change_text(c["ratio"], c["ci95"])


@pytest.mark.integration
def test_a_small_win_that_holds_in_every_layout_is_confirmed(tmp_path):
    """The same 3% win, and every layout of -O1 3% faster than every layout of the baseline:
    "Use -O1", confirmed over the layouts. What it prints is the confirmation's estimate and
    the interval its verdict used (fresh layouts: the flags' effect), the one build's after."""
    planted = {"gcc-O1": 0.97, **_layouts_of("gcc-O1", [0.97, 0.971]),
               **_layouts_of("gcc-O2", [1.0, 1.001]), **_twin([1.0, 1.001])}
    doc, path, _ = _run(tmp_path, "tinyheld", planted)
    rec, c = doc["recommendation"], doc["recommendation"]["confirmation"]
    assert c["status"] == confirmation.CONFIRMED
    assert rec["variant"] == "gcc-O1" and rec["flags"] == ["-O1"]
    over = c["over_layouts"]
    assert over["verdict"] == "faster" and over["ci_fcr"][1] < 0.99
    assert c["seconds"] > 0 and (tmp_path / "run" / "layouts" / "results.json").is_file()
    e = rec["estimate"]
    assert e["kind"] == "over-layouts" and e["layouts"] == K
    assert (e["ratio"], e["ci"], e["level"]) == (over["ratio"], over["ci_fcr"], over["fcr_level"])
    printed = (f"Use -O1: {_change(over).split()[0]} over {K} layouts each against the baseline "
               f"({stats.level_text(e['level'])} CI {stats.ci_text(e['ci'])}, the confirmation's")
    for text in (_page(path), _terminal(path)):
        assert printed in text
        one = c["one_layout"]
        assert "confirmed over layouts, where one build each measured " \
               f"{stats.change_text(one['ratio'])} ({stats.level_text(one['fcr_level'])} CI " \
               f"{stats.ci_text(one['ci_fcr'])})" in text


@pytest.mark.integration
def test_every_row_within_layout_luck_is_measured_again_in_one_sweep(tmp_path):
    """Three variants, one build each: -O1 has no effect but its build is 2% faster by layout
    (its layouts land where the baseline's do); -Os is truly 3% faster (in every layout); -O3
    truly 10%. -O1 and -Os come within the reach, so one confirmation sweep measures both and
    the baseline in K layouts each: -O1 is not distinguishable from layout luck and reads
    "faster (one layout, within layout luck)" on the page, in summary.md and in the terminal,
    its effect "one layout"; -Os is confirmed, with its layouts' interval; -O3, beyond the
    reach, is never relinked. The answer is -O3."""
    flat = [1.0, 1.001, 0.999]                  # three layouts a side: three comparisons
    planted = {"gcc-O1": 0.98, "gcc-Os": 0.97, "gcc-O3": 0.90,
               **_layouts_of("gcc-O1", flat), **_layouts_of("gcc-O2", flat),
               **_layouts_of("gcc-Os", [0.97, 0.971, 0.969]), **_twin(flat)}
    # no --budget: rows that are not the answer are confirmed at most in the sweep's own time,
    # which these 0.1 s runs make shorter than any confirmation (test_layout_rows.py holds that)
    doc, path, said = _run(tmp_path, "tinyrows", planted,
                           flag_sets=("-O2", "-O1", "-Os", "-O3"), k=3, budget=None)
    c = doc["recommendation"]["confirmation"]
    assert c["status"] == confirmation.MEASURED and c["variants"] == ["gcc-Os", "gcc-O1"]
    child = reader.load(tmp_path / "run" / "layouts" / "results.json")
    assert {v.id for v in child.variants} == {"gcc-O2", "gcc-O2.aa", "gcc-O1", "gcc-Os"}
    rows = {v["id"]: v["vs_baseline"] for v in doc["variants"] if v.get("vs_baseline")}
    assert rows["gcc-O1"]["verdict"] == "faster"
    assert rows["gcc-O1"]["layout_luck"]["status"] == confirmation.LUCK
    assert rows["gcc-Os"]["layout_luck"]["status"] == confirmation.CONFIRMED
    assert rows["gcc-Os"]["layout_luck"]["over_layouts"]["layouts"] == 3
    assert "layout_luck" not in rows["gcc-O3"]
    assert doc["recommendation"]["variant"] == "gcc-O3"
    effects = {e["level"]: e for e in doc["effects"]}
    assert effects["-O1"]["layout_luck"]["status"] == confirmation.LUCK
    label = "faster (one layout, within layout luck)"
    page, summary = _page(path), (path.parent / "summary.md").read_text()
    terminal_text = _terminal(path)
    for text in (page, summary, terminal_text):
        assert label in text and text.count(label) >= 1
    assert "Use -O3" in page and "Use -O3" in terminal_text
    assert "one layout, within layout luck (not settled): flags = -O1" in terminal_text
    over = rows["gcc-Os"]["layout_luck"]["over_layouts"]["ci95"]
    assert f"over 3 layouts [{100 * (over[0] - 1):+.1f}, {100 * (over[1] - 1):+.1f}]" in page
    assert any(line.startswith("confirm: -O1: not distinguishable from layout luck")
               for line in said)


@pytest.mark.integration
def test_a_confirmation_that_stops_busy_is_no_answer_and_says_how_to_go_on(tmp_path,
                                                                          monkeypatch):
    """The layouts' sweep stops because the machine is busy after a few runs: its layouts are
    not an answer, so the run's record says the confirmation ended busy and how to resume it,
    and the win it was to confirm is not said settled."""
    from flagsweep.host import placement
    monkeypatch.setattr(placement, "after_busy", lambda cpu, **k: "no other CPU is free")
    doc, path, said = _run(tmp_path, "tinybusy", {"gcc-O1": 0.97},
                           execute=BusyLayouts({"gcc-O1": 0.97}))
    c = doc["recommendation"]["confirmation"]
    child = reader.load(tmp_path / "run" / "layouts" / "results.json")
    assert child.status == "busy"
    assert c["status"] == confirmation.INTERRUPTED and c["run_id"] == child.run_id
    assert c["why"].startswith("not confirmed over layouts: the confirmation ended busy (")
    assert c["why"].endswith(f"Continue with: flagsweep run --resume {child.run_id}")
    assert "the confirmation ended busy" in _page(path)
    assert any("the confirmation ended busy" in line for line in said)


@pytest.mark.integration
def test_no_confirm_says_the_answer_is_unconfirmed(tmp_path):
    """--no-confirm: the same small win is recommended, no layout is built, and the answer says
    it was not confirmed and why that matters; the Reproduce line keeps the option."""
    doc, path, _ = _run(tmp_path, "tinyskip", {"gcc-O1": 0.97}, layout_confirm=False)
    rec, c = doc["recommendation"], doc["recommendation"]["confirmation"]
    assert c["status"] == confirmation.SKIPPED and rec["variant"] == "gcc-O1"
    assert not (tmp_path / "run" / "layouts").exists()
    for text in (_page(path), _terminal(path)):
        assert "Use -O1" in text and "Not confirmed over layouts (--no-confirm)" in text
        assert "faster (one layout, within layout luck)" in text
    assert "--no-confirm" in _page(path).split("Reproduce")[-1]


@pytest.mark.integration
def test_a_win_far_beyond_layout_reach_is_not_confirmed_again(tmp_path):
    """-O1 20% faster: its interval with one build's layout luck (the default reach) lies
    beyond the threshold, so nothing is relinked; the answer prints that interval, wider than
    the sweep's own, and says which it is."""
    doc, path, _ = _run(tmp_path, "tinyfar", {"gcc-O1": 0.80})
    rec, c = doc["recommendation"], doc["recommendation"]["confirmation"]
    assert c["status"] == confirmation.NOT_NEEDED and "layout luck reaches 5.0%" in c["why"]
    assert rec["variant"] == "gcc-O1"
    assert not (tmp_path / "run" / "layouts").exists()
    e, vs = rec["estimate"], next(v["vs_baseline"] for v in doc["variants"] if v["id"] == "gcc-O1")
    assert e["kind"] == "with-layout-luck" and e["ci"][0] < vs["ci_fcr"][0]
    assert e["ci"][1] > vs["ci_fcr"][1] and e["ci"][1] < 0.99
    page = _page(path)
    said = page.split('id="recommendation">')[1].split("<")[0]
    assert said.startswith(f"Use -O1: {stats.change_text(e['ratio'])} against the baseline "
                           f"({stats.level_text(e['level'])} CI {stats.ci_text(e['ci'])}, with "
                           "one build's layout luck")
    assert "no confirmation over layouts was needed" in page.split('id="interval">')[1]


@pytest.mark.integration
def test_an_interrupted_confirmation_keeps_the_sweep_and_resumes(tmp_path):
    """Ctrl-C in the confirmation's rounds: the sweep is complete with every sample, its answer
    says the confirmation was interrupted; resuming the confirmation finishes the answer."""
    planted = {"gcc-O1": 0.97, **_layouts_of("gcc-O1", [1.03, 0.96]),
               **_layouts_of("gcc-O2", [0.97, 1.04]), **_twin([1.02, 0.98])}
    main_calls = 3 * (1 + 8)                  # three binaries, a warmup and eight rounds
    with pytest.raises(Interrupted, match="is complete"):
        _run(tmp_path, "tinystop", planted, stop_after=main_calls + 10)
    db = Store()
    main_id = db.find_run(str(tmp_path / "run"))
    assert db.run(main_id).status == "complete" and len(db.samples(main_id)) == main_calls
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    c = doc["recommendation"]["confirmation"]
    assert c["status"] == confirmation.INTERRUPTED and c["run_id"]
    assert "the confirmation was interrupted" in _page(tmp_path / "run" / "results.json")
    sweep.resume(c["run_id"], db, lambda _: None, execute=Synthetic(planted))
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert doc["recommendation"]["confirmation"]["status"] == confirmation.LUCK
    assert doc["recommendation"]["variant"] == "gcc-O2"
    assert len(db.samples(main_id)) == main_calls


@pytest.mark.breaks_contract        # stored runs' results.json hold only what the reach reads
def test_the_reach_is_the_measured_layout_spread_where_known(tmp_path):
    """A complete --layouts run of the target on this machine says how far layout moves it:
    the reach is 1.96 sqrt(2) times that spread; another machine's run does not count."""
    db = Store()
    machine = {"hostname": "h", "cpu_model": "c"}
    for name, where, sd in (("near", machine, 0.01), ("other", {**machine, "hostname": "x"}, 0.1)):
        out = tmp_path / name
        out.mkdir()
        run_id = db.create_unique_run(name, "reachy", "olevels", out,
                                      {"measure": {"layouts": 4}}, where)
        # the run's own results.json, naming it: what shows the row's folder is the run's
        (out / "results.json").write_text(json.dumps(_results(run_id=run_id,
                                                              noise={"sd_log_diff": sd})))
        db.finish_run(run_id, "complete", "decided")
    here = model.Machine.model_validate(machine)
    reach, source = confirmation.measured_reach(db, "reachy", here)
    assert reach == pytest.approx(100 * math.expm1(1.959964 * math.sqrt(2) * 0.01))
    assert "+-1.0%" in source and "near" in source
    doc = model.Results.model_validate(_results(
        measurement={}, recommendation={"variant": "v", "why": "faster"},
        variants=[_built("b"), {**_built("v"), "vs_baseline": {
            "verdict": "faster", "ratio": 0.96, "ci95": [0.955, 0.965]}}]))
    assert confirmation.plan(doc, (reach, source)).status == confirmation.NOT_NEEDED
    assert confirmation.plan(doc, None).status == confirmation.PENDING
    assert confirmation.measured_reach(db, "nothing", here) is None


@pytest.mark.breaks_contract        # stored runs' results.json hold only what the reach reads
def test_the_reach_reads_no_folder_a_row_names_that_is_not_its_runs(tmp_path):
    """The reach came from the results.json in whatever folder the newest row named: a row
    planted in the store chose the file read (a FIFO there would hang every sweep)."""
    db = Store()
    machine = {"hostname": "h", "cpu_model": "c"}
    for name, sd, named in (("own", 0.01, None), ("planted", 0.2, "someone-else")):
        out = tmp_path / name
        out.mkdir()
        run_id = db.create_unique_run(name, "reachy", "olevels", out,
                                      {"measure": {"layouts": 4}}, machine)
        (out / "results.json").write_text(json.dumps(_results(run_id=named or run_id,
                                                              noise={"sd_log_diff": sd})))
        db.finish_run(run_id, "complete", "decided")
    reach, source = confirmation.measured_reach(db, "reachy",
                                                model.Machine.model_validate(machine))
    assert "measured by run own" in source
    assert reach == pytest.approx(100 * math.expm1(1.959964 * math.sqrt(2) * 0.01))


def _built(vid: str) -> dict:
    return {"id": vid, "compiler": "gcc", "flags": [], "build": {"status": "ok"}}


def _results(**keys) -> dict:
    """A results.json of a sweep with baseline b, with these keys."""
    return {"schema": model.SCHEMA, "target": "reachy", "recipe": "olevels",
            "metric": "wall_s", "baseline": "b", "machine": {}, "variants": [], **keys}
