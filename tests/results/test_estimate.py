"""What "Use X" prints (flagsweep.results.estimate): the interval its verdict used, adjusted for
choosing the winner among the sweep's comparisons, wider than the winner's plain 95% interval
and named so; with one build's layout luck where no confirmation was needed; the
confirmation's own where one confirmed it. Synthetic sweeps through analysis.apply and the
confirmation's functions: no builds, no timing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from flagsweep import stats
from flagsweep.measure.options import MeasureOptions
from flagsweep import model
from flagsweep.results import analysis, confirmation, estimate, reader

ROUNDS = 14


def _doc(ids: list[str]) -> model.Results:
    """Results of a sweep of these variants (the first the baseline, `<base>.aa` its twin),
    before the analysis; one factor level each, so every variant changes one thing."""
    return model.Results.model_validate({
        "schema": model.SCHEMA, "target": "t", "recipe": "r", "metric": "cpu_s",
        "baseline": ids[0], "machine": {}, "threshold_pct": 1.0,
        "variants": [{"id": vid, "compiler": "gcc", "flags": ["-O2", f"-f{vid}"],
                      "factors": {"row": vid}, "build": {"status": "ok"},
                      "check": {"status": "ok"}} for vid in ids]})


def _sweep(effects: dict[str, float], nulls: int = 9, cv: float = 0.01,
           seed: int = 3) -> model.Results:
    """Baseline, twin, `nulls` variants at no change and the planted ones (ratio to the
    baseline, one build each: a lucky link is planted as an effect), 14 rounds, analysed."""
    rng = np.random.default_rng(seed)
    ids = ["b", "b.aa", *(f"n{j}" for j in range(nulls)), *effects]
    level = rng.normal(0, 0.02, ROUNDS)
    values = {vid: {r: float(math.exp(math.log(effects.get(vid, 1.0)) + level[r]
                                      + rng.normal(0, cv))) for r in range(ROUNDS)}
              for vid in ids}
    doc = _doc(ids)
    analysis.apply(doc, values, seed=seed)
    _taken[id(doc)] = values, seed
    return doc


_taken: dict[int, tuple] = {}       # each swept document's values and seed


def _apply(doc: model.Results, stored: dict) -> None:
    """A confirmation's record into the document as the writer puts it there: the analysis
    again with it (the rows' labels, then the answer), then the record itself."""
    values, seed = _taken[id(doc)]
    analysis.apply(doc, values, seed=seed, luck=stored)
    confirmation.apply(doc, stored)


def _vs(doc: model.Results, vid: str) -> model.VsBaseline:
    return next(v.vs_baseline for v in doc.variants if v.id == vid)


def test_use_x_prints_the_adjusted_interval_its_verdict_used_wider_than_the_95():
    doc = _sweep({"win": 0.95})
    rec, vs = doc.recommendation, _vs(doc, "win")
    assert rec.variant == "win" and vs.verdict == "faster"
    e = rec.estimate
    assert e.kind == estimate.SELECTED and e.comparisons == 11
    assert (e.ratio, e.ci, e.level) == (vs.ratio, vs.ci_fcr, vs.fcr_level)
    # a lone choice among 11: 1 - 0.05 / 11, and wider than the 95% interval on both sides
    assert e.level == pytest.approx(1 - 0.05 / 11)
    assert e.ci[0] < vs.ci95[0] and e.ci[1] > vs.ci95[1]
    assert "Benjamini & Yekutieli" in e.why and "holds no layout luck" in e.why
    said = estimate.text(e, " against the baseline")
    assert said.startswith(f"{stats.change_text(e.ratio)} against the baseline (99.5% CI [")
    assert said.endswith(", adjusted for choosing it among 11 comparisons)")
    # the recommendation's own why says the same interval
    assert "99.5% CI" in rec.why and "adjusted for choosing it among 11" in rec.why


def test_with_layout_luck_the_choice_among_lucky_builds_is_made_again():
    """Five one-build variants 3% faster (lucky links, or real: one build cannot tell) and one
    6%: on their own intervals all six clear the threshold, so the adjustment's level is low
    (R = 6 of 16). With one build's layout luck in every interval none but perhaps the 6% one
    is beyond it, the level is the lone choice's, and the interval reaches no change: so the
    rule asks for a confirmation."""
    lucky = {f"l{j}": 0.97 for j in range(5)}
    doc = _sweep({**lucky, "win": 0.94})
    rec = doc.recommendation
    assert rec.variant == "win"
    selected = rec.estimate
    assert selected.level < 0.99
    widened = estimate.with_luck(doc, "win", confirmation.DEFAULT_REACH_PCT)
    assert widened.kind == estimate.WITH_LUCK and widened.comparisons == 16
    assert widened.level == pytest.approx(1 - 0.05 / 16)
    assert widened.ci[0] < selected.ci[0] and widened.ci[1] > 0.99
    assert not estimate.faster_beyond(widened, 1.0)
    record = confirmation.plan(doc, None)
    assert record.status == confirmation.PENDING
    assert "reach within the 1% threshold" in record.why


def test_a_win_clear_of_layout_luck_prints_its_interval_with_the_luck_in_it():
    doc = _sweep({"win": 0.75})
    record = confirmation.plan(doc, None)
    assert record.status == confirmation.NOT_NEEDED
    assert record.one_layout.ci_fcr == _vs(doc, "win").ci_fcr
    selected = doc.recommendation.estimate
    _apply(doc, record.dump())
    e = doc.recommendation.estimate
    assert e.kind == estimate.WITH_LUCK and e.ratio == selected.ratio
    assert e.ci[0] < selected.ci[0] and selected.ci[1] < e.ci[1] < 0.99
    assert "no confirmation over layouts was needed" in e.why
    assert "with one build's layout luck" in estimate.text(e)
    # a measured, smaller spread gives a narrower interval
    near = estimate.with_luck(doc, "win", 2.0)
    assert e.ci[0] < near.ci[0] and near.ci[1] < e.ci[1]


def _confirmed(doc: model.Results, status: str) -> dict:
    """The record of a confirmation of doc's winner that ended `status`."""
    stored = confirmation.plan(doc, None).dump()
    over = {"ratio": 0.975, "ci95": [0.965, 0.985], "ci_fcr": [0.962, 0.988],
            "fcr_level": 0.975, "verdict": "faster" if status == confirmation.CONFIRMED
            else "inconclusive", "layouts": 4, "p_adjusted": 0.01}
    return {**stored, "status": status, "over_layouts": over, "why": "planted"}


def test_a_confirmed_winner_prints_the_confirmations_estimate_and_interval():
    doc = _sweep({"win": 0.96})
    _apply(doc, _confirmed(doc, confirmation.CONFIRMED))
    e = doc.recommendation.estimate
    assert e.kind == estimate.OVER_LAYOUTS and e.layouts == 4
    assert (e.ratio, e.ci, e.level, e.p_adjusted) == (0.975, [0.962, 0.988], 0.975, 0.01)
    assert estimate.text(e, " against the baseline").startswith(
        "-2.5% over 4 layouts each against the baseline (97.5% CI [-3.8, -1.2], the "
        "confirmation's")
    assert "built after the winner was chosen" in e.why
    # not distinguishable from layout luck: the baseline is kept, and nothing is printed
    doc = _sweep({"win": 0.96})
    _apply(doc, _confirmed(doc, confirmation.LUCK))
    assert doc.recommendation.variant == "b" and doc.recommendation.estimate is None
    # --no-confirm: the sweep's own adjusted interval, which says it holds no layout luck
    doc = _sweep({"win": 0.96})
    _apply(doc, confirmation.plan(doc, None, MeasureOptions(layout_confirm=False)).dump())
    assert doc.recommendation.estimate.kind == estimate.SELECTED


def test_results_written_before_the_estimate_print_the_same_from_what_they_kept():
    doc = _sweep({"win": 0.95})
    kept = doc.recommendation.estimate
    doc.recommendation.estimate = None
    older = model.Results.model_validate(doc.dump())
    assert estimate.printed(older) == kept
    _apply(doc, _confirmed(doc, confirmation.CONFIRMED))
    doc.recommendation.estimate = None
    assert estimate.printed(doc).kind == estimate.OVER_LAYOUTS
    # a confirmation record of before kept no adjusted interval: its 95% one, said so
    plain = estimate.over_layouts(model.LayoutEstimate(ratio=0.97, ci95=[0.96, 0.98]), 4)
    assert plain.kind == estimate.UNADJUSTED and plain.level == 0.95
    assert "not adjusted for choosing it" in estimate.text(plain)


def test_results_json_validates_with_the_estimate_and_the_schema_names_it():
    doc = _sweep({"win": 0.95})
    again = reader.validate(doc.dump(), "results.json")
    assert again.recommendation.estimate.kind == estimate.SELECTED
    schema = model.json_schema("results")
    assert '"Estimate"' in schema and '"kind"' in schema and '"comparisons"' in schema
    with pytest.raises(Exception, match="recommendation.estimate.ci"):
        reader.validate({**doc.dump(), "recommendation": {
            **doc.recommendation.dump(), "estimate": {"kind": "x", "ci": [1]}}}, "results.json")
