"""flagsweep's own folders under HOME (the store, the cache, the config): a command that only
reads creates none of them, whatever HOME is (unset, missing, read-only), and an error about one
of them names it and the variable that moves it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from report_fixture import results_doc

PYTHON = sys.executable


def _results(folder: Path) -> list[str]:
    """Two results files, for the commands that read them (compare, pick)."""
    paths = []
    for name in ("a", "b"):
        (folder / name).mkdir(parents=True)
        (folder / name / "results.json").write_text(json.dumps(results_doc()))
        paths.append(str(folder / name / "results.json"))
    return paths


def _read_only_commands(a: str, b: str) -> list[list[str]]:
    """Every command that only reads (with no option that writes: cache --clear, system
    --tune or --reset, compare --out)."""
    return [["list"], ["cpus"], ["schema"], ["cache"], ["system"], ["history", "gzip"],
            ["pick", a, b], ["compare", a, b]]


def _env(**extra: str) -> dict[str, str]:
    """A bare environment: none of FLAGSWEEP_* or XDG_*, so every default folder is HOME's."""
    return {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", **extra}


@pytest.mark.parametrize("home", ["missing", "read-only"])
def test_a_read_only_command_creates_nothing_in_home(home, tmp_path, request):
    """Before: history (pick, merge, suite) made HOME/.local/share/flagsweep/store.sqlite, and
    compare matplotlib's ~/.cache and ~/.config folders, as root in a HOME that did not exist."""
    if home == "missing":
        where = tmp_path / "nonexistent"
    else:
        small_fs = request.getfixturevalue("small_fs")
        small_fs.read_only()
        where = small_fs.path
    a, b = _results(tmp_path / "results")
    for argv in _read_only_commands(a, b):
        done = subprocess.run([PYTHON, "-m", "flagsweep", *argv], capture_output=True, text=True,
                              env=_env(HOME=str(where)), cwd=tmp_path, timeout=120)
        assert "Traceback" not in done.stderr, (argv, done.stderr)
        if argv[0] == "history":
            assert done.returncode == 2 and done.stderr == (
                f"flagsweep: nothing is stored yet: the store {where}/.local/share/flagsweep/"
                "store.sqlite does not exist; FLAGSWEEP_DB or --db choose another store (the "
                "default one is in $XDG_DATA_HOME/flagsweep, else ~/.local/share/flagsweep)\n")
        else:
            assert done.returncode == 0, (argv, done.stderr)
        if home == "missing":
            assert not where.exists(), argv
        else:
            assert list(where.iterdir()) == [], argv


def test_with_home_unset_a_read_only_command_creates_nothing(tmp_path):
    """HOME unset: Python takes root's home from the password file, /root. In a mount namespace
    of its own, with an empty tmpfs over /root (Python's own folder there bound back in), nothing
    else may appear there."""
    if os.geteuid() != 0:
        pytest.skip("a mount namespace needs root")
    real = Path(os.path.realpath(PYTHON))
    keep = Path("/root", real.relative_to("/root").parts[0]) if real.is_relative_to("/root") \
        else None
    saved = tmp_path / "kept"
    saved.mkdir()
    a, b = _results(tmp_path / "results")
    for argv in _read_only_commands(a, b):
        script = "set -e; "
        if keep:
            script += f"mount --bind {keep} {saved}; "
        script += "mount -t tmpfs -o size=4m tmpfs /root; "
        if keep:
            script += f"mkdir {keep}; mount --bind {saved} {keep}; "
        script += '"$@" >/dev/null 2>&1 || true; find /root -mindepth 1'
        if keep:
            script += f" -not -path '{keep}' -not -path '{keep}/*'"
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                               script, "sh", PYTHON, "-m", "flagsweep", *argv],
                              capture_output=True, text=True, env=_env(), cwd=tmp_path,
                              timeout=120)
        assert done.returncode == 0 and done.stdout == "", (argv, done.stdout, done.stderr)


def test_a_read_only_home_names_the_cache_and_its_variable(small_fs, tmp_path):
    """Before: `flagsweep: /root/.cache: Read-only file system`, naming neither the cache nor
    FLAGSWEEP_CACHE."""
    small_fs.read_only()
    home = small_fs.path
    done = subprocess.run([PYTHON, "-m", "flagsweep", "build", "tiny", "--flags", "-O2", "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300,
                          env=_env(HOME=str(home), FLAGSWEEP_DB=f"sqlite:///{tmp_path}/s.sqlite"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"flagsweep: {home}/.cache: Read-only file system ({home}/.cache/flagsweep is "
        "flagsweep's cache; FLAGSWEEP_CACHE or XDG_CACHE_HOME move it)")


def test_a_read_only_home_names_the_stores_folder(small_fs, tmp_path):
    small_fs.read_only()
    home = small_fs.path
    done = subprocess.run([PYTHON, "-m", "flagsweep", "run", "tiny", "--flags", "-O2", "--quick",
                           "--runs", "2", "--out", str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=300,
                          env=_env(HOME=str(home), FLAGSWEEP_CACHE=str(tmp_path / "cache")))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"flagsweep: cannot create the store's folder {home}/.local/share/flagsweep: Read-only "
        "file system; FLAGSWEEP_DB or --db choose another store (the default one is in "
        "$XDG_DATA_HOME/flagsweep, else ~/.local/share/flagsweep)")
    assert not (tmp_path / "out").exists()
