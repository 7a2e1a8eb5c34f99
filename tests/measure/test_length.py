"""flagsweep.measure.length: the input size that buys the narrowest interval per minute, chosen
from spreads measured at two sizes (synthetic spreads: nothing is timed)."""

from __future__ import annotations

import math

import pytest

from flagsweep.measure import length
from flagsweep.measure.length import PilotPoint


def spread(size: float, run_s: float, a: float, b: float, overhead_s: float = 0.0,
           runs_per_pair: int = 2) -> PilotPoint:
    """What a pilot would measure if the spread were exactly sd^2 = a^2 + (b/L)^2."""
    return PilotPoint(size, run_s, math.sqrt(a * a + (b / run_s) ** 2),
                  runs_per_pair * (run_s + overhead_s), 10)


def test_the_fit_recovers_both_parts_from_two_lengths():
    a, b = length.fit(spread(3, 0.3, 0.02, 0.004), spread(18, 2.0, 0.02, 0.004))
    assert a == pytest.approx(0.02) and b == pytest.approx(0.004)


def test_a_spread_that_does_not_shrink_with_length_chooses_the_shortest_input():
    # The same 4% at 0.3 s and 2 s: every run carries it whatever its length, so a minute of
    # short runs holds seven times the pairs and the interval is sqrt(7) narrower.
    got = length.choose(spread(3, 0.3, 0.04, 0.0), spread(18, 2.1, 0.04, 0.0), "MB")
    assert got.size == 3
    assert got.fixed_s == 0 and got.relative == pytest.approx(0.04)
    assert got.why.startswith("3 MB, the quick input (runs of about 0.3 s): A/A spread 4% at")
    assert "a part of 4% every run carries whatever its length and no fixed part per run" in got.why
    assert "against +-" in got.why and "with the full input" in got.why


def test_a_fixed_part_per_run_that_dominates_chooses_the_full_input():
    # 10% at 0.3 s, 1.5% at 2 s: nearly all of it is a fixed 30 ms per run.
    got = length.choose(spread(3, 0.3, 0.0, 0.03), spread(18, 2.0, 0.0, 0.03), "MB")
    assert got.size == 18
    assert got.relative == 0 and got.fixed_s == pytest.approx(0.03)
    assert got.why.startswith("18 MB, the full input (runs of about 2 s)")
    assert "nothing every run carries whatever its length and a fixed 30 ms per run" in got.why
    assert got.why.endswith("about +-0.76% per minute of measuring, against +-2% at 3 MB")


def test_between_the_two_the_best_length_is_where_the_parts_are_equal():
    # b / a = 0.8 s: the narrowest per minute near runs of 0.8 s (no overhead), a size between.
    short, long = spread(1, 0.1, 0.02, 0.016), spread(20, 2.0, 0.02, 0.016)
    got = length.choose(short, long, "MB")
    assert 1 < got.size < 20
    assert got.run_s == pytest.approx(0.8, rel=0.15)
    assert ", between the quick and the full input (runs of about 0.8" in got.why
    # narrower per minute than either measured size, by more than the margin that keeps a
    # size already made
    assert all(got.half_per_minute * (1 + length.NEGLIGIBLE) < w
               for w in (_width(short, got), _width(long, got)))


def _width(s: PilotPoint, fitted: length.Choice) -> float:
    sd = math.sqrt(fitted.relative ** 2 + (fitted.fixed_s / s.run_s) ** 2)
    return 1.959963984540054 * sd * math.sqrt(s.pair_s / 60)


def test_a_gain_within_the_margin_keeps_a_size_already_measured():
    # b / a = 1.9 s, just under the full input's 2 s: the best length's gain over the full
    # input is far inside NEGLIGIBLE, so the full input (already generated) stays.
    got = length.choose(spread(3, 0.3, 0.01, 0.019), spread(18, 2.0, 0.01, 0.019))
    assert got.size == 18


def test_runs_under_the_shortest_resolvable_length_are_refused_and_say_why():
    got = length.choose(spread(0.01, 0.002, 0.05, 0.0), spread(0.03, 0.006, 0.05, 0.0), "MB")
    assert got.size is None and got.half_per_minute is None
    assert "6 ms, under the 10 ms a sample resolves" in got.why


def test_the_shortest_size_allowed_is_the_one_whose_runs_reach_the_limit():
    # quick runs 4 ms, under the 10 ms limit; nothing shrinks with length, so the shortest
    # allowed wins: the size that reaches 10 ms on the line through the two points.
    got = length.choose(spread(0.03, 0.004, 0.05, 0.0), spread(0.3, 0.04, 0.05, 0.0), "MB")
    assert got.size == pytest.approx(0.075, rel=0.05) and got.size >= 0.075
    assert got.run_s >= length.SHORTEST_S
    assert got.why.startswith(f"{got.size:g} MB, the shortest whose runs reach 10 ms")
    assert got.why.endswith(f"; 0.03 MB runs under 10 ms, so nothing shorter than {got.size:g} MB")


def test_a_spread_that_grows_with_length_has_no_fixed_part():
    a, b = length.fit(PilotPoint(3, 0.3, 0.02, 0.7, 10), PilotPoint(18, 2.0, 0.05, 4.1, 10))
    assert (a, b) == (0.02, 0.0)


def test_a_spread_that_falls_faster_than_a_fixed_part_explains_has_no_relative_part():
    a, b = length.fit(PilotPoint(3, 0.3, 0.10, 0.7, 10), PilotPoint(18, 2.0, 0.001, 4.1, 10))
    assert a == 0 and b == pytest.approx(0.002)


def test_harness_overhead_per_pair_favours_longer_runs():
    # b / a = 0.2 s: without overhead the best runs are 0.2 s long; with 0.5 s of harness per
    # run a pair of short runs is mostly overhead, and the best length moves to about 0.4 s
    # (the root of a^2 L^3 = b^2 (L + 2 h), h the overhead).
    plain = length.choose(spread(1, 0.1, 0.02, 0.004), spread(20, 2.0, 0.02, 0.004))
    costly = length.choose(spread(1, 0.1, 0.02, 0.004, overhead_s=0.5),
                           spread(20, 2.0, 0.02, 0.004, overhead_s=0.5))
    assert plain.run_s == pytest.approx(0.2, rel=0.1)
    assert costly.run_s == pytest.approx(0.4, rel=0.15)


def test_nothing_usable_is_no_choice():
    bad = length.choose(PilotPoint(3, 0.3, 0.02, 0.0, 0), PilotPoint(18, 2.0, 0.02, 4.1, 10))
    assert bad.size is None and "no usable spread" in bad.why
    assert length.choose(spread(18, 2.0, 0.02, 0), spread(3, 0.3, 0.02, 0)).size is None


def test_the_record_holds_the_figures_and_both_points():
    got = length.choose(spread(3, 0.3, 0.04, 0.0), spread(18, 2.1, 0.04, 0.0), "MB").to_json()
    assert set(got) == {"size", "unit", "run_s", "sd", "half_per_minute", "relative", "fixed_s",
                        "metric", "pilot_s", "why", "measured"}
    assert got["unit"] == "MB"
    assert [m["size"] for m in got["measured"]] == [3, 18]
