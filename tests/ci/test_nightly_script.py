"""examples/ci/nightly.sh run as the shipped workflows run it: with bash, flagsweep on PATH, no
network, a local SQLite store. Nights of the real tiny target (built, checked, measured in
counted instructions: Cachegrind's count is exact, so load cannot flip a verdict), the last
one slower by a planted extra pass over its input.

Two nights, taken once for the module: the second is slower. A count has no night-to-night
drift to measure, so history judges the second night of an exact count (docs/history.md "How a
step is found"); each sweep is as small as a verdict allows (one flag set, 4 counted rounds, no
warmup, the quick input)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from tiny_target import write_tiny_target

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "ci" / "nightly.sh"
# Four counted rounds: the fewest at which the new night's samples (4, all above) differ from
# the night before (4) at 5% by Mann-Whitney (2/70, two-sided).
RUN_OPTIONS = "--flags -O2 --metric instructions --runs 4 --warmup 0 --quick --schedule serial"


@dataclass
class Night:
    folder: Path
    result: subprocess.CompletedProcess
    step_summary: str | None      # what reached $GITHUB_STEP_SUMMARY, when it was set
    gate_junit: str = ""          # history-junit.xml as the night's own gate wrote it
    gate_md: str = ""             # gate.md likewise (the shadow run below writes it again)


def _script(env: dict, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env={**env, **extra}, timeout=600)


@pytest.fixture(scope="module")
def nights(tmp_path_factory, session_cache) -> dict[str, Night]:
    base = tmp_path_factory.mktemp("nightly")
    tiny = {"megabytes": 0.25, "quick_megabytes": 0.05, "repeats": 1, "timeout": 60}
    same = write_tiny_target(base / "same", version="1.0", **tiny)
    slower = write_tiny_target(base / "slower", version="1.1", **tiny,
                               build_extra='project_flags = ["-DTINY_EXTRA_PERMILLE=1000"]')
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
               FLAGSWEEP_DB=f"sqlite:///{base / 'state' / 'store.sqlite'}",   # a folder to make
               FLAGSWEEP_CACHE=str(session_cache), FLAGSWEEP_LOCK_DIR=str(session_cache),
               XDG_CONFIG_HOME=str(session_cache / "config"), FLAGSWEEP_OUT=str(base / "nightly"),
               FLAGSWEEP_RUN_OPTIONS=RUN_OPTIONS)
    out: dict[str, Night] = {}
    # The first night as on GitHub (its summary to $GITHUB_STEP_SUMMARY), the second as on
    # GitLab (its summary in the log).
    for name, target, summary in (("night0", same, True), ("night1", slower, False)):
        step = base / f"{name}-step-summary.md"
        extra = {"FLAGSWEEP_NIGHT": name, **({"GITHUB_STEP_SUMMARY": str(step)} if summary else {}),
                 # the dashboard once, after the night that has both to show
                 **({} if name == "night1" else {"FLAGSWEEP_DASHBOARD": "none"})}
        result = _script(env, str(target), **extra)
        folder = base / "nightly" / name
        written = {f: (folder / f).read_text() if (folder / f).exists() else ""
                   for f in ("history-junit.xml", "gate.md")}
        out[name] = Night(folder, result, step.read_text() if summary else None,
                          written["history-junit.xml"], written["gate.md"])
    # The same night judged again in shadow mode: no new sweep.
    shadow = _script(env, "--gate-only", str(slower), FLAGSWEEP_NIGHT="night1",
                     FLAGSWEEP_GATE="shadow", FLAGSWEEP_DASHBOARD="none")
    out["shadow"] = Night(base / "nightly" / "night1", shadow, None)
    return out


def _cases(text: str) -> dict[str, str]:
    """JUnit XML as junitparser reads it: case name -> passed | failure | skipped."""
    import junitparser

    xml = junitparser.JUnitXml.fromstring(text)
    suites = [xml] if isinstance(xml, junitparser.TestSuite) else list(xml)
    return {c.name: "failure" if c.is_failure else "skipped" if c.is_skipped else "passed"
            for suite in suites for c in suite}


def test_the_first_night_passes_the_gate(nights):
    r = nights["night0"].result
    assert r.returncode == 0, r.stderr[-3000:]
    assert "nightly.sh: gate (check) exited 0" in r.stderr


def test_the_planted_regression_fails_the_gate_naming_the_variant(nights):
    r = nights["night1"].result
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-3000:]
    assert "regression: gcc-O2 +" in r.stdout and "target 1.0 -> 1.1" in r.stdout
    assert "nightly.sh: gate (check) exited 1" in r.stderr
    assert list(_cases(nights["night1"].gate_junit).values()) == ["failure"]


def test_shadow_mode_names_the_regression_and_passes(nights):
    r = nights["shadow"].result
    assert r.returncode == 0, r.stderr[-3000:]
    assert "shadow: would have failed: gcc-O2" in r.stdout
    assert "nightly.sh: gate (shadow) exited 0" in r.stderr
    gate_md = (nights["shadow"].folder / "gate.md").read_text()
    assert "### The gate: flagsweep history --check --shadow (exit 0)" in gate_md


def test_the_run_folders_junit_has_one_case_per_variant(nights):
    import json

    # the first night has nothing to be compared with: skipped, saying so
    for name, outcome in (("night0", "skipped"), ("night1", "failure")):
        folder = nights[name].folder
        doc = json.loads((folder / "results.json").read_text())
        measured = [v["id"] for v in doc["variants"]
                    if not v.get("aa_of") and not (v.get("build") or {}).get("reference_sha256")]
        cases = _cases((folder / "junit.xml").read_text())
        assert sorted(n.rsplit(" [", 1)[1][:-1] for n in cases) == sorted(measured) == ["gcc-O2"]
        assert set(cases.values()) == {outcome}, cases


def test_the_summary_is_markdown_and_reaches_the_job_summary(nights):
    summary = (nights["night0"].folder / "summary.md").read_text()
    assert summary.startswith("#") and "\n|" in summary and "|---" in summary.replace(" ", "")
    step = nights["night0"].step_summary
    assert step.startswith(summary)
    assert "### The gate: flagsweep history --check (exit 0)" in step
    # without $GITHUB_STEP_SUMMARY (GitLab) summary.md goes to the log
    night1 = nights["night1"]
    assert (night1.folder / "summary.md").read_text() in night1.result.stdout
    assert "### The gate: flagsweep history --check (exit 1)" in night1.gate_md


def test_it_prints_what_it_wrote(nights):
    err = nights["night1"].result.stderr
    folder = nights["night1"].folder
    for name in ("index.html", "summary.md", "junit.xml", "history-junit.xml", "gate.txt"):
        assert f"  {folder / name}\n" in err


@pytest.mark.parametrize("setting, said", [
    ({"FLAGSWEEP_GATE": "loud"}, "FLAGSWEEP_GATE=loud: expected check or shadow"),
    ({"FLAGSWEEP_NIGHT": "../elsewhere"}, "FLAGSWEEP_NIGHT=../elsewhere: expected a folder name"),
])
def test_a_bad_setting_is_one_line_and_exit_2(tmp_path, setting, said):
    r = _script({**os.environ, "FLAGSWEEP_OUT": str(tmp_path)}, "tiny", **setting)
    assert r.returncode == 2 and r.stderr == f"nightly.sh: {said}" + r.stderr.split(said)[1]
    assert len(r.stderr.splitlines()) == 1 and list(tmp_path.iterdir()) == []


def test_the_dashboard_shows_both_nights_in_chromium(nights, browser, tmp_path):
    from flagsweep.report import dashboard

    site = nights["night1"].folder.parent / "dashboard"
    assert "nightly.sh: the dashboard: " in nights["night1"].result.stderr
    load = browser.open(site / "index.html", screenshot=tmp_path / "index.png")
    assert load.console_errors == [] and load.external_requests == []
    index = (site / "index.html").read_text()
    assert "night1" in index and "regression" in index.lower()
    load = browser.open(site / dashboard.page_file("tiny"))
    assert load.console_errors == [] and load.external_requests == []
    text = browser.evaluate("document.body.textContent")         # the nights table is folded
    assert "night0" in text and "night1" in text
    assert browser.evaluate("document.querySelectorAll('svg.plot circle').length") >= 2
