"""process.run: a program and everything it starts end when the wait for it is cut short."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from procs import alive, kill_all, marker, running, wait_for

from flagsweep import process


@pytest.fixture
def mark():
    m = marker()
    yield m
    kill_all(m)


def test_sigterm_ends_the_whole_group_of_a_running_command(mark):
    """As ninja does to a build step: SIGTERM to a Python process waiting in process.run (no
    handler of its own). It used to die at once and leave its program's children running."""
    script = textwrap.dedent(f"""
        from flagsweep import process
        process.run(["sh", "-c", "sleep {mark} & sleep {mark}; :"])
    """)
    parent = subprocess.Popen([sys.executable, "-c", script])
    wait_for(lambda: len(running(mark)) == 2, "both sleeps to start")
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=60) != 0
    assert running(mark) == []


def test_a_timeout_ends_the_whole_group(mark):
    with pytest.raises(subprocess.TimeoutExpired):
        process.run(["sh", "-c", f"sleep {mark} & sleep {mark}; :"], timeout=0.5)
    assert running(mark) == []


def test_a_timeout_ends_children_in_groups_of_their_own(mark):
    """ninja gives each job a process group, and a build step gives its make another: those
    groups outlive the leader's, so they are followed and ended too, before run returns."""
    with pytest.raises(subprocess.TimeoutExpired):
        process.run(["sh", "-c", (f"setsid sleep {mark} & setsid sh -c 'sleep {mark}; :' & "
                                  f"sleep {mark}; :")], timeout=0.5)
    assert running(mark) == []


def test_a_normal_run_is_unchanged():
    r = process.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (r.returncode, r.stdout, r.stderr) == (3, "out\n", "err\n")
    assert process.run(["cat"], input="fed").stdout == "fed"


def test_a_guarded_run_is_unchanged(tmp_path):
    """Under the guard (process.run(guard=True)) a program's output, exit status, input,
    signal death and absence are what they are without it."""
    r = process.run(["sh", "-c", "echo out; echo err >&2; exit 3"], guard=True)
    assert (r.argv[0], r.returncode, r.stdout, r.stderr) == ("sh", 3, "out\n", "err\n")
    assert process.run(["cat"], input="fed", guard=True).stdout == "fed"
    assert process.run(["sh", "-c", "kill -SEGV $$"], guard=True).returncode == -signal.SIGSEGV
    with pytest.raises(FileNotFoundError):
        process.run(["no-such-program-here"], guard=True)
    log = tmp_path / "log"
    assert process.run(["sh", "-c", "echo logged"], log_file=log, guard=True).ok
    assert log.read_text() == "$ sh -c 'echo logged'\nlogged\n"


def test_a_guarded_command_leaves_nothing_running_after_it_exits(mark):
    """What a guarded command starts and leaves behind, even in a session of its own, ends
    with it instead of running beside the measurements."""
    r = process.run(["sh", "-c", f"setsid sleep {mark} & sleep {mark} & exit 0"], guard=True)
    assert r.ok
    assert running(mark) == []


def test_the_guard_told_again_after_it_reaped_the_command_still_ends_quietly():
    """flagsweep's threads die one by one under SIGKILL and the kernel signals the guard once per
    thread. A signal that came after the guard had reaped the command killed the guard itself (no
    such process to kill), and the rest of the build ran on under PID 1."""
    script = textwrap.dedent(f"""
        import importlib.util, os, signal
        spec = importlib.util.spec_from_file_location("guard", {str(process.GUARD)!r})
        guard = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(guard)
        command = os.fork()
        if command == 0:
            os._exit(0)
        os.waitpid(command, 0)              # ended and reaped by the first signal's work
        guard.child = command
        guard._parent_gone(signal.SIGUSR1, None)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr) == (1, "")


def _mentioning(text: str) -> list[int]:
    """Pids of live processes with `text` in their command line."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and text.encode() in (d / "cmdline").read_bytes():
                found.append(int(d.name))
        except OSError:
            continue
    return found


def _described(pids: list[int]) -> list[str]:
    """pid, state, parent and command line of each process, for a failure to say what is left."""
    lines = []
    for pid in dict.fromkeys(pids):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
        lines.append(f"{pid} {state} ppid {ppid}: {cmd[:200]}")
    return lines


def _slow_make_target(tmp_path: Path, mark: str) -> Path:
    """A make project whose build sleeps `mark` seconds in every variant's build step."""
    src = tmp_path / "slow" / "src"
    src.mkdir(parents=True)
    (src / "prog.c").write_text("int main(void) { return 0; }\n")
    (src / "Makefile").write_text(f"prog: prog.c\n\tsleep {mark}\n\t$(CC) $(CFLAGS) -o prog prog.c\n")
    (src.parent / "target.toml").write_text(textwrap.dedent("""
        summary = "a build step that sleeps"
        version = "0"
        [source]
        path = "src"
        [build]
        system = "make"
        binary = "prog"
        [inputs]
        kind = "corpus"
        megabytes = 1
        quick_megabytes = 1
        [run]
        argv = ["{binary}"]
        [check]
        method = "exact"
    """))
    return src.parent


@pytest.mark.integration
def test_sigterm_during_the_build_leaves_no_build_running(tmp_path, mark):
    """`flagsweep run` stopped by SIGTERM while make sleeps in a build step: ninja, make and the
    step used to build on after flagsweep had exited and released the measurement lock."""
    target = _slow_make_target(tmp_path, mark)
    out = tmp_path / "out"
    sweep = subprocess.Popen([sys.executable, "-m", "flagsweep", "run", str(target), "--flags",
                              "-O2", "--flags", "-O1", "--quick", "--runs", "2", "--out", str(out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: len(running(mark)) == 2, "both variants' build steps to start")
    sweep.send_signal(signal.SIGTERM)
    sweep.communicate(timeout=120)
    assert sweep.returncode != 0
    assert running(mark) == [] and _mentioning(str(out)) == []


@pytest.mark.integration
@pytest.mark.parametrize("command", ["build", "run"])
def test_sigkill_during_the_build_leaves_no_build_running(tmp_path, mark, command):
    """kill -9 of flagsweep while make sleeps in a build step: nothing in flagsweep can act,
    and the superbuild (cmake, ninja, each step, make) built on under PID 1 with the
    measurement lock already free. Its guard ends all of it."""
    target = _slow_make_target(tmp_path, mark)
    out = tmp_path / "out"
    extra = ["--quick", "--runs", "2"] if command == "run" else []
    sweep = subprocess.Popen([sys.executable, "-m", "flagsweep", command, str(target), "--flags",
                              "-O2", "--flags", "-O1", *extra, "--out", str(out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: len(running(mark)) == 2, "both variants' build steps to start")
    builders = _mentioning(str(out))
    assert builders                                 # cmake, ninja, the steps, make
    sweep.kill()
    assert sweep.wait(timeout=60) == -signal.SIGKILL
    try:
        wait_for(lambda: running(mark) == [] and not any(alive(p) for p in _mentioning(str(out))),
                 "every process of the build to end", seconds=30)
    except AssertionError as e:
        raise AssertionError(f"{e}; left: {_described(running(mark) + _mentioning(str(out)))}")
