"""What a sweep concludes must hold against hostile or thin data: a program whose output is
wrong is never recommended nor a flag that matters, and the "flags that matter" line says what
the variants table says (same p, same verdict, no interval where the table has none)."""

from __future__ import annotations

import pytest
import report_fixture
from rich.console import Console

from flagsweep.report import terminal

WRONG = ["-O2", "-DTINY_WRONG"]


def _doc(plan: dict, rounds: int, *, cv: float = 0.004, seed: int = 1,
         factors=None) -> dict:
    """A results document written by writer.write: plan is id -> (flags, true ratio to
    the baseline or None, check status), the first id the baseline; cv 0 gives a
    deterministic metric (a count)."""
    checks = {vid: {"status": check, "detail": "" if check == "ok" else "a number differs"}
              for vid, (_, _, check) in plan.items()}
    return report_fixture.sweep_doc({vid: (flags, ratio, cv) for vid, (flags, ratio, _)
                                     in plan.items()}, rounds=rounds, seed=seed, checks=checks,
                                    factors=factors)


def _terminal(doc: dict, tmp_path) -> str:
    console = Console(record=True, width=400)
    terminal.show(report_fixture.write(tmp_path / "r", doc), console)
    return console.export_text()


def _by_id(doc: dict) -> dict[str, dict]:
    return {v["id"]: v for v in doc["variants"]}


def test_a_faster_program_with_a_wrong_output_is_never_recommended(tmp_path):
    doc = _doc({"gcc-O2": (["-O2"], 1.0, "ok"), "gcc-O2.aa": (["-O2"], 1.0, "ok"),
                "gcc-wrong": (WRONG, 0.80, "differs"), "gcc-O3": (["-O3"], 0.95, "ok")},
               rounds=12)
    v = _by_id(doc)
    assert v["gcc-wrong"]["vs_baseline"]["verdict"] == "faster"       # timed, and shown as such
    assert doc["recommendation"]["flags"] == ["-O3"]
    assert "Faster but not recommended, their output did not pass the check: -O2 -DTINY_WRONG" \
        in doc["recommendation"]["why"]
    assert [e["level"] for e in doc["effects"]] == ["-O3"] and doc["effects"][0]["matters"]
    assert "Left out, their output did not pass the check: gcc-wrong." in \
        doc["effects_design"]["note"]
    text = _terminal(doc, tmp_path)
    assert "recommendation: Use -O3:" in text
    matter = next(line for line in text.splitlines() if line.startswith("flags that matter"))
    assert "-O3" in matter and "TINY_WRONG" not in matter


def test_when_only_a_wrong_program_is_faster_the_baseline_is_kept(tmp_path):
    doc = _doc({"gcc-O2": (["-O2"], 1.0, "ok"), "gcc-wrong": (WRONG, 0.80, "differs"),
                "gcc-O1": (["-O1"], 1.3, "ok")}, rounds=12)
    rec = doc["recommendation"]
    assert rec["flags"] == ["-O2"] and rec["variant"] == "gcc-O2"
    assert rec["why"].endswith("Keep the baseline's flags. Faster but not recommended, their "
                               "output did not pass the check: -O2 -DTINY_WRONG.")
    assert not any(e["matters"] and e["effect_pct"] < 0 for e in doc["effects"])
    assert "recommendation: Keep -O2:" in _terminal(doc, tmp_path)


def test_a_baseline_whose_own_output_is_wrong_is_not_recommended_either(tmp_path):
    """With a fixed sha256 (or a round trip) the baseline itself can fail its check."""
    doc = _doc({"gcc-O2": (["-O2"], 1.0, "differs"), "gcc-O1": (["-O1"], 1.3, "ok")}, rounds=12)
    rec = doc["recommendation"]
    assert rec["flags"] is None and rec["variant"] is None
    assert rec["why"].startswith("No recommendation: the baseline's own output did not pass its "
                                 "check (differs: a number differs)")
    assert doc["effects"] == []
    assert f"recommendation: {rec['why']}" in _terminal(doc, tmp_path)


@pytest.mark.parametrize("cv", [0.0, 0.004], ids=["count", "timed"])
def test_effects_at_three_rounds_say_what_the_table_says(tmp_path, cv):
    """A count (cv 0) gave a zero-width interval and p = 0 beside a table saying inconclusive,
    adjusted p 0.75; a timing gave an asymptotic p of 1e-6. Each row is now its variant's
    comparison, and nothing is called."""
    doc = _doc({"gcc-O2": (["-O2"], 1.0, "ok"), "gcc-O2.aa": (["-O2"], 1.0, "ok"),
                "gcc-O1": (["-O1"], 1.3, "ok"), "gcc-O3": (["-O3"], 0.9, "ok")}, rounds=3, cv=cv)
    v = _by_id(doc)
    for row in doc["effects"]:
        table = v[row["variant"]]["vs_baseline"]
        assert table["ci95"] is None and row["ci95_pct"] is None
        assert (row["p_adjusted"], row["verdict"]) == (table["p_adjusted"], table["verdict"])
        assert row["verdict"] == "inconclusive" and row["matters"] is False
        assert row["effect_pct"] == pytest.approx(100 * (table["ratio"] - 1))
    assert doc["effects_design"]["undecided"] == ("3 round(s) are too few for a 95% interval "
                                                  "(at least 6 are needed)")
    text = _terminal(doc, tmp_path)
    assert "flags that matter (one-factor): none called: 3 round(s) are too few for a 95% " \
           "interval (at least 6 are needed)" in text


def test_effects_with_enough_rounds_carry_the_tables_numbers(tmp_path):
    doc = _doc({"gcc-O2": (["-O2"], 1.0, "ok"), "gcc-O2.aa": (["-O2"], 1.0, "ok"),
                "gcc-O1": (["-O1"], 1.3, "ok"), "gcc-Os": (["-Os"], 1.001, "ok")}, rounds=12)
    v = _by_id(doc)
    rows = {e["level"]: e for e in doc["effects"]}
    for level, vid in (("-O1", "gcc-O1"), ("-Os", "gcc-Os")):
        table = v[vid]["vs_baseline"]
        assert rows[level]["ci95_pct"] == pytest.approx([100 * (x - 1) for x in table["ci95"]])
        assert rows[level]["p_adjusted"] == table["p_adjusted"]
        assert rows[level]["matters"] == (table["verdict"] in ("faster", "slower"))
    assert v["gcc-O1"]["vs_baseline"]["verdict"] == "slower" and rows["-O1"]["matters"]
    line = next(x for x in _terminal(doc, tmp_path).splitlines()
                if x.startswith("flags that matter"))
    o1 = v["gcc-O1"]["vs_baseline"]
    lo, hi = (100 * (x - 1) for x in o1["ci95"])
    p = o1["p_adjusted"]
    assert f"opt = -O1 {100 * (o1['ratio'] - 1):+.1f}% [{lo:+.1f}, {hi:+.1f}] adj. p " \
           f"{'<0.0001' if p < 1e-4 else f'{p:.2g}'}" in line


FACTORIAL = {"gcc-O2": {"opt": "-O2", "march": "x86-64"}, "gcc-O2.aa": {"opt": "-O2", "march": "x86-64"},
             "gcc-O3": {"opt": "-O3", "march": "x86-64"}, "gcc-O2-n": {"opt": "-O2", "march": "native"},
             "gcc-O3-n": {"opt": "-O3", "march": "native"}}


def _factorial_plan(aa: float = 1.0) -> dict:
    return {"gcc-O2": (["-O2"], 1.0, "ok"), "gcc-O2.aa": (["-O2"], aa, "ok"),
            "gcc-O3": (["-O3"], 0.9, "ok"), "gcc-O2-n": (["-O2", "-march=native"], 0.95, "ok"),
            "gcc-O3-n": (["-O3", "-march=native"], 0.855, "ok")}


@pytest.mark.parametrize("cv", [0.0, 0.004], ids=["count", "timed"])
def test_a_factorial_at_three_rounds_calls_no_effect(cv):
    """Effects averaged over other factors are the model's own, but below the rounds a 95%
    interval needs they carry no interval and nothing is called, as in the table."""
    doc = _doc(_factorial_plan(), rounds=3, cv=cv, factors=FACTORIAL)
    assert doc["effects_design"]["design"] == "full-factorial"
    assert {(e["factor"], e["level"]) for e in doc["effects"]} == {("opt", "-O3"),
                                                                   ("march", "native")}
    for e in doc["effects"]:
        assert e["ci95_pct"] is None and e["p_adjusted"] is None and e["matters"] is False
    assert "3 round(s) are too few for a 95% interval (at least 6 are needed), so no effect " \
           "is called." in doc["effects_design"]["note"]


def test_a_factorial_calls_nothing_when_the_aa_arm_moved():
    doc = _doc(_factorial_plan(aa=1.05), rounds=12, factors=FACTORIAL)
    assert doc["aa"]["unstable"]
    assert all(v["vs_baseline"]["verdict"] == "inconclusive" for v in doc["variants"]
               if v["vs_baseline"] and not v["id"].endswith(".aa"))
    assert doc["effects"] and not any(e["matters"] for e in doc["effects"])
    calm = _doc(_factorial_plan(), rounds=12, factors=FACTORIAL)
    assert all(e["matters"] for e in calm["effects"])
