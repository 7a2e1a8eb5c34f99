"""A tune's page and terminal lines from a tune.json model built here: the answer, the proof
and ablation tables' figures, the curve, escaping, an interrupted tune, and `flagsweep report`
drawing the page again from tune.json."""

from __future__ import annotations

import html as html_text
import io
import json
import re

import pytest
import report_fixture as rf
from click.testing import CliRunner
from conftest import raw_controls
from rich.console import Console

from flagsweep import report
from flagsweep.cli import cli
from flagsweep.errors import FlagsweepError
from flagsweep.report import terminal
from flagsweep.report import tune as tune_view
from flagsweep import model
from flagsweep.results import reader

HOSTILE = '-DX="<script>alert(1)</script>"'
ANSWER = ("Use -O2 -funroll-loops -ftree-vectorize -fno-plt: 4.1% [-5.0, -3.2] faster than -O2 "
          "and 2.3% [-3.1, -1.5] faster than -O3 over 5 layouts, after 12 candidates.")
WINNER = ["-funroll-loops", "-ftree-vectorize", "-fno-plt", "-fipa-pta", HOSTILE]


def trial(number, changes, state, batch, ratio=None, ci=None, **more) -> dict:
    return {"number": number, "flags": ["-O2", *changes], "changes": changes, "state": state,
            "batch": batch, "ratio": ratio, "ci95": ci, **more}


def trials() -> list[dict]:
    return [
        trial(0, ["-funroll-loops"], "measured", 0, 0.985, [0.978, 0.992], verdict="faster",
              runs=24, elapsed_s=310.0, run_id="t-b0", variant="c0"),
        trial(1, ["-fno-tree-vectorize"], "measured", 0, 1.021, [1.012, 1.030],
              verdict="slower", runs=8, elapsed_s=300.0),
        trial(2, ["-fipa-pta", "-fno-plt"], "identical", 0, identical_to="base", runs=0),
        trial(3, ["-fschedule-insns"], "failed-build", 0, detail="internal compiler error"),
        trial(4, ["-funroll-loops", "-ftree-vectorize"], "measured", 1, 0.972, [0.964, 0.980],
              verdict="faster", runs=20, elapsed_s=700.0),
        trial(5, ["-ffast-math"], "failed-check", 1, detail="output differs from the base's"),
        trial(6, ["-funroll-loops"], "repeat", 1, identical_to="0", runs=0),
        trial(7, ["-fpeel-loops", "-fno-gcse"], "measured", 1, 1.004, [0.995, 1.013],
              verdict="slower", runs=6, elapsed_s=690.0),
        trial(8, WINNER, "measured", 2, 0.958, [0.950, 0.966], verdict="faster", runs=30,
              elapsed_s=1200.0),
        trial(9, ["-fno-inline", "-fno-plt", "-fipa-cp-clone", "-fsplit-loops"], "measured",
              2, 1.060, [1.040, 1.080], verdict="slower", runs=4, elapsed_s=1100.0),
        trial(10, ["-fgcse-after-reload"], "measured", 3, 0.999, [0.990, 1.008],
              verdict="slower", runs=6, elapsed_s=1650.0),
        trial(11, ["-fversion-loops-for-strides"], "pending", 3),
    ]


def progress() -> list[dict]:
    return [{"batch": 0, "trials": 4, "builds": 4, "runs": 40, "elapsed_s": 320.0, "best": 0,
             "ratio": 0.985, "ci95": [0.978, 0.992]},
            {"batch": 1, "trials": 8, "builds": 7, "runs": 72, "elapsed_s": 710.0, "best": 4,
             "ratio": 0.972, "ci95": [0.964, 0.980]},
            {"batch": 2, "trials": 10, "builds": 9, "runs": 118, "elapsed_s": 1210.0,
             "best": 8, "ratio": 0.958, "ci95": [0.950, 0.966]},
            {"batch": 3, "trials": 12, "builds": 11, "runs": 130, "elapsed_s": 1700.0,
             "best": 8, "ratio": 0.958, "ci95": [0.950, 0.966]}]


def estimate(ratio, lo, hi, verdict) -> dict:
    return {"ratio": ratio, "ci95": [lo, hi], "verdict": verdict, "p_adjusted": 0.001}


def proof() -> dict:
    return {"run_id": "proof-1", "results": "proof/results.json", "layouts": 5,
            "status": "complete", "candidates": [
                {"role": "base", "variant": "base", "flags": ["-O2"], "changes": [],
                 "vs_o3": estimate(1.019, 1.011, 1.027, "slower")},
                {"role": "-O3", "variant": "o3", "flags": ["-O3"], "changes": [],
                 "vs_base": estimate(0.981, 0.973, 0.989, "faster")},
                {"role": "winner", "variant": "t8", "flags": ["-O2", *WINNER],
                 "changes": WINNER, "trial": 8,
                 "vs_base": estimate(0.959, 0.950, 0.968, "faster"),
                 "vs_o3": estimate(0.977, 0.969, 0.985, "faster"),
                 "check": {"status": "equivalent", "detail": "equivalent output (SNR 12.70 dB "
                           "vs the baseline's 12.71 dB (-0.003 dB); bytes differ at byte 188)"}},
                {"role": "minimal", "variant": "min", "flags": ["-O2", "-funroll-loops",
                                                                 "-ftree-vectorize"],
                 "changes": ["-funroll-loops", "-ftree-vectorize"],
                 "vs_base": estimate(0.962, 0.953, 0.971, "faster"),
                 "vs_o3": estimate(0.980, 0.971, 0.989, "faster"),
                 "vs_winner": estimate(1.003, 0.996, 1.010, "equivalent"),
                 "check": {"status": "ok", "detail": "identical bytes to the baseline's"}}]}


def ablation() -> dict:
    def row(flag, ratio, lo, hi, verdict, **more):
        return {"flag": flag, "ratio": ratio, "ci95": [lo, hi] if ratio else None,
                "verdict": verdict, **more}
    return {"run_id": "abl-1", "results": "ablation/results.json", "status": "complete",
            "of": WINNER, "minimal": ["-ftree-vectorize", "-funroll-loops"],
            "rows": [row("-funroll-loops", 1.012, 1.005, 1.019, "slower"),
                     row("-fno-plt", 1.001, 0.996, 1.006, "equivalent"),
                     row("-ftree-vectorize", 1.031, 1.022, 1.040, "slower"),
                     row("-fipa-pta", None, None, None, "identical-code", identical=True,
                         status="identical"),
                     row(HOSTILE, 0.998, 0.992, 1.004, "equivalent")]}


def tune_doc(**over) -> model.Tune:
    """A realistic finished tune of gzip: 12 candidates over 4 batches, a proof of 4 sets, an
    ablation of the winner's 5 flags of which 2 matter."""
    doc = {"schema": model.TUNE_SCHEMA, "tune_id": "tune-gzip-20261126", "target": "gzip",
           "status": "complete", "phase": "done", "sampler": "tpe", "seed": 7,
           "budget_s": 3600, "threshold_pct": 1.0,
           "space": {"source": "gcc-optimizers", "base": "-O2", "compiler": "gcc 14.2.0",
                     "dimensions": 212, "switches": 190,
                     "excluded": ["-fschedule-insns: broke the build (trial 3)",
                                  "-ffast-math: changes the output"],
                     "starts": [["-fipa-cp-clone", "-fpeel-loops", "-fsplit-loops",
                                 "-funswitch-loops"], ["-march=native"]]},
           "machine": {"cpu_model": "AMD EPYC 7B13"},
           "trials": trials(), "progress": progress(),
           "broken": [{"flag": "-fschedule-insns", "kind": "build",
                       "detail": "internal compiler error", "trial": 3},
                      {"flag": "-ffast-math", "kind": "check",
                       "detail": "output differs from the base's", "trial": 5},
                      {"flag": "-fno-tree-ccp -fno-tree-fre", "minimal": False,
                       "flags": ["-fno-tree-ccp", "-fno-tree-fre"], "kind": "build",
                       "detail": "call to '__open_too_many_args'", "trial": 7}],
           "ablation": ablation(), "proof": proof(), "answer": ANSWER,
           "recommended": ["-O2", *WINNER],
           "cost": {"builds": 31, "runs": 412, "wall_s": 3540.0, "search_s": 1700.0,
                    "ablation_s": 640.0, "proof_s": 1200.0}}
    doc.update(over)
    return reader.validate(doc, "tune.json", "tune")


def text_of(html: str) -> str:
    """What a reader sees: the markup and the inline SVGs' drawing left out."""
    html = re.sub(r"<svg.*?</svg>", "", html, flags=re.S)
    html = re.sub(r"<(script|style)>.*?</\1>", "", html, flags=re.S)
    return html_text.unescape(re.sub(r"<[^>]+>", " ", html))


@pytest.fixture
def page(tmp_path):
    rf.write(tmp_path / "proof", rf.results_doc())
    path = report.write_tune(tune_doc(), tmp_path)
    return path, path.read_text()


def test_the_page_leads_with_the_answer_and_a_copyable_set(page):
    path, html = page
    assert path.name == "tune.html"
    answer = html.index('id="answer"')
    assert ANSWER in text_of(html[answer:])
    line = re.search(r'<pre class="copy" id="recommended">(.*?)</pre>', html, re.S).group(1)
    assert line.startswith("-O2 -funroll-loops -ftree-vectorize -fno-plt -fipa-pta ")
    assert answer < html.index('id="proof"') < html.index('id="ablation"') \
        < html.index('id="curve"') < html.index('id="trials"')


def test_the_proof_table_shows_each_set_against_the_base_and_o3(page):
    _, html = page
    table = html[html.index('id="proof-table"'):html.index('id="ablation"')]
    rows = table.split("<tr")[2:]
    assert [re.search(r"<td>(.*?)</td>", r).group(1) for r in rows] == \
        ["base", "-O3", "winner", "minimal"]
    winner = rows[2]
    assert "-4.1%" in winner and "[-5.0, -3.2]" in winner      # vs base
    assert "-2.3%" in winner and "[-3.1, -1.5]" in winner      # vs -O3
    assert 'class="badge faster"' in winner
    # a set whose output is not the base's bytes says so, and why the check passed it
    assert "equivalent: equivalent output (SNR 12.70 dB" in text_of(winner)
    assert "<td>ok</td>" in rows[3]
    assert '<span id="layouts">5</span>' in html
    assert 'href="proof/results.json"' in html
    # the minimal subset against the set it came from, below the table
    note = re.search(r'<p class="note" id="minimal-vs-winner">(.*?)</p>', html, re.S).group(1)
    assert text_of(note).startswith("The minimal subset against the best set found, over the "
                                    "same layouts: +0.3% [-0.4, +1.0], equivalent.")


def test_a_minimal_subset_slower_than_its_set_says_the_other_flags_matter(tmp_path):
    doc = tune_doc()
    minimal = next(c for c in doc.proof.candidates if c.role == "minimal")
    minimal.vs_winner = model.TuneEstimate(ratio=1.076, ci95=[1.06, 1.09], verdict="slower")
    html = report.write_tune(doc, tmp_path).read_text()
    note = re.search(r'<p class="note" id="minimal-vs-winner">(.*?)</p>', html, re.S).group(1)
    assert text_of(note).endswith("+7.6% [+6.0, +9.0], slower: the best set's other flags "
                                  "matter together.")
    # and the ablation's sentence does not say the subset gives the winner's whole effect
    said = tune_view.ablation_sentence(doc.ablation, doc.proof)
    assert said.endswith("But in the proof they were +7.6% [+6.0, +9.0] against the winner, "
                         "slower: its other flags add to its effect together, though no "
                         "removal of them alone was decided slower.")
    assert "add to its effect" not in tune_view.ablation_sentence(tune_doc().ablation,
                                                                  tune_doc().proof)


def test_the_ablation_is_sorted_by_cost_with_the_minimal_subset_marked(page):
    _, html = page
    table = html[html.index('id="ablation-table"'):html.index('id="curve"')]
    rows = table.split("<tr")[2:]
    flags = [re.search(r"<code>(.*?)</code>", r).group(1) for r in rows]
    assert flags[:3] == ["-ftree-vectorize", "-funroll-loops", "-fno-plt"]
    assert flags[-1] == "-fipa-pta" and "identical code" in rows[-1]
    assert [('class="matters"' in r) for r in rows] == [True, True, False, False, False]
    assert "+3.1%" in rows[0] and "[+2.2, +4.0]" in rows[0]
    assert "2 of the winner's 5 flags give its effect" in text_of(html)
    assert "did not confirm" not in text_of(html)      # the proof confirmed this winner


def greedy() -> dict:
    """The winner's two flags that matter added back to -O2, the costliest first: the first
    alone lacks the second's gain, both give the winner's effect."""
    def step(added, flags, ratio, lo, hi, verdict):
        return {"added": added, "flags": flags, "ratio": ratio, "ci95": [lo, hi],
                "verdict": verdict, "p_adjusted": 0.004 if verdict == "slower" else 0.6}
    return {"status": "complete", "run_id": "greedy-1", "results": "greedy/results.json",
            "chosen": 2,
            "steps": [step(["-ftree-vectorize"], ["-ftree-vectorize"], 1.013, 1.006, 1.020,
                           "slower"),
                      step(["-funroll-loops"], ["-ftree-vectorize", "-funroll-loops"], 1.001,
                           0.995, 1.007, "equivalent")]}


def test_the_greedy_subset_is_shown_in_its_order_with_the_step_it_stops_at(tmp_path):
    doc = tune_doc(ablation={**ablation(), "greedy": greedy()})
    html = report.write_tune(doc, tmp_path).read_text()
    table = html[html.index('id="greedy-table"'):html.index('id="curve"')]
    rows = table.split("<tr")[2:]
    assert [re.search(r"<code>(.*?)</code>", r).group(1) for r in rows] == [
        "-ftree-vectorize", "-funroll-loops"]
    assert [('class="matters"' in r) for r in rows] == [False, True]
    assert "+1.3%" in rows[0] and "[+0.6, +2.0]" in rows[0] and ">2<" in rows[1]
    said = ("The winner's effect on the search input needs the first 2 of its 2 steps: 2 "
            "flags.")
    assert said in text_of(html)
    buf = io.StringIO()
    terminal.show_tune(doc, Console(file=buf, width=200, color_system=None))
    assert f"greedy subset: {said}" in buf.getvalue()
    # a step no build or run measured, and a greedy pass that did not fit, say so
    skipped = {"status": "skipped", "why": "the 5 s left of the ablation's time do not hold "
               "one build at 13 s and the 60 s of rounds a sweep is given at least"}
    html = report.write_tune(tune_doc(ablation={**ablation(), "greedy": skipped}),
                             tmp_path).read_text()
    assert ("The greedy subset was not measured: the 5 s left of the ablation's time do not "
            "hold one build at 13 s") in text_of(html)
    assert 'id="greedy-table"' not in html


def test_a_cost_near_no_change_measured_again_over_layouts_shows_what_that_found(tmp_path):
    """-funroll-loops's +1.2% came within layout luck's reach: over 4 layouts it was not decided
    slower, so it is no longer counted; -ftree-vectorize's +3.1% was, and is."""
    a = ablation()
    a["rows"][0]["over_layouts"] = estimate(1.004, 0.991, 1.017, "inconclusive")
    a["rows"][2]["over_layouts"] = estimate(1.029, 1.018, 1.040, "slower")
    a["minimal"] = ["-ftree-vectorize"]
    a["layout_check"] = {"status": "complete", "reach_pct": 5.0, "layouts": 4,
                         "reach_source": "the default: no layout spread measured",
                         "doubtful": ["-funroll-loops", "-ftree-vectorize"],
                         "rows": ["-funroll-loops", "-ftree-vectorize"],
                         "confirmed": ["-ftree-vectorize"], "run_id": "abl-l",
                         "results": "ablation-layouts/results.json"}
    doc = tune_doc(ablation=a)
    html = report.write_tune(doc, tmp_path).read_text()
    table = html[html.index('id="ablation-table"'):html.index('id="curve"')]
    rows = {re.search(r"<code>(.*?)</code>", r).group(1): r for r in table.split("<tr")[2:]}
    assert "over 4 layouts: +0.4% [-0.9, +1.7], inconclusive: not counted" in \
        rows["-funroll-loops"] and 'class="matters"' not in rows["-funroll-loops"]
    assert "over 4 layouts: +2.9% [+1.8, +4.0], slower<" in rows["-ftree-vectorize"]
    said = ("2 cost(s) came within the 5.0% layout luck reaches (the default: no layout "
            "spread measured), so were measured again over 4 layouts: -ftree-vectorize "
            "decided slower again; -funroll-loops not, so not counted.")
    assert said in text_of(html) and "1 of the winner's 5 flags give its effect" in text_of(html)
    buf = io.StringIO()
    terminal.show_tune(doc, Console(file=buf, width=300, color_system=None))
    assert said in buf.getvalue() and "inconclusive: not counted" in buf.getvalue()
    assert "did not fit" not in text_of(html)
    # a third cost within the reach whose check did not fit: counted, and named as unchecked
    a["layout_check"]["doubtful"] = ["-funroll-loops", "-ftree-vectorize", "-fpeel-loops"]
    html = report.write_tune(tune_doc(ablation=a), tmp_path).read_text()
    assert (said + " -fpeel-loops came within it too, but their check did not fit the time "
            "left: counted, though they may be a layout's luck.") in text_of(html)
    # not measured again for want of time: the page says how many costs may be luck
    a["layout_check"] = {"status": "skipped", "reach_pct": 5.0, "layouts": 4,
                         "reach_source": "the default", "why": "no time left",
                         "doubtful": ["-funroll-loops", "-ftree-vectorize"]}
    for r in a["rows"]:
        r.pop("over_layouts", None)
    html = report.write_tune(tune_doc(ablation=a), tmp_path).read_text()
    assert ("2 cost(s) came within the 5.0% layout luck reaches (the default) and were not "
            "measured again over layouts (no time left): they may be a layout's luck.") \
        in text_of(html)
    # a record from before the doubtful rows were kept: said without a count
    del a["layout_check"]["doubtful"]
    html = report.write_tune(tune_doc(ablation=a), tmp_path).read_text()
    assert "Costs decided came within the 5.0% layout luck reaches (the default) and were " \
        "not measured again" in text_of(html)
    # every cost beyond the reach: said once, and nothing measured again
    a["layout_check"] = {"status": "not-needed", "reach_pct": 2.0, "layouts": 4,
                         "why": "every cost decided ends further from no change than the 2.0% "
                                "layout luck reaches (layout spread +-0.7% measured by run r)"}
    html = report.write_tune(tune_doc(ablation=a), tmp_path).read_text()
    assert " Every cost decided ends further from no change than the 2.0%" in text_of(html)
    assert "over 4 layouts" not in text_of(html)


def test_an_ablation_of_a_winner_the_proof_did_not_confirm_says_so(tmp_path):
    # lame, a tune's ablation: -march=native's removal +11.8% [+7.5, +19.2] on the quick input
    # in one layout, yet the winner -4.4% [-9.3, +0.9] against -O2 in the proof over layouts
    prf = proof()
    roles = {c["role"]: c for c in prf["candidates"]}
    roles["winner"]["vs_base"] = estimate(0.956, 0.907, 1.009, "inconclusive")
    # a minimal subset the proof confirmed is the finding the ablation's flags lead to
    confirmed = tune_view.build(tune_doc(proof=prf), tmp_path).ablation_sentence
    assert "2 of the winner's 5 flags" in confirmed and "did not confirm" not in confirmed
    roles["minimal"]["vs_base"] = estimate(0.962, 0.912, 1.015, "inconclusive")
    doc = tune_doc(proof=prf)
    caveat = ("The proof did not confirm the winner's own gain on the full input over its "
              "layouts (-4.4% [-9.3, +0.9] against the base, inconclusive)")
    sentence = text_of(report.write_tune(doc, tmp_path).read_text())
    assert "2 of the winner's 5 flags give its effect on the search input" in sentence
    assert caveat in " ".join(sentence.split())
    buf = io.StringIO()
    terminal.show_tune(doc, Console(file=buf, width=400, color_system=None))
    line = next(x for x in buf.getvalue().splitlines() if x.startswith("ablation: 2 of"))
    assert caveat in line


def test_an_interval_clear_of_the_threshold_shows_the_adjusted_p_that_left_it_undecided(
        tmp_path):
    # gzip, a tune's ablation: +4.5% [+1.6, +8.3] without a group of flags, inconclusive
    # because after Benjamini-Hochberg over the sweep's comparisons its p was 0.053
    abl = ablation()
    abl["rows"].append({"flag": "-fipa-cp-clone -fno-ivopts", "flags": ["-fipa-cp-clone",
                        "-fno-ivopts"], "ratio": 1.0448, "ci95": [1.0156, 1.0834],
                        "verdict": "inconclusive", "p_adjusted": 0.0529,
                        "ci_fcr": [0.9937, 1.1004]})
    doc = tune_doc(ablation=abl)
    html = report.write_tune(doc, tmp_path).read_text()
    table = html[html.index('id="ablation-table"'):html.index('id="curve"')]
    row = next(r for r in table.split("<tr")[2:] if "-fno-ivopts" in r)
    assert "+4.5%" in row and "[+1.6, +8.3]" in row and "adj. p 0.053" in row
    assert 'class="badge inconclusive"' in row
    # the proof's cells carry theirs too, and the rule is written beside the tables
    proof_table = html[html.index('id="proof-table"'):html.index('id="ablation"')]
    assert "adj. p 0.001" in proof_table
    assert "adjusted p is below 0.05" in text_of(html)
    buf = io.StringIO()
    terminal.show_tune(doc, Console(file=buf, width=200, color_system=None))
    line = next(x for x in buf.getvalue().splitlines() if "-fno-ivopts" in x)
    assert "adj. p 0.053" in line


def test_the_curve_is_drawn_and_every_candidate_listed(page):
    _, html = page
    curve = html[html.index('id="curve"'):html.index('id="broken"')]
    assert curve.count("<svg") == 1 and 'aria-label="best-so-far plot"' in curve
    assert curve.count('class="plot"') == 1
    trials = html[html.index('id="trials-table"'):html.index('id="space"')]
    assert len(trials.split("<tr")) - 2 == 12
    for state in ("failed-build", "failed-check", "identical", "repeat", "pending"):
        assert f"<td>{state}</td>" in trials
    assert "(+2 more)" in trials and "identical to #0" in trials
    broken = html[html.index('id="broken"'):html.index('id="trials"')]
    assert "-fschedule-insns" in broken and "-ffast-math" in broken
    assert "<td>build</td>" in broken and "<td>check</td>" in broken
    assert ("build, its 2 flags only together, not reduced to the end: some may not be needed"
            in broken)


def test_space_cost_and_search_are_shown(page):
    _, html = page
    text = text_of(html)
    for shown in ("gcc-optimizers", "gcc 14.2.0", "212 (190 on/off switches)",
                  "2 switches left out", "left out", "412", "59 min", "tpe", "tune-gzip-20261126"):
        assert shown in text, shown
    assert "began with" in text
    assert ("#0: -fipa-cp-clone -fpeel-loops -fsplit-loops \u2026 (+1 more); #1: -march=native"
            in text)


def test_a_hostile_flag_is_text_and_nothing_is_nan_or_none(page):
    _, html = page
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    text = text_of(html)
    assert not re.search(r"\b(nan|None|null|undefined)\b", text)


def test_an_interrupted_tune_says_so_with_the_resume_command(tmp_path):
    doc = tune_doc(status="interrupted", phase="ablation", answer=None, recommended=None,
                   proof={"status": "skipped", "why": "the tune stopped before its proof"},
                   ablation=None)
    html = report.write_tune(doc, tmp_path).read_text()
    state = html[html.index('id="state"'):html.index('id="answer"')]
    assert "interrupted" in state and "ablation phase" in state
    assert "flagsweep tune --resume tune-gzip-20261126" in state
    assert "No answer yet" in html and 'id="recommended"' not in html
    assert "The proof is skipped: the tune stopped before its proof." in text_of(html)
    assert 'id="proof-table"' not in html and "No ablation was recorded" in html
    assert not re.search(r"\b(nan|None|null)\b", text_of(html))


def test_a_complete_tune_has_no_resume_line(page):
    _, html = page
    assert 'id="state"' not in html and "--resume" not in html


def test_the_terminal_ends_with_the_answer():
    buf = io.StringIO()
    terminal.show_tune(tune_doc(), Console(file=buf, width=100, highlight=False))
    lines = buf.getvalue().rstrip("\n").splitlines()
    assert lines[-1] == ANSWER
    text = buf.getvalue()
    assert "the proof" in text and "the ablation" in text
    assert "-4.1% [-5.0, -3.2]" in text and HOSTILE in text
    assert "2 of the winner's 5 flags give its effect" in text


def test_the_terminal_of_an_interrupted_tune_ends_with_what_stands_for_the_answer(capsys):
    terminal.show_tune(tune_doc(status="interrupted", phase="search", answer=None,
                                proof=None, ablation=None))
    err = capsys.readouterr().err.rstrip("\n").splitlines()
    assert err[-1].startswith("No answer yet: the tune was interrupted in its search phase")
    assert any("flagsweep tune --resume tune-gzip-20261126" in line for line in err)


def test_report_draws_a_tune_json_again(tmp_path):
    path = tmp_path / "tune.json"
    path.write_text(json.dumps(tune_doc().dump()))
    result = CliRunner().invoke(cli, ["report", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("tune.html")
    html = (tmp_path / "tune.html").read_text()
    assert "&lt;script&gt;" in html and 'id="proof-table"' in html


@pytest.mark.breaks_contract
def test_report_refuses_a_broken_tune_json_naming_the_key(tmp_path):
    doc = tune_doc().dump()
    doc["trials"][0]["ratio"] = "fast"
    path = tmp_path / "tune.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["report", str(path)])
    assert result.exit_code != 0
    assert "trials[0].ratio" in str(result.exception) + result.output


@pytest.mark.breaks_contract
def test_report_refuses_a_tune_json_with_infinity_or_nested_thousands_deep(tmp_path, main):
    """Before: the tune page's path read the file with Python's json, which takes Infinity
    (drawn as a trial's ratio) and recursed into 200,000 brackets until a RecursionError."""
    doc = tune_doc().dump()
    doc["trials"][0]["ratio"] = float("inf")
    infinite = tmp_path / "inf" / "tune.json"
    infinite.parent.mkdir()
    infinite.write_text(json.dumps(doc))
    deep = tmp_path / "deep" / "tune.json"
    deep.parent.mkdir()
    deep.write_text(json.dumps(tune_doc().dump())[:-1] + ', "x": ' + "[" * 200_000
                    + "]" * 200_000 + "}")
    for path, why in ((infinite, "key 'trials[0].ratio': expected a finite number or null, "
                                 "got Infinity"),
                      (deep, "not a results.json or tune.json (its JSON nests deeper than 64 "
                             "levels)")):
        assert main("report", str(path)) == (2, f"flagsweep: {path}: {why}\n")
        assert not (path.parent / "tune.html").exists()


def test_report_of_a_tune_json_shows_its_escape_sequences_and_obeys_none(tmp_path, main):
    """A tune.json whose flag (in the winner, the proof and the ablation) and answer set the
    window's title and clear the screen. Before: both reached root's terminal raw, in the
    ablation table and the answer line."""
    flag = f"-DX={rf.CLEAR}{rf.TITLE}"
    doc = json.loads(json.dumps(tune_doc().dump()).replace(json.dumps(HOSTILE)[1:-1],
                                                           json.dumps(flag)[1:-1]))
    doc["answer"] += rf.TITLE + rf.CLEAR
    path = tmp_path / "tune.json"
    path.write_text(json.dumps(doc))
    code, err = main("report", str(path))
    assert code == 0, err
    assert raw_controls(err + main.out) == []
    lines = err.splitlines()
    assert [line for line in lines if line.startswith(r"-DX=\x1b[2J\x1b]0;owned ")]
    assert lines[-1] == ANSWER + r"\x1b]0;owned\x1b[2J"
    assert main.out == f"{tmp_path / 'tune.html'}\n"


def test_the_view_takes_no_link_to_a_file_outside_the_folder(tmp_path):
    doc = tune_doc(proof={**proof(), "results": "../elsewhere/results.json"})
    rf.write(tmp_path / "elsewhere", rf.results_doc())
    t = tune_view.build(doc, tmp_path / "tune")
    assert t.proof.href is None and t.proof.results == "../elsewhere/results.json"


def test_a_broken_document_is_refused_by_the_contract():
    with pytest.raises(FlagsweepError, match="tune.json"):
        tune_doc(space={"source": "x"})


def test_a_skipped_proof_and_no_ablation_render(tmp_path):
    nothing = ("Nothing found beats -O2 or -O3 by more than 1% beyond layout luck after 12 "
               "candidates: keep -O2.")
    doc = tune_doc(proof={"status": "skipped", "why": "no set the search measured was faster "
                          "than the base"}, ablation=None, answer=nothing, recommended=["-O2"])
    html = report.write_tune(doc, tmp_path).read_text()
    text = text_of(html)
    assert nothing in text and "The proof is skipped: no set the search measured" in text
    assert 'id="proof-table"' not in html and 'id="ablation-table"' not in html
    assert "No ablation was recorded" in text and 'id="state"' not in html
    assert not re.search(r"\b(nan|None|null)\b", text)
    out = io.StringIO()
    terminal.show_tune(doc, Console(file=out, width=100))
    assert out.getvalue().rstrip("\n").splitlines()[-1] == nothing


def test_the_page_loads_clean_in_a_browser_and_fits_a_phone(browser, tmp_path):
    page = report.write_tune(tune_doc(), tmp_path)
    load = browser.open(page, screenshot=tmp_path / "tune.png", width=390, height=844)
    assert load.console_errors == [] and load.external_requests == []
    assert browser.evaluate("document.querySelectorAll('#curve svg.plot').length") == 1
    assert HOSTILE in browser.evaluate("document.querySelector('#recommended').textContent")
    assert browser.evaluate("document.scripts.length") == 1
    assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_a_tune_whose_proof_failed_says_why_there_is_no_answer():
    doc = tune_doc(status="failed", phase="proof", answer=None, recommended=None,
                   proof={"status": "failed", "why": "the baseline failed its output check"})
    assert tune_view.answer(doc) == ("No answer after 12 candidates (7 measured): the proof "
                                     "failed (the baseline failed its output check).")
    assert tune_view.resume(doc) is None and "failed in its proof phase" in tune_view.state(doc)


def test_the_proof_says_how_it_was_sized_on_the_page_and_in_the_terminal(tmp_path):
    """The plan tune.budget made (its sentence) beside the proof; a proof the budget could not
    hold is "skipped" with that sentence as its why, and the answer says it was not proved."""
    from flagsweep.tune import budget

    plan = budget.proof_plan(["base", "-O3", "winner", "minimal", "runner-up"],
                             budget.Spread(0.011, "measured by run g (4 layouts)"),
                             budget.Pace(20.0, 1.5, 6), 1000.0, 1.0)
    assert plan.status == "cut" and plan.sets == 4
    doc = tune_doc(proof={**proof(), "plan": plan.dump()})
    html = report.write_tune(doc, tmp_path).read_text()
    note = re.search(r'<p class="note" id="proof-plan">(.*?)</p>', html, re.S).group(1)
    assert text_of(note).strip() == f"Sized: {plan.why}."
    buf = io.StringIO()
    terminal.show_tune(doc, Console(file=buf, width=400, highlight=False))
    assert f"proof plan: {plan.why}" in buf.getvalue()
    assert json.loads(json.dumps(doc.dump()))["proof"]["plan"]["layouts"] == plan.layouts
