"""Comparisons over layout replicates (flagsweep.stats.layout), on seeded simulations: the
two-level model holds its false-positive rate where layout moves a program by 2%, the one-level
comparison of pooled runs does not, and a real effect is still found."""

from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pytest
from tiny_target import TINY_SRC

from flagsweep import stats
from flagsweep.stats import layout

SWEEPS = 1000


def _arm(rng, mu: float, k: int, rounds: int, layout_sd: float, run_cv: float,
         drift: np.ndarray) -> layout.Replicates:
    """k builds of one variant, each with its own layout effect, measured in every round."""
    reps = {}
    for j in range(k):
        effect = mu + rng.normal(0, layout_sd)
        reps[f"L{j}"] = {r: math.exp(effect + drift[r] + rng.normal(0, run_cv))
                         for r in range(rounds)}
    return reps


def _sweep(rng, ratio: float = 1.0, k: int = 4, rounds: int = 10, layout_sd: float = 0.02,
           run_cv: float = 0.01, drift_cv: float = 0.01):
    drift = rng.normal(0, drift_cv, rounds)
    return (_arm(rng, math.log(ratio), k, rounds, layout_sd, run_cv, drift),
            _arm(rng, 0.0, k, rounds, layout_sd, run_cv, drift))


def _calls(comparisons: list[stats.RatioEstimate]) -> float:
    """The share of single comparisons called faster or slower (threshold 1%, as a sweep)."""
    for c in comparisons:
        stats.adjust([c], threshold_pct=1.0)
    return sum(c.verdict in ("faster", "slower") for c in comparisons) / len(comparisons)


def test_two_levels_hold_the_false_positive_rate_where_one_level_does_not():
    """No real effect, layout spread 2%, runs 1%, round drift 1%, 4 layouts a side, 10 rounds:
    one build a variant (today's sweep) calls most such sweeps faster or slower, and so does,
    less often, a one-level comparison of the 4 layouts' runs pooled by round; the two-level one
    stays within its 5% (its raw test's size too, within the Monte-Carlo error of 1000 sweeps)."""
    rng = np.random.default_rng(16)
    two, one, single = [], [], []
    for _ in range(SWEEPS):
        v, b = _sweep(rng)
        two.append(layout.compare(v, b))
        one.append(stats.compare(layout.pooled(v), layout.pooled(b), seed=1))
        single.append(stats.compare(v["L0"], b["L0"], seed=1))     # one build a variant
    size = sum(c.p_value < 0.05 for c in two) / SWEEPS
    two_rate, one_rate, single_rate = _calls(two), _calls(one), _calls(single)
    print(f"false calls: two-level {two_rate:.3f} (test size {size:.3f}), one-level over "
          f"4 layouts {one_rate:.3f}, one build a variant {single_rate:.3f}")
    assert two_rate <= 0.05 and size <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / SWEEPS)
    assert one_rate > 0.15 and single_rate > 0.35


def test_a_real_effect_beyond_the_layout_spread_is_still_found():
    rng = np.random.default_rng(17)
    found = [layout.compare(*_sweep(rng, ratio=1.10)) for _ in range(200)]
    assert _calls(found) >= 0.8
    assert all(c.verdict != "faster" for c in found)
    spread = np.median([c.layout_sd for c in found])
    assert 0.012 < spread < 0.03                          # the planted 2%, read back


def test_layout_says_what_it_rests_on_and_what_would_narrow_it():
    rng = np.random.default_rng(18)
    c = layout.compare(*_sweep(rng, ratio=1.005, k=3))
    stats.adjust([c], threshold_pct=1.0)
    assert c.layouts == 3 and c.verdict == "inconclusive" and c.rounds_needed is None
    assert "3 layouts a side, layout alone moving it by +-" in c.why
    assert "more layouts" in c.why
    doc = c.to_json()
    assert doc["layouts"] == 3 and doc["layout_sd_pct"] == 100 * c.layout_sd


def test_identical_layouts_and_too_few_replicates():
    same = {"L0": {0: 1.0, 1: 1.0}, "L1": {0: 1.0, 1: 1.0}}
    slower = {"L0": {0: 1.2, 1: 1.2}, "L1": {0: 1.2, 1: 1.2}}
    c = layout.compare(slower, same)                      # a deterministic count: exact
    assert c.ci95 == c.ci90 == (c.ratio, c.ratio) and abs(c.ratio - 1.2) < 1e-12
    assert c.layout_sd == 0.0
    one = layout.compare({"L0": {0: 1.1, 1: 1.1}}, same)  # one layout: no interval
    stats.adjust([one], threshold_pct=1.0)
    assert one.verdict == "inconclusive" and one.layouts == 1
    # A replicate that shares no round with the baseline has no level.
    assert layout.compare({"L0": {5: 1.0}, "L1": {0: 1.0, 1: 1.0}}, same).layouts == 1


# ---- the linker: shuffled layouts of one compiled program -------------------------------------

@pytest.mark.integration
@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_a_seed_moves_the_functions_and_leaves_the_code_and_its_output(compiler, tmp_path):
    """tiny compiled once with the layout's compile flags, linked with two seeds: the objects
    are shared, the order of the functions in the binary differs (so the code fingerprint
    does), and both binaries print the same for one input."""
    from flagsweep.compilation import fingerprint
    from flagsweep.compilation import layout as link

    if shutil.which(compiler) is None or link.unavailable(compiler):
        pytest.skip(f"{compiler} with LLD is not installed: {link.unavailable(compiler)}")
    objects = []
    for source in sorted(TINY_SRC.glob("*.c")):
        obj = tmp_path / f"{source.stem}.o"
        subprocess.run([compiler, "-O2", *link.COMPILE_FLAGS, "-I", str(TINY_SRC), "-c",
                        str(source), "-o", str(obj)], check=True)
        objects.append(str(obj))
    order, hashes, outputs, functions = {}, {}, {}, {}
    data = tmp_path / "input"
    data.write_bytes(bytes(range(256)) * 4096)
    for seed in (0, 1, 2):
        binary = tmp_path / f"tiny-{seed}"
        subprocess.run([compiler, *objects, *link.link_flags(seed), "-lm", "-o", str(binary)],
                       check=True)
        symbols = subprocess.run(["nm", "-n", str(binary)], capture_output=True, text=True,
                                 check=True).stdout.split("\n")
        order[seed] = [s.split()[2] for s in symbols if s.split()[1:2] in (["t"], ["T"])
                       and s.split()[2].startswith(("tiny_", "main"))]
        hashes[seed] = fingerprint.code_hash(binary)
        functions[seed] = fingerprint.functions_hash(binary)
        outputs[seed] = subprocess.run([str(binary), str(data), "1"], capture_output=True,
                                       check=True).stdout
    assert sorted(order[0]) == sorted(order[1]) == sorted(order[2])    # the same functions
    assert len({tuple(o) for o in order.values()}) > 1                 # placed differently
    assert len(set(hashes.values())) == 3
    assert len(set(functions.values())) == 1 and functions[0] is not None  # same code, moved
    assert outputs[0] == outputs[1] == outputs[2]


# ---- a sweep with --layouts, its executions from the stand-in executor -------------------------

@pytest.mark.integration
def test_a_sweep_with_layouts_builds_checks_and_compares_over_them(tmp_path):
    """tiny at -O2 and -O1, 3 layouts each, really built and checked; each binary timed at a
    planted speed: -O1 10% slower, and every layout of every variant off by its own seeded
    amount (sd 2%). Each variant has 3 verified, checked binaries with 3 code hashes and the
    same functions; the A/A twin is 3 more layouts of -O2 (relinked, not a copy); results.json
    has the two-level comparison, its layout spread and each layout's own summary."""
    from synthetic import Synthetic
    from tiny_target import write_tiny_target

    from flagsweep.jobs import sweep
    from flagsweep.compilation import selection
    from flagsweep.compilation import layout as link
    from flagsweep.results import reader
    from flagsweep.results.store import Store

    if link.unavailable("gcc"):
        pytest.skip(link.unavailable("gcc"))
    rng = np.random.default_rng(5)
    ids = [f"{v}{link.MARK}{j}" for v in ("gcc-O2", "gcc-O1") for j in (1, 2, 3)]
    ids += [f"gcc-O2.aa{link.MARK}{j}" for j in (4, 5, 6)]
    planted = {vid: (1.10 if vid.startswith("gcc-O1") else 1.0) * math.exp(rng.normal(0, 0.02))
               for vid in ids}
    folder = write_tiny_target(tmp_path / "tiny", megabytes=0.25, quick_megabytes=0.25)
    t, r, m, build_opts = selection.prepare(selection.Selection(
        str(folder), flag_sets=("-O2", "-O1"), out_dir=tmp_path / "run"), lambda _: None)
    opts = sweep.MeasureOptions(min_runs=5, max_runs=8, warmup=1, seed=3, quick=True, layouts=3)
    said: list[str] = []
    doc = reader.load(sweep.start(t, r, m, build_opts, opts, Store(), said.append,
                                  execute=Synthetic(planted))).dump()
    assert doc["measurement"]["layouts"]["k"] == 3
    by_id = {v["id"]: v for v in doc["variants"]}
    assert list(by_id) == ["gcc-O2", "gcc-O1", "gcc-O2.aa"] and doc["baseline"] == "gcc-O2"
    for vid, seeds in (("gcc-O2", [1, 2, 3]), ("gcc-O1", [1, 2, 3]), ("gcc-O2.aa", [4, 5, 6])):
        v = by_id[vid]
        layouts = v["build"]["layouts"]
        assert [x["seed"] for x in layouts] == seeds and v["flags"] == ["-" + vid.split("-")[1][:2]]
        assert all(x["flags_verified"] and x["status"] == "ok" for x in layouts)
        assert len({x["code_sha256"] for x in layouts}) == 3 and v["build"]["same_functions"]
        assert v["check"]["status"] == "ok"
        assert [x["seed"] for x in v["summary"]["layouts"]] == seeds
        assert all(x["n"] >= 5 for x in v["summary"]["layouts"])
        assert sorted(set(v["samples"]["layout"])) == seeds
    assert by_id["gcc-O2.aa"]["aa_of"] == "gcc-O2"
    assert not {x["code_sha256"] for x in by_id["gcc-O2.aa"]["build"]["layouts"]} & \
        {x["code_sha256"] for x in by_id["gcc-O2"]["build"]["layouts"]}       # relinked
    o1 = by_id["gcc-O1"]["vs_baseline"]
    assert o1["verdict"] == "slower" and o1["layouts"] == 3 and 1.0 < o1["layout_sd_pct"] < 5
    assert "3 layouts a side" in o1["why"]
    assert by_id["gcc-O2.aa"]["vs_baseline"]["verdict"] in ("equivalent", "inconclusive")
    assert doc["noise"]["source"] == "the A/A twin's layouts"
    page = (tmp_path / "run" / "index.html").read_text()
    assert 'id="layouts"' in page and "across 3 layouts" in page
    assert "--layouts 3" in page                                  # the Reproduce line


@pytest.mark.parametrize("extra, expected", [
    (["--layouts", "1"], "--layouts 1 is one layout"),
    (["--layouts", "65"], "65 is not in the range 0<=x<=64"),
    (["--layouts", "2", "--reference", "/bin/true"], "--layouts is for a sweep on this machine"),
])
def test_layout_options_that_mean_nothing_are_refused_before_any_work(tmp_path, extra, expected):
    from click.testing import CliRunner
    from tiny_target import write_tiny_target

    from flagsweep import cli

    folder = write_tiny_target(tmp_path / "tiny")
    result = CliRunner().invoke(cli.cli, ["run", str(folder), "--flags", "-O2", "--quick",
                                          "--out", str(tmp_path / "run"), *extra])
    assert result.exit_code == 2 and expected in result.output, result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.integration
def test_a_sweep_with_layouts_resumes_with_exactly_the_missing_samples(tmp_path):
    """Interrupted after 20 executions, resumed: the layouts are found again from the stored
    variants (the run's baseline is a variant, its first layout the binary checks use)."""
    from synthetic import Synthetic
    from tiny_target import write_tiny_target

    from flagsweep.jobs import sweep
    from flagsweep.compilation import layout as link
    from flagsweep.compilation import selection
    from flagsweep.errors import Interrupted
    from flagsweep.results import reader
    from flagsweep.results.store import Store

    if link.unavailable("gcc"):
        pytest.skip(link.unavailable("gcc"))
    slower = {f"gcc-O1{link.MARK}{j}": 1.10 for j in (1, 2)}
    folder = write_tiny_target(tmp_path / "tiny", megabytes=0.25, quick_megabytes=0.25)
    t, r, m, build_opts = selection.prepare(selection.Selection(
        str(folder), flag_sets=("-O2", "-O1"), out_dir=tmp_path / "run"), lambda _: None)
    opts = sweep.MeasureOptions(runs=6, min_runs=6, max_runs=6, warmup=1, seed=4, quick=True,
                                layouts=2)
    with pytest.raises(Interrupted):
        sweep.start(t, r, m, build_opts, opts, Store(), lambda _: None,
                    execute=Synthetic(slower, stop_after=20))
    db = Store()
    run_id = db.find_run(str(tmp_path / "run"))
    before = {(s.variant_id, s.round) for s in db.samples(run_id)}
    assert len(before) == 20
    doc = reader.load(sweep.resume(run_id, db, lambda _: None, execute=Synthetic(slower))).dump()
    after = [(s.variant_id, s.round) for s in db.samples(run_id)]
    assert len(after) == len(set(after)) == 6 * (1 + 6) and before <= set(after)
    by_id = {v["id"]: v for v in doc["variants"]}
    assert doc["status"] == "complete" and by_id["gcc-O1"]["vs_baseline"]["verdict"] == "slower"
    assert [x["n"] for x in by_id["gcc-O2"]["summary"]["layouts"]] == [6, 6]
