"""The measurement lock: a path in $FLAGSWEEP_LOCK that cannot be a lock file is named, with
the variable, before any work."""

from __future__ import annotations

import subprocess
import sys

import pytest

from flagsweep.errors import FlagsweepError
from flagsweep.host.lock import MeasureLock


def _bad_lock(kind: str, tmp_path, small_fs) -> tuple[str, str]:
    """A $FLAGSWEEP_LOCK that cannot be opened, and the reason the system gives."""
    if kind == "missing folder":
        return str(tmp_path / "gone" / "lock"), "No such file or directory"
    if kind == "a folder":
        return str(tmp_path), "Is a directory"
    if kind == "under a file":
        (tmp_path / "file").write_text("")
        return str(tmp_path / "file" / "lock"), "Not a directory"
    small_fs.read_only()
    return str(small_fs.path / "lock"), "Read-only file system"


@pytest.mark.parametrize("kind", ["missing folder", "a folder", "under a file", "read-only"])
def test_a_bad_lock_path_names_the_variable(kind, tmp_path, monkeypatch, request):
    small_fs = request.getfixturevalue("small_fs") if kind == "read-only" else None
    path, why = _bad_lock(kind, tmp_path, small_fs)
    monkeypatch.setenv("FLAGSWEEP_LOCK", path)
    with pytest.raises(FlagsweepError) as e, MeasureLock("tiny"):
        pass
    assert str(e.value) == (f"cannot open the measurement lock {path} ($FLAGSWEEP_LOCK): {why}; "
                            "expected a file that can be created and written, in an existing "
                            "folder")


def test_run_with_a_bad_lock_does_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGSWEEP_LOCK", str(tmp_path))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "flagsweep", "run", "tiny", "--quick", "--runs",
                           "2", "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"flagsweep: cannot open the measurement lock {tmp_path} ($FLAGSWEEP_LOCK): Is a "
        "directory; expected a file that can be created and written, in an existing folder")
    assert not out.exists()
