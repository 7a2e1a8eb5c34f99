"""The wheel works without a checkout: built from this checkout, installed into a fresh venv
that cannot see it, `flagsweep list` shows every shipped target and recipe, `flagsweep build
tiny` builds from the package's own data, and a sweep run from an empty folder writes there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parent.parent


def _run(argv: list, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    out = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, f"{argv} exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
    return out


@pytest.mark.integration
def test_a_wheel_installed_in_a_fresh_venv_lists_and_builds(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    dist = tmp_path / "dist"
    # No build isolation: hatchling comes with the test extra, so no index is needed here.
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "-w", dist, CHECKOUT], tmp_path, env)
    (wheel,) = dist.glob("flagsweep-*.whl")
    fresh = tmp_path / "fresh"
    # without a pip of its own (ensurepip costs seconds): this venv's pip installs into it
    _run([sys.executable, "-m", "venv", "--without-pip", fresh], tmp_path, env)
    python = fresh / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
          "--no-index", wheel], tmp_path, env)
    # The dependencies come from the test venv's site-packages, appended after the fresh
    # venv's own, whose flagsweep (the wheel's) comes first; the checkout is on no path.
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     tmp_path, env).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    where = _run([python, "-c", "import flagsweep; print(flagsweep.__file__)"], tmp_path, env)
    assert where.stdout.strip().startswith(str(site))

    listed = _run([fresh / "bin" / "flagsweep", "list"], tmp_path, env).stdout
    shipped = [line.split()[0] for line in listed.splitlines() if line.endswith("shipped")]
    assert shipped == sorted(p.name for p in (CHECKOUT / "targets").iterdir() if p.is_dir()) + \
        [p.stem for p in sorted((CHECKOUT / "recipes").glob("*.toml"))]   # by file name

    built = _run([fresh / "bin" / "flagsweep", "build", "tiny", "--flags", "-O2", "--json",
                  "--out", tmp_path / "b"], tmp_path, env)
    (variant,) = json.loads(built.stdout)
    assert variant["id"] == "gcc-O2" and variant["build"]["status"] == "ok"
    assert variant["build"]["flags_verified"] is True
    assert (tmp_path / "b" / "builds.json").exists()

    # A sweep from an empty folder: its outputs under ./reports there, no program output left.
    empty = tmp_path / "empty"
    empty.mkdir()
    ran = _run([fresh / "bin" / "flagsweep", "run", "tiny", "--flags", "-O2", "--flags", "-O1",
                "--runs", "2", "--quick", "--schedule", "serial"], empty, env)
    page = Path(ran.stdout.strip().splitlines()[-1])
    assert page.name == "index.html" and page.parent.parent == empty / "reports"
    assert [p for p in (page.parent / "scratch").rglob("*") if p.is_file()] == []
    assert sorted(p.name for p in empty.iterdir()) == ["reports"]
