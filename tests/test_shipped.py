"""Where the shipped targets and recipes are, and the user's own in $XDG_CONFIG_HOME/flagsweep."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flagsweep import shipped
from flagsweep.experiment import recipe, target

CHECKOUT = Path(__file__).resolve().parent.parent


@pytest.fixture
def user(tmp_path, monkeypatch) -> Path:
    """An empty user folder: $XDG_CONFIG_HOME/flagsweep."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    folder = tmp_path / "config" / "flagsweep"
    (folder / "targets").mkdir(parents=True)
    (folder / "recipes").mkdir()
    return folder


def test_a_checkout_uses_its_top_level_folders():
    assert not shipped.INSTALLED
    assert shipped.TARGETS == CHECKOUT / "targets"
    assert shipped.RECIPES == CHECKOUT / "recipes"
    assert (shipped.SUPERBUILD / "CMakeLists.txt").read_text().startswith("# flagsweep superbuild")


def test_runs_go_where_the_user_is(monkeypatch, tmp_path):
    """Not into the checkout or the venv: reports/ under the folder the command runs in."""
    monkeypatch.chdir(tmp_path)
    assert shipped.reports_dir() == tmp_path / "reports"


def test_user_folder_follows_xdg_and_falls_back_to_home_config(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert shipped.user_dir() == tmp_path / "flagsweep"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unusable in ("", "relative/config"):     # the XDG spec: ignored, so the default
        monkeypatch.setenv("XDG_CONFIG_HOME", unusable)
        assert shipped.user_dir() == tmp_path / "home" / ".config" / "flagsweep"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert shipped.user_dir() == tmp_path / "home" / ".config" / "flagsweep"


def test_a_user_target_is_found_by_name(user):
    shutil.copytree(shipped.TARGETS / "tiny", user / "targets" / "mine")
    mine = target.load("mine")
    assert mine.path == user / "targets" / "mine" / "target.toml"
    assert mine.local_source() == user / "targets" / "mine" / "src"


def test_a_user_target_with_a_shipped_name_is_reported_and_reached_by_path(user, caplog):
    shutil.copytree(shipped.TARGETS / "tiny", user / "targets" / "tiny")
    with caplog.at_level(logging.WARNING, logger="flagsweep.shipped"):
        assert target.load("tiny").path == shipped.TARGETS / "tiny" / "target.toml"
    assert f"the user's target 'tiny' ({user / 'targets' / 'tiny' / 'target.toml'}) has the " \
           "name of a shipped target and is not used by name" in caplog.text
    assert target.load(str(user / "targets" / "tiny")).path == user / "targets" / "tiny" / "target.toml"


def test_a_user_recipe_is_found_by_name_and_a_shipped_name_stays_shipped(user, caplog):
    text = (shipped.RECIPES / "olevels.toml").read_text()
    (user / "recipes" / "mine.toml").write_text(text)
    (user / "recipes" / "march.toml").write_text(text)
    assert recipe.load("mine").path == user / "recipes" / "mine.toml"
    with caplog.at_level(logging.WARNING, logger="flagsweep.shipped"):
        assert recipe.load("march").path == shipped.RECIPES / "march.toml"
    assert f"the user's recipe 'march' ({user / 'recipes' / 'march.toml'})" in caplog.text


def test_list_marks_the_users_own_and_shows_an_invalid_one(user):
    shutil.copytree(shipped.TARGETS / "tiny", user / "targets" / "tiny")
    shutil.copytree(shipped.TARGETS / "tiny", user / "targets" / "mine")
    (user / "targets" / "broken").mkdir()
    (user / "targets" / "broken" / "target.toml").write_text("summary = 1\n")
    (user / "recipes" / "mine.toml").write_text((shipped.RECIPES / "olevels.toml").read_text())
    out = subprocess.run([sys.executable, "-m", "flagsweep", "list"], capture_output=True,
                         text=True, check=True).stdout
    lines = out.splitlines()
    at = lines.index("recipes")
    targets, recipes = lines[2:at], lines[at + 2:]       # after each title and header row
    assert [line.split()[0] for line in targets] == ["bzip2", "duo", "flac", "gzip", "lame", "tiny",
                                                     "xz", "zstd", "broken", "mine", "tiny"]
    assert [line.split()[0] for line in recipes] == ["distro-campaign", "distro", "march",
                                                     "olevels", "screen-f", "seed-2003", "simd",
                                                     "mine"]
    assert all(line.endswith("shipped") for line in targets[:8] + recipes[:7])
    assert targets[8].split()[1] == "invalid"
    assert targets[9].endswith(f"user: {user / 'targets' / 'mine' / 'target.toml'}")
    assert targets[10].endswith(f"user: {user / 'targets' / 'tiny' / 'target.toml'}; "
                               "not used by name, a shipped one has it")
    assert recipes[7].endswith(f"user: {user / 'recipes' / 'mine.toml'}")
