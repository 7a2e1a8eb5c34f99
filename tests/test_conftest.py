"""The suite's own guard against a sweep outliving the test that started it (conftest.py)."""

from __future__ import annotations

import os

from conftest import planted_session
from procs import alive

# The first test starts a long sweep on CPU 0 and fails while it measures; the second takes
# CPU 0's lock as a sweep would. Without the guard it is refused ("another sweep is measuring on
# CPU 0"). Serial: no duet pilot before the first round, which is all the first one waits for.
PLANTED = '''
import subprocess, sys
from pathlib import Path

def test_fails_while_its_sweep_measures(tmp_path):
    sweep = subprocess.Popen([sys.executable, "-m", "flagsweep", "run", "tiny", "--flags", "-O2",
                              "--runs", "100000", "--quick", "--cpu", "0", "--schedule", "serial",
                              "--out", str(tmp_path / "long")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    Path("SWEEP_PID").write_text(str(sweep.pid))
    while not (line := sweep.stderr.readline()).startswith("round 1/"):
        assert line, "the sweep ended before measuring"
    assert False, "a failure while the sweep runs"

def test_measures_on_the_same_cpu_next():
    from flagsweep.host.lock import MeasureLock
    with MeasureLock("the next sweep", 0):     # refused while the first one still holds CPU 0
        pass
'''


def test_a_sweep_left_by_a_failing_test_is_ended_before_the_next_test(tmp_path):
    done = planted_session(tmp_path, PLANTED.replace("SWEEP_PID", str(tmp_path / "sweep.pid")))
    sweep = int((tmp_path / "sweep.pid").read_text())
    if alive(sweep):   # the guard failed: end what it left, then say so
        os.kill(sweep, 9)
    assert "1 failed, 1 passed" in done.stdout, done.stdout[-3000:]
    assert "a failure while the sweep runs" in done.stdout
    assert not alive(sweep)
