"""Which flags matter: seeded simulations with planted effects (coverage, detection, calibration),
design classification, the awkward designs real recipes produce, and the JSON contract."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from flagsweep.experiment import design
from flagsweep.stats import effects

CV = 0.01                                   # 1% run-to-run noise
SIGMA = math.sqrt(math.log1p(CV ** 2))      # the log-normal sigma with that CV
DRIFT = 0.03                                # per-round drift shared by every variant


def simulate(rng, truth: dict[str, float], rounds: int = 10, base: float = 2.0) -> dict[str, dict[int, float]]:
    """variant -> {round: value}: base * (1 + pct/100) * round drift * log-normal noise."""
    drift = rng.normal(0.0, DRIFT, size=rounds)
    return {v: {r: base * (1 + pct / 100) * math.exp(drift[r] + rng.normal(0.0, SIGMA))
                for r in range(rounds)}
            for v, pct in truth.items()}


# --- 1. factorial simulation -------------------------------------------------------------------

OPT = {"-O1": 8.0, "-O2": 0.0, "-O3": -2.0}
MARCH = {"x86-64": 0.0, "x86-64-v2": 0.0, "x86-64-v3": -3.0}
REF = {"opt": "-O2", "march": "x86-64"}


def factorial(opt=OPT, march=MARCH):
    """3 x 3 full factorial, multiplicative (no interaction): truth in percent per variant."""
    factors, truth = {}, {}
    for (o, po), (m, pm) in itertools.product(opt.items(), march.items()):
        vid = f"gcc{o}-march-{m}"
        factors[vid] = {"opt": o, "march": m}
        truth[vid] = ((1 + po / 100) * (1 + pm / 100) - 1) * 100
    return factors, truth


def test_factorial_coverage_and_detection():
    rng = np.random.default_rng(10)
    factors, truth = factorial()
    true_pct = {("opt", "-O1"): 8.0, ("opt", "-O3"): -2.0,
                ("march", "x86-64-v2"): 0.0, ("march", "x86-64-v3"): -3.0}
    covered = dict.fromkeys(true_pct, 0)
    matters = dict.fromkeys(true_pct, 0)
    trials = 200
    for _ in range(trials):
        res = effects.estimate(simulate(rng, truth), factors, REF)
        assert res.design == "full-factorial"
        rows = {(e.factor, e.level): e for e in res.effects}
        assert set(rows) == set(true_pct)
        for key, pct in true_pct.items():
            lo, hi = rows[key].ci95_pct
            covered[key] += lo <= pct <= hi
            matters[key] += bool(rows[key].matters)
    for key in true_pct:
        assert covered[key] / trials >= 0.85, (key, covered[key])
    for key in [("opt", "-O1"), ("opt", "-O3"), ("march", "x86-64-v3")]:
        assert matters[key] / trials >= 0.95, (key, matters[key])
    assert matters[("march", "x86-64-v2")] / trials <= 0.05


def test_null_calibration_despite_drift():
    """No real effects, large round drift: raw p < 0.05 about 5% of the time, never 'matters'."""
    rng = np.random.default_rng(11)
    factors, truth = factorial(dict.fromkeys(OPT, 0.0), dict.fromkeys(MARCH, 0.0))
    ps, mattered = [], 0
    for _ in range(300):
        res = effects.estimate(simulate(rng, truth), factors, REF)
        ps += [e.p_value for e in res.effects]
        mattered += sum(bool(e.matters) for e in res.effects)
    assert 0.02 <= np.mean(np.array(ps) < 0.05) <= 0.09
    assert mattered == 0


def test_direction_and_size():
    rng = np.random.default_rng(12)
    factors, truth = factorial()
    res = effects.estimate(simulate(rng, truth, rounds=30), factors, REF)
    rows = {(e.factor, e.level): e for e in res.effects}
    assert rows[("opt", "-O1")].effect_pct == pytest.approx(8.0, abs=0.5)
    assert rows[("march", "x86-64-v3")].effect_pct == pytest.approx(-3.0, abs=0.5)
    assert all(e.reference == REF[e.factor] for e in res.effects)


def test_interaction_reported_in_note():
    factors, truth = factorial()
    truth["gcc-O3-march-x86-64-v3"] += 6.0       # -O3 only hurts together with v3
    res = effects.estimate(simulate(np.random.default_rng(13), truth), factors, REF)
    assert "Interactions" in res.note and "present" in res.note


STALL_TRUTH = {("opt", "-Os"): 2.5, ("lto", "on"): 0.0, ("march", "x86-64-v3"): -3.0}
STALL_REF = {"opt": "-O2", "lto": "off", "march": "x86-64"}


def stalled(rng, samples, share=0.05, factor=1.25):
    """A VM that stalls now and then: a random `share` of all samples made `factor` x slower."""
    keys = [(v, r) for v, s in samples.items() for r in s]
    for i in rng.choice(len(keys), size=round(share * len(keys)), replace=False):
        v, r = keys[i]
        samples[v][r] *= factor
    return samples


def ols_pct(samples, factors, ref, labels):
    """Plain least squares on the same model (levels + intercept + round blocks), for comparison."""
    rows = [(v, r, x) for v, s in samples.items() for r, x in sorted(s.items())]
    rounds = sorted({r for _, r, _ in rows})
    x = np.array([[factors[v][a] == lvl for a, lvl in labels] + [1.0]
                  + [r == b for b in rounds[1:]] for v, r, _ in rows], dtype=float)
    beta = np.linalg.lstsq(x, np.log([y for _, _, y in rows]), rcond=None)[0]
    return {lab: 100 * math.expm1(b) for lab, b in zip(labels, beta)}


def test_robust_to_stalls():
    """5% of samples x1.25 (stalls): the robust fit's CIs still cover the truth and its error is
    well below least squares' on the same data (2 x 2 x 2 factorial, 10 rounds, 1% noise)."""
    rng = np.random.default_rng(40)
    factors, truth = {}, {}
    for o, l, m in itertools.product(["-O2", "-Os"], ["off", "on"], ["x86-64", "x86-64-v3"]):
        vid = f"gcc{o}-lto-{l}-{m}"
        factors[vid] = {"opt": o, "lto": l, "march": m}
        truth[vid] = (math.prod(1 + STALL_TRUTH.get((a, lvl), 0.0) / 100
                                for a, lvl in factors[vid].items()) - 1) * 100
    labels = list(STALL_TRUTH)
    covered = dict.fromkeys(labels, 0)
    err_robust, err_ols = [], []
    trials = 100
    for _ in range(trials):
        samples = stalled(rng, simulate(rng, truth))
        res = effects.estimate(samples, factors, STALL_REF)
        assert "Robust fit (Huber" in res.note
        rows = {(e.factor, e.level): e for e in res.effects}
        ols = ols_pct(samples, factors, STALL_REF, labels)
        for key, pct in STALL_TRUTH.items():
            lo, hi = rows[key].ci95_pct
            covered[key] += lo <= pct <= hi
            err_robust.append(abs(rows[key].effect_pct - pct))
            err_ols.append(abs(ols[key] - pct))
    for key in labels:
        assert covered[key] / trials >= 0.85, (key, covered[key])
    mae_robust, mae_ols = np.mean(err_robust), np.mean(err_ols)
    assert mae_robust < 0.6 * mae_ols, (mae_robust, mae_ols)


# --- 2. Plackett-Burman simulation -------------------------------------------------------------

FLAGS = [f"-fflag{i}" for i in range(11)]
PB_TRUTH = {"-fflag2": -4.0, "-fflag7": 3.0}


def pb_truth(rows):
    out = {}
    for i, row in enumerate(rows):
        ratio = math.prod(1 + PB_TRUTH.get(f, 0.0) / 100 for f, on in zip(FLAGS, row) if on)
        out[f"pb{i}"] = (ratio - 1) * 100
    return out


def test_plackett_burman_finds_the_two_real_flags():
    rng = np.random.default_rng(20)
    rows = design.plackett_burman_rows(FLAGS)
    by_variant = {f"pb{i}": row for i, row in enumerate(rows)}
    truth = pb_truth(rows)
    exact, trials = 0, 200
    for _ in range(trials):
        res = effects.screen(simulate(rng, truth), by_variant, FLAGS)
        assert res.design == "plackett-burman"
        exact += {e.factor for e in res.effects if e.matters} == set(PB_TRUTH)
    assert exact / trials >= 0.80, exact


def test_plackett_burman_effect_is_off_to_on_percent():
    """The +-1 coding: effect_pct must be the planted off->on change, not half or double it."""
    rows = design.plackett_burman_rows(FLAGS)
    by_variant = {f"pb{i}": row for i, row in enumerate(rows)}
    res = effects.screen(simulate(np.random.default_rng(21), pb_truth(rows), rounds=40),
                         by_variant, FLAGS)
    got = {e.factor: e for e in res.effects}
    assert got["-fflag2"].effect_pct == pytest.approx(-4.0, abs=0.3)
    assert got["-fflag7"].effect_pct == pytest.approx(3.0, abs=0.3)
    assert (got["-fflag2"].level, got["-fflag2"].reference) == ("on", "off")
    assert "Plackett-Burman screening" in res.note and "--confirm" in res.note


def test_plackett_burman_missing_row_is_said():
    rows = design.plackett_burman_rows(FLAGS)
    by_variant = {f"pb{i}": row for i, row in enumerate(rows)}
    samples = simulate(np.random.default_rng(22), pb_truth(rows))
    del samples["pb3"]
    res = effects.screen(samples, by_variant, FLAGS)
    assert "1 of 12 design rows have no measured data" in res.note


# --- 3. the design itself ----------------------------------------------------------------------

def test_plackett_burman_rows_12_by_11_balanced_orthogonal():
    rows = design.plackett_burman_rows(FLAGS)
    assert len(rows) == 12 and all(len(r) == 11 for r in rows)
    x = np.where(np.array(rows), 1, -1)
    assert (x.sum(axis=0) == 0).all()                      # 6 on, 6 off in every column
    assert (x.T @ x == 12 * np.eye(11)).all()              # columns orthogonal
    assert rows == design.plackett_burman_rows(FLAGS)     # deterministic
    assert len(design.plackett_burman_rows(FLAGS[:8])) == 12
    assert len(design.plackett_burman_rows(FLAGS[:4])) == 8


# --- 4. awkward designs ------------------------------------------------------------------------

def test_one_at_a_time():
    factors = {"base": {"opt": "-O2", "march": "x86-64"},
               "o3": {"opt": "-O3", "march": "x86-64"},
               "v3": {"opt": "-O2", "march": "x86-64-v3"}}
    samples = simulate(np.random.default_rng(30), {"base": 0.0, "o3": -2.0, "v3": -3.0})
    res = effects.estimate(samples, factors, REF)
    assert res.design == "one-at-a-time"
    assert "interactions cannot be separated" in res.note
    assert {(e.factor, e.level) for e in res.effects} == {("opt", "-O3"), ("march", "x86-64-v3")}


def test_single_level_axis_is_skipped():
    """march.toml's shape: opt has the one level -O2, march varies."""
    levels = {"x86-64": 0.0, "x86-64-v2": -1.0, "x86-64-v3": -3.0}
    factors = {m: {"opt": "-O2", "march": m} for m in levels}
    res = effects.estimate(simulate(np.random.default_rng(31), levels), factors, REF)
    assert {e.factor for e in res.effects} == {"march"}
    assert "opt: only one measured level (-O2)" in res.note
    assert "One factor (march)" in res.note


def test_rank_deficient_levels_are_dropped_and_named():
    """-O3 only ever appears with v3: neither can be told apart; lto still can."""
    ref = {"opt": "-O2", "march": "x86-64", "lto": "off"}
    factors = {"base": {"opt": "-O2", "march": "x86-64", "lto": "off"},
               "o3v3": {"opt": "-O3", "march": "x86-64-v3", "lto": "off"},
               "lto": {"opt": "-O2", "march": "x86-64", "lto": "on"}}
    samples = simulate(np.random.default_rng(32), {"base": 0.0, "o3v3": -5.0, "lto": -2.0})
    res = effects.estimate(samples, factors, ref)
    assert [(e.factor, e.level) for e in res.effects] == [("lto", "on")]
    assert "Not estimable" in res.note and "opt=-O3" in res.note and "march=x86-64-v3" in res.note
    lo, hi = res.effects[0].ci95_pct
    assert lo <= -2.0 <= hi


def test_seed_2003_shape_one_level_per_variant():
    """One factor `row`, one variant per level: each effect is that variant against the baseline
    within rounds. Balanced, so least squares would give exactly the mean paired log difference;
    the robust (Huber) fit stays within a fraction of its standard error (~0.45 points here) of
    it, and its CI contains it."""
    truth = {"lame-default": 0.0, "O0": 90.0, "O1": 5.0, "O2": 2.0, "O3": 0.5,
             "O3-v3": -3.0, "everything-tuned": 15.0, "tuned-387": 8.0}
    factors = {f"gcc-{r}": {"row": r} for r in truth}
    samples = simulate(np.random.default_rng(33), {f"gcc-{r}": p for r, p in truth.items()})
    res = effects.estimate(samples, factors, {"row": "lame-default"})
    assert res.design == "full-factorial" and "One factor (row)" in res.note
    assert len(res.effects) == len(truth) - 1
    base = samples["gcc-lame-default"]
    for e in res.effects:
        v = samples[f"gcc-{e.level}"]
        paired = np.mean([math.log(v[r] / base[r]) for r in base])
        assert e.effect_pct == pytest.approx(100 * math.expm1(paired), abs=0.3)
        assert e.ci95_pct[0] <= 100 * math.expm1(paired) <= e.ci95_pct[1]
    rows = {e.level: e for e in res.effects}
    assert rows["everything-tuned"].matters and rows["O0"].matters
    covered = sum(e.ci95_pct[0] <= truth[e.level] <= e.ci95_pct[1] for e in res.effects)
    assert covered >= len(res.effects) - 1


def test_level_without_data_is_named():
    """Identical-code variants are not timed: their level has no data and says so."""
    factors, truth = factorial()
    factors["gcc-O2-march-x86-64-v4"] = {"opt": "-O2", "march": "x86-64-v4"}   # not measured
    res = effects.estimate(simulate(np.random.default_rng(34), truth), factors, REF)
    assert "march: no measured data for ['x86-64-v4']" in res.note
    assert "x86-64-v4" not in {e.level for e in res.effects}


def test_variant_lacking_an_axis_is_left_out():
    factors, truth = factorial()
    factors["extra"], truth["extra"] = {"row": "odd"}, 0.0
    res = effects.estimate(simulate(np.random.default_rng(35), truth), factors, REF)
    assert "Left out 1 variant(s)" in res.note and "extra" in res.note
    assert res.design == "full-factorial" and len(res.effects) == 4


def test_not_estimable_cases():
    only_base = effects.estimate({"b": {0: 1.0, 1: 1.1}}, {"b": REF}, REF)
    assert only_base.design == "not-estimable" and not only_base.effects
    one_round = effects.estimate({"b": {0: 1.0}, "o3": {0: 0.9}},
                                 {"b": REF, "o3": {**REF, "opt": "-O3"}}, REF)
    assert one_round.design == "not-estimable" and "No residual degrees of freedom" in one_round.note
    with pytest.raises(ValueError, match="finite and positive"):
        effects.estimate({"b": {0: 1.0, 1: 0.0}, "o3": {0: 1.0, 1: 1.0}},
                         {"b": REF, "o3": {**REF, "opt": "-O3"}}, REF)


def test_deterministic_metric_gives_exact_effects():
    """An instruction count does not vary between rounds: exact effect, zero-width interval."""
    samples = {"b": {0: 1000.0, 1: 1000.0}, "o3": {0: 950.0, 1: 950.0}}
    res = effects.estimate(samples, {"b": REF, "o3": {**REF, "opt": "-O3"}}, REF)
    (e,) = res.effects
    assert e.effect_pct == pytest.approx(-5.0) and e.ci95_pct == pytest.approx((-5.0, -5.0))
    assert e.matters


# --- 5. the contract ---------------------------------------------------------------------------

def test_to_json_matches_contract():
    factors, truth = factorial()
    res = effects.estimate(simulate(np.random.default_rng(50), truth), factors, REF)
    doc = json.loads(json.dumps(res.to_json()))
    assert set(doc) == {"design", "note", "rows"}
    contract = {"factor", "level", "reference", "effect_pct", "ci95_pct", "p_adjusted", "matters",
                "ci_fcr_pct", "fcr_level"}
    for row in doc["rows"]:
        assert set(row) == contract | {"p_value"}
        assert len(row["ci95_pct"]) == 2 and isinstance(row["matters"], bool)


def test_an_effect_matters_only_with_its_adjusted_interval_beyond_the_threshold():
    """Ten rows, one at +1.5% [+1.1, +1.9] (p 1e-9): its estimate is beyond the 1% threshold and
    its 95% interval too, but among ten rows its interval adjusted for the selection (Benjamini
    & Yekutieli 2005) reaches into the band, so it does not matter; a +5% row does."""
    def row(i, pct, lo, hi):
        return effects.FactorEffect("flag", f"f{i}", "off", pct, (lo, hi), 1e-9)
    rows = [row(0, 1.5, 1.1, 1.9)] + [row(i, 0.0, -0.4, 0.4) for i in range(1, 10)]
    out = effects._finish("one-at-a-time", rows, [], 1.0, 0.05).effects
    assert out[0].matters is False and out[0].ci_fcr_pct[0] < 1.0
    assert out[0].fcr_level == pytest.approx(1 - 0.05 / 10)      # what it needed to join
    rows[0] = row(0, 5.0, 4.6, 5.4)
    out = effects._finish("one-at-a-time", rows, [], 1.0, 0.05).effects
    assert out[0].matters is True and out[0].ci_fcr_pct[0] > 1.0
    assert out[0].ci_fcr_pct[0] < 4.6              # wider than its own 95% interval
    assert out[0].fcr_level == pytest.approx(1 - 0.05 / 10)      # a lone choice among ten
    assert not any(r.matters for r in out[1:])
