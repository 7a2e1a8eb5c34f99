"""Every shipped real program end to end: fetched (Debian's source package when the upstream
site is out of reach), built with its flags verified, output checked, measured. One variant
each, two quick rounds: this proves the target file, not the program's speed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from flagsweep.compilation import sources_list
from flagsweep.experiment import target

pytestmark = [pytest.mark.network, pytest.mark.integration]
# Every shipped target that is fetched (tiny is bundled and tested everywhere else).
PROGRAMS = [t.name for t in target.available() if t.spec.source.path is None]


@pytest.mark.parametrize("name", PROGRAMS)
def test_shipped_target_builds_checks_and_runs(name, tmp_path):
    if shutil.which("apt-get") is None or not sources_list.private_sources():
        pytest.skip("no Debian source packages reachable (apt-get or its sources missing)")
    out = tmp_path / name
    result = subprocess.run([sys.executable, "-m", "flagsweep", "run", name, "--flags", "-O2",
                             "--runs", "2", "--warmup", "0", "--quick", "--seed", "1",
                             # serial: the duet pilot would measure 24 runs more per target,
                             # and schedules are tested on tiny (tests/jobs/test_duet_sweep.py)
                             "--schedule", "serial", "--out", str(out)],
                            capture_output=True, text=True,
                            # No compile here can hit ccache (a fresh cache, each source built
                            # once per flag set), so it would only add its preprocessing and
                            # hashing to every miss (measured: xz's test takes 20% less CPU,
                            # 64 s -> 52 s; the others' change is within noise, under 10%).
                            # The wrapper then runs the compiler itself:
                            # the same code and compile lines (docs/audit.md); ccache is
                            # tested on tiny (test_build.py).
                            env={**os.environ, "FLAGSWEEP_CCACHE": "0"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2-2 rounds, 1 warmup" in result.stderr     # --metric auto's own warmup round
    doc = json.loads((out / "results.json").read_text())
    (v, twin) = doc["variants"]
    assert v["build"]["status"] == "ok" and v["build"]["flags_verified"]
    assert v["build"]["audit"]["compiles"] > 0
    assert v["check"]["status"] == "ok", v["check"]
    if target.load(name).spec.check.method == "quality":     # lame: its MP3 decoded and measured
        assert v["check"]["quality"]["snr_db"] > 0 and twin["check"]["status"] == "ok"
    assert v["summary"]["n"] == 2 and twin["summary"]["n"] == 2
    assert doc["target_version"] == target.load(name).spec.version
    assert (out / "index.html").exists()
