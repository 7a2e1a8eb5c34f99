"""One execution by the launcher (host.launcher): crash, timeout, exit status, stderr, perf, and
what it leaves behind when it cannot report."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from procs import kill_all, marker, running, wait_for

from flagsweep.errors import FlagsweepError
from flagsweep.host import launcher, native, probes

PROGRAM = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    if (!strcmp(mode, "crash")) { fprintf(stderr, "about to crash\n"); raise(SIGSEGV); }
    if (!strcmp(mode, "exit")) { fprintf(stderr, "bad input\n"); return 3; }
    if (!strcmp(mode, "hang")) for (;;) pause();
    if (!strcmp(mode, "env")) { printf("%zu\n", strlen(getenv("FLAGSWEEP_PAD"))); return 0; }
    if (!strcmp(mode, "alloc")) { volatile char *p = malloc(64 << 20); for (long i = 0; i < (64L << 20); i += 4096) p[i] = 1; return p[4096] - 1; }
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < 20000000UL; i++) x += i;
    printf("%lu\n", x);
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("prog")
    (d / "p.c").write_text(PROGRAM)
    subprocess.run(["gcc", "-O1", "-o", str(d / "p"), str(d / "p.c")], check=True)
    return d / "p"


def _run(program: Path, tmp_path: Path, mode: str, **kw) -> launcher.Execution:
    return launcher.run_once([str(program), mode], env=launcher.padded_env(launcher.MINIMAL_ENV, 10),
                           timeout=kw.pop("timeout", 10), stderr_path=tmp_path / "err",
                           stdout_path=tmp_path / "out", **kw)


def test_a_good_run_has_times_and_rusage(program, tmp_path):
    e = _run(program, tmp_path, "ok")
    assert e.failure is None
    assert 0 < e.wall_s < 5 and e.user_s > 0 and e.maxrss_kb > 0
    assert e.user_s <= e.wall_s * 1.05


def test_maxrss_is_the_workloads_own_not_flagsweeps(program, tmp_path):
    """The kernel carries the pre-exec peak RSS into maxrss: spawned straight from this 100+ MB
    Python, a tiny program reported Python's size. Through the launcher it reports its own."""
    import resource
    parent_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    small = _run(program, tmp_path, "env")
    assert small.maxrss_kb < 8 * 1024 < parent_kb or parent_kb < 8 * 1024
    big = _run(program, tmp_path, "alloc")
    assert big.failure is None and 64 * 1024 <= big.maxrss_kb < 80 * 1024


def test_an_interrupt_kills_the_running_workload(program, tmp_path, monkeypatch):
    spawned = []
    real_spawn = os.posix_spawn

    def spawn(*args, **kw):
        spawned.append(real_spawn(*args, **kw))
        return spawned[-1]

    def interrupted(pid, timeout):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "posix_spawn", spawn)
    monkeypatch.setattr(launcher, "_wait_or_kill", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _run(program, tmp_path, "hang")
    # The whole group is gone once init has reaped the orphaned workload (a zombie keeps the
    # group alive for a moment).
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(spawned[0], 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    else:
        raise AssertionError("the workload's process group survived the interrupt")


def test_crash_exit_and_timeout_are_failures_with_stderr(program, tmp_path):
    crash = _run(program, tmp_path, "crash")
    assert crash.failure == "crashed: SIGSEGV; stderr: about to crash" and crash.wall_s is None
    bad = _run(program, tmp_path, "exit")
    assert bad.failure == "exit status 3; stderr: bad input"
    start = time.monotonic()
    hang = _run(program, tmp_path, "hang", timeout=0.5)
    assert hang.failure == "timeout after 0.5 s (killed)"
    assert time.monotonic() - start < 3


def test_environment_is_minimal_and_padded(program, tmp_path):
    e = launcher.run_once([str(program), "env"], env=launcher.padded_env(launcher.MINIMAL_ENV, 1234),
                        timeout=5, stderr_path=tmp_path / "err", stdout_path=tmp_path / "out")
    assert e.failure is None and (tmp_path / "out").read_text().strip() == "1234"


needs_perf = pytest.mark.skipif(probes.preflight().mode == "none", reason="perf is not usable here")


@needs_perf
def test_under_perf_counters_are_added_and_the_launchers_report_stays_the_truth(program, tmp_path):
    pre = probes.preflight()
    e = _run(program, tmp_path, "ok", perf=pre, perf_csv=tmp_path / "perf.csv")
    assert e.failure is None and e.counters["task_clock_s"] > 0
    assert 0 < e.maxrss_kb < 8 * 1024  # the workload's own peak, not perf's
    # perf exits 0 when its workload crashes, and on this VM sometimes misses the workload
    # altogether; the launcher inside perf still reports the crash, every time.
    for _ in range(20):
        crash = _run(program, tmp_path, "crash", perf=pre, perf_csv=tmp_path / "perf.csv")
        assert crash.failure.startswith("crashed: SIGSEGV")


def test_choose_cpu_prefers_an_isolated_cpu():
    assert launcher.choose_cpu([3]) == 3
    assert launcher.choose_cpu([]) == max(os.sched_getaffinity(0))


def test_pinned_restores_affinity():
    before = os.sched_getaffinity(0)
    with launcher.pinned(min(before)):
        assert os.sched_getaffinity(0) == {min(before)}
    assert os.sched_getaffinity(0) == before


# ---- a launcher that could not report ----------------------------------------------------------

def test_a_full_disk_stops_the_run_naming_the_disk(program, small_fs):
    """The launcher's report on a full disk came back empty: KeyError 'nvcsw'. Every later run
    would fail the same way, so it is an error naming the disk, not a failed sample."""
    small_fs.fill()
    with pytest.raises(FlagsweepError, match=rf"^the disk holding {re.escape(str(small_fs.path))} "
                       r"is full \(the launcher's report err.launch is incomplete\): free space "
                       r"there, then run again \(flagsweep run --resume continues a sweep\)$"):
        _run(program, small_fs.path, "ok")


def test_a_report_cut_short_is_no_report(program, tmp_path):
    _run(program, tmp_path, "ok")
    text = (tmp_path / "err.launch").read_text()
    assert launcher._read_report(tmp_path / "err.launch")["nvcsw"] >= 0
    cut = tmp_path / "cut"
    for n in range(len(text)):
        cut.write_text(text[:n])
        assert launcher._read_report(cut) is None, text[:n]


def test_a_launcher_killed_before_its_report_is_a_failed_run(tmp_path):
    """The workload kills its parent, the launcher (as the OOM killer might): a failed run with
    the reason, not a traceback."""
    e = launcher.run_once(["/bin/sh", "-c", "echo going >&2; kill -9 $PPID"], env=launcher.MINIMAL_ENV,
                        timeout=10, stderr_path=tmp_path / "err")
    assert e.failure == (f"the launcher's report {tmp_path / 'err.launch'} is missing "
                         "(launcher: killed by SIGKILL); stderr: going")
    assert e.wall_s is None


# ---- nothing a workload starts outlives it ---------------------------------------------------

@pytest.fixture
def mark():
    m = marker()
    yield m
    kill_all(m)


def test_processes_a_workload_leaves_are_ended_with_it(tmp_path, mark):
    """A forked child in the workload's group, one that left it with setsid, and one whose
    parent exited at once: after a normal exit all three ran on beside the next run."""
    e = launcher.run_once(["/bin/sh", "-c", f"sleep {mark} & setsid sleep {mark} & "
                         f"(sleep {mark} &); echo done"], env=launcher.MINIMAL_ENV, timeout=30,
                        stderr_path=tmp_path / "err", stdout_path=tmp_path / "out")
    assert e.failure is None and (tmp_path / "out").read_text() == "done\n"
    assert running(mark) == []
    assert launcher._read_report(tmp_path / "err.launch")["leftover"] == 3


def test_a_timeout_ends_what_left_the_group_too(tmp_path, mark):
    e = launcher.run_once(["/bin/sh", "-c", f"setsid sleep {mark} & sleep {mark}"],
                        env=launcher.MINIMAL_ENV, timeout=0.5, stderr_path=tmp_path / "err")
    assert e.failure == "timeout after 0.5 s (killed)"
    assert running(mark) == []


HUNG_RUN = """
import sys
from pathlib import Path
from flagsweep.host import launcher, native, probes
folder, mark, perf = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "perf"
pre = None
if perf:  # a stand-in for perf: a parent between flagsweep and the launcher that stays alive
    probes.perf_prefix = lambda pre, csv: ["/bin/sh", "-c", '"$@"; exit $?', "sh"]
    pre = probes.Preflight(perf=None, mode="software", events=(), paranoid=None,
                           hw_counters=False, reasons=())
launcher.run_once(["sleep", mark], env=launcher.MINIMAL_ENV, timeout=3600, perf=pre,
                perf_csv=folder / "perf.csv", stderr_path=folder / "timing.stderr")
"""


def _killed_while_hung(folder, mark, perf: bool) -> int:
    """A flagsweep process killed with -9 while its workload hangs; its pid."""
    folder.mkdir()
    sweep = subprocess.Popen([sys.executable, "-c", HUNG_RUN, str(folder), mark,
                              "perf" if perf else "plain"])
    wait_for(lambda: running(mark), "the workload to start")
    sweep.kill()
    sweep.wait()
    return sweep.pid


def test_kill_9_of_flagsweep_ends_its_hung_workload(tmp_path, mark):
    """The kernel tells the launcher its parent died (PR_SET_PDEATHSIG): it ends the workload."""
    _killed_while_hung(tmp_path / "run", mark, perf=False)
    wait_for(lambda: running(mark) == [], "the hung workload to end")


def test_a_resumed_run_stops_a_workload_left_running(tmp_path, mark, caplog):
    """With perf between them, the launcher's parent (perf) lives on after kill -9 of flagsweep
    and the hung workload with it. The next run in that folder finds it, says so, stops it."""
    folder = tmp_path / "run"
    owner = _killed_while_hung(folder, mark, perf=True)
    assert len(running(mark)) == 1
    record = folder / "timing.stderr.running"
    started_by = int(record.read_text().split()[0])
    e = launcher.run_once(["/bin/true"], env=launcher.MINIMAL_ENV, timeout=30,
                        stderr_path=folder / "timing.stderr")
    assert e.failure is None and running(mark) == [] and not record.exists()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [f"a workload started by flagsweep process {owner}, which is gone, was "
                        f"still running (launcher pid {started_by}, recorded in {record}); "
                        "stopping it before measuring beside it"]


def test_the_launchers_files_are_never_written_through_a_planted_link(program, tmp_path):
    """Links planted in the scratch folder under the names a run writes (its stdout, stderr,
    the launcher's report and the running record) point to a root-owned 0600 file: the run
    replaces the links with files of its own and the file keeps its content and mode."""
    victim = tmp_path / "shadow"
    victim.write_text("root:secret-hash:19000::::::\n")
    victim.chmod(0o600)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for name in ("out", "err", "err.launch", "err.running"):
        (scratch / name).symlink_to(victim)
    e = launcher.run_once([str(program), "ok"], env=launcher.padded_env(launcher.MINIMAL_ENV, 10),
                          timeout=10, stderr_path=scratch / "err", stdout_path=scratch / "out")
    assert e.failure is None and e.wall_s > 0
    assert victim.read_text() == "root:secret-hash:19000::::::\n"
    assert victim.stat().st_mode & 0o777 == 0o600
    assert not (scratch / "out").is_symlink() and (scratch / "out").read_text().strip().isdigit()


def test_the_launcher_itself_never_writes_its_report_through_a_link(tmp_path):
    victim = tmp_path / "shadow"
    victim.write_text("secret\n")
    (tmp_path / "report").symlink_to(victim)
    done = subprocess.run([str(native.launcher()), str(tmp_path / "report"), "/bin/true"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and victim.read_text() == "secret\n"
    assert done.stderr.startswith(f"{tmp_path / 'report'}: File exists")
