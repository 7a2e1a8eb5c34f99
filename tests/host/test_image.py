"""The environment a sweep records (host.image through host.system.machine_state): the
distribution from a recorded root's os-release, the CI runner's image from GitHub's and
GitLab's variables, hostile values kept as short printable text, and the record the closed
model accepts. No sweep: files and a monkeypatched environment."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from flagsweep.host import image, system
from flagsweep.model import Machine
from tests.conftest import HOSTS

OS_RELEASE = HOSTS / "amd-epyc-v3-dev" / "os-release.txt"
CI_VARIABLES = ("GITHUB_ACTIONS", "GITLAB_CI", "ImageOS", "ImageVersion", "RUNNER_OS",
                "RUNNER_ARCH", "RUNNER_ENVIRONMENT", "CI_JOB_IMAGE", "CI_RUNNER_VERSION",
                "CI_RUNNER_EXECUTABLE_ARCH", "CI_RUNNER_DESCRIPTION")
# What a variable's author can put there: a terminal title and a cleared screen, a new line
# that would start a line of its own in a log or a junit file, and 10 kB of it.
HOSTILE = "ubuntu24\x1b]0;owned\x07\x1b[2J\nregression: none\r" + "A" * 10_000


@pytest.fixture
def no_ci(monkeypatch):
    """The test's own CI (if it runs in one) must not answer for the recorded one."""
    for name in CI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _root(tmp_path: Path, where: str = "etc/os-release") -> Path:
    root = tmp_path / "root"
    (root / where).parent.mkdir(parents=True)
    shutil.copy(OS_RELEASE, root / where)
    return root


@pytest.mark.parametrize("where", ["etc/os-release", "usr/lib/os-release"])
def test_the_distribution_is_read_from_a_recorded_root(tmp_path, no_ci, where):
    state = system.machine_state([], root=_root(tmp_path, where))
    assert state["environment"] == {
        "distro_id": "debian", "distro_version": "12", "distro": "Debian GNU/Linux 12 (bookworm)",
        "ci": None, "image": None, "runner": None}
    assert Machine.model_validate(state).environment.distro_version == "12"


def test_a_root_without_os_release_records_no_distribution(tmp_path, no_ci):
    env = system.machine_state([], root=tmp_path)["environment"]
    assert env["distro"] is None and env["distro_id"] is None


def test_github_and_gitlab_runners_are_recorded(no_ci):
    no_ci.setenv("GITHUB_ACTIONS", "true")
    for name, value in (("ImageOS", "ubuntu24"), ("ImageVersion", "20250105.1.0"),
                        ("RUNNER_OS", "Linux"), ("RUNNER_ARCH", "X64"),
                        ("RUNNER_ENVIRONMENT", "github-hosted")):
        no_ci.setenv(name, value)
    assert image.ci(os.environ) == {"ci": "github", "image": "ubuntu24 20250105.1.0",
                                    "runner": "github-hosted Linux X64"}
    gitlab = {"GITLAB_CI": "true", "CI_JOB_IMAGE": "debian:12", "CI_RUNNER_VERSION": "17.7.0",
              "CI_RUNNER_EXECUTABLE_ARCH": "linux/amd64", "CI_RUNNER_DESCRIPTION": "bench-1"}
    assert image.ci(gitlab) == {"ci": "gitlab", "image": "debian:12",
                                "runner": "17.7.0 linux/amd64 bench-1"}
    assert image.ci({"CI": "true"}) == {"ci": None, "image": None, "runner": None}


def test_hostile_values_are_kept_short_and_printable(tmp_path):
    environ = {"GITHUB_ACTIONS": "true", "ImageOS": HOSTILE, "ImageVersion": "\x00\x9b31m",
               "GITLAB_CI": "true", "CI_JOB_IMAGE": HOSTILE}
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/os-release").write_text(
        f'ID=$(reboot)\nVERSION_ID="12\x1b[2J"\nPRETTY_NAME="{HOSTILE}"\nNAME="unclosed\n'
        "garbage line without an equals sign\n")
    env = image.environment(system.read_all(root / "etc/os-release"), environ)
    assert env["ci"] == "github"                # the first service that says it is one
    for key in ("image", "distro", "distro_id", "distro_version"):
        value = env[key]
        assert value and len(value) <= image.LIMIT and value.isprintable(), key
        assert "\x1b" not in value and "\n" not in value and "\x07" not in value, key
    assert env["distro_id"] == "$(reboot)"      # text, never run
    assert env["distro_version"] == "12 [2J"
    assert env["image"].startswith("ubuntu24 ]0;owned [2J regression: none AAAA")
    Machine.model_validate({"environment": env})   # the closed model takes it


def test_the_record_is_closed():
    with pytest.raises(ValueError):
        Machine.model_validate({"environment": {"kernel": "6.8"}})
