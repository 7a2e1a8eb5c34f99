"""The suite: several programs' sweeps on one machine, pooled per variant (geometric mean with a
CI and its own verdict) beside each program's own verdicts; its refusals; and `run --all` end to
end on two copies of the tiny program with a third target that cannot be fetched."""

from __future__ import annotations

import json
import math

import pytest
import report_fixture as rf
from click.testing import CliRunner
from tiny_target import write_tiny_target

from flagsweep import report, stats
from flagsweep.across import suite
from flagsweep.cli import cli
from flagsweep.errors import FlagsweepError
from flagsweep.experiment import target


def _program(name: str, seed: int, scale: dict | None = None) -> dict:
    doc = rf.results_doc(seed=seed, scale=scale)
    doc["target"], doc["run_id"] = name, f"{name}-run"
    doc["machine"]["cpu_flags"] = ["sse2", "avx2"]
    return doc


def _suite(tmp_path, *docs, **kw) -> suite.SuiteTable:
    paths = [rf.write(tmp_path / d["target"], d) for d in docs]
    return suite.build(suite.load_all(paths), **kw)


def test_pool_is_the_geometric_mean_with_the_pooled_interval():
    # two estimates, each with a 95% CI of +-2 SE on the log scale
    a, b = (0.90, (0.90 * math.exp(-0.02), 0.90 * math.exp(0.02))), (1.10, None)
    c = stats.pool([a, b])
    assert c.ratio == pytest.approx(math.sqrt(0.90 * 1.10))
    se = (0.04 / (2 * stats.Z95)) / 2          # the exact estimate adds no error
    assert math.log(c.ci95[1] / c.ratio) == pytest.approx(stats.Z95 * se)
    assert c.pooled == 2 and c.ci90[1] < c.ci95[1]
    assert stats.pool([(1.0, None), (1.0, None)]).ci95 == (1.0, 1.0)
    assert stats.pool([(1.0, (0.0, math.inf))]) is None      # an interval that is no interval


def test_suite_pools_each_variant_and_keeps_program_verdicts_apart(tmp_path):
    # -O3 is 10% faster on "alpha" but made 25% slower on "beta": the suite pools them,
    # and beta's own verdict (slower) is kept beside the pooled one.
    s = _suite(tmp_path, _program("alpha", 1), _program("beta", 2, scale={"gcc-O3": 1.25}),
               _program("gamma", 3))
    rows = {r.id: r for r in s.rows}
    o3 = rows["gcc-O3"]
    assert o3.suite.ratio == pytest.approx((0.9 * 1.125 * 0.9) ** (1 / 3), rel=0.01)
    assert o3.on("slower") == ["beta"] and o3.on("faster") == ["alpha", "gamma"]
    assert rows["gcc-O0"].suite.verdict == "slower"
    assert rows["gcc-O1"].suite.verdict == "equivalent"
    # identical code to -O3 is the same binary: it carries -O3's numbers
    assert rows["gcc-O3-mfpmath-sse"].cells["alpha"] == o3.cells["alpha"]
    # a variant no program measured has no pooled estimate, and says why
    assert rows["gcc-O2-fbroken"].suite is None and "not measured" in rows["gcc-O2-fbroken"].missing
    assert s.recommendation.startswith("Keep gcc -O2") or "slower on beta" in s.recommendation


def test_suite_recommends_a_flag_that_wins_across_programs(tmp_path):
    s = _suite(tmp_path, _program("alpha", 1), _program("beta", 2))
    assert s.recommendation.startswith("gcc -O3:")
    assert "by program: faster on alpha, beta; slower on none" in s.recommendation
    # the interval its verdict used, adjusted for choosing it among the pooled rows, and named
    pooled = next(r.suite for r in s.rows if r.id == "gcc-O3")
    m = sum(r.suite is not None for r in s.rows)
    assert (f"({stats.level_text(pooled.fcr_level)} CI {stats.ci_text(pooled.ci_fcr)}, adjusted "
            f"for choosing it among {m} pooled rows)") in s.recommendation
    assert pooled.fcr_level > 0.95


def test_suite_json_and_page(tmp_path):
    s = _suite(tmp_path, _program("alpha", 1), _program("beta", 2, scale={"gcc-O3": 1.25}))
    for name in ("alpha", "beta"):      # a sweep's folder holds its page beside results.json
        (tmp_path / name / "index.html").write_text("<!doctype html>")
    page = report.write_suite(s, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "suite.json").read_text())
    assert data["schema"] == "flagsweep-suite/1"
    assert [p["results"] for p in data["programs"]] == ["../alpha/results.json", "../beta/results.json"]
    o3 = next(v for v in data["variants"] if v["id"] == "gcc-O3")
    # -10% on one and +12.5% on the other pool to about +0.6%: no difference overall, which
    # is exactly when the per-program columns must stay in view
    assert o3["suite"]["verdict"] == "equivalent"
    assert o3["slower_on"] == ["beta"] and o3["faster_on"] == ["alpha"]
    assert set(o3["per_program"]) == {"alpha", "beta"}
    html = page.read_text()
    assert 'id="suite-table"' in html and 'href="../alpha/index.html"' in html
    assert rf.EVIL not in html and "&lt;script&gt;" in html     # flag names are text


def test_suite_refuses_what_is_not_one_question(tmp_path):
    a, b = _program("alpha", 1), _program("beta", 2)
    b["machine"]["cpu_model"] = "Other CPU"
    with pytest.raises(FlagsweepError, match=r"differ in machine \(CPU identity\)"):
        _suite(tmp_path, a, b)
    with pytest.raises(FlagsweepError, match="one results file per program"):
        suite.load_all([rf.write(tmp_path / "x", _program("alpha", 1)),
                        rf.write(tmp_path / "y", _program("alpha", 2))])
    c = _program("gamma", 3)
    next(v for v in c["variants"] if v["id"] == c["baseline"])["flags"] = ["-O1"]
    with pytest.raises(FlagsweepError, match="differ in baseline flags"):
        _suite(tmp_path / "z", _program("alpha", 1), c)


@pytest.mark.integration
def test_run_all_sweeps_each_target_and_writes_the_suite(tmp_path, monkeypatch):
    """Two programs (the tiny one twice, one made heavier) and one whose source is gone: the
    broken one is recorded, the others are swept and pooled; -O0 is slower on both and overall.
    Built and checked for real; timed through the executor seam at planted speeds (-O0 30%
    slower): what is tested is the pooling, not the machine, and load cannot flip it."""
    import functools

    from synthetic import Synthetic

    from flagsweep.jobs import campaign

    targets = tmp_path / "targets"
    write_tiny_target(targets / "tinya", name="tinya", megabytes=2, quick_megabytes=0.1,
                      timeout=30)
    write_tiny_target(targets / "tinyb", name="tinyb", megabytes=2, quick_megabytes=0.1,
                      repeats=3, timeout=30)
    broken = write_tiny_target(targets / "broken", name="broken") / "target.toml"
    broken.write_text(broken.read_text().replace("/targets/tiny/src", "/targets/tiny/gone"))
    skipped = write_tiny_target(targets / "later", name="later") / "target.toml"
    monkeypatch.setattr(target, "TARGETS_DIR", targets)
    monkeypatch.setattr(campaign, "run", functools.partial(
        campaign.run, execute=Synthetic({"gcc-O0": 1.3})))
    out = tmp_path / "suite"
    res = CliRunner().invoke(cli, ["run", "--all", "--skip", "later", "--flags", "-O2",
                                   "--flags", "-O0", "--metric", "cpu", "--runs", "7",
                                   "--schedule", "serial", "--quick", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert res.output.strip().splitlines()[-1] == str(out / "suite.html")
    data = json.loads((out / "suite.json").read_text())
    assert [p["target"] for p in data["programs"]] == ["tinya", "tinyb"]
    assert [f["target"] for f in data["failed"]] == ["broken"]
    assert "gone" in data["failed"][0]["error"]
    assert not (out / "later").exists() and skipped.exists()
    o0 = data["variants"][0]
    assert o0["flags"] == ["-O0"] and o0["suite"]["verdict"] == "slower"
    assert o0["slower_on"] == ["tinya", "tinyb"]
    assert (out / "tinya" / "index.html").exists() and (out / "tinyb" / "results.json").exists()
    # the suite can be drawn again from the results alone
    again = CliRunner().invoke(cli, ["suite", str(out / "tinya" / "results.json"),
                                     str(out / "tinyb" / "results.json"), "--out", str(tmp_path / "re")])
    assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "re" / "suite.json").read_text())["variants"][0]["suite"][
        "verdict"] == "slower"


def test_run_all_usage_errors():
    res = CliRunner().invoke(cli, ["run", "gzip", "--all"])
    assert res.exit_code == 2 and "give no TARGET" in res.output
    res = CliRunner().invoke(cli, ["run", "--all", "--skip", "nosuch"])
    assert res.exit_code == 2 and "not a suite target" in res.output
    res = CliRunner().invoke(cli, ["run", "--skip", "gzip"])
    assert res.exit_code == 2 and "--skip goes with --all" in res.output


def test_programs_timed_in_wall_and_cpu_time_pool_with_a_warning_and_a_count_is_refused(tmp_path):
    """--metric auto chooses per program (a program that waits is timed in wall time): each
    change is to its own baseline in its own time, so they pool; a count beside a time does not."""
    a, b = _program("alpha", 1), _program("beta", 2)
    b["metric"] = "cpu_s" if a["metric"] == "wall_s" else "wall_s"
    s = _suite(tmp_path, a, b)
    assert any(w.startswith("the programs' own metrics differ (alpha: ") for w in s.warnings)
    b["metric"] = "instructions"
    with pytest.raises(FlagsweepError, match="the sweeps measured different quantities"):
        _suite(tmp_path / "count", a, b)


def test_a_program_whose_aa_arm_failed_is_shown_but_not_pooled(tmp_path):
    """beta's sweep was unstable (its A/A twin, the baseline's own binary, came out 20% slower):
    its ratios measured the machine moving, so the suite pools alpha and gamma alone, and says
    why beta is left out."""
    beta = _program("beta", 2, scale={"gcc-O2.aa": 1.2, "gcc-O3": 1.5})
    assert beta["aa"]["unstable"]
    s = _suite(tmp_path, _program("alpha", 1), beta, _program("gamma", 3))
    o3 = next(r for r in s.rows if r.id == "gcc-O3")
    assert o3.cells["beta"] is not None                        # shown with its own verdict
    assert o3.suite.ratio == pytest.approx(0.9, rel=0.01) and o3.suite.pooled == 2
    assert any(w.startswith("beta: its A/A arm failed") for w in s.warnings)
    assert "across the 2 programs" in s.recommendation
    data = json.loads((report.write_suite(s, tmp_path / "out").parent / "suite.json").read_text())
    assert [p["unstable"] for p in data["programs"]] == [False, True, False]
