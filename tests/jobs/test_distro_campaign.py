"""`flagsweep campaign`: a list of packages, each generated into a target and swept into one
folder, failures recorded with their stage and the rest going on, resumed from campaign.json.

The generate stage stands in for `new --debian` (tested in tests/jobs/test_scaffold*.py) by
writing tiny's target files: a package that builds and passes, one whose source does not
compile, one whose own tests fail under one of the recipe's flag sets. The builds, the audit and
the package tests are real; the timing is synthetic (the executor seam)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from synthetic import Synthetic
from tiny_target import TINY_SRC, write_tiny_target

from flagsweep import model
from flagsweep.compilation import selection
from flagsweep.errors import FlagsweepError
from flagsweep.jobs import distro_campaign, sweep
from flagsweep.results.store import Store

LIST = """\
# three stand-ins for Debian packages
alpha --run '{binary} {input} 2'
broken --run '{binary} {input} 2' --no-patches   # its source does not compile
selftest --run '{binary} {input} 2' --name checked
"""
FLAGS = ("-O2", "-O1 -DTINY_SELFTEST_FAIL")


def _source(package: str, tmp: Path) -> Path:
    src = tmp / f"src-{package}"
    shutil.copytree(TINY_SRC, src)
    if package == "broken":
        (src / "kernel.c").write_text((src / "kernel.c").read_text() + "\nint broken(void {\n")
    if package == "selftest":
        (src / "selftest.c").write_text("int main(void)\n{\n#ifdef TINY_SELFTEST_FAIL\n"
                                        "    return 1;\n#endif\n    return 0;\n}\n")
        with (src / "CMakeLists.txt").open("a") as f:
            f.write("enable_testing()\nadd_executable(selftest selftest.c)\n"
                    "add_test(NAME selftest COMMAND selftest)\n")
    return src


class Generated:
    """scaffold.new's stand-in: tiny's target file for each package, and who was asked."""

    def __init__(self, tmp: Path):
        self.tmp, self.asked, self.unpatched = tmp, [], []

    def __call__(self, name, package, folder, say, version=None, jobs=2, argv=None,
                 binary=None, force=False, given=None, patched=True) -> Path:
        self.asked.append(package)
        if not patched:
            self.unpatched.append(package)
        if force:
            shutil.rmtree(folder)
        write_tiny_target(folder, name=name, megabytes=0.25, quick_megabytes=0.25,
                          source=_source(package, self.tmp))
        return folder / "target.toml"


def _run(out: Path, tmp: Path, execute, generate=None, retry_failed=False, retry=frozenset()):
    (tmp / "packages.txt").write_text(LIST)
    c = distro_campaign.open_campaign(tmp / "packages.txt", out, "flags")
    sel = selection.Selection(flag_sets=FLAGS, package_tests=True)
    opts = sweep.MeasureOptions(min_runs=3, max_runs=4, warmup=0, seed=11, quick=True,
                                no_reference=True, layout_confirm=False)
    stages = distro_campaign.Stages(generate=generate or Generated(tmp), execute=execute)
    said: list[str] = []
    distro_campaign.run(c, sel, opts, Store(), said.append, stages, retry_failed, retry=retry)
    return c, said


@pytest.fixture(scope="module")
def campaign(session_cache, tmp_path_factory):
    """The three packages' campaign, made once a module in its own store and lock folder."""
    tmp = tmp_path_factory.mktemp("campaign")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLAGSWEEP_CACHE", str(session_cache))
        mp.setenv("FLAGSWEEP_LOCK_DIR", str(tmp))
        mp.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp / 'store.sqlite'}")
        mp.setenv("XDG_CONFIG_HOME", str(session_cache / "config"))
        c, said = _run(tmp / "out", tmp, Synthetic({}))
    return c, said, tmp


@pytest.mark.integration
def test_each_package_is_swept_or_failed_at_its_stage_and_the_campaign_finishes(campaign):
    c, said, _ = campaign
    by = {p.name: p for p in c.doc.packages}
    assert by["alpha"].status == "swept" and by["checked"].status == "swept"
    assert by["broken"].status == "failed" and by["broken"].failed_stage == "sweep"
    assert "build" in by["broken"].error
    assert all(p.generate_seconds is not None for p in c.doc.packages)
    saved = model.Campaign.model_validate(json.loads(c.path.read_text()))
    assert saved == c.doc, "campaign.json holds what the campaign knows"


@pytest.mark.integration
def test_a_flag_that_breaks_the_package_tests_is_recorded_in_its_results(campaign):
    c, _, _ = campaign
    checked = next(p for p in c.doc.packages if p.name == "checked")
    doc = json.loads((c.out / checked.results).read_text())
    tests = {v["id"]: v["build"]["package_tests"]["status"] for v in doc["variants"]
             if v["build"].get("package_tests")}
    assert tests["gcc-O2"] == "passed" and tests["gcc-O1-DTINY_SELFTEST_FAIL"] == "failed"


@pytest.mark.integration
def test_a_campaign_run_again_redoes_nothing_finished_and_retries_failures_when_asked(campaign):
    c, _, tmp = campaign
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp / 'store.sqlite'}")
        mp.setenv("FLAGSWEEP_LOCK_DIR", str(tmp))
        never = Generated(tmp)
        again, said = _run(c.out, tmp, Synthetic({}), never)
        assert never.asked == [] and "broken: failed at sweep before" in "\n".join(said)
        assert [p.status for p in again.doc.packages] == [p.status for p in c.doc.packages]
        results = c.out / "runs/alpha/results.json"
        answered = results.read_text()
        results.write_text(answered.replace('"status": "complete"', '"status": "busy"'))
        _, said = _run(c.out, tmp, Synthetic({}), never)
        assert "campaign: alpha (1 of 2 left)" in said, "a sweep stopped busy is taken again"
        results.write_text(answered)
        named, said = _run(c.out, tmp, Synthetic({}), never, retry={"broken"})
        assert "campaign: broken (1 of 1 left)" in said
        retried, _ = _run(c.out, tmp, Synthetic({}), never, retry_failed=True)
    broken = next(p for p in retried.doc.packages if p.name == "broken")
    assert never.asked == [], "a failed sweep is swept again, its target kept"
    assert broken.status == "failed" and broken.failed_stage == "sweep"


@pytest.mark.parametrize("line, expected", [
    ("zopfli", "no --run"),
    ("zopfli --run", "followed by its value"),
    ("zopfli --runs x", "expected one of --name"),
    ("-o --run x", "not a Debian source package name"),
    ("zopfli --run 'unclosed", "No closing quotation"),
    ("zopfli --name ../x --run x", "--name '../x'"),
])
def test_a_bad_line_is_one_error_naming_the_file_and_line(tmp_path, line, expected):
    path = tmp_path / "p.txt"
    path.write_text(f"# header\n{line}\n")
    with pytest.raises(FlagsweepError, match=rf"p.txt:2: .*{expected}"):
        distro_campaign.read_list(path)


def test_a_name_twice_or_an_empty_list_is_refused(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("a --run x\na --run y\n")
    with pytest.raises(FlagsweepError, match="target name.*a on more than one line"):
        distro_campaign.read_list(path)
    path.write_text("# nothing\n")
    with pytest.raises(FlagsweepError, match="no package in the list"):
        distro_campaign.read_list(path)


def test_a_campaign_folder_of_another_recipe_or_a_changed_line_is_refused(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("a --run x\n")
    distro_campaign.open_campaign(path, tmp_path / "out", "distro")
    with pytest.raises(FlagsweepError, match="measures recipe 'distro', not 'olevels'"):
        distro_campaign.open_campaign(path, tmp_path / "out", "olevels")
    path.write_text("a --run y --binary b --input in.wav --no-patches\n")
    changed = distro_campaign.open_campaign(path, tmp_path / "out", "distro").doc.packages[0]
    assert (changed.run, changed.binary) == (["y"], "b"), "not swept yet: the line as it reads"
    assert changed.patches is False, "--no-patches: the orig as released"
    assert changed.input == str(tmp_path / "in.wav"), "an input is the list's folder's"
    changed.status = "swept"
    distro_campaign.open_campaign(path, tmp_path / "out", "distro").save()
    c = distro_campaign.open_campaign(path, tmp_path / "out", "distro")
    c.doc.packages[0].status = "swept"
    c.save()
    path.write_text("a --run z\n")
    with pytest.raises(FlagsweepError, match="p.txt:1: a was swept with another"):
        distro_campaign.open_campaign(path, tmp_path / "out", "distro")
    doc = json.loads((tmp_path / "out" / "campaign.json").read_text())
    doc["packages"][0]["name"] = ".."
    (tmp_path / "out" / "campaign.json").write_text(json.dumps(doc))
    with pytest.raises(FlagsweepError, match=r"packages\[0\]\.name '\.\.'"):
        distro_campaign.open_campaign(path, tmp_path / "out", "distro")
    doc["packages"][0]["name"] = "a"
    for outside in ("../elsewhere/results.json", "/etc/results.json"):
        doc["packages"][0]["results"] = outside
        (tmp_path / "out" / "campaign.json").write_text(json.dumps(doc))
        with pytest.raises(FlagsweepError, match=r"packages\[0\]\.results .*inside the"):
            distro_campaign.open_campaign(path, tmp_path / "out", "distro")
    (tmp_path / "out" / "campaign.json").write_text('{"schema": "flagsweep-campaign/1"}')
    with pytest.raises(FlagsweepError, match="campaign.json: not a campaign.json: missing"):
        distro_campaign.open_campaign(path, tmp_path / "out", "distro")


def test_the_command_refuses_a_missing_list_or_recipe_in_one_line_before_any_work(main, tmp_path):
    code, err = main("campaign", str(tmp_path / "none.txt"), "--out", str(tmp_path / "out"))
    assert code == 2 and "none.txt: cannot read the package list" in err
    (tmp_path / "p.txt").write_text("lz4 --run '{binary} -c {input}'\n")
    code, err = main("campaign", str(tmp_path / "p.txt"), "--recipe", "nosuch",
                     "--out", str(tmp_path / "out"))
    assert code == 2 and "nosuch" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists(), "nothing written before the recipe loads"


@pytest.mark.integration
def test_on_a_cluster_each_package_is_one_workers_task_and_comes_back_into_the_folder(
        tmp_path, monkeypatch):
    """In-process Dask (threads): the task runs the same stages on the worker's side, so the
    planted generator and timing reach it; the answer is written under OUT and read back."""
    from distributed import LocalCluster

    planted = distro_campaign.Stages
    generate = Generated(tmp_path)
    monkeypatch.setattr(distro_campaign, "Stages", lambda jobs=2: planted(
        generate=generate, execute=Synthetic({}), jobs=jobs))
    (tmp_path / "packages.txt").write_text(LIST.replace("selftest", "# selftest"))
    c = distro_campaign.open_campaign(tmp_path / "packages.txt", tmp_path / "out", "flags")
    opts = sweep.MeasureOptions(min_runs=3, max_runs=3, warmup=0, seed=5, quick=True,
                                no_reference=True, layout_confirm=False)
    said: list[str] = []
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                      resources={"bench": 1}, dashboard_address=None) as local:
        distro_campaign.run_on(local.scheduler_address, c,
                               selection.Selection(flag_sets=FLAGS[:1] + ("-O1",)), opts,
                               Store().url, said.append)
    by = {p.name: p for p in c.doc.packages}
    assert sorted(generate.asked) == ["alpha", "broken"]
    assert generate.unpatched == ["broken"], "the list's --no-patches reaches the worker's new"
    assert by["alpha"].status == "swept" and by["alpha"].results == "runs/alpha/results.json"
    assert (c.out / "runs/alpha/index.html").is_file()
    assert (c.out / "targets/alpha/target.toml").is_file()
    assert by["broken"].status == "failed" and "did not build" in by["broken"].error
    assert json.loads(c.path.read_text())["packages"][0]["status"] == "swept"


@pytest.mark.integration
def test_the_campaign_ends_with_the_distro_report_of_what_it_swept(campaign):
    c, _, _ = campaign
    said: list[str] = []
    page = distro_campaign.report(c, 1.0, said.append)
    assert page == c.out / "distro.html" and (c.out / "distro.csv").is_file()
    assert "2 of 3 packages swept; 1 failed: broken" in said[0]
    assert said[1].startswith("  broken failed at sweep: the baseline gcc-O2 did not build")
    rows = list(csv.DictReader((c.out / "distro.csv").open()))
    verdicts = {(r["package"], r["verdict"], r["tests"]) for r in rows}
    assert ("checked", "broken", "failed") in verdicts, "a flag that fails its own tests"
    assert "broken" in page.read_text() and "did not build" in page.read_text()
