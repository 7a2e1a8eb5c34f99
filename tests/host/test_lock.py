"""The measurement lock: one sweep per CPU, a queue with --wait, a warning for neighbours, and
a $FLAGSWEEP_LOCK_DIR that cannot hold lock files named, with the variable, before any work."""

from __future__ import annotations

import fcntl
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from flagsweep.errors import FlagsweepError
from flagsweep.host import lock
from flagsweep.host.lock import MeasureLock


def _bad_folder(kind: str, tmp_path, small_fs) -> tuple[str, str, str]:
    """A $FLAGSWEEP_LOCK_DIR whose CPU 0 lock cannot be opened, the file, and the system's reason."""
    if kind == "missing folder":
        return str(tmp_path / "gone"), str(tmp_path / "gone" / "flagsweep-cpu0.lock"), \
            "No such file or directory"
    if kind == "lock is a folder":
        (tmp_path / "flagsweep-cpu0.lock").mkdir()
        return str(tmp_path), str(tmp_path / "flagsweep-cpu0.lock"), "Is a directory"
    if kind == "a file":
        (tmp_path / "file").write_text("")
        return str(tmp_path / "file"), str(tmp_path / "file" / "flagsweep-cpu0.lock"), \
            "Not a directory"
    small_fs.read_only()
    return str(small_fs.path), str(small_fs.path / "flagsweep-cpu0.lock"), "Read-only file system"


@pytest.mark.parametrize("kind", ["missing folder", "lock is a folder", "a file", "read-only"])
def test_a_bad_lock_folder_names_the_variable(kind, tmp_path, monkeypatch, request):
    small_fs = request.getfixturevalue("small_fs") if kind == "read-only" else None
    folder, path, why = _bad_folder(kind, tmp_path, small_fs)
    monkeypatch.setenv("FLAGSWEEP_LOCK_DIR", folder)
    with pytest.raises(FlagsweepError) as e, MeasureLock("tiny", 0):
        pass
    assert str(e.value) == (f"cannot open the measurement lock {path} ($FLAGSWEEP_LOCK_DIR): "
                            f"{why}; expected a file that can be created and written, in an "
                            "existing folder")


def test_run_with_a_bad_lock_does_nothing(tmp_path, monkeypatch):
    (tmp_path / "flagsweep-cpu0.lock").mkdir()
    monkeypatch.setenv("FLAGSWEEP_LOCK_DIR", str(tmp_path))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "flagsweep", "run", "tiny", "--quick", "--runs",
                           "2", "--cpu", "0", "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"flagsweep: cannot open the measurement lock {tmp_path}/flagsweep-cpu0.lock "
        "($FLAGSWEEP_LOCK_DIR): Is a directory; expected a file that can be created and "
        "written, in an existing folder")
    assert not out.exists()


def test_one_sweep_per_cpu_and_the_refusal_says_what_to_do(tmp_path):
    with MeasureLock("gzip first", 0, where=tmp_path):
        with pytest.raises(FlagsweepError) as e, MeasureLock("gzip second", 0, where=tmp_path):
            pass
    assert str(e.value).startswith("another sweep is measuring on CPU 0 (pid ")
    assert "gzip first, since " in str(e.value)
    assert "add --wait to start when it ends, or pin this one to another CPU with --cpu N" in str(e.value)


def test_a_sweep_on_another_cpu_runs_and_is_warned_about_its_neighbour(tmp_path):
    said: list[str] = []
    with MeasureLock("gzip first", 0, where=tmp_path):
        with MeasureLock("lame second", 1, where=tmp_path, say=said.append):
            assert lock.holders(tmp_path).keys() == {0, 1}
    assert len(said) == 1 and said[0].startswith("warning: another sweep measures on CPU 0 (pid ")
    assert "gzip first" in said[0] and ("share caches" in said[0] or "share one core" in said[0])
    assert lock.holders(tmp_path) == {}   # both let go


HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from flagsweep.host.lock import MeasureLock
    with MeasureLock("holder", 0, where=Path(sys.argv[1])):
        print("held", flush=True)
        sys.stdin.readline()           # hold until the test says
""")


def test_wait_queues_behind_the_holder_and_starts_when_it_lets_go(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "POLL_S", 0.05)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdout.readline() == "held\n"
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        if len(said) == 1:
            holder.stdin.write("go\n")   # the waiter has said who it waits for: let go now
            holder.stdin.flush()

    with MeasureLock("waiter", 0, wait=True, say=say, where=tmp_path):
        assert holder.wait(timeout=30) == 0   # the lock came only once the holder was gone
    assert said[0].startswith(f"waiting for CPU 0: pid {holder.pid}: holder, since ")
    assert said[-1].startswith("CPU 0 is free after ") and said[-1].endswith("; starting")


@pytest.fixture
def sticky(tmp_path):
    """A folder like /tmp (world-writable, sticky) that the user nobody can reach."""
    shared = Path(tempfile.mkdtemp(prefix="flagsweep-sticky-", dir="/tmp"))
    shared.chmod(0o1777)
    yield shared
    shutil.rmtree(shared)


def _as_nobody(*argv: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("planting a file as another user needs root")
    subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv],
                   check=True)


def test_a_lock_planted_as_a_link_by_another_user_is_neither_followed_nor_written(sticky, tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:secret-hash:19000::::::\n")
    secret.chmod(0o600)
    before = secret.stat()
    _as_nobody("ln", "-s", str(secret), str(sticky / "flagsweep-cpu1.lock"))
    with pytest.raises(FlagsweepError) as e, MeasureLock("gzip", 1, where=sticky):
        pass
    assert secret.read_text() == "root:secret-hash:19000::::::\n"
    after = secret.stat()
    assert (after.st_mode, after.st_uid, after.st_size) == (before.st_mode, before.st_uid,
                                                            before.st_size)
    assert str(e.value) == (f"the measurement lock {sticky}/flagsweep-cpu1.lock is a symbolic "
                            "link, not a plain lock file; flagsweep neither follows nor writes "
                            "it (someone may have planted it to have another file overwritten): "
                            "remove it, or ask root to")
    assert "\n" not in str(e.value)


def test_a_lock_planted_as_a_fifo_or_hard_link_is_refused_and_never_hangs(sticky, tmp_path):
    _as_nobody("mkfifo", str(sticky / "flagsweep-cpu2.lock"))
    _as_nobody("sh", "-c", f"echo '{{}}' > {sticky}/mine && ln {sticky}/mine "
                           f"{sticky}/flagsweep-cpu3.lock")
    assert lock.holders(sticky) == {}        # a FIFO opened for reading would block here
    with pytest.raises(FlagsweepError, match="cpu2.lock is not a regular file, not a plain"):
        with MeasureLock("gzip", 2, where=sticky):
            pass
    with pytest.raises(FlagsweepError, match=r"cpu3.lock has 2 names \(a hard link"):
        with MeasureLock("gzip", 3, where=sticky):
            pass
    assert (sticky / "mine").read_text() == "{}\n"


def test_a_lock_file_another_user_created_is_shared(sticky):
    _as_nobody("sh", "-c", f"umask 0; : > {sticky}/flagsweep-cpu4.lock")
    with MeasureLock("gzip", 4, where=sticky):
        assert lock.holders(sticky).keys() == {4}
    assert (sticky / "flagsweep-cpu4.lock").stat().st_uid != 0


@pytest.fixture
def as_root(tmp_path, monkeypatch, sticky):
    """A sweep run as root with no FLAGSWEEP_LOCK_DIR, on a machine whose /tmp is `sticky` and
    whose /run is a folder of the test's own (a sweep of the suite must not lock the real one)."""
    if os.geteuid() != 0:
        pytest.skip("a root sweep's lock folder needs root")
    monkeypatch.delenv("FLAGSWEEP_LOCK_DIR")
    monkeypatch.setattr(lock, "DEFAULT_DIR", sticky)
    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    monkeypatch.setattr(lock, "ROOT_DIR", run / "flagsweep", raising=False)
    return run / "flagsweep"


def test_a_root_sweep_locks_in_a_folder_only_root_can_reach(monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("a root sweep's lock folder needs root")
    monkeypatch.delenv("FLAGSWEEP_LOCK_DIR")
    assert lock.folder() == Path("/run/flagsweep")
    monkeypatch.setenv("FLAGSWEEP_LOCK_DIR", "/somewhere")     # the variable still chooses
    assert lock.folder() == Path("/somewhere")


def test_a_lock_another_user_holds_in_tmp_does_not_hold_a_root_sweep_off(as_root, sticky):
    # nobody creates CPU 5's lock in /tmp and holds it, as any local user can
    held = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                             "flock", str(sticky / "flagsweep-cpu5.lock"), "-c",
                             "echo held; read line"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert held.stdout.readline() == "held\n"
        said: list[str] = []
        with MeasureLock("gzip", 5, say=said.append):
            info = os.lstat(as_root)
            assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o700
            assert (as_root / "flagsweep-cpu5.lock").is_file()
        assert said == [f"warning: a sweep of another user holds CPU 5's lock in {sticky} "
                        "(holder unknown): root's sweeps lock in "
                        f"{as_root}, so it does not hold this one off; if it is measuring, "
                        "both sweeps' timings include the other's"]
    finally:
        held.communicate("go\n", timeout=30)


@pytest.mark.parametrize("planted", ["a link", "another user's folder", "an open folder"])
def test_a_root_lock_folder_someone_else_could_reach_is_refused(as_root, tmp_path, planted):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if planted == "a link":
        as_root.symlink_to(elsewhere)
        why = "is not a folder (a link?)"
    elif planted == "another user's folder":
        as_root.mkdir(mode=0o700)
        os.chown(as_root, pwd.getpwnam("nobody").pw_uid, -1)
        why = f"is owned by uid {pwd.getpwnam('nobody').pw_uid}, not root"
    else:
        as_root.mkdir()
        as_root.chmod(0o1777)
        why = "has mode 1777, open to other users"
    with pytest.raises(FlagsweepError) as e, MeasureLock("gzip", 6):
        pass
    assert str(e.value) == (f"the measurement lock folder {as_root} {why}: root's sweeps lock in "
                            "a folder only root can reach, which flagsweep makes itself; remove "
                            "it, or set FLAGSWEEP_LOCK_DIR")
    assert list(elsewhere.iterdir()) == []       # nothing made through the link


PLANTED_HOLDERS = {
    "escapes": ('{"pid": 4242, "what": "gzip \\u001b]0;owned\\u0007\\u001b[2J", '
                '"since": "2026-12-01 10:00:00"}',
                r"pid 4242: gzip \x1b]0;owned\x07\x1b[2J, since 2026-12-01 10:00:00"),
    "a list": ("[1]", "holder unknown"),
    "null": ("null", "holder unknown"),
    "brackets": ("[" * 4000, "holder unknown"),
}


@pytest.mark.parametrize("planted", PLANTED_HOLDERS)
def test_a_holder_line_planted_by_another_user_is_shown_as_data(planted, sticky, tmp_path,
                                                                 monkeypatch, main):
    """nobody writes the lock file of CPU 0 in a shared folder and holds it; root's sweep on
    CPU 0 is refused, naming the holder. Before: the holder's escape sequences reached root's
    terminal raw (a new window title); a list or null as the holder ended in a TypeError
    traceback, 4000 brackets in a RecursionError."""
    from conftest import raw_controls

    text, holder = PLANTED_HOLDERS[planted]
    path = sticky / "flagsweep-cpu0.lock"
    if os.geteuid() != 0:
        pytest.skip("planting a file as another user needs root")
    hold = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                             "sh", "-c", 'printf %s "$1" > "$2" && exec flock "$2" cat', "sh",
                             text, str(path)], stdin=subprocess.PIPE)
    try:
        while not _held(path):
            assert hold.poll() is None, "the planted holder did not take the lock"
            time.sleep(0.01)
        monkeypatch.setenv("FLAGSWEEP_LOCK_DIR", str(sticky))
        code, err = main("run", "tiny", "--flags", "-O2", "--cpu", "0", "--runs", "1",
                         "--quick", "--out", str(tmp_path / "out"))
    finally:
        hold.communicate(timeout=30)
    assert code == 2
    assert raw_controls(err + main.out) == []
    assert err.splitlines()[-1].startswith(
        f"flagsweep: another sweep is measuring on CPU 0 ({holder}); add --wait")
    assert not (tmp_path / "out").exists()


def _held(path: Path) -> bool:
    """Whether another process holds an flock on path (never following a link there)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
