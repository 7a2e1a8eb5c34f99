"""What a sweep concludes must hold against hostile or thin data: a program whose output is
wrong is never recommended nor a flag that matters, and the "flags that matter" line says what
the variants table says (same p, same verdict, no interval where the table has none)."""

from __future__ import annotations

import json
import math

import pytest
import report_fixture
from rich.console import Console

from flagsweep import report
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
    faster = 100 * (1 - _by_id(doc)["gcc-wrong"]["vs_baseline"]["ratio"])
    assert rec["why"].endswith("Keep the baseline's flags. Faster but not recommended, their "
                               f"output did not pass the check: -O2 -DTINY_WRONG is "
                               f"{faster:.1f}% faster but its output differs: a number differs.")
    assert not any(e["matters"] and e["effect_pct"] < 0 for e in doc["effects"])
    assert "recommendation: Keep -O2:" in _terminal(doc, tmp_path)


# The lame seed-2003 case: strict-float variants faster than a -ffast-math baseline, their MP3s
# other bytes; the quality check calls one as good, two not.
V3, V2, EQ = ["-O3", "-march=x86-64-v3"], ["-O3", "-march=x86-64-v2"], ["-O2", "-march=x86-64-v2"]
SNR_LOW = "SNR 30.02 dB vs the baseline's 38.44 dB, beyond the 0.1 dB tolerance"
SNR_EQ = "equivalent output (SNR 38.42 dB vs the baseline's 38.44 dB; bytes differ at byte 417)"


def _figures(snr_db: float, baseline: bool = False) -> dict:
    """The quality check's figures as check.py writes them."""
    q = {"snr_db": snr_db, "lag_frames": 0, "frames": 1323000, "size_bytes": 481280,
         "snr_tolerance_db": 0.1, "size_rel_tolerance": 0.01,
         "decoder": "{baseline} --quiet --decode --mp3input {product} {output}"}
    return q if baseline else {**q, "baseline_snr_db": 38.44, "baseline_size_bytes": 481280}


def _lame_like(eq_check: str, eq_detail: str = SNR_EQ) -> dict:
    checks = {"base": {"status": "ok", "detail": "reference output (the baseline's): SNR "
                       "38.44 dB", "quality": _figures(38.44, baseline=True)},
              "v3": {"status": "differs", "detail": SNR_LOW, "quality": _figures(30.02)},
              "v2": {"status": "failed", "detail": "the check run failed: exit status 1"},
              "eq": {"status": eq_check, "detail": eq_detail, "quality": _figures(38.42)}}
    return report_fixture.sweep_doc(
        {"base": (["-O3", "-ffast-math"], 1.0, 0.004), "base.aa": (["-O3", "-ffast-math"], 1.0, 0.004),
         "v3": (V3, 0.919, 0.004), "v2": (V2, 0.927, 0.004), "eq": (EQ, 0.954, 0.004)},
        rounds=12, checks=checks)


def _recommendation_line(text: str) -> str:
    """The terminal's recommendation, its wrapped lines joined (the line after it says which
    interval it printed, then why the sweep stopped)."""
    flat = " ".join(text.split())
    start = flat.index("recommendation:")
    ends = [flat.find(mark, start) for mark in (" interval:", " stopped:")]
    return flat[start:min(end for end in ends if end >= 0)]


def test_an_equivalent_output_is_recommended_and_the_faster_ones_left_out_are_named(tmp_path):
    doc = _lame_like("equivalent")
    v = _by_id(doc)
    rec = doc["recommendation"]
    assert rec["flags"] == EQ
    assert [(e["variant"], e["check"], e["why"]) for e in rec["excluded"]] == [
        ("v3", "differs", SNR_LOW), ("v2", "failed", "the check run failed: exit status 1")]
    pct = {vid: f"{100 * (1 - v[vid]['vs_baseline']['ratio']):.1f}%" for vid in ("v3", "v2")}
    line = _recommendation_line(_terminal(doc, tmp_path))
    assert line.startswith("recommendation: Use -O2 -march=x86-64-v2:")
    assert line.endswith(f". -O3 -march=x86-64-v3 is {pct['v3']} faster but its output differs: "
                         f"{SNR_LOW}. Also faster and left out: -O3 -march=x86-64-v2 is "
                         f"{pct['v2']} faster but its output failed its check: the check run "
                         "failed: exit status 1.")
    assert "eq" not in doc["effects_design"]["note"]      # not left out of the effects either
    # The figures are in results.json (the contract validates them) and on the page.
    path = report_fixture.write(tmp_path / "page", doc)
    written = _by_id(json.loads(path.read_text()))
    assert written["eq"]["check"]["quality"]["snr_db"] == 38.42
    html = report.write(path).read_text()
    assert "SNR 38.42 dB (baseline 38.44 dB), 481,280 bytes" in html
    assert "SNR 38.44 dB, 481,280 bytes" in html


def test_the_headline_never_keeps_the_baseline_over_faster_rows_without_saying_why(tmp_path):
    """lame's seed-2003 sweep printed "Keep ...: no variant was significantly faster" above
    three faster rows, all left out for their output: now it names the fastest and why."""
    doc = _lame_like("differs", "SNR 37.90 dB vs the baseline's 38.44 dB, beyond the 0.1 dB "
                                "tolerance")
    assert doc["recommendation"]["flags"] == ["-O3", "-ffast-math"]
    assert len(doc["recommendation"]["excluded"]) == 3
    ratio = _by_id(doc)["v3"]["vs_baseline"]["ratio"]
    line = _recommendation_line(_terminal(doc, tmp_path))
    assert line.startswith("recommendation: Keep -O3 -ffast-math: no variant whose output passed "
                           "its check was significantly faster than it by more than 1%. -O3 "
                           f"-march=x86-64-v3 is {100 * (1 - ratio):.1f}% faster but its output "
                           f"differs: {SNR_LOW}. Also faster and left out: -O3 -march=x86-64-v2")
    assert "-O2 -march=x86-64-v2 is " in line


def test_a_twin_with_other_output_says_the_program_is_not_deterministic(tmp_path):
    doc = report_fixture.sweep_doc(
        {"gcc-O2": (["-O2"], 1.0, 0.004), "gcc-O2.aa": (["-O2"], 1.0, 0.004),
         "gcc-O3": (["-O3"], 0.95, 0.004)}, rounds=12,
        checks={"gcc-O2.aa": {"status": "differs", "detail": "output differs from the "
                              "baseline's at byte 1234 (5000 vs 5000 bytes)"},
                "gcc-O3": {"status": "differs", "detail": "output differs from the baseline's "
                           "at byte 99 (5000 vs 5000 bytes)"}})
    text = _terminal(doc, tmp_path)
    assert ("warning: The program is not deterministic: the A/A twin (the baseline's own binary, "
            "run again) wrote other output (differs: output differs from the baseline's at byte "
            "1234 (5000 vs 5000 bytes)).") in text
    assert "do not compute the same thing" not in text
    assert "Output differs from the baseline's for gcc-O3: they were timed, but the program is " \
           "not deterministic (above), so this may be chance, not the flags." in text


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
    # the interval the row was decided on: the adjusted one, its level before it
    lo, hi = (100 * (x - 1) for x in o1["ci_fcr"])
    level = math.floor(o1["fcr_level"] * 1000 + 1e-9) / 10
    p = o1["p_adjusted"]
    assert f"opt = -O1 {100 * (o1['ratio'] - 1):+.1f}% {level:g}% [{lo:+.1f}, {hi:+.1f}] adj. p " \
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
