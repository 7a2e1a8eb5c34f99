"""The shipped CI files are valid as their hosts read them, without the network: the GitHub
workflow by actionlint and by the workflow schema, the GitLab file by GitLab's CI schema (both
schemas as check-jsonschema vendors them, never fetched). Each check must also fail on a broken
copy, or a check that passes everything would pass here too. Both steps call nightly.sh, which
passes shellcheck, and every action is pinned to a commit."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ci"
GITHUB = EXAMPLES / "github" / "nightly.yml"
GITLAB = EXAMPLES / "gitlab" / ".gitlab-ci.yml"
SCRIPT = EXAMPLES / "nightly.sh"


def _tool(name: str) -> str:
    """The venv's copy (setup.sh test puts both there), else one on PATH. CI runs setup.sh,
    so there a missing tool is a failure, not a skip."""
    found = shutil.which(name, path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    if found is None:
        reason = f"{name} is not installed (./setup.sh test installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI runs setup.sh, so it must be there", pytrace=False)
        pytest.skip(reason)
    return found


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def _actionlint(path: Path) -> subprocess.CompletedProcess:
    # The run steps through the pinned shellcheck (the test extra's), never whichever is on
    # PATH; its pyflakes pass off (no Python in the steps).
    return _run(_tool("actionlint"), f"-shellcheck={_tool('shellcheck')}", "-pyflakes=",
                "-no-color", str(path))


def _schema(builtin: str, path: Path) -> subprocess.CompletedProcess:
    return _run(_tool("check-jsonschema"), "--builtin-schema", builtin, str(path))


def _broken(path: Path, old: str, new: str, folder: Path) -> Path:
    text = path.read_text()
    assert old in text
    copy = folder / path.name
    copy.write_text(text.replace(old, new))
    return copy


def test_actionlint_passes_the_workflow_and_fails_a_broken_copy(tmp_path):
    result = _actionlint(GITHUB)
    assert result.returncode == 0, result.stdout + result.stderr
    broken = _broken(GITHUB, "    runs-on: ${{ matrix.runner }}", "    runs_on: ${{ matrix.runner }}",
                     tmp_path)
    result = _actionlint(broken)
    assert result.returncode == 1 and '"runs-on" section is missing' in result.stdout, result.stdout


def test_the_workflow_schema_passes_the_workflow_and_fails_a_broken_copy(tmp_path):
    result = _schema("vendor.github-workflows", GITHUB)
    assert result.returncode == 0, result.stdout + result.stderr
    broken = _broken(GITHUB, "    runs-on: ${{ matrix.runner }}", "    runs_on: ${{ matrix.runner }}",
                     tmp_path)
    result = _schema("vendor.github-workflows", broken)
    assert result.returncode == 1 and "'runs-on' is a required property" in result.stdout, \
        result.stdout


def test_gitlabs_schema_passes_the_pipeline_and_fails_a_broken_copy(tmp_path):
    result = _schema("vendor.gitlab-ci", GITLAB)
    assert result.returncode == 0, result.stdout + result.stderr
    broken = _broken(GITLAB, "    when: always\n  script:", "    when: nightly\n  script:", tmp_path)
    result = _schema("vendor.gitlab-ci", broken)
    assert result.returncode == 1 and "cache.when: 'nightly' is not one of" in result.stdout, \
        result.stdout


def test_both_call_the_one_script_and_pin_every_action():
    workflow = yaml.safe_load(GITHUB.read_text())
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    assert [s["run"] for s in steps if "nightly.sh" in s.get("run", "")] == \
        ["bash examples/ci/nightly.sh"]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses and all(re.fullmatch(r"actions/[\w/-]+@[0-9a-f]{40}", u) for u in uses), uses
    pipeline = yaml.safe_load(GITLAB.read_text())
    assert pipeline["nightly"]["script"] == ["bash examples/ci/nightly.sh"]


def test_the_script_passes_shellcheck():
    result = _run(_tool("shellcheck"), "--norc", str(SCRIPT))
    assert result.returncode == 0, result.stdout
