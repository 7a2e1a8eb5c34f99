"""Every faster/slower row within layout luck's reach, confirmed over layouts or labelled one
layout (flagsweep.results.confirmation), through the decision functions a sweep calls: planted
samples for the sweep (one build a variant, its layout's luck in its level) and for the
confirmation (each layout's level), the analysis, the plan, the outcome and the analysis again,
as the writer makes results.json. No builds, no timing."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import contract_validator
from scipy import stats as sps

from flagsweep.across import merge, pick
from flagsweep.measure.options import MeasureOptions
from flagsweep import model
from flagsweep.results import analysis, confirmation
from flagsweep.stats import layout

BASE, TWIN = "gcc-O2", "gcc-O2.aa"
FLAGS = {BASE: ["-O2"], TWIN: ["-O2"], "gcc-O1": ["-O1"], "gcc-Os": ["-Os"], "gcc-O3": ["-O3"],
         "gcc-Og": ["-Og"]}
ROUNDS = 14


def _document(ids: list[str], layouts: int = 0, timed: bool = False) -> model.Results:
    """A results.json before its statistics: each variant built and checked, one level of one
    factor each (a one-change design); `timed` adds build and run times (the plan's costs)."""
    variants = []
    for vid in ids:
        v = {"id": vid, "compiler": "gcc", "flags": FLAGS[vid],
             "factors": {"opt": FLAGS[vid][0]}, "check": {"status": "ok"},
             "build": {"status": "ok", "seconds": 10.0 if timed else None}}
        if timed:
            v["samples"] = {"wall_s": [1.0] * ROUNDS}
        if vid == TWIN:
            v["aa_of"] = BASE
        variants.append(v)
    return model.Results.model_validate({
        "schema": model.SCHEMA, "target": "t", "recipe": "r", "metric": "wall_s",
        "baseline": BASE, "machine": {}, "variants": variants, "threshold_pct": 1.0,
        "design": "one-factor", "measurement": {"layouts": {"k": layouts} if layouts else None}})


def _rounds(rng, level: float, n: int = ROUNDS, cv: float = 0.003) -> dict[int, float]:
    return {r: level * float(rng.lognormal(0, cv)) for r in range(n)}


def _swept(planted: dict[str, float], seed: int = 1, timed: bool = False):
    """The sweep of one build a variant at the planted levels (the twin is the baseline's
    binary again), its document as first written (before any confirmation)."""
    rng = np.random.default_rng(seed)
    ids = [BASE, TWIN, *planted]
    values = {vid: _rounds(rng, planted.get(vid, 1.0)) for vid in ids}
    doc = _document(ids, timed=timed)
    analysis.apply(doc, values, seed=seed)
    return doc, values


def _confirmed(record: model.Confirmation, levels: dict[str, list[float]], seed: int = 2):
    """The confirmation sweep over the record's rows: each arm's layouts at the planted
    levels (`levels`: variant -> one level a layout; the twin is more layouts of the baseline),
    judged as a --layouts sweep; the record it leaves."""
    rng = np.random.default_rng(seed)
    arms = [BASE, *record.variants, TWIN]
    reps = {vid: {f"{vid}.L{j}": _rounds(rng, x, 8)
                  for j, x in enumerate(levels[BASE if vid == TWIN else vid])} for vid in arms}
    over = _document(arms, layouts=record.layouts)
    analysis.apply(over, {vid: layout.pooled(r) for vid, r in reps.items()}, seed=seed,
                   replicates=reps)
    return confirmation.outcome(record.dump(), over, 12.0, "layouts/results.json")


def _written(doc: model.Results, values, record: model.Confirmation, seed: int = 1):
    """results.json as the writer makes it once the run keeps `record`."""
    analysis.apply(doc, values, seed=seed, luck=record.dump())
    confirmation.apply(doc, record.dump())
    return doc


def _row(doc: model.Results, vid: str) -> model.VsBaseline:
    return next(v for v in doc.variants if v.id == vid).vs_baseline


def _effect(doc: model.Results, vid: str) -> model.Effect:
    return next(e for e in doc.effects if e.variant == vid)


FLAT = [1.0, 1.001, 0.999, 1.0]              # four layouts of no effect


def test_a_row_one_builds_layout_made_faster_is_labelled_then_confirmed_away():
    """-O1 has no effect, but its one build is 2% faster by layout; -Os is truly 3% faster;
    -O3 truly 10%. With one build's layout luck (a 5% reach by default) the intervals of -O1
    and -Os reach within the threshold: before the confirmation both read one layout, being
    confirmed; over 4 layouts each, -O1
    is no faster (not distinguishable from layout luck) and -Os is (confirmed, its layouts'
    interval beside its own). -O3's interval lies beyond the reach: never measured again,
    settled. The answer is -O3, the effects follow the rows, and the document is valid."""
    doc, values = _swept({"gcc-O1": 0.98, "gcc-Os": 0.97, "gcc-O3": 0.90})
    assert {v.id: v.vs_baseline.verdict for v in doc.variants if v.id != BASE} == {
        TWIN: "equivalent", "gcc-O1": "faster", "gcc-Os": "faster", "gcc-O3": "faster"}
    record = confirmation.plan(doc, None, MeasureOptions(confirm_layouts=4))
    assert record.status == confirmation.PENDING and record.variants == ["gcc-Os", "gcc-O1"]
    assert record.reach_pct == confirmation.DEFAULT_REACH_PCT

    pending = _written(doc.model_copy(deep=True), values, record)
    for vid in ("gcc-O1", "gcc-Os"):
        luck = _row(pending, vid).layout_luck
        assert luck.status == confirmation.ONE_LAYOUT and "being confirmed over 4" in luck.why
        assert confirmation.final_verdict(_row(pending, vid)) == "inconclusive"
    assert _row(pending, "gcc-O3").layout_luck is None

    done = _confirmed(record, {BASE: FLAT, "gcc-O1": FLAT, "gcc-Os": [0.97, 0.971, 0.969, 0.97]})
    assert done.status == confirmation.MEASURED and set(done.rows) == {"gcc-O1", "gcc-Os"}
    doc = _written(doc, values, done)
    o1, os_, o3 = (_row(doc, vid) for vid in ("gcc-O1", "gcc-Os", "gcc-O3"))
    assert o1.verdict == "faster" and o1.layout_luck.status == confirmation.LUCK
    assert o1.layout_luck.why.startswith("not distinguishable from layout luck: -2.")
    assert o1.layout_luck.over_layouts.verdict != "faster"
    assert os_.layout_luck.status == confirmation.CONFIRMED
    assert os_.layout_luck.over_layouts.ci95[1] < 0.99
    assert o3.layout_luck is None
    assert [confirmation.final_verdict(c) for c in (o1, os_, o3)] == \
        ["inconclusive", "faster", "faster"]
    assert doc.recommendation.variant == "gcc-O3"
    assert "-O1 is not distinguishable from layout luck" in doc.recommendation.why
    assert _effect(doc, "gcc-O1").matters and \
        _effect(doc, "gcc-O1").layout_luck.status == confirmation.LUCK
    assert _effect(doc, "gcc-Os").layout_luck.status == confirmation.CONFIRMED
    assert _effect(doc, "gcc-O3").layout_luck is None
    assert list(contract_validator("results").iter_errors(doc.dump())) == []


def test_a_winner_the_layouts_do_not_confirm_is_not_recommended():
    """The only faster row is layout luck: after the confirmation the answer keeps the
    baseline, saying why with both intervals."""
    doc, values = _swept({"gcc-O1": 0.98})
    record = confirmation.plan(doc, None, MeasureOptions(confirm_layouts=4))
    assert record.variant == "gcc-O1" and record.variants == ["gcc-O1"]
    done = _confirmed(record, {BASE: FLAT, "gcc-O1": FLAT})
    assert done.status == confirmation.LUCK
    doc = _written(doc, values, done)
    assert doc.recommendation.variant == BASE
    assert "no variant was significantly faster beyond layout luck" in doc.recommendation.why
    assert "-O1 is not distinguishable from layout luck: -2." in doc.recommendation.why


def test_no_confirm_labels_every_row_within_reach_one_layout():
    """--no-confirm: nothing is measured again; the rows within the reach read one layout and
    say why. The answer names a settled row when there is one (-O3), and a row layout luck
    could give (with its caveat) only when there is none."""
    off = MeasureOptions(layout_confirm=False)
    doc, values = _swept({"gcc-O1": 0.98, "gcc-O3": 0.90})
    record = confirmation.plan(doc, None, off)
    assert record.status == confirmation.SKIPPED and record.left_out == ["gcc-O1"]
    doc = _written(doc, values, record)
    luck = _row(doc, "gcc-O1").layout_luck
    assert luck.status == confirmation.ONE_LAYOUT and "(--no-confirm)" in luck.why
    assert doc.recommendation.variant == "gcc-O3"
    assert "Faster in one layout, within layout luck, so not recommended: -O1" in \
        doc.recommendation.why

    alone, values = _swept({"gcc-O1": 0.98})
    alone = _written(alone, values, confirmation.plan(alone, None, off))
    assert alone.recommendation.variant == "gcc-O1"


def test_the_cap_and_the_budget_leave_rows_labelled_and_out_of_the_answer():
    """--confirm-rows 1: the recommended row is measured again, the other is left out and
    labelled so; once a confirmation has measured rows, a row it left out is never the
    answer. A --budget the rows do not fit cuts them, the most doubtful kept; one that not
    even one row fits measures none."""
    doc, values = _swept({"gcc-O1": 0.98, "gcc-Os": 0.975})
    record = confirmation.plan(doc, None, MeasureOptions(confirm_rows=1, confirm_layouts=4))
    assert record.variants == ["gcc-Os"] and record.left_out == ["gcc-O1"]
    assert record.left_out_why == "--confirm-rows 1"
    done = _confirmed(record, {BASE: FLAT, "gcc-Os": FLAT})
    doc = _written(doc, values, done)
    luck = _row(doc, "gcc-O1").layout_luck
    assert luck.status == confirmation.ONE_LAYOUT
    assert luck.why == "not measured again over layouts (--confirm-rows 1)"
    assert doc.recommendation.variant == BASE

    timed, _ = _swept({"gcc-O1": 0.98, "gcc-Os": 0.975}, timed=True)
    # 10 s a build, 1 s a run, a confirmation's 10 rounds and a warmup: over 4 layouts, one
    # row takes about 192 s, two about 258 s
    assert sum(layout_cost(2, 4)) == pytest.approx(192) and sum(layout_cost(3, 4)) > 220
    # the sweep took 96 s (four 10 s builds, 56 runs of 1 s): the budget is what is left
    cut = confirmation.plan(timed, None, MeasureOptions(budget=316, confirm_layouts=4))
    assert cut.status == confirmation.PENDING and cut.variants == ["gcc-Os"]
    assert cut.left_out == ["gcc-O1"] and \
        "1 row(s) fit the 220 s left of the run's --budget of 316 s" in cut.left_out_why
    assert cut.estimated_s == pytest.approx(sum(layout_cost(2, 4)))
    none = confirmation.plan(timed, None, MeasureOptions(budget=126))
    assert none.status == confirmation.OVER_BUDGET and none.left_out == ["gcc-Os", "gcc-O1"]
    assert "more than the 30 s left of the run's --budget of 126 s" in none.why


def test_rows_that_are_not_the_answer_are_confirmed_in_at_most_the_sweeps_own_time():
    """A sweep that keeps the baseline confirms its slower rows only when that takes no longer
    than the sweep did, however much budget is left: else they read one layout, within layout
    luck, and say why. The recommended row may take what is left of the budget."""
    slower, values = _swept({"gcc-O1": 1.02, "gcc-Os": 1.025}, timed=True)
    assert slower.recommendation.variant == BASE
    record = confirmation.plan(slower, None, MeasureOptions(budget=1800, confirm_layouts=4))
    assert record.status == confirmation.OVER_BUDGET
    assert "more than 96 s, as long again as the sweep took" in record.why
    doc = _written(slower, values, record)
    assert _row(doc, "gcc-Os").layout_luck.status == confirmation.ONE_LAYOUT
    assert _row(doc, "gcc-Os").verdict == "slower"

    faster, _ = _swept({"gcc-Os": 0.975}, timed=True)
    assert faster.recommendation.variant == "gcc-Os"
    record = confirmation.plan(faster, None, MeasureOptions(budget=1800, confirm_layouts=4))
    assert record.status == confirmation.PENDING and record.variants == ["gcc-Os"]


def layout_cost(sets: int, k: int) -> tuple[float, float]:
    from flagsweep.compilation import layout as link
    return link.cost(sets, k, 10.0, 1.0, confirmation.ROUNDS + MeasureOptions().warmup)


def test_k_is_the_fewest_layouts_with_the_stated_power_at_the_reachs_edge():
    """K by power: an effect as large as the reach is called at 80% or more with K layouts a
    side and less with K - 1; the record states K, the power and why. Given
    --confirm-layouts, K is the user's and its power is stated."""
    doc, _ = _swept({"gcc-O1": 0.98, "gcc-Os": 0.97})
    record = confirmation.plan(doc, None)
    k, gain = record.layouts, 100 * 5.0 / 105.0       # a 5% reach, as a gain
    sd = math.hypot(confirmation.spread_of_reach(confirmation.DEFAULT_REACH_PCT),
                    doc.noise.baseline_cv * math.sqrt(math.pi / 2 / confirmation.ROUNDS))
    assert layout.power(k, sd, gain, 1.0, 3) >= 0.8 > layout.power(k - 1, sd, gain, 1.0, 3)
    assert record.power == pytest.approx(layout.power(k, sd, gain, 1.0, 3))
    assert f"{k} layouts a side (the fewest at which it reaches 80%)" in record.sizing
    given = confirmation.plan(doc, None, MeasureOptions(confirm_layouts=3))
    assert given.layouts == 3 and given.power < 0.8 and "--confirm-layouts 3" in given.sizing


def test_the_stated_power_is_what_welchs_test_over_layouts_delivers():
    """stats.layout.power against a seeded simulation of the comparison it describes: K
    layouts a side of levels N(log(1 - g), sd) and N(0, sd), called faster when Welch's
    interval at 1 - 0.05/m lies beyond the threshold."""
    rng = np.random.default_rng(7)
    gain, sd, m, thr, n = 4.3, 0.02, 3, -math.log(0.99), 4000
    for k in (3, 4, 8):
        v, b = rng.normal(math.log(1 - gain / 100), sd, (n, k)), rng.normal(0, sd, (n, k))
        qv, qb = v.var(axis=1, ddof=1) / k, b.var(axis=1, ddof=1) / k
        df = (qv + qb) ** 2 / (qv ** 2 / (k - 1) + qb ** 2 / (k - 1))
        upper = v.mean(axis=1) - b.mean(axis=1) + sps.t.ppf(1 - 0.05 / m / 2, df) * np.sqrt(qv + qb)
        assert np.mean(upper < -thr) == pytest.approx(layout.power(k, sd, gain, 1.0, m),
                                                      abs=0.04)


def test_rows_of_a_layouts_sweep_or_of_one_layout_are_never_labelled():
    """A sweep with --layouts compared over layouts already; calibrate's plants share one
    code layout: neither has a row within layout luck."""
    doc, values = _swept({"gcc-O1": 0.98})
    doc.measurement.layouts = model.Layouts(k=4)
    assert confirmation.plan(doc, None).status == confirmation.NOT_NEEDED
    same, values = _swept({"gcc-O1": 0.98})
    record = confirmation.plan(same, None, MeasureOptions(same_layout=True))
    assert record.status == confirmation.NOT_NEEDED and "one code layout" in record.why
    same = _written(same, values, record)
    assert _row(same, "gcc-O1").layout_luck is None


def test_a_models_effect_is_one_layout_within_its_builds_reach():
    """A factorial's effect averages builds, so layout luck reaches it less: sqrt((1/n +
    1/n_ref) / 2) of one row's reach for n builds at its level and n_ref at the reference.
    Within that it reads one layout; beyond it, it stands."""
    rng = np.random.default_rng(3)
    ids = ["a0b0", "a1b0", "a0b1", "a1b1", "a0b0.aa"]
    variants = [{"id": vid, "compiler": "gcc", "flags": [vid], "check": {"status": "ok"},
                 "build": {"status": "ok"},
                 "factors": {"a": vid[1], "b": vid[3]}} for vid in ids]
    doc = model.Results.model_validate({
        "schema": model.SCHEMA, "target": "t", "recipe": "r", "metric": "wall_s",
        "baseline": "a0b0", "machine": {}, "variants": variants, "threshold_pct": 1.0,
        "design": "full-factorial", "measurement": {}})
    level = {"a0b0": 1.0, "a0b0.aa": 1.0, "a1b0": 0.97, "a0b1": 0.90, "a1b1": 0.873}
    values = {vid: _rounds(rng, level[vid]) for vid in ids}
    analysis.apply(doc, values, seed=1)
    record = confirmation.plan(doc, None, MeasureOptions(layout_confirm=False))
    analysis.apply(doc, values, seed=1, luck=record.dump())
    by = {e.factor: e for e in doc.effects}
    assert by["a"].matters and by["b"].matters
    assert by["a"].layout_luck.status == confirmation.ONE_LAYOUT
    assert by["a"].layout_luck.reach_pct == pytest.approx(
        100 * math.expm1(math.log1p(record.reach_pct / 100) * math.sqrt((1 / 2 + 1 / 2) / 2)))
    assert "2 at this level, 2 at 0" in by["a"].layout_luck.why
    assert by["b"].layout_luck is None


def test_pick_suite_and_merge_read_a_row_within_layout_luck_as_undecided(tmp_path):
    """A row that reads one layout, within layout luck, is neither a win nor a loss of its
    program: pick's and suite's pair and merge's cell call it inconclusive."""
    doc, values = _swept({"gcc-O1": 0.98, "gcc-O3": 0.90})
    doc = _written(doc, values, confirmation.plan(doc, None, MeasureOptions(layout_confirm=False)))
    doc.machine = model.Machine(hostname="h", cpu_model="c")
    assert pick.pair(doc, "gcc-O1").verdict == "inconclusive"
    assert pick.pair(doc, "gcc-O3").verdict == "faster"
    variants, cells = merge.table([merge.MachineColumn("h", "c", str(tmp_path), doc)])
    by = {v.id: c for v, (c,) in zip(variants, cells)}
    assert by["gcc-O1"].verdict == "inconclusive" and by["gcc-O3"].verdict == "faster"
