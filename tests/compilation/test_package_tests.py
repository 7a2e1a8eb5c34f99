"""The package's own test suite as a correctness check (compilation.package_tests): which
command a build tree shows, what a run of it records, and a sweep that keeps a variant whose
own tests fail out of its rounds and says so beside it."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from synthetic import Synthetic
from tiny_target import TINY_SRC, write_tiny_target

from flagsweep import model
from flagsweep.compilation import package_tests, selection
from flagsweep.jobs import checks, sweep
from flagsweep.report import terminal
from flagsweep.results import reader
from flagsweep.results.store import Store

WITH_CHECK = "all:\n\ttrue\ncheck:\n\t@echo 'FAIL: roundtrip'; exit 1\n"


def _makefile(folder: Path, text: str) -> Path:
    folder.mkdir()
    (folder / "Makefile").write_text(text)
    return folder


def test_a_makefile_with_a_check_target_is_tested_by_it(tmp_path):
    assert package_tests.detect(_makefile(tmp_path / "a", WITH_CHECK)) == ["make", "check"]


def test_a_makefile_without_a_check_target_has_no_suite(tmp_path):
    assert package_tests.detect(_makefile(tmp_path / "a", "all:\n\ttrue\n")) is None


def test_a_cmake_tree_with_tests_is_tested_by_ctest(tmp_path):
    (tmp_path / "CTestTestfile.cmake").write_text("")
    assert package_tests.command(tmp_path, None) == ["ctest", "--output-on-failure"]


def test_tests_false_runs_none_and_a_list_is_the_command(tmp_path):
    tree = _makefile(tmp_path / "a", WITH_CHECK)
    assert package_tests.command(tree, False) is None
    assert package_tests.run(tree, None, tmp_path).status == "none"
    assert package_tests.command(tree, ["make", "test"]) == ["make", "test"]


def test_a_failing_suite_records_its_log_tail(tmp_path):
    tree = _makefile(tmp_path / "a", WITH_CHECK)
    done = package_tests.run(tree, ["make", "check"], tmp_path)
    assert done.status == "failed" and done.command == ["make", "check"]
    assert "FAIL: roundtrip" in done.tail and Path(done.log).is_file()


def _variant(vid: str, status: str) -> model.Variant:
    return model.Variant.model_validate(
        {"id": vid, "compiler": "gcc", "flags": [], "build": {
            "status": "ok", "package_tests": {"status": status}}})


def test_only_a_variant_failing_where_the_baseline_passes_is_left_out():
    said: list[str] = []
    builds = [_variant("base", "passed"), _variant("bad", "failed"), _variant("ok", "none")]
    assert checks.own_tests_failed(builds, "base", said.append) == {"bad"}
    assert said == ["bad: fails its own tests, not timed"]


def test_a_baseline_failing_its_own_tests_is_said_and_leaves_nothing_out():
    said: list[str] = []
    builds = [_variant("base", "failed"), _variant("bad", "failed")]
    assert checks.own_tests_failed(builds, "base", said.append) == set()
    assert "the test suite itself is broken here" in said[0]


def _tested_tiny(folder: Path) -> Path:
    """tiny's source with a CMake test of its own that fails under -DTINY_SELFTEST_FAIL (a
    planted breakage, as -DTINY_WRONG plants a wrong output)."""
    shutil.copytree(TINY_SRC, folder)
    (folder / "selftest.c").write_text(
        "int main(void)\n{\n#ifdef TINY_SELFTEST_FAIL\n    return 1;\n#endif\n    return 0;\n}\n")
    with (folder / "CMakeLists.txt").open("a") as f:
        f.write("enable_testing()\nadd_executable(selftest selftest.c)\n"
                "add_test(NAME selftest COMMAND selftest)\n")
    return folder


@pytest.fixture(scope="module")
def failing_sweep(session_cache, tmp_path_factory) -> Path:
    """-O2 passes its own tests, -O1 with the planted define fails them; timed synthetically.
    Made once a module, in the environment the suite's isolated_cache gives each test (a
    module fixture is set up before it)."""
    tmp = tmp_path_factory.mktemp("own")
    # built for its goal alone, as `new` writes it: ctest's selftest is built before the suite
    folder = write_tiny_target(tmp / "tiny", megabytes=0.25, quick_megabytes=0.25,
                               source=_tested_tiny(tmp / "src"), build_extra='goal = "tiny"')
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLAGSWEEP_CACHE", str(session_cache))
        mp.setenv("FLAGSWEEP_LOCK_DIR", str(tmp))
        mp.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp / 'store.sqlite'}")
        mp.setenv("XDG_CONFIG_HOME", str(session_cache / "config"))
        t, r, m, build_opts = selection.prepare(selection.Selection(
            str(folder), flag_sets=("-O2", "-O1 -DTINY_SELFTEST_FAIL"), out_dir=tmp / "run",
            package_tests=True), lambda _: None)
        opts = sweep.MeasureOptions(min_runs=3, max_runs=4, warmup=0, seed=11, quick=True)
        return sweep.start(t, r, m, build_opts, opts, Store(), lambda _: None,
                           execute=Synthetic({}))


@pytest.mark.integration
def test_a_variant_failing_its_own_tests_is_recorded_and_not_timed(failing_sweep):
    by_id = {v["id"]: v for v in reader.load(failing_sweep).dump()["variants"]}
    bad = by_id["gcc-O1-DTINY_SELFTEST_FAIL"]
    assert by_id["gcc-O2"]["build"]["package_tests"]["status"] == "passed"
    assert bad["build"]["package_tests"]["status"] == "failed"
    assert "selftest" in bad["build"]["package_tests"]["tail"]
    assert bad["build"]["package_tests"]["command"] == ["ctest", "--output-on-failure"]
    assert (bad["summary"] or {}).get("n", 0) == 0 and by_id["gcc-O2"]["summary"]["n"] >= 3
    # the build audited made tiny alone; the suite's program was built after it, for ctest
    builds = failing_sweep.parent / "builds" / "gcc-O2"
    assert "selftest.c" not in (builds / "compile.jsonl").read_text()
    assert "selftest.c" in (builds / "tests-compile.jsonl").read_text()


@pytest.mark.integration
def test_the_terminal_and_the_page_say_it_fails_its_own_tests(failing_sweep):
    buf = io.StringIO()
    terminal.show(failing_sweep, Console(file=buf, width=400))
    assert "fails its own tests" in buf.getvalue()
    page = (failing_sweep.parent / "index.html").read_text()
    assert "fails its own tests" in page and "own tests failed (ctest" in page
    assert "Fails its own tests, so not timed" in page
    junit = (failing_sweep.parent / "junit.xml").read_text()
    assert "fails its own tests (failed" in junit


def test_package_tests_are_asked_for_and_reach_the_build_options(tmp_path):
    from flagsweep.cli import params

    folder = write_tiny_target(tmp_path / "tiny")
    kw = {name: None for name in params.SELECTION} | {
        "target_name": str(folder), "flag_sets": ("-O2",), "compilers": (),
        "out_dir": tmp_path / "out", "offline": False, "rebuild": False}
    for asked in (False, True):
        sel = params.selection(kw | {"package_tests": asked})
        *_, opts = selection.prepare(sel, lambda _: None)
        assert opts.package_tests is asked
    assert selection.Selection("tiny").package_tests is False       # off unless asked


def test_an_empty_tests_command_is_refused_naming_the_key(tmp_path):
    from flagsweep.errors import FlagsweepError
    from flagsweep.experiment import target

    folder = write_tiny_target(tmp_path / "tiny", build_extra="tests = []")
    with pytest.raises(FlagsweepError, match="build.tests.*expected a command list"):
        target.load(str(folder))


def test_the_page_warns_when_the_baseline_fails_its_own_tests():
    from report_fixture import model as fixture_model, results_doc

    from flagsweep.report import headline

    doc = results_doc()
    for v in doc["variants"]:
        v["build"]["package_tests"] = {"status": "timeout" if v["id"] == doc["baseline"]
                                       else "failed", "log": "builds/x/tests.log"}
    texts = [w.text for w in headline.warnings(fixture_model(doc)) if w.kind == "own-tests"]
    assert len(texts) == 1 and "the test suite itself is broken here" in texts[0]


@pytest.mark.integration
def test_a_build_reused_from_the_cache_carries_its_suite_result(failing_sweep):
    from flagsweep.compilation import variants

    tmp = failing_sweep.parent.parent
    t, r, m, build_opts = selection.prepare(selection.Selection(
        str(tmp / "tiny"), flag_sets=("-O2", "-O1 -DTINY_SELFTEST_FAIL"), out_dir=tmp / "again"),
        lambda _: None)
    builds = {b.variant.id: b for b in variants.build_all(t, m, build_opts)}
    bad = builds["gcc-O1-DTINY_SELFTEST_FAIL"]
    assert bad.reused and bad.package_tests.status == "failed"
    assert (tmp / "again" / bad.package_tests.log).is_file()
