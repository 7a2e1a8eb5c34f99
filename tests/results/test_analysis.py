"""The analysis layer: verdicts, the A/A arm, pass-through verdicts and the recommendation on a
synthetic results document (no builds, no timing), and screening recipes."""

from __future__ import annotations

import numpy as np
import pytest

from flagsweep.errors import ConfigError
from flagsweep.measure.sample import Sample
from flagsweep import model
from flagsweep.results import analysis
from flagsweep.experiment import matrix, recipe


def _variant(vid, flags, factors, status="ok", identical_to=None, check="ok"):
    return {"id": vid, "compiler": "gcc", "flags": flags, "factors": factors,
            "check": {"status": check, "detail": ""},
            "build": {"status": status, "identical_to": identical_to}}


def _doc(baseline, design, variants, **more) -> model.Results:
    """A results document of these variants as the writer has it before the analysis."""
    return model.Results.model_validate({
        "schema": model.SCHEMA, "target": "t", "recipe": "r", "metric": "wall_s",
        "baseline": baseline, "design": design, "machine": {}, "threshold_pct": 1.0,
        "variants": variants, **more})


def _values(rng, scale, rounds=12, cv=0.005):
    drift = {r: 1 + 0.01 * np.sin(r) for r in range(rounds)}  # rounds as blocks
    return {r: scale * drift[r] * float(rng.lognormal(0, cv)) for r in range(rounds)}


def test_verdicts_aa_and_recommendation():
    rng = np.random.default_rng(4)
    doc = _doc("gcc-O2", "full-factorial", [
        _variant("gcc-O2", ["-O2"], {"opt": "-O2", "march": "x86-64"}),
        _variant("gcc-O3", ["-O3"], {"opt": "-O3", "march": "x86-64"}),
        _variant("gcc-O2-march-native", ["-O2", "-march=native"], {"opt": "-O2", "march": "native"}),
        _variant("gcc-O3-march-native", ["-O3", "-march=native"], {"opt": "-O3", "march": "native"}),
        _variant("gcc-O2-mfpmath-sse", ["-O2", "-mfpmath=sse"], {"opt": "-O2", "march": "x86-64"},
                 identical_to="gcc-O2"),
        _variant("gcc-Os", ["-Os"], {"opt": "-Os", "march": "x86-64"}, status="failed"),
        _variant("gcc-O2.aa", ["-O2"], {"opt": "-O2", "march": "x86-64"}),
    ])
    values = {"gcc-O2": _values(rng, 1.00), "gcc-O2.aa": _values(rng, 1.00),
              "gcc-O3": _values(rng, 0.90), "gcc-O2-march-native": _values(rng, 0.905),
              "gcc-O3-march-native": _values(rng, 0.80)}
    analysis.apply(doc, values, seed=1)
    v = {x.id: x for x in doc.variants}
    assert v["gcc-O2"].vs_baseline is None and v["gcc-O2"].summary.n == 12
    assert v["gcc-O3"].vs_baseline.verdict == "faster"
    assert v["gcc-O3"].vs_baseline.ratio == pytest.approx(0.90, abs=0.01)
    assert v["gcc-O2-mfpmath-sse"].vs_baseline.verdict == "identical-code"
    assert v["gcc-Os"].vs_baseline.dump() == {"verdict": "not-measured",
                                                "why": "build failed: no detail recorded"}
    assert doc.aa.variant == "gcc-O2.aa" and doc.aa.verdict in ("equivalent", "inconclusive")
    assert doc.aa.warning is None
    # 12 rounds, 4 comparisons, CV 0.5%: a 2% effect is called with 80% power, 1% never is.
    assert 1.0 < doc.noise.mde_pct < 2.0 and doc.noise.warning is None
    assert doc.noise.comparisons == 4
    # -O3 -march=native is fastest (-20%); nothing else is within 1% of it, so it is recommended.
    assert doc.recommendation.flags == ["-O3", "-march=native"]
    assert "fastest" in doc.recommendation.why
    rows = {(e.factor, e.level): e for e in doc.effects}
    assert rows[("opt", "-O3")].matters and rows[("march", "native")].matters
    assert doc.effects_design.design == "full-factorial"
    assert ("opt", "-Os") not in rows  # not measured: no data for that level


def test_recommendation_prefers_fewer_flags_within_the_threshold():
    rng = np.random.default_rng(7)
    doc = _doc("b", "explicit", [
        _variant("b", ["-O2"], {"row": "b"}),
        _variant("many", ["-O3", "-march=native", "-funroll-loops"], {"row": "many"}),
        _variant("few", ["-O3", "-march=native"], {"row": "few"}),
    ])
    values = {"b": _values(rng, 1.0), "many": _values(rng, 0.900), "few": _values(rng, 0.903)}
    analysis.apply(doc, values, seed=2)
    assert doc.recommendation.flags == ["-O3", "-march=native"]
    assert "fewer flags" in doc.recommendation.why


def test_an_aa_arm_that_moves_makes_every_verdict_inconclusive():
    """The twin is the baseline's own binary: if it comes out slower, the machine moved, and the
    -O3 that looks 10% faster and the -Os that looks equivalent are not verdicts either."""
    rng = np.random.default_rng(3)
    doc = _doc("b", "explicit", [
        _variant("b", ["-O2"], {"row": "b"}), _variant("b.aa", ["-O2"], {"row": "b"}),
        _variant("o3", ["-O3"], {"row": "o3"}), _variant("os", ["-Os"], {"row": "os"})])
    values = {"b": _values(rng, 1.0), "b.aa": _values(rng, 1.05), "o3": _values(rng, 0.90),
              "os": _values(rng, 1.0)}
    analysis.apply(doc, values, seed=1)
    v = {x.id: x.vs_baseline for x in doc.variants}
    assert doc.aa.verdict == "slower" and doc.aa.unstable
    assert "machine was unstable" in doc.aa.warning
    assert sorted(doc.aa.gated) == ["o3", "os"]
    for vid in ("o3", "os"):
        assert v[vid].verdict == "inconclusive"
        assert "machine was unstable" in v[vid].why
    assert "not faster" in v["o3"].why and "not equivalent" in v["os"].why
    assert v["o3"].ratio == pytest.approx(0.90 / 1.0, abs=0.01)   # the estimate is still shown
    assert "Keep the baseline" in doc.recommendation.why


def test_a_call_inside_the_aa_arms_own_spread_is_not_made():
    """A noisy sweep whose twin came out 2-3% off, not significantly (inconclusive): a -1.5%
    variant whose interval clears the 1% threshold but not the twin's offset is not called
    faster; a -30% one is."""
    rng = np.random.default_rng(22)
    base = {r: float(rng.lognormal(0, 0.03)) for r in range(20)}
    doc = _doc("b", "explicit", [
        _variant("b", ["-O2"], {"row": "b"}), _variant("b.aa", ["-O2"], {"row": "b"}),
        _variant("small", ["-O3"], {"row": "small"}), _variant("big", ["-O1"], {"row": "big"})])
    shifted = lambda scale, cv: {r: x * scale * float(rng.lognormal(0, cv))  # noqa: E731
                                 for r, x in base.items()}
    values = {"b": base, "b.aa": shifted(1.03, 0.06), "big": shifted(0.70, 0.01),
              "small": shifted(0.985, 0.002)}
    analysis.apply(doc, values, seed=4)
    v = {x.id: x.vs_baseline for x in doc.variants}
    bound = doc.aa.bound_pct
    assert doc.aa.verdict == "inconclusive" and not doc.aa.unstable
    assert bound == pytest.approx(abs(doc.aa.ratio - 1) * 100) and bound > 1.5
    assert v["small"].ci95[1] < 0.99      # beyond the threshold: "faster" without the twin
    assert v["small"].ci95[1] > 1 - bound / 100   # but not beyond the twin's own offset
    assert v["small"].verdict == "inconclusive" and "A/A arm" in v["small"].why
    assert doc.aa.gated == ["small"]
    assert v["big"].verdict == "faster"


def test_screening_recipe_expands_to_design_rows_with_the_base_as_baseline():
    r = recipe.load("screen-f")
    m = matrix.expand(r, filter_cpu=False)
    assert m.design == "plackett-burman" and m.baseline.flags == ("-O2",)
    assert set(m.baseline.factors.values()) == {"off"}
    rows = [v for v in m.variants if v is not m.baseline]
    assert len(rows) >= 12
    for flag in r.spec.screen:  # every flag is on in half of the design rows
        assert sum(v.factors[flag] == "on" for v in rows) == 6


def test_screening_recipe_validation(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('summary = "s"\ndesign = "plackett-burman"\nbase = "-O2"\nscreen = ["-ftracer"]\n')
    with pytest.raises(ConfigError, match="needs 'base' .*at least two on/off flags"):
        recipe.load(str(bad))
    bad.write_text('summary = "s"\ndesign = "plackett-burman"\nbase = "-O2"\n'
                   'screen = ["-ftracer", "-fipa-pta"]\nbaseline = { opt = "-O2" }\n')
    with pytest.raises(ConfigError, match="takes no axes, include, exclude or baseline"):
        recipe.load(str(bad))
    bad.write_text('summary = "s"\nbase = "-O2"\nbaseline = { opt = "-O2" }\n[axes]\nopt = ["-O2"]\n')
    with pytest.raises(ConfigError, match="belong to design"):
        recipe.load(str(bad))


def test_screening_analysis_reuses_identical_rows():
    """A saturated design needs every row: an identical-code row gets its twin's samples."""
    rng = np.random.default_rng(11)
    m = matrix.expand(recipe.load("screen-f"), filter_cpu=False)
    truth = {"-funroll-loops": 0.96, "-fno-inline": 1.05}
    variants, values = [], {}
    for i, v in enumerate(m.variants):
        scale = float(np.prod([truth.get(f, 1.0) for f, lv in v.factors.items() if lv == "on"]))
        same = m.variants[0].id if i == 3 else None  # pretend row 3 built to the base's code
        variants.append(_variant(v.id, list(v.flags), v.factors, identical_to=same))
        if same is None:
            values[v.id] = _values(rng, scale, rounds=10)
    doc = _doc(m.baseline.id, "plackett-burman", variants)
    analysis.apply(doc, values, seed=5)
    assert doc.effects_design.design == "plackett-burman"
    mattering = {e.factor for e in doc.effects if e.matters}
    assert {"-funroll-loops", "-fno-inline"} <= mattering


def test_two_compilers_make_the_compiler_a_factor_of_the_effects():
    """gcc -O3 and clang -O3 are not replicates: clang planted 8% slower at every level shows as
    the compiler's own effect, and the -O levels keep their own (not averaged over compilers)."""
    rng = np.random.default_rng(21)
    m = matrix.expand(recipe.load("olevels"), compilers=["gcc", "clang"], filter_cpu=False)
    opt = {"-O0": 1.40, "-O1": 1.05, "-O2": 1.0, "-O3": 0.97, "-Os": 1.03}
    variants, values = [], {}
    for v in m.variants:
        variants.append(_variant(v.id, list(v.flags), v.factors))
        values[v.id] = _values(rng, opt[v.factors["opt"]] * (1.08 if v.compiler == "clang" else 1.0))
    doc = _doc(m.baseline.id, m.design, variants)
    analysis.apply(doc, values, seed=3)
    rows = {(e.factor, e.level): e for e in doc.effects}
    assert rows[("compiler", "clang")].reference == "gcc"
    assert rows[("compiler", "clang")].effect_pct == pytest.approx(8.0, abs=0.6)
    assert rows[("compiler", "clang")].matters
    assert rows[("opt", "-O0")].effect_pct == pytest.approx(40.0, abs=1.5)
    assert rows[("opt", "-O3")].effect_pct == pytest.approx(-3.0, abs=0.6)


def test_two_compiler_screen_has_a_compiler_column():
    rng = np.random.default_rng(12)
    m = matrix.expand(recipe.load("screen-f"), compilers=["gcc", "clang"], filter_cpu=False)
    variants, values = [], {}
    for v in m.variants:
        scale = (0.96 if v.factors["-funroll-loops"] == "on" else 1.0) * (
            1.10 if v.compiler == "clang" else 1.0)
        variants.append(_variant(v.id, list(v.flags), v.factors))
        values[v.id] = _values(rng, scale, rounds=10)
    doc = _doc(m.baseline.id, "plackett-burman", variants)
    analysis.apply(doc, values, seed=5)
    rows = {e.factor: e for e in doc.effects}
    assert (rows["compiler"].level, rows["compiler"].reference) == ("clang", "gcc")
    assert rows["compiler"].effect_pct == pytest.approx(10.0, abs=1.0)
    assert rows["-funroll-loops"].matters and rows["compiler"].matters


def _noisy_samples(rng, pace_s, rounds=10):
    """Baseline, twin and a variant: wall time with 8% load noise on top of CPU time at 0.3%,
    taken pace_s apart round after round."""
    out = []
    for r in range(rounds):
        for k, vid in enumerate(("base", "base.aa", "var")):
            cpu = 1.0 * float(rng.lognormal(0, 0.003))
            out.append(Sample(vid, r, k, 0, wall_s=cpu * float(rng.lognormal(0.05, 0.08)),
                              user_s=0.95 * cpu, sys_s=0.05 * cpu, taken_at=1000 + r * pace_s + k))
    return out


def _doc_for(samples, metric_choice=None, machine=None):
    doc = _doc("base", None, [_variant(v, ["-O2"], {}) for v in ("base", "base.aa", "var")],
               machine=machine or {"cpu_count": 2, "isolated_cpus": [], "pinned_cpu": None},
               measurement={"metric_choice": metric_choice})
    values = analysis.values_by_round(samples, lambda s: s.wall_s)
    analysis.apply(doc, values, seed=1)
    analysis.advise(doc, samples)
    return doc


def test_noise_advice_names_what_can_be_followed():
    """Loud wall time over quiet CPU time: the warning names --metric cpu with the effect it
    would call on these samples, a quieter CPU, and more rounds with the time they take."""
    samples = _noisy_samples(np.random.default_rng(5), pace_s=3.0)
    warning = _doc_for(samples).noise.warning
    assert warning.startswith("with 10 rounds this sweep calls effects of")
    head, _, ways = warning.partition(". What would help: ")
    assert "`--metric cpu` would call" in ways and "isolcpus=" in ways
    rounds = _doc_for(samples).noise.rounds_needed
    assert f"--max-runs {rounds} (about " in ways and "3.0 s a round" in ways


def test_noise_advice_says_when_rounds_cannot_help_and_when_cpu_time_is_wrong():
    samples = _noisy_samples(np.random.default_rng(5), pace_s=600.0)  # 10 minutes a round
    choice = {"metric": "wall", "why": "wall time: the workload waits for I/O"}
    doc = _doc_for(samples, metric_choice=choice,
                   machine={"cpu_count": 2, "isolated_cpus": [1], "pinned_cpu": 0,
                            "governor": "powersave"})
    ways = doc.noise.warning.partition(". What would help: ")[2]
    assert "not more rounds" in ways and "cannot resolve 2% for this program in a night" in ways
    assert "--max-runs" not in ways
    assert "but this workload is not one for it (wall time: the workload waits for I/O)" in ways
    assert "`flagsweep system --tune`" in ways and "`--cpu 1`" in ways


def test_no_advice_without_a_warning():
    rng = np.random.default_rng(6)
    samples = [Sample(v, r, k, 0, wall_s=float(rng.lognormal(0, 0.001)), user_s=1.0, sys_s=0.0,
                      taken_at=1000 + 3 * r + k)
               for r in range(12) for k, v in enumerate(("base", "base.aa", "var"))]
    doc = _doc_for(samples)
    assert doc.noise.warning is None and doc.noise.rounds_needed is None


def test_a_variant_just_beyond_the_threshold_among_ten_is_judged_on_its_adjusted_interval():
    """One variant +1.5% among nine comparisons at 0 (the twin included): its 95% CI clears the
    1% threshold, its false-coverage adjusted one (99.5%, one selected of ten) does not, so it is
    inconclusive, and results.json and the table show the interval the verdict rests on."""
    from flagsweep.report import counters, variants

    pattern = np.linspace(-1, 1, 12)
    base = {r: 1.0 for r in range(12)}
    spread = lambda shift, width: {r: float(np.exp(shift + width * x))  # noqa: E731
                                   for r, x in enumerate(pattern)}
    ids = ["b", "b.aa", "edge", *(f"n{j}" for j in range(8))]
    doc = _doc("b", "explicit", [_variant(vid, [f"-f{vid}"], {"row": vid}) for vid in ids])
    values = {"b": base, "edge": spread(np.log(1.01) + 0.005, 0.01),
              **{vid: spread(0.0, 0.003) for vid in ids if vid not in ("b", "edge")}}
    analysis.apply(doc, values, seed=1)
    edge = next(v for v in doc.variants if v.id == "edge")
    c = edge.vs_baseline
    assert c.ci95[0] > 1.01 and c.p_adjusted < 0.05
    assert c.verdict == "inconclusive"
    assert c.fcr_level == pytest.approx(0.995) and c.ci_fcr[0] < 1.01
    assert model.VsBaseline.model_validate(c).fcr_level == pytest.approx(0.995)
    row = variants.variant_row(edge, doc)
    assert row.ci_text.startswith("[+1.0, +2.0]; 99.5% [")
    # its effects row (one change of the baseline) shows the interval that decided it, "no"
    effect = counters.effect_row(next(e for e in doc.effects if e.variant == "edge"))
    assert not effect.matters and effect.ci_text.startswith("99.5% [+0.")
    assert effect.ci == pytest.approx(tuple(100 * (x - 1) for x in c.ci_fcr))
    with pytest.raises(Exception, match="ci_fcr"):
        model.VsBaseline.model_validate({**c.dump(), "ci_fcr": [0.9]})
