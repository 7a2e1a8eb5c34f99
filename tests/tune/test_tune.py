"""`flagsweep tune` end to end on the tiny target: real builds, audits and output checks, with the
executions synthesised at planted speeds (the executor seam), so the search, the racing, the
ablation, the proof, a kill -9 and a Ctrl-C, each resumed, are tested on a known answer and
never on timing."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import random
import signal
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from tiny_target import REFUSES_BOTH, tiny_refusing_both, write_tiny_target

from flagsweep.compilation import own_build, variants
from flagsweep.experiment import target
from flagsweep.host.executor import Execution
from flagsweep.measure.options import MeasureOptions
from flagsweep import model
from flagsweep.model.tune import BrokenFlags, StepCosts, TuneRecord
from flagsweep.results import reader
from flagsweep.results.store import Store
from flagsweep.tune import batch, cost, culprit, proof, proving, race, ranking, sweeps, tune

pytestmark = pytest.mark.integration

# The two switches that make tiny faster here, both changing its code at -O2 with gcc; the
# others either leave its code as it is or change it at no planted cost.
PLANTED = {"funroll-loops": 0.80, "fno-tree-vectorize": 0.90}
OTHERS = ["-fpeel-loops", "-fsplit-loops", "-fipa-cp-clone", "-fomit-frame-pointer"]
BROKEN = "-fno-such-switch-anywhere"       # gcc refuses it: the build fails


class Planted:
    """Executions at a speed planted per flag: the variant's id (its binary's folder) names its
    flags; each planted one multiplies the time, with a seeded lognormal noise of CV 0.3%.
    `stop_after` calls: then Ctrl-C, as a user would press it."""

    def __init__(self, stop_after: int | None = None, kill_after: int | None = None,
                 planted: dict[str, float] = PLANTED):
        self.rng, self.calls, self.stop_after = random.Random(3), 0, stop_after
        self.kill_after, self.planted = kill_after, planted

    def __call__(self, argv, *, env, timeout, stderr_path, perf=None, perf_csv=None):
        self.calls += 1
        if self.kill_after is not None and self.calls > self.kill_after:
            os.kill(os.getpid(), signal.SIGKILL)         # kill -9: nothing runs after it
        if self.stop_after is not None and self.calls > self.stop_after:
            raise KeyboardInterrupt
        parts = Path(argv[0]).parts
        vid = parts[parts.index("builds") + 1].split(".L")[0]
        wall = 0.1 * math.exp(self.rng.gauss(0, 0.003))
        for flag, factor in self.planted.items():
            if f"-{flag}" in vid + "-":
                wall *= factor
        return Execution(wall, 0.98 * wall, 0.002, 2000, None, False, None)


def _space(folder: Path) -> Path:
    path = folder / "space.toml"
    switches = OTHERS[:2] + ["-funroll-loops", BROKEN] + OTHERS[2:] + ["-fno-tree-vectorize"]
    path.write_text(f"summary = \"planted\"\nbase = \"-O2\"\nswitches = {json.dumps(switches)}\n")
    return path


def _options(space: Path, **kw) -> tune.TuneOptions:
    return tune.TuneOptions(**{"space": str(space), "budget_s": 3600, "seed": 5, "batch": 4,
                               "trials": 16, "layouts": 2, "runners_up": 1,
                               "measure": {"max_runs": 12, "metric": "wall", "cpu": 0}, **kw})


def test_tune_finds_the_planted_flags_survives_a_kill_and_proves_them(tmp_path, isolated_cache):
    t = target.load(str(write_tiny_target(tmp_path / "tiny", megabytes=0.2,
                                          quick_megabytes=0.1)))
    out, space = tmp_path / "tuned", _space(tmp_path)

    def killed() -> None:
        tune.start(t, _options(space), out, Store(), print, execute=Planted(kill_after=70))

    child = multiprocessing.get_context("fork").Process(target=killed)
    child.start()
    child.join(600)
    assert child.exitcode == -signal.SIGKILL
    store, said = Store(), []
    with pytest.raises(Exception, match="tune --resume tuned"):
        tune.resume("tuned", store, said.append, execute=Planted(stop_after=40))
    stopped = reader.validate(json.loads((out / "tune.json").read_text()), out, "tune")
    assert stopped.status == "interrupted"
    told_before = {tr.number for tr in stopped.trials if tr.state != "pending"}
    assert told_before

    path = tune.resume("tuned", store, said.append, execute=Planted())
    doc = reader.validate(json.loads(path.read_text()), path, "tune")
    assert doc.status == "complete" and doc.phase == "done"
    # what was told before the kill is still there, as it was
    again = {tr.number: tr for tr in doc.trials}
    assert all(again[n].state == {x.number: x for x in stopped.trials}[n].state
               for n in told_before)
    # the search began with -O3's switches among the space's (a file's space has no -march)
    o3 = ["-fpeel-loops", "-fsplit-loops", "-fipa-cp-clone"]
    assert doc.space.starts == [o3] and again[0].changes == o3
    # the broken switch was found by halving and never proposed after
    assert [b.flag for b in doc.broken][:1] == [BROKEN]
    first = min(b.trial for b in doc.broken)
    assert [b.flag for b in doc.broken].count(BROKEN) == 1
    assert not any(BROKEN in tr.flags for tr in doc.trials if tr.number > first + 3)
    # the ablation names exactly the planted switches; the proof confirms the set
    assert set(doc.ablation.minimal) == {"-funroll-loops", "-fno-tree-vectorize"}
    # the greedy subset adds them back costliest first: the first alone lacks the second's
    # gain, both give the winner's effect
    g = doc.ablation.greedy
    assert g.status == "complete" and g.chosen == 2
    assert [st.added for st in g.steps[:2]] == [["-funroll-loops"], ["-fno-tree-vectorize"]]
    assert g.steps[0].verdict == "slower" and g.steps[0].ratio == pytest.approx(1 / 0.9,
                                                                                abs=0.02)
    assert g.steps[1].verdict in ("equivalent", "identical")
    # each measured row keeps the adjusted p its verdict needed, as its sweep adjusted it
    measured = [r for r in doc.ablation.rows if r.status == "measured"]
    assert measured and all(r.p_adjusted is not None for r in measured)
    assert all(r.p_adjusted < 0.05 for r in measured if r.verdict == "slower")
    assert set(doc.recommended) - {"-O2"} == {"-funroll-loops", "-fno-tree-vectorize"}
    winner = next(c for c in doc.proof.candidates if c.role in ("minimal", "winner")
                  and set(c.changes) == set(doc.recommended) - {"-O2"})
    assert winner.vs_base.verdict == "faster" and winner.vs_base.ratio < 0.8
    assert winner.check.status == "ok"       # the proof's own output check, kept with the set
    # a minimal subset is measured against the set it was taken from: the rest costs nothing
    least = next((c for c in doc.proof.candidates if c.role == "minimal"), None)
    assert least is None or least.vs_winner.verdict in ("equivalent", "identical-code")
    assert doc.answer.startswith("Use -O2 ")
    # every sample of a batch is taken once, kill or not
    for tr in doc.trials:
        if tr.run_id:
            pairs = [(s.variant_id, s.round) for s in store.samples(tr.run_id)]
            assert len(pairs) == len(set(pairs))
    assert doc.cost.runs > 0 and doc.progress and doc.progress[-1].ratio < 0.8
    # the cost counts each sweep's runs once, though the kill and the stop resumed some of them
    sweeps = {tr.run_id for tr in doc.trials if tr.run_id} | {doc.ablation.run_id,
                                                              g.run_id, doc.proof.run_id}
    assert doc.cost.runs == sum(len(store.samples(rid)) for rid in sweeps)
    assert doc.cost.builds == _made_in(out)


def test_tpe_local_tunes_end_to_end_and_finds_the_planted_flags(tmp_path, isolated_cache):
    """The tune hands tpe-local its best set so far: its turns after the start are small
    changes to it (tests/tune/test_tune_search.py), and the whole tune still proves the
    planted pair, beginning from no start set when asked for none."""
    t = target.load(str(write_tiny_target(tmp_path / "tiny", megabytes=0.2,
                                          quick_megabytes=0.1)))
    path = tune.start(t, _options(_space(tmp_path), sampler="tpe-local", starts=False),
                      tmp_path / "tuned", Store(), print, execute=Planted())
    doc = reader.validate(json.loads(path.read_text()), path, "tune")
    assert doc.status == "complete" and doc.sampler == "tpe-local"
    assert doc.space.starts == []                          # asked for none
    assert set(doc.recommended) - {"-O2"} == {"-funroll-loops", "-fno-tree-vectorize"}
    assert len(doc.trials) == 16


def test_a_real_tune_reduces_flags_that_break_its_build_only_together(tmp_path, isolated_cache):
    """tiny refusing -ffinite-math-only with -fno-math-errno, by #error in the real compiler:
    the tune's own probes reduce the first failing set to the two, neither is dropped from the
    space, and each later set holding both is told failed with no build, while sets holding
    one of them are built and measured."""
    t = target.load(str(write_tiny_target(tmp_path / "tiny", megabytes=0.2, quick_megabytes=0.1,
                                          source=tiny_refusing_both(tmp_path / "src"))))
    space = tmp_path / "space.toml"
    switches = ["-funroll-loops", REFUSES_BOTH[0], "-fpeel-loops", REFUSES_BOTH[1],
                "-fno-tree-vectorize"]
    space.write_text(f"summary = \"refuses\"\nbase = \"-O2\"\nswitches = {json.dumps(switches)}\n")
    # Seed 2's first ten sets are drawn near the base by a seeded draw that no result changes
    # (search.near_base): trials 0, 4 and 6 hold both, in batches 1, 2 and 2.
    path = tune.start(t, _options(space, starts=False, trials=12, seed=2), tmp_path / "tuned",
                      Store(), print, execute=Planted())
    doc = reader.validate(json.loads(path.read_text()), path, "tune")
    assert doc.status == "complete"
    [found] = doc.broken
    assert found.flags == list(REFUSES_BOTH) and found.minimal and found.kind == "build"
    assert found.flag == " ".join(REFUSES_BOTH) and "#error" in found.detail
    both = [tr for tr in doc.trials if set(REFUSES_BOTH) <= set(tr.changes)]
    assert all(tr.state == "failed-build" for tr in both)
    later = [tr for tr in both if tr.number > found.trial]
    assert found.trial == 0 and [tr.number for tr in later][:2] == [4, 6]
    assert all(tr.detail == f"holds {found.flag}, which broke the build of trial {found.trial}"
               for tr in later)
    one = [tr for tr in doc.trials if len(set(REFUSES_BOTH) & set(tr.changes)) == 1]
    assert one and all(tr.state in ("measured", "identical") for tr in one)
    # the probes built the parts they tried, in the tune's folder; none of the later sets
    probes = sorted((tmp_path / "tuned" / "probes").iterdir())
    assert [p.name for p in probes] == [f"trial-{found.trial}"]
    assert not set(REFUSES_BOTH) <= set(doc.recommended)
    # the curve counts the builds made, as the folders show them: each set built once in a
    # batch (a failed one too), each probe's part the build cache did not hold
    def made(batch: int) -> int:
        tuned = tmp_path / "tuned"
        logs = [log for k in range(batch + 1)
                for log in (tuned / "candidates" / f"{k:03d}" / "builds").glob("gcc-*/build.log")]
        logs += [log for tr in doc.trials if tr.batch <= batch
                 for log in (tuned / "probes" / f"trial-{tr.number}").glob("*/builds/*/build.log")]
        return sum(1 for log in logs if not log.read_text().startswith("# reused"))

    assert [p.builds for p in doc.progress] == [made(p.batch) for p in doc.progress]
    # the whole tune's: the batches' sweeps (the base, once), the ablation's and the proof's
    # (each layout a build, the cached ones none) as well
    assert doc.proof.status == "complete" and doc.cost.builds == _made_in(tmp_path / "tuned")


def _made_in(folder: Path) -> int:
    """The builds made under a tune's folder: each binary's build log, less those the build
    cache answered. The project's own build, read once for the flags it adds by itself (its
    own cache keeps them), builds no set."""
    logs = [log for log in folder.rglob("build.log") if log.parent.parent.name == "builds"
            and not log.parent.name.startswith(own_build.ID_PREFIX)]
    return sum(1 for log in logs if not log.read_text().startswith("# reused"))


class Records:
    """A tune's record (none of its identity: model_construct), its base and its (empty)
    space: what `_bisect` reads, with the probe's builds replaced."""

    def __init__(self, **state):
        self.state = TuneRecord.model_construct(**state)
        self.setting = SimpleNamespace(base=("-O2",))
        self.out, self.space = Path("/nonexistent"), SimpleNamespace(dimensions=[])
        self.opts = SimpleNamespace(budget_s=3600)

    def elapsed(self):
        return 0.0

    def save(self):
        pass


def test_a_candidate_holding_a_flag_found_broken_is_not_halved_again(monkeypatch):
    """A batch's candidates are proposed before any is judged, so two can hold the flag the
    first one's halving finds: the second is put down to it, with no build and no new row."""
    found = BrokenFlags(flag=BROKEN, kind="build", detail="gcc: error", trial=4)
    kept, said = Records(broken=[found]), []
    again = batch.Proposal(6, ("-O2", "-fpeel-loops", BROKEN))
    race._bisect(kept, again, batch.Judged("failed-build", "v", detail="gcc: error"), said.append)
    assert kept.state.broken == [found]
    assert said == [f"trial 6: holds {BROKEN}, which broke the build of trial 4; not halved again"]
    # a flag that broke the output, not the build, is no answer for a failed build: halved
    monkeypatch.setattr(culprit, "Probe", lambda *_: SimpleNamespace(builds=3))
    monkeypatch.setattr(culprit, "culprit",
                        lambda changes, probe, more: culprit.Found(changes[-1:], True))
    kept = Records(broken=[found.model_copy(update={"kind": "check"})])
    race._bisect(kept, again, batch.Judged("failed-build", "v"), said.append)
    assert [(b.flag, b.kind) for b in kept.state.broken] == [(BROKEN, "check"),
                                                             (BROKEN, "build")]


def test_flags_breaking_only_together_are_kept_and_no_set_holding_them_is_built(monkeypatch):
    """A failure that needs flags together is reduced while the fifth of the search's time
    that all such reductions share lasts; a later set holding all of them is put down to it
    with no build, as a single broken flag's sets are by never being proposed."""
    # the search has 600 s of 1000; 20 s went to probing before: 100 s left for reducing
    kept, said, allowed = Records(cost=StepCosts(steps={"probe 2": {"probe_s": 20.0}})), [], []
    kept.opts, kept.elapsed = SimpleNamespace(budget_s=1000), lambda: 100.0
    kept.setting.compiler = "gcc"
    clock = [50.0]
    monkeypatch.setattr(race.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(culprit, "Probe", lambda *_: SimpleNamespace(builds=20, n=10))

    def reduced(changes, probe, more):
        for now in (50.0, 149.0, 150.0):
            clock[0] = now
            allowed.append(more())
        return culprit.Found(("-fa", "-fb"), False)

    monkeypatch.setattr(culprit, "culprit", reduced)
    failed = batch.Proposal(4, ("-O2", "-fa", "-fc", "-fb", "-fd"))
    race._bisect(kept, failed, batch.Judged("failed-build", "v", detail="error: x"),
                 said.append)
    assert allowed == [True, True, False]
    assert [b.model_dump() for b in kept.state.broken] == [
        {"flag": "-fa -fb", "flags": ["-fa", "-fb"], "kind": "build", "minimal": False,
         "detail": "error: x", "trial": 4}]
    assert kept.state.dropped == []               # neither flag is wrong alone
    assert kept.state.cost.steps["probe 4"] == {"builds": 20, "probe_s": 100.0}
    assert said == ["trial 4: its build fails only with -fa -fb together (of its 4 changes, "
                    "after 10 probes: not reduced further in time); no set holding them all is "
                    "built again"]

    told = {}
    monkeypatch.setattr(ranking, "known_flags", lambda _: {})
    monkeypatch.setattr(race, "_measured",
                        lambda _t, _n, todo, _s: {c.number: batch.Judged("measured", "m")
                                                  for c in todo})
    monkeypatch.setattr(race, "_tell", lambda _t, c, j, _n: told.update({c.number: j}))
    monkeypatch.setattr(race, "_say_batch", lambda *_: None)
    holds = batch.Proposal(9, ("-O2", "-fb", "-fe", "-fa"))
    lacks = batch.Proposal(10, ("-O2", "-fa", "-fe"))
    assert race._batch(kept, 2, [holds, lacks], said.append)
    assert told[9].state == "failed-build" and told[9].ratio is None
    assert told[9].detail == "holds -fa -fb, which broke the build of trial 4"
    assert told[10].state == "measured"


def test_a_winner_too_large_to_take_apart_flag_by_flag_is_ablated_in_groups(
        tmp_path, isolated_cache, monkeypatch):
    """Builds too slow for one set per flag: the winner's flags go in groups, the groups that
    may matter are taken apart, and the answer is the same two planted flags."""
    t = target.load(str(write_tiny_target(tmp_path / "tiny", megabytes=0.2,
                                          quick_megabytes=0.1)))
    # The winner the ablation takes apart: the two planted flags, then two that change
    # nothing planted (whatever the short search below found).
    winner = ("-O2", "-funroll-loops", "-fno-tree-vectorize", "-fpeel-loops", "-fsplit-loops")
    real_best = ranking.best
    monkeypatch.setattr(ranking, "best", lambda tu: (0, winner, 0.7)
                        if tu.state.phase == "ablation" else real_best(tu))
    # At 1000 s a build nothing but two groups fits; back at tiny's own pace after that plan,
    # so the group that may matter is taken apart (and the search before it at its own).
    real_pace = cost.build_pace
    monkeypatch.setattr(cost, "build_pace", lambda tu: 1000.0 if tu.state.phase ==
                        "ablation" and not tu.state.ablation_plan else real_pace(tu))
    path = tune.start(t, _options(_space(tmp_path), trials=8), tmp_path / "tuned", Store(),
                      print, execute=Planted())
    a = reader.validate(json.loads(path.read_text()), path, "tune").ablation
    assert a.method == "groups" and "in 2 groups" in a.why and a.of == list(winner[1:])
    assert set(a.minimal) == {"-funroll-loops", "-fno-tree-vectorize"}
    # the group of the planted two was taken apart; the other, decided harmless, was not
    rows = {r.flag: r for r in a.rows}
    assert set(rows) == {"-funroll-loops", "-fno-tree-vectorize", "-fpeel-loops -fsplit-loops"}
    assert rows["-fpeel-loops -fsplit-loops"].flags == ["-fpeel-loops", "-fsplit-loops"]
    assert rows["-fpeel-loops -fsplit-loops"].verdict in ("equivalent", "identical")
    assert all(rows[f].verdict == "slower" for f in a.minimal)


class OneLayoutLuck(Planted):
    """Planted speeds, and a flag whose removal costs 3% in the one-layout builds only, as a
    layout's luck would, or in every build, as a flag's work does."""

    def __init__(self, flag: str, everywhere: bool):
        super().__init__()
        self.flag, self.everywhere = flag, everywhere

    def __call__(self, argv, **kw):
        run = super().__call__(argv, **kw)
        parts = Path(argv[0]).parts
        folder = parts[parts.index("builds") + 1]
        if f"-{self.flag}" not in folder and (
                self.everywhere or ".L" not in folder):
            return replace(run, wall_s=run.wall_s * 1.03, user_s=run.user_s * 1.03)
        return run


@pytest.mark.parametrize("everywhere", [False, True])
def test_a_cost_within_layout_luck_counts_only_if_it_holds_over_layouts(
        tmp_path, isolated_cache, monkeypatch, everywhere):
    """The winner's third flag costs 3% when removed, in one layout: within the 5% layout luck
    reaches by default, so it is measured again over layouts, and named only if it holds
    there. The planted two, far beyond the reach, are not measured again."""
    t = target.load(str(write_tiny_target(tmp_path / "tiny", megabytes=0.2,
                                          quick_megabytes=0.1)))
    winner = ("-O2", "-funroll-loops", "-fno-tree-vectorize", "-fno-schedule-insns2")
    real_best = ranking.best
    monkeypatch.setattr(ranking, "best", lambda tu: (0, winner, 0.7)
                        if tu.state.phase == "ablation" else real_best(tu))
    store = Store()
    path = tune.start(t, _options(_space(tmp_path), trials=8), tmp_path / "tuned", store,
                      print, execute=OneLayoutLuck("fno-schedule-insns2", everywhere))
    a = reader.validate(json.loads(path.read_text()), path, "tune").ablation
    rows = {r.flag: r for r in a.rows}
    assert rows["-fno-schedule-insns2"].verdict == "slower"
    assert rows["-fno-schedule-insns2"].ratio == pytest.approx(1.03, abs=0.01)
    check = a.layout_check
    assert check.status == "complete" and check.rows == ["-fno-schedule-insns2"]
    assert check.doubtful == ["-fno-schedule-insns2"]
    assert check.reach_pct == 5.0 and check.layouts == 2
    again = rows["-fno-schedule-insns2"].over_layouts
    assert rows["-funroll-loops"].over_layouts is None
    if everywhere:
        assert again.verdict == "slower" and check.confirmed == ["-fno-schedule-insns2"]
        assert set(a.minimal) == {"-funroll-loops", "-fno-tree-vectorize", "-fno-schedule-insns2"}
    else:
        assert again.verdict in ("equivalent", "inconclusive") and check.confirmed == []
        assert again.ratio == pytest.approx(1.0, abs=0.01)
        assert set(a.minimal) == {"-funroll-loops", "-fno-tree-vectorize"}
        assert not any("-fno-schedule-insns2" in st.added for st in a.greedy.steps)
    # the check's sweep compares with the winner only: the base is not built in it
    made = {v.id.split(".L")[0] for v in reader.load(Path(check.results)).variants}
    assert batch.vid(SimpleNamespace(compiler="gcc"), ("-O2",)) not in made
    assert batch.vid(SimpleNamespace(compiler="gcc"), winner) in made
    # the check's sweep is counted in the tune's cost like the ablation's own
    doc = reader.validate(json.loads(path.read_text()), path, "tune")
    sweeps = {tr.run_id for tr in doc.trials if tr.run_id} | {
        a.run_id, check.run_id, a.greedy.run_id if a.greedy else None, doc.proof.run_id}
    assert doc.cost.runs == sum(len(store.samples(rid)) for rid in sweeps - {None})


@pytest.mark.parametrize("rest, verdict", [(("-fno-ivopts", "-fno-schedule-insns2"), "slower"),
                                           (("-fno-tree-pre", "-fno-gcse"), "equivalent")])
def test_the_proof_measures_the_minimal_subset_against_the_set_it_came_from(
        tmp_path, isolated_cache, rest, verdict):
    """Two flags whose removal alone costs 3% each, under a 1% threshold, are worth 6% together:
    the minimal subset without them is decided slower than the whole set, so the answer keeps
    the whole. Two that change the code at no cost leave the subset equivalent to it."""
    t = target.load(str(write_tiny_target(tmp_path / "tiny", megabytes=0.2,
                                          quick_megabytes=0.1)))
    planted = {**PLANTED, "fno-ivopts": 0.97, "fno-schedule-insns2": 0.97}
    s = batch.Setting(t, "gcc", ("-O2",), variants.Options(out_dir=tmp_path),
                      MeasureOptions(max_runs=12, metric="wall", cpu=0), Store(), print,
                      Planted(planted=planted))
    least = ("-O2", "-funroll-loops", "-fno-tree-vectorize")
    listed = proof.entries(s.base, [(7, least + rest)], least, 0)
    path = batch.start(s, "proof", tmp_path / "proof", s.base,
                       [batch.Proposal(-100 - i, e.flags) for i, e in enumerate(listed[1:])],
                       seed=1, budget=600, quick=False, layouts=2)
    got = {c.role: c for c in proof.candidates(s, path, listed)}
    assert got["winner"].vs_base.verdict == got["minimal"].vs_base.verdict == "faster"
    against = got["minimal"].vs_winner
    assert against.verdict == verdict
    assert against.ratio == pytest.approx(1 / 0.97 ** 2 if verdict == "slower" else 1, abs=0.01)


class PlantedTogether(Planted):
    """Planted, able to run a duet's two workloads (host.executor.Together): each as alone."""

    def together(self, launches, *, timeout, perf=None):
        return [self(one.argv, env=one.env, timeout=timeout, stderr_path=one.stderr_path)
                for one in launches]


def test_a_tunes_first_batch_chooses_the_schedule_for_the_whole_tune(tmp_path, isolated_cache):
    """--schedule auto: the first batch runs the pilot; every later batch keeps its choice
    without a pilot of its own, and the proof (over layouts) is serial."""
    t = target.load(str(write_tiny_target(tmp_path / "tiny", megabytes=0.2,
                                          quick_megabytes=0.12)))   # builds of its own
    opts = _options(_space(tmp_path), trials=8, measure={
        "max_runs": 12, "metric": "wall", "cpu": 0, "schedule": "auto", "partner_cpu": 1})
    path = tune.start(t, opts, tmp_path / "tuned", Store(), print, execute=PlantedTogether())
    assert reader.validate(json.loads(path.read_text()), path, "tune").status == "complete"
    batches = sorted((tmp_path / "tuned" / "batches").glob("*/results.json"))
    first, *later = [reader.load(p).measurement.schedule for p in batches]
    assert later and first.pilot is not None and first.asked == "auto"
    for p, s in zip(batches[1:], later):
        assert (s.schedule, s.cpus) == (first.schedule, first.cpus)
        assert s.reason == f"{first.reason} (as the pilot of this tune's first batch found)"
        rounds = [int(r.split(",")[2]) for r in (p.parent / "samples.csv").read_text().splitlines()[1:]]
        assert min(rounds) > -1000                      # no pilot of its own
    proof_doc = reader.load(next((tmp_path / "tuned").glob("proof*/results.json")))
    assert proof_doc.measurement.schedule.schedule == "serial"
    assert "layout" in proof_doc.measurement.schedule.reason


class BusyFrom(Planted):
    """Planted speeds; once `busy` is set, every run waited for its CPU 60% of its time, as the
    scheduler's evidence says it (measure.disturbance): disturbed, retaken, until the sweep
    stops busy."""

    busy = False

    def __call__(self, argv, **kw):
        e = super().__call__(argv, **kw)
        if not self.busy:
            return e
        return Execution(e.wall_s, e.user_s, e.sys_s, e.maxrss_kb,
                         {"run_delay_s": 0.6 * e.wall_s}, False, None)


def test_a_proof_the_machine_stays_busy_for_is_no_answer_until_resumed(
        tmp_path, isolated_cache, monkeypatch, main):
    """The proof's sweep stops busy and stays so (the tune's pauses spent): its ratios are
    the other work's, so the tune names no set, says why and how to go on, `tune` exits 3,
    and the phase stays the proof's; the resume measures the proof again and answers."""
    from flagsweep.cli.sweeping import NO_ANSWER
    from flagsweep.host import placement

    t = target.load(str(write_tiny_target(tmp_path / "tiny", megabytes=0.2,
                                          quick_megabytes=0.1)))
    executor = BusyFrom()
    real_plan = proving._proof_plan

    turns = [True, False]               # busy as the proof begins; quiet by its resume

    def plan(tu, listed):
        executor.busy = turns.pop(0)
        return real_plan(tu, listed)
    monkeypatch.setattr(proving, "_proof_plan", plan)
    monkeypatch.setattr(sweeps, "BUSY_TRIES", 0)
    monkeypatch.setattr(sweeps, "BUSY_PAUSE_S", 1e9)          # no time left to wait and resume
    monkeypatch.setattr(placement, "after_busy", lambda cpu, **k: "no other CPU is free")
    store = Store()
    path = tune.start(t, _options(_space(tmp_path), trials=8), tmp_path / "tuned", store,
                      print, execute=executor)
    doc = reader.validate(json.loads(path.read_text()), path, "tune")
    assert doc.proof.status == "busy", (doc.proof.status, doc.proof.why, doc.answer)
    assert doc.phase == "proof" and doc.proof.candidates == []
    assert doc.recommended is None and doc.answer.startswith("Not proved: the best set found")
    assert "the machine stayed busy, so the proof's sweep" in doc.answer
    assert "flagsweep tune --resume tuned" in doc.answer

    # the command's ending, on this tune.json: its page's path, then exit 3
    monkeypatch.setattr(tune, "start", lambda *a, **k: path)
    code, err = main("tune", str(tmp_path / "tiny"), "--out", str(tmp_path / "tuned"))
    assert code == NO_ANSWER and "no answer yet: the proof's sweep is busy" in err
    assert main.out.strip().endswith("tune.html")

    path = tune.resume("tuned", store, print, execute=executor)
    doc = reader.validate(json.loads(path.read_text()), path, "tune")
    assert doc.proof.status == "complete", (doc.proof.status, doc.proof.why)
    assert doc.phase == "done"
    assert "-fno-tree-vectorize" in doc.recommended and doc.answer.startswith("Use ")
