"""The one sentence a tune ends with, from the proof's sets: the set to use only when the proof
decided it faster than the base and -O3; -O3 when the best set is -O3's own code; else that
nothing found beats them."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import pytest

from flagsweep.measure.options import MeasureOptions
from flagsweep import model
from flagsweep.model.tune import Remeasurement, TuneRecord
from flagsweep.results import confirmation
from flagsweep.tune import ablation, answer, cost, layouts, proof, ranking, sweeps


def said(proof_, ablation, n):
    """The sentence of a tune of -O2 with a 1% threshold after n candidates."""
    return answer.sentence(proof_, ablation, n, ("-O2",), 1.0)


def _est(ratio, verdict, ci=None):
    return model.TuneEstimate(ratio=ratio, ci95=ci or [ratio - 0.01, ratio + 0.01],
                                 verdict=verdict)


def _set(role, changes, vs_base=None, vs_o3=None, same=None):
    return model.TuneCandidate(role=role, variant=f"v-{role}", flags=["-O2", *changes],
                                  changes=changes, vs_base=vs_base, vs_o3=vs_o3,
                                  identical_to=same)


def _proof(*sets):
    return model.TuneProof(status="complete", layouts=4, candidates=[
        _set("base", [], vs_o3=_est(1.02, "slower")), *sets])


ABLATION = model.TuneAblation(status="complete", of=["-fa", "-fb", "-fc"], minimal=["-fa"])


def test_a_set_faster_than_the_base_and_o3_is_used_its_minimal_subset_first():
    o3 = _set("-O3", ["-O3"], vs_base=_est(0.98, "faster"))
    winner = _set("winner", ["-fa", "-fb", "-fc"], _est(0.90, "faster"), _est(0.92, "faster"))
    minimal = _set("minimal", ["-fa"], _est(0.91, "faster"), _est(0.93, "faster"))
    sentence, use = said(_proof(o3, winner, minimal), ABLATION, 40)
    assert use == ["-O2", "-fa"]
    assert sentence.startswith("Use -O2 -fa (1 of the 3 flags of the best set found): -7.0%")
    assert "against -O3" in sentence and "4 layouts after 40 candidates" in sentence


def test_the_answer_prints_the_interval_the_proofs_verdict_used():
    """The set named is the best of the proof's: its interval is the false-coverage adjusted
    one its "faster" verdicts needed (wider than the 95% one), named so, as a sweep's "Use X"."""
    def decided(ratio, ci95, ci_fcr, level):
        return model.TuneEstimate(ratio=ratio, ci95=ci95, verdict="faster", ci_fcr=ci_fcr,
                                     fcr_level=level)
    o3 = _set("-O3", ["-O3"], vs_base=_est(0.98, "faster"))
    winner = _set("winner", ["-fa"], decided(0.90, [0.89, 0.91], [0.875, 0.925], 0.9875),
                  decided(0.93, [0.92, 0.94], [0.905, 0.955], 0.9875))
    sentence, use = said(_proof(o3, winner), None, 40)
    assert use == ["-O2", "-fa"]
    assert sentence.startswith("Use -O2 -fa: -7.0% (98.7% CI [-9.5, -4.5]) against -O3 and "
                               "-10.0% (98.7% CI [-12.5, -7.5]) against -O2, confirmed over 4 "
                               "layouts after 40 candidates (each interval the one its verdict "
                               "used, adjusted for choosing among the proof's comparisons).")
    # a proof of before kept no adjusted interval: its 95% one, as it was
    assert said(_proof(o3, _set("winner", ["-fa"], _est(0.90, "faster"), _est(0.93, "faster"))),
                None, 40)[0].startswith("Use -O2 -fa: -7.0% [-8.0, -6.0] against -O3 and "
                                        "-10.0% [-11.0, -9.0] against -O2, confirmed over 4 "
                                        "layouts after 40 candidates.")


def test_a_set_whose_output_is_not_the_bases_bytes_is_used_with_the_check_said():
    o3 = _set("-O3", ["-O3"], vs_base=_est(0.98, "faster"))
    winner = _set("winner", ["-funsafe-math-optimizations"], _est(0.92, "faster"),
                  _est(0.93, "faster"))
    winner.check = model.Check(status="equivalent", detail="equivalent output (...)",
                                  quality=model.Quality(snr_db=12.697, baseline_snr_db=12.700,
                                                           snr_tolerance_db=0.1))
    sentence, use = said(_proof(o3, winner), None, 78)
    assert use == ["-O2", "-funsafe-math-optimizations"]
    assert sentence.endswith("after 78 candidates; its output is not -O2's bytes but the output "
                             "check judged it equivalent (SNR 12.70 dB against 12.70 dB, within "
                             "0.1 dB) on this workload's input.")
    winner.check = model.Check(status="ok", detail="identical bytes to the baseline's")
    assert said(_proof(o3, winner), None, 78)[0].endswith("after 78 candidates.")


def test_the_best_set_with_o3s_own_code_says_use_o3_and_names_the_flags():
    o3 = _set("-O3", ["-O3"], vs_base=_est(0.23, "faster"))
    winner = _set("winner", ["-fa", "-fb", "-fc"], _est(0.23, "faster"), same="v--O3")
    minimal = _set("minimal", ["-fa"], _est(0.23, "faster"), same="v--O3")
    sentence, use = said(_proof(o3, winner, minimal), ABLATION, 54)
    assert use == ["-O3"]
    assert sentence.startswith("Use -O3: the best set found is -O3's own code (-fa on -O2")


def test_nothing_beyond_the_threshold_keeps_o3_or_the_base_with_the_bound():
    o3 = _set("-O3", ["-O3"], vs_base=_est(0.97, "faster"))
    close = _set("winner", ["-fa"], _est(0.965, "faster"),
                 _est(0.995, "equivalent", [0.991, 0.999]))
    sentence, use = said(_proof(o3, close), None, 24)
    assert use == ["-O3"] and sentence.startswith("Nothing found beats -O3 by more than 1%")
    assert "-0.5% [-0.9, -0.1] against -O3" in sentence
    flat = _set("-O3", ["-O3"], vs_base=_est(1.0, "inconclusive"))
    sentence, use = said(_proof(flat, close), None, 24)
    assert use == ["-O2"] and "keep -O2" in sentence


def test_an_interval_too_wide_to_bound_the_gain_is_said_as_such():
    """The claim "nothing beats it by more than T%" needs the interval to rule that out."""
    o3 = _set("-O3", ["-O3"], vs_base=_est(0.97, "faster"))
    wide = _set("winner", ["-fa"], _est(0.965, "faster"), _est(0.987, "inconclusive",
                                                               [0.960, 1.014]))
    sentence, use = said(_proof(o3, wide), None, 66)
    assert use == ["-O3"]
    assert sentence.startswith("Nothing found was shown to beat -O3 after 66 candidates, but "
                               "the proof cannot rule out a gain of up to 4.0%")
    assert "-1.3% [-4.0, +1.4] against -O3" in sentence and "keep -O3" in sentence
    # no set of the search in the proof: -O3's own interval is the bound
    noisy = _set("-O3", ["-O3"], vs_base=_est(1.001, "inconclusive", [0.891, 1.125]))
    sentence, use = said(_proof(noisy), None, 30)
    assert use == ["-O2"] and "a gain of up to 10.9% (-O3: +0.1% [-10.9, +12.5] against -O2)" \
        in sentence


def test_a_call_the_aa_gate_overruled_is_said_as_overruled_with_its_remedy():
    """flac, seed 3: the A/A arm came out 5.4% slower, so the proof's sweep overruled every
    call. The sentence says so, not that an adjusted interval reaches inside the threshold
    (it did not), and asks for a quieter machine, not more layouts."""
    why = ("inconclusive, not faster: the machine was unstable during this sweep: the A/A arm "
           "(the baseline's code in other layouts) came out slower by 5.4% (...)")
    o3 = _set("-O3", ["-O3"], vs_base=model.TuneEstimate(
        ratio=0.830, ci95=[0.772, 0.893], verdict="inconclusive", ci_fcr=[0.772, 0.893],
        fcr_level=0.95, why=why))
    best = _set("winner", ["-fa"], model.TuneEstimate(
        ratio=0.880, ci95=[0.834, 0.929], verdict="inconclusive", ci_fcr=[0.834, 0.929],
        fcr_level=0.95, why=why), _est(1.077, "inconclusive", [1.017, 1.141]))
    sentence, use = said(_proof(o3, best), None, 66)
    assert use == ["-O2"] and "reaches inside" not in sentence
    assert ("-O3 measured -17.0% [-22.8, -10.7] against -O2 but was not decided over 4 layouts "
            "(its faster call was overruled: the A/A arm moved by itself, so the machine was "
            "unstable): a quieter machine would decide it") in sentence
    assert ("the best found: -12.0% [-16.6, -7.1] against -O2, whose faster call was "
            "overruled: the A/A arm moved by itself") in sentence
    # an adjusted interval wholly beyond the threshold is no reason given for a non-verdict
    o3.vs_base.why = "inconclusive: ..."
    assert "(its " not in said(_proof(o3, best), None, 66)[0].split("-O3 measured")[1]


def test_the_proofs_calls_against_o3_are_gated_as_its_sweep_gated_those_against_the_base():
    from flagsweep.stats.comparison import RatioEstimate

    def found():
        return {"w": RatioEstimate(1.077, (1.017, 1.141), (1.02, 1.13), 0.01, 24,
                                   verdict="slower", why="slower: ..."),
                "r": RatioEstimate(1.002, (0.999, 1.005), (0.999, 1.004), 0.5, 24,
                                   verdict="equivalent", why="equivalent: ...")}

    def doc(**aa):
        return SimpleNamespace(threshold_pct=1.0, aa=model.AA.model_validate(
            {"variant": "gcc-O2.aa", "is": "the baseline's code in other layouts", **aa}))

    unstable = found()        # the twin was called slower: every call is overruled
    proof._gated_as_the_sweep(unstable, doc(verdict="slower", ratio=1.054, unstable=True))
    assert {c.verdict for c in unstable.values()} == {"inconclusive"}
    assert "A/A arm (the baseline's code in other layouts) came out slower by 5.4%" \
        in unstable["w"].why
    wide = found()            # the twin moved 8%: a call whose interval reaches into it falls
    proof._gated_as_the_sweep(wide, doc(verdict="inconclusive", ratio=1.08, bound_pct=8.0))
    assert wide["w"].verdict == "inconclusive" and wide["r"].verdict == "equivalent"
    quiet = found()           # within the threshold: the calls stand
    proof._gated_as_the_sweep(quiet, doc(verdict="inconclusive", ratio=1.005, bound_pct=0.5))
    assert quiet["w"].verdict == "slower"


def test_no_finished_proof_recommends_nothing():
    failed = model.TuneProof(status="failed", why="it broke")
    assert said(failed, None, 3) == (None, None)
    assert said(None, None, 3) == (None, None)


class Recorded(SimpleNamespace):
    """A tune's record alone (none of its identity: model_construct): what `count` and the
    budget read and keep."""
    def save(self):
        pass

    def elapsed(self):
        return self.clock


def test_a_step_done_again_on_resume_is_counted_once():
    t = Recorded(state=TuneRecord.model_construct())
    cost.count(t, "batch 0", builds=6, build_s=30.0)
    cost.count(t, "run-1", runs=40)
    cost.count(t, "run-1", runs=52, builds=3)      # the sweep resumed and finished
    assert cost.spent(t, "runs") == 52 and cost.spent(t, "builds") == 9
    assert cost.build_pace(t) == 5.0               # only the timed builds set the pace
    cost.count(t, "batch 1", builds=0, build_s=4.0)  # all from the build cache: no pace
    assert cost.build_pace(t) == 5.0


def test_a_phase_sweep_gets_what_is_left_of_the_phase_less_its_builds():
    t = Recorded(state=TuneRecord.model_construct(), clock=2200.0,
                 opts=SimpleNamespace(budget_s=3600.0))
    assert sweeps._rounds_budget(t, "ablation", 4) == 2700 - 2200   # no build timed yet
    cost.count(t, "batch 0", builds=10, build_s=100.0)
    assert sweeps._rounds_budget(t, "ablation", 4) == 2700 - 2200 - 40
    t.clock = 2690.0                                # the search ran over: the least is kept
    assert sweeps._rounds_budget(t, "ablation", 4) == cost.MIN_ROUNDS_S
    # the proof's builds (relinks, cached sets) are not estimated: its rounds end at the
    # tune's end on the wall clock, from this session's clock
    assert sweeps._rounds_budget(t, "proof", 20) == 3600 - 2690
    assert 3600 - 2690 - 5 < sweeps._until(t, "proof") - time.time() <= 3600 - 2690
    assert sweeps._until(t, "ablation") is None


class Study(SimpleNamespace):
    def get_trials(self, deepcopy=False):
        return self.told


def _told(number, batch, ratio, ci):
    return SimpleNamespace(number=number, user_attrs={
        "state": "measured", "flags": ["-O2", f"-f{number}"], "batch": batch, "ratio": ratio,
        "ci95": ci})


def test_the_best_so_far_is_the_mean_of_its_estimates_as_they_came():
    """A set lucky in its first batch and slower when measured again as the next batch's
    baseline loses its place, in the ranking and on the curve, from that batch on."""
    again = {"0": [Remeasurement(batch=1, ratio=1.02, ci95=[0.97, 1.07])]}
    t = Recorded(state=TuneRecord.model_construct(again=again),
                 study=Study(told=[_told(0, 0, 0.90, [0.85, 0.95]),
                                   _told(1, 1, 0.95, [0.90, 1.00])]))
    assert [n for n, _, _ in ranking.ranked(t, upto=0)] == [0]
    first = ranking.estimated(t, 0)[0]
    assert first[2] == 0.90 and first[3] == [0.85, 0.95]
    (n, _, ratio, ci), _ = ranking.estimated(t, 1)
    assert n == 1 and ratio == 0.95
    lucky = ranking.estimated(t, None)[1]
    assert lucky[0] == 0 and abs(lucky[2] - (0.90 * 1.02) ** 0.5) < 1e-12
    # the mean's interval is narrower than either estimate's on the log scale
    assert lucky[3][0] < lucky[2] < lucky[3][1]
    assert math.log(lucky[3][1] / lucky[3][0]) < math.log(0.95 / 0.85)
    # an older record's bare ratio still counts, without an interval
    t.state.again = {"0": [1.02]}
    assert ranking.estimated(t, None)[1][3] is None


def test_groups_split_the_flags_in_order_near_evenly():
    flags = tuple(f"-f{i}" for i in range(10))
    got = proof.groups(flags, 4)
    assert [len(g) for g in got] == [3, 3, 2, 2] and sum(got, ()) == flags
    assert proof.groups(flags[:2], 5) == [("-f0",), ("-f1",)]


def test_leave_one_out_when_its_builds_fit_else_about_sqrt_n_groups():
    t = Recorded(state=TuneRecord.model_construct(), clock=2160.0,
                 opts=SimpleNamespace(budget_s=3600.0))
    changes = tuple(f"-f{i}" for i in range(68))
    assert ablation._ablation_plan(t, changes).method == "leave-one-out"    # no pace yet
    cost.count(t, "batch 0", builds=6, build_s=6.0)                       # 1 s a build
    assert ablation._ablation_plan(t, changes).method == "leave-one-out"
    cost.count(t, "batch 0", builds=6, build_s=390.0)                     # 65 s a build
    plan = ablation._ablation_plan(t, changes)
    assert plan.method == "groups" and len(plan.groups) == 5        # (540-60)/65 - 2
    assert sum(plan.groups, []) == list(changes) and "74 min" in plan.why
    cost.count(t, "batch 0", builds=6, build_s=60.0)                      # 10 s a build
    assert len(ablation._ablation_plan(t, changes).groups) == 9             # ceil(sqrt(68))
    # duo in a 3-minute tune: 27 s for the ablation, less than a sweep's least rounds, but
    # its 25 builds take 8 s: a second sweep for groups would cost more than they save
    t = Recorded(state=TuneRecord.model_construct(), clock=153.0,
                 opts=SimpleNamespace(budget_s=180.0))
    cost.count(t, "batch 0", builds=10, build_s=3.0)                      # 0.3 s a build
    assert ablation._ablation_plan(t, changes[:25]).method == "leave-one-out"
    more = tuple(f"-f{i}" for i in range(201))                              # 60.3 s of builds
    assert ablation._ablation_plan(t, more).method == "groups"


def test_an_o3_that_looked_faster_but_was_not_decided_is_said_so():
    """flac's proof beside other work: -O3 -28% against -O2 but inconclusive over 4 layouts,
    every set of the search slower than -O3. Keeping -O2 is safe; the sentence says why."""
    o3 = _set("-O3", ["-O3"], vs_base=_est(0.718, "inconclusive", [0.534, 0.966]))
    slower = _set("minimal", ["-fa"], _est(0.746, "inconclusive", [0.554, 1.004]),
                  _est(1.039, "slower", [1.019, 1.059]))
    sentence, use = said(_proof(o3, slower), None, 48)
    assert use == ["-O2"]
    assert sentence.startswith("Nothing found was shown to beat -O2 or -O3 after 48 "
                               "candidates, but the proof cannot rule out a gain of up to 46.6% "
                               "(the best found: -25.4% [-44.6, +0.4] against -O2; +3.9% "
                               "[+1.9, +5.9] against -O3): keep -O2; -O3 measured -28.2% "
                               "[-46.6, -3.4] against -O2 but was not decided over 4 layouts")


def test_keeping_the_base_over_o3_is_bounded_against_both():
    """gzip's random arm, seed 3: the best set equal to -O3 within its interval, both reaching
    below -O2 by more than 1%. "Nothing beats -O2 or -O3 by more than 1%" would claim a bound
    against -O2 that only the interval against -O3 gave."""
    o3 = _set("-O3", ["-O3"], vs_base=_est(0.995, "inconclusive", [0.975, 1.015]))
    best = _set("winner", ["-fa"], _est(0.994, "inconclusive", [0.972, 1.017]),
                _est(0.999, "equivalent", [0.992, 1.006]))
    sentence, use = said(_proof(o3, best), None, 54)
    assert use == ["-O2"]
    assert sentence.startswith("Nothing found was shown to beat -O2 or -O3 after 54 candidates, "
                               "but the proof cannot rule out a gain of up to 2.8% (the best "
                               "found: -0.6% [-2.8, +1.7] against -O2; -0.1% [-0.8, +0.6] "
                               "against -O3; -O3: -0.5% [-2.5, +1.5] against -O2): keep -O2")
    # the proof's intervals are over layouts: more layouts, not more rounds, would narrow them
    assert sentence.endswith("keep -O2, or prove it over more layouts than 4 (--layouts) on a "
                             "quieter machine.")
    # -O3's own interval binds when it reaches furthest
    wide = _set("-O3", ["-O3"], vs_base=_est(0.995, "inconclusive", [0.950, 1.040]))
    assert "a gain of up to 5.0%" in said(_proof(wide, best), None, 54)[0]
    # all three inside the threshold: the bound is claimed, against both
    tight = _est(0.999, "equivalent", [0.995, 1.003])
    o3 = _set("-O3", ["-O3"], vs_base=tight)
    best = _set("winner", ["-fa"], tight, tight)
    sentence, use = said(_proof(o3, best), None, 54)
    assert use == ["-O2"] and sentence.startswith("Nothing found beats -O2 or -O3 by more than "
                                                  "1% beyond layout luck after 54 candidates")


def test_an_interval_beyond_the_threshold_but_not_decided_says_what_it_was_judged_by():
    """lame's random search, seed 1: its runner-up -2.1% [-2.9, -1.4] against -O2, not
    decided because its interval adjusted for the proof's comparisons reached inside 1%. The
    sentence showed the 95% interval alone, which reads as beyond the threshold."""
    o3 = _set("-O3", ["-O3"], vs_base=_est(0.987, "inconclusive", [0.979, 0.995]))
    best = _set("runner-up", ["-fa"], model.TuneEstimate(
        ratio=0.979, ci95=[0.971, 0.986], verdict="inconclusive", ci_fcr=[0.966, 0.992],
        fcr_level=0.9917), _est(0.992, "inconclusive", [0.988, 0.996]))
    sentence, use = said(_proof(o3, best), None, 66)
    assert use == ["-O2"]
    assert ("(the best found: -2.1% [-2.9, -1.4] against -O2, whose 99.1% interval for this "
            "many comparisons (false-coverage adjusted), [-3.4, -0.8], reaches inside 1%; "
            "-0.8% [-1.2, -0.4] against -O3)") in sentence
    # -O3's own, beyond the threshold and undecided, says it the same way
    o3.vs_base = model.TuneEstimate(ratio=0.95, ci95=[0.93, 0.97], verdict="inconclusive",
                                       ci_fcr=[0.90, 0.995], fcr_level=0.99)
    assert ("-O3 measured -5.0% [-7.0, -3.0] against -O2 but was not decided over 4 layouts "
            "(its 99% interval for this many comparisons (false-coverage adjusted), [-10.0, "
            "-0.5], reaches inside 1%): more layouts") in said(_proof(o3, best), None, 66)[0]
    # a decided interval, or one reaching inside the threshold, needs no such words
    best.vs_base.ci95 = [0.96, 0.995]
    assert "false-coverage" not in said(_proof(_set("-O3", ["-O3"], vs_base=_est(
        0.987, "inconclusive", [0.979, 0.995])), best), None, 66)[0]


def test_the_whole_set_is_used_when_its_minimal_subset_is_decided_slower_than_it():
    """lame seed 2: the winner -12.9% against -O3, its 16-flag minimal subset -6.3%. The flags
    whose removal alone was not decided slower were worth 7.6% together: the subset is not
    the answer, and the sentence says what it gives alone."""
    o3 = _set("-O3", ["-O3"], vs_base=_est(0.986, "inconclusive"))
    winner = _set("winner", ["-fa", "-fb", "-fc"], _est(0.859, "faster"), _est(0.871, "faster"))
    minimal = _set("minimal", ["-fa"], _est(0.925, "faster"), _est(0.937, "faster"))
    minimal.vs_winner = _est(1.076, "slower", [1.06, 1.09])
    sentence, use = said(_proof(o3, winner, minimal), ABLATION, 84)
    assert use == ["-O2", "-fa", "-fb", "-fc"]
    assert sentence.startswith("Use -O2 -fa -fb -fc: -12.9% [-13.9, -11.9] against -O3")
    assert sentence.endswith("after 84 candidates; -fa alone, whose removal its ablation "
                             "decided slower, gives less, +7.6% [+6.0, +9.0] against the best "
                             "set found: its other flags matter together.")
    two = model.TuneAblation(status="complete", of=["-fa", "-fb", "-fc"],
                                minimal=["-fa", "-fb"])
    assert "; the 2 flags whose removal its ablation decided slower give less, +7.6%" \
        in said(_proof(o3, winner, minimal), two, 84)[0]
    # not decided slower (the rest within the threshold, or undecided): the subset, as before
    for verdict in ("equivalent", "inconclusive"):
        minimal.vs_winner = _est(1.004, verdict)
        sentence, use = said(_proof(o3, winner, minimal), ABLATION, 84)
        assert use == ["-O2", "-fa"] and "other flags" not in sentence
    # a greedy subset chosen on the search input, slower in the proof, is named as such
    two.greedy = model.TuneGreedy(status="complete", chosen=2)
    minimal.vs_winner = _est(1.076, "slower", [1.06, 1.09])
    assert "; the 2 flags of its greedy minimal subset give less, +7.6%" \
        in said(_proof(o3, winner, minimal), two, 84)[0]


def _row(flags, ratio, verdict, status="measured"):
    return model.TuneAblationRow(flag=" ".join(flags), flags=flags, ratio=ratio,
                                    verdict=verdict, status=status)


def test_groups_decided_to_matter_are_taken_apart_first_while_their_builds_fit():
    """lame seed 2: 9 groups of 73 flags, 2 decided slower and 7 undecided, 228 s left at 12 s
    a build: all 73 never fit, so none was taken apart. The decided groups go first, the
    costliest first, whole groups while they fit; a group decided harmless never."""
    rows = [_row(["-fa", "-fb", "-fc"], 1.01, "inconclusive"),
            _row(["-fd", "-fe"], 1.07, "slower"),
            _row(["-ff", "-fg", "-fh"], 1.25, "slower"),
            _row(["-fi", "-fj"], 1.0, "equivalent"),
            _row(["-fk", "-fl"], 1.02, "inconclusive"),
            _row(["-fm"], 1.3, "slower")]
    assert proof.to_split(rows, 100) == ["-ff", "-fg", "-fh", "-fd", "-fe", "-fk", "-fl",
                                         "-fa", "-fb", "-fc"]
    assert proof.to_split(rows, 5) == ["-ff", "-fg", "-fh", "-fd", "-fe"]
    # a group too large for what is left is passed over for a smaller one after it
    assert proof.to_split(rows, 4) == ["-ff", "-fg", "-fh"]
    assert proof.to_split(rows, 2) == ["-fd", "-fe"]
    assert proof.to_split(rows, 1) == []


def test_greedy_steps_add_back_what_matters_costliest_first_in_the_winners_order():
    rows = [_row(["-fa"], 1.02, "inconclusive"), _row(["-fb"], 1.0, "identical", "identical"),
            _row(["-fc", "-fd"], 1.05, "slower"), _row(["-fe"], 1.2, "slower"),
            _row(["-ff"], None, None, "failed-check")]
    units = proof.greedy_units(rows)
    assert units == [("-fe",), ("-fc", "-fd"), ("-fa",), ("-ff",)]
    winner = ("-O2", "-fa", "-fb", "-fc", "-fd", "-fe", "-ff", "-march=x")
    assert proof.greedy_sets(winner, 1, units) == [
        ("-O2", "-fe"), ("-O2", "-fc", "-fd", "-fe"), ("-O2", "-fa", "-fc", "-fd", "-fe"),
        ("-O2", "-fa", "-fc", "-fd", "-fe", "-ff")]


def test_a_cost_within_layout_luck_counts_only_once_decided_again_over_layouts():
    """duo seed 4 of the known-answer bench: a decoy's removal +8.8% [+2.7, +17.3] in one
    layout, within the 5% layout luck reaches; the planted switches' +101% and +189% far
    beyond it. Over layouts the decoy was +0.6% [-0.8, +2.0]: not counted, not added back."""
    def row(flag, ratio, lo, hi, verdict="slower"):
        return model.TuneAblationRow(flag=flag, flags=[flag], ratio=ratio, ci95=[lo, hi],
                                        verdict=verdict)
    clone, strides = row("-fipa-cp-clone", 2.009, 1.912, 2.090), \
        row("-fversion-loops-for-strides", 2.892, 2.766, 3.008)
    decoy = row("-fno-sched-last-insn-heuristic", 1.088, 1.027, 1.173)
    undecided = row("-fno-shrink-wrap", 1.067, 0.998, 1.134, "inconclusive")
    rows = [clone, strides, decoy, undecided]
    assert proof.to_check(rows, 5.0) == [decoy]
    assert proof.to_check(rows, 2.5) == []          # a measured reach nearer to no change
    assert confirmation.within_reach(None, 5.0)     # no interval: nothing says it is beyond
    assert proof.minimal(rows) == ["-fversion-loops-for-strides", "-fipa-cp-clone",
                                   "-fno-sched-last-insn-heuristic"]
    for verdict in ("inconclusive", "equivalent"):
        decoy.over_layouts = model.TuneEstimate(ratio=1.006, ci95=[0.992, 1.020],
                                                   verdict=verdict)
        assert not decoy.matters()
        assert proof.minimal(rows) == ["-fversion-loops-for-strides", "-fipa-cp-clone"]
        # its one-layout cost was all that said it might matter: no greedy step adds it back
        assert proof.greedy_units(rows) == [("-fversion-loops-for-strides",),
                                            ("-fipa-cp-clone",), ("-fno-shrink-wrap",)]
    decoy.over_layouts = model.TuneEstimate(ratio=1.05, ci95=[1.02, 1.08], verdict="slower")
    assert decoy.matters() and "-fno-sched-last-insn-heuristic" in proof.minimal(rows)
    # a row the check could not measure is not confirmed
    decoy.over_layouts = model.TuneEstimate(why="not measured over layouts")
    assert not decoy.matters()


def test_the_layout_check_takes_the_most_doubtful_rows_that_fit_or_says_why_not(monkeypatch):
    """A 3-minute tune: its ablation's time spent (-2 s), a fifth of the proof's 45 s left
    (7 s in all), 4 ms a run. At 0.4 s a build both doubtful rows fit; at 0.9 s only one (its
    two sets compiled, 10 links at 0.4 of a build); lame's 13 s a build fits none, and
    the plan says what one would take."""
    def row(flag, lo, hi):
        return model.TuneAblationRow(flag=flag, flags=[flag], ratio=(lo + hi) / 2,
                                        ci95=[lo, hi], verdict="slower")
    rows = [row("-fa", 1.03, 1.07), row("-fb", 1.01, 1.05), row("-fc", 1.8, 2.0)]
    tu = SimpleNamespace(opts=SimpleNamespace(layouts=4, budget_s=180.0),
                         setting=SimpleNamespace(store=None, target=SimpleNamespace(name="duo"),
                                                 fleet=None, measure=MeasureOptions()))
    monkeypatch.setattr(layouts.reader, "load", lambda path: SimpleNamespace(machine=None))
    monkeypatch.setattr(layouts.confirmation, "measured_reach", lambda *a: None)
    monkeypatch.setattr(cost, "phase_left", lambda t, phase: -2.0)
    monkeypatch.setattr(layouts, "_run_pace", lambda t, path: 0.004)
    monkeypatch.setattr(cost, "build_pace", lambda t: 0.4)
    plan = layouts._layout_plan(tu, rows, None)
    # -fb's interval is nearest to no change: the most doubtful, taken first; -fc is beyond
    # the reach
    assert plan.status == "running" and plan.rows == ["-fb", "-fa"]
    assert plan.doubtful == ["-fb", "-fa"]
    assert plan.reach_pct == 5.0 and "no layout spread measured" in plan.reach_source
    monkeypatch.setattr(cost, "build_pace", lambda t: 0.9)
    plan = layouts._layout_plan(tu, rows, None)
    assert plan.rows == ["-fb"] and plan.doubtful == ["-fb", "-fa"]
    # its rounds get what is left after the builds
    assert plan.rounds_s == pytest.approx(7.0 - (2 * 0.9 + 10 * 0.36))
    monkeypatch.setattr(cost, "build_pace", lambda t: 13.0)
    plan = layouts._layout_plan(tu, rows, None)
    assert plan.status == "skipped" and "rows" not in plan.dump()
    assert plan.doubtful == ["-fb", "-fa"]
    assert plan.why.startswith("one row's check, 12 binaries (4 layouts each of the set "
                                  "without it, the best set and its A/A twin)")
    assert "about 78 s, more than the 7 s left" in plan.why
    # a measured layout spread whose reach is nearer to no change than every cost: not needed
    monkeypatch.setattr(layouts.confirmation, "measured_reach", lambda *a: (0.5, "run r"))
    plan = layouts._layout_plan(tu, rows, None)
    assert plan.status == "not-needed" and "0.5% layout luck reaches (run r)" in plan.why
    # a fleet sweep cannot build layouts
    monkeypatch.setattr(layouts.confirmation, "measured_reach", lambda *a: None)
    tu.setting.fleet = object()
    assert layouts._layout_plan(tu, rows, None).why == "a fleet sweep cannot build layouts"


def _step(ratio, verdict, status="measured"):
    return model.TuneGreedyStep(added=["-fx"], ratio=ratio, verdict=verdict, status=status)


def test_the_greedy_subset_stops_at_the_first_step_that_gives_the_winners_effect():
    slower, undecided = _step(1.08, "slower"), _step(1.01, "inconclusive")
    same, equal = _step(1.0, "identical", "identical"), _step(1.002, "equivalent")
    # two rows decided to matter: a step short of them must be decided as fast
    assert proof.greedy_chosen([undecided, undecided, slower], 2) == 2
    assert proof.greedy_chosen([equal, undecided], 2) == 1
    assert proof.greedy_chosen([same, undecided], 2) == 1
    # from there on, not decided slower is enough; slower goes on to the next step
    assert proof.greedy_chosen([slower, slower, undecided], 2) == 3
    assert proof.greedy_chosen([slower, slower, slower], 2) is None
    # a step that was not measured (its build or check failed) is passed over
    assert proof.greedy_chosen([slower, _step(None, None, "failed-check"), equal], 2) == 3
