"""bench/duet.py's pure parts: the seeded design (pairs, sides, CPUs), taking a pair through a
stand-in launcher, and the figures it prints from synthetic pairs. Nothing here is timed."""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from flagsweep.host.executor import Execution

BENCH = Path(__file__).resolve().parents[2] / "bench" / "duet.py"


@pytest.fixture(scope="module")
def duet():
    spec = importlib.util.spec_from_file_location("duet_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_every_cell_has_its_pairs_with_balanced_sides(duet):
    todo = duet.tasks(6, seed=3)
    assert len(todo) == 6 * len(duet.COMPARISONS) * len(duet.SCHEDULES)
    for label, _ in duet.COMPARISONS:
        for schedule in duet.SCHEDULES:
            cell = [t for t in todo if t.comparison == label and t.schedule == schedule]
            assert sorted(t.index for t in cell) == list(range(6))
            assert sum(t.side for t in cell) == 3          # half each way


def test_the_order_is_seeded_and_mixes_the_schedules(duet):
    assert duet.tasks(6, seed=3) == duet.tasks(6, seed=3)
    assert duet.tasks(6, seed=3) != duet.tasks(6, seed=4)
    first_half = duet.tasks(6, seed=3)[:18]
    assert {t.schedule for t in first_half} == {"serial", "duet"}
    assert {t.schedule for t in duet.tasks(4, seed=1, schedules=("serial",))} == {"serial"}


def test_serial_pairs_share_one_cpu_and_duet_sides_swap_cpus(duet):
    serial = duet.Task("A/A", "serial", 0, 1)
    assert duet.placement((0, 1), serial) == (1, 1)
    assert duet.placement((0, 1), duet.Task("-O0", "duet", 0, 0)) == (0, 1)
    assert duet.placement((0, 1), duet.Task("-O0", "duet", 1, 1)) == (1, 0)


def _pair(duet, log_ratio: float, *, schedule="serial", comparison="A/A", side=0, size="quick",
          base=1.0, elapsed=2.0, size_value=3.0, **kw):
    v = base * math.exp(log_ratio)
    return duet.Pair("gzip", size, size_value, "MB", comparison, schedule, 0, 0, side, 1, 1,
                     variant_wall_s=v, variant_cpu_s=v, baseline_wall_s=base,
                     baseline_cpu_s=base, elapsed_s=elapsed, **kw)


def test_figures_are_flagsweeps_paired_comparison_and_a_minutes_worth(duet):
    rng = np.random.default_rng(1)
    logs = rng.normal(0.30, 0.04, 40)
    serial = [_pair(duet, d, elapsed=4.0) for d in logs]
    duo = [_pair(duet, d, schedule="duet", elapsed=2.0) for d in logs]
    f, g = duet.figures(serial, "cpu"), duet.figures(duo, "cpu")
    assert f.n == 40 and f.sd == pytest.approx(np.std(logs, ddof=1))
    assert math.log(f.ratio) == pytest.approx(0.30, abs=0.02)
    assert f.ci95[0] < f.ratio < f.ci95[1]
    # 15 pairs a minute in serial, 30 in duet: the same spread is sqrt(2) narrower per minute.
    assert f.half_per_minute == pytest.approx(1.959963984540054 * f.sd / math.sqrt(15))
    assert f.half_per_minute / g.half_per_minute == pytest.approx(math.sqrt(2))


def test_a_failed_pair_is_left_out_of_the_spread_but_not_out_of_the_time(duet):
    pairs = [_pair(duet, d) for d in (0.0, 0.01, -0.01, 0.02)]
    pairs.append(_pair(duet, 0.0, failure="variant: exit status 1"))
    f = duet.figures(pairs, "cpu")
    assert f.n == 4 and f.minutes == pytest.approx(10 / 60)


def test_schedules_that_disagree_on_a_real_difference_are_told_apart(duet):
    rng = np.random.default_rng(2)
    serial = duet.figures([_pair(duet, d) for d in rng.normal(0.30, 0.02, 30)], "cpu")
    same = duet.figures([_pair(duet, d, schedule="duet") for d in rng.normal(0.30, 0.02, 30)],
                        "cpu")
    leaning = duet.figures([_pair(duet, d, schedule="duet")
                            for d in rng.normal(0.25, 0.02, 30)], "cpu")
    assert duet.agreement(serial, same).p >= 0.05
    assert duet.agreement(serial, leaning).p < 0.05


def test_a_side_bias_is_found_and_cancels_in_the_mean(duet):
    # the first CPU is 3% slower: the A/A pair reads +3% or -3% by side
    rng = np.random.default_rng(3)
    pairs = [_pair(duet, (0.03 if side == 0 else -0.03) + e, schedule="duet", side=side)
             for side, e in zip([0, 1] * 20, rng.normal(0, 0.005, 40))]
    mean, ci = duet.side_bias(pairs, "cpu")
    assert mean == pytest.approx(0.03, abs=0.005) and ci[0] > 0
    assert abs(math.log(duet.figures(pairs, "cpu").ratio)) < 0.01


def test_pairs_survive_the_csv(duet, tmp_path):
    pairs = [_pair(duet, 0.1, side=1), _pair(duet, 0.0, failure="baseline: crashed: SIGSEGV")]
    pairs[1].variant_wall_s = None
    duet.write_csv(tmp_path / "pairs.csv", pairs)
    assert duet.read_csv(tmp_path / "pairs.csv") == pairs


def test_the_report_prints_every_cell_and_the_run_length(duet, capsys):
    rng = np.random.default_rng(4)
    pairs = []
    for size, run_s, value in (("quick", 0.3, 3.0), ("full", 2.0, 18.0)):
        for schedule, cost in (("serial", 2 * run_s), ("duet", run_s)):
            for label, effect in (("A/A", 0.0), ("-O0", 0.3), ("-O3", -0.01)):
                pairs += [_pair(duet, effect + e, schedule=schedule, comparison=label, size=size,
                                base=run_s, elapsed=cost, size_value=value, side=i % 2)
                          for i, e in enumerate(rng.normal(0, 0.03, 8))]
    duet.report(pairs)
    out = capsys.readouterr().out
    assert "== gzip, quick input (3 MB): 48 pairs" in out
    assert "== gzip, full input (18 MB): 48 pairs" in out
    assert out.count("run length: ") == 4        # 2 schedules x 2 metrics
    assert "-O0 vs -O2: quick" in out and "A/A per minute, CPU time: duet" in out
    # the overview: duet pairs cost half, so at one spread they are narrower per minute, and
    # the schedules agree on the planted effects
    assert "== A/A 95% half-width per minute of measuring, cpu time" in out
    row = next(line for line in out.splitlines() if line.startswith("gzip    "))
    assert row.split("  ")[-1].startswith("duet ") and "bias check: yes" in row


def test_a_pair_is_taken_through_the_launcher_pinned_as_placed(duet, monkeypatch, tmp_path):
    """A stand-in for launcher.run_once: each run reports the CPUs its starting thread was
    pinned to; the variant runs twice as long. Works with one CPU (both sides on it)."""
    cpus = tuple(sorted(os.sched_getaffinity(0))[-2:])
    cpus = cpus if len(cpus) == 2 else cpus * 2
    seen = []

    def run_once(argv, *, env, timeout, stderr_path):
        seen.append((argv[0], os.sched_getaffinity(0), stderr_path.parent.name))
        t = 2.0 if argv[0] == "variant" else 1.0
        return Execution(t, t, 0.0, 1, {"run_delay_s": 0.0}, False, None)

    monkeypatch.setattr(duet.launcher, "run_once", run_once)
    invocation = type("I", (), {"scratch": tmp_path, "timeout": 5,
                                "argv": lambda self, binary, out: [str(binary)]})()
    w = duet.Workload("t", "quick", 1.0, "MB", invocation,
                      {"gcc-O2": Path("baseline"), "gcc-O0": Path("variant"),
                       "gcc-O3": Path("baseline")})
    rng = np.random.default_rng(0)
    for side in (0, 1):
        pair = duet.take(w, duet.Task("-O0", "duet", side, side), 0, cpus, rng)
        assert (pair.variant_cpu_s, pair.baseline_cpu_s, pair.failure) == (2.0, 1.0, "")
        vcpu, bcpu = duet.placement(cpus, duet.Task("-O0", "duet", side, side))
        assert (pair.variant_cpu_no, pair.baseline_cpu_no) == (vcpu, bcpu)
        ran = {name: (mask, folder) for name, mask, folder in seen[-2:]}
        assert ran["variant"] == ({vcpu}, "variant") and ran["baseline"] == ({bcpu}, "baseline")
    serial = duet.take(w, duet.Task("A/A", "serial", 0, 1), 0, cpus, rng)
    assert [name for name, _, _ in seen[-2:]] == ["baseline", "baseline"]
    assert serial.log_ratio("cpu") == 0.0
