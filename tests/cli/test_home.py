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


# The read-only commands one after another in one interpreter, as the script runs each
# (cli.main); after each, what exists under HOME (os.path.expanduser, so with HOME unset the
# password file's home) but the folder given to ignore. One interpreter start instead of one
# per command: every command's own imports and folders are still its first in this process
# but for what an earlier one imported, and that is looked for after the earlier one.
DRIVER = """
import io, json, os, sys
from flagsweep import cli
commands, ignore = json.loads(sys.argv[1]), sys.argv[2]
home = os.path.expanduser("~")
for argv in commands:
    sys.argv = ["flagsweep", *argv]
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    try:
        cli.main()
        code = 0
    except SystemExit as e:
        code = e.code or 0
    err = sys.stderr.getvalue()
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    made = [os.path.join(d, n) for d, ds, fs in os.walk(home) for n in ds + fs
            if not (ignore and os.path.join(d, n).startswith(ignore))]
    print(json.dumps({"argv": argv, "code": code, "stderr": err, "made": made}), flush=True)
"""


def _each(done: subprocess.CompletedProcess, commands: list[list[str]]) -> list[dict]:
    """The driver's line per command, all of them there."""
    said = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [c["argv"] for c in said] == commands, (done.stdout[-2000:], done.stderr[-3000:])
    return said


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
    commands = _read_only_commands(a, b)
    done = subprocess.run([PYTHON, "-c", DRIVER, json.dumps(commands), ""], capture_output=True,
                          text=True, env=_env(HOME=str(where)), cwd=tmp_path, timeout=300)
    for c in _each(done, commands):
        assert "Traceback" not in c["stderr"], c
        if c["argv"][0] == "history":
            assert c["code"] == 2 and c["stderr"] == (
                f"flagsweep: nothing is stored yet: the store {where}/.local/share/flagsweep/"
                "store.sqlite does not exist; FLAGSWEEP_DB or --db choose another store (the "
                "default one is in $XDG_DATA_HOME/flagsweep, else ~/.local/share/flagsweep)\n")
        else:
            assert c["code"] == 0, c
        assert c["made"] == [], c
    if home == "missing":
        assert not where.exists()
    else:
        assert list(where.iterdir()) == []


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
    commands = _read_only_commands(a, b)
    script = "set -e; "
    if keep:
        script += f"mount --bind {keep} {saved}; "
    script += "mount -t tmpfs -o size=4m tmpfs /root; "
    if keep:
        script += f"mkdir {keep}; mount --bind {saved} {keep}; "
    script += '"$@"'
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
                           "sh", PYTHON, "-c", DRIVER, json.dumps(commands), str(keep or "")],
                          capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    for c in _each(done, commands):
        assert c["made"] == [], c


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
