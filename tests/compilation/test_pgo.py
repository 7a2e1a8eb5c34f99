"""Profile-guided builds (build/pgo.py): instrumented, trained on another input, built again
with the profile, and the profile proven used; the compilers' words for a profile that does
not fit are read from the build log."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_target import write_tiny_target

from flagsweep import model
from flagsweep.compilation import pgo, variants
from flagsweep.compilation.manifest import Order, Profiling
from flagsweep.experiment.matrix import Cell

RECIPE = '''summary = "pgo against plain"
compilers = ["{compiler}"]
baseline = {{ mode = "plain" }}
[axes]
mode = [{{ label = "plain", flags = "-O2" }}, {{ label = "pgo", flags = "-O2", build = "pgo" }}]
'''


@pytest.mark.integration
@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_a_pgo_variant_is_trained_on_another_input_and_built_with_its_profile(
        tmp_path, compiler, isolated_cache):
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    target = write_tiny_target(tmp_path / "tiny", megabytes=0.3, quick_megabytes=0.2)
    (tmp_path / "pgo.toml").write_text(RECIPE.format(compiler=compiler))
    done = subprocess.run([sys.executable, "-m", "flagsweep", "build", str(target), "--recipe",
                           str(tmp_path / "pgo.toml"), "--out", str(tmp_path / "out"), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    builds = {b["id"]: b for b in json.loads(done.stdout)}
    plain = builds[f"{compiler}-O2"]["build"]
    trained = builds[f"{compiler}-O2-pgo"]["build"]
    assert plain["pgo"] is None and trained["status"] == "ok" and trained["flags_verified"]
    p = trained["pgo"]
    assert p["matched"] and len(p["profile_sha256"]) == 64
    assert p["input"].endswith("seed 8 (training)")          # the measured input is seed 7
    assert p["training"].split()[0].endswith("/tiny")
    use = "-fprofile-instr-use=" if compiler == "clang" else "-fprofile-use="
    assert any(f.startswith(use) for f in p["use_flags"])
    assert any(f.startswith(use) for f in trained["audit"]["compile_line"])   # on the compiles
    assert trained["code_sha256"] != plain["code_sha256"]


def _built(tmp_path: Path, log: str, profile: bool = True, compiles: int = 3) -> variants.VariantBuild:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "build.log").write_text(log)
    profiles = tmp_path / "profile"
    profiles.mkdir(exist_ok=True)
    if profile:
        (profiles / "a.gcda").write_bytes(b"counts")
    b = variants.VariantBuild(Cell("gcc-O2-pgo", "gcc", ("-O2",), {}, pgo=True), "ok",
                              tmp_path / "build.log", flags_verified=True,
                              audit=model.AuditSummary(verified=True, compiles=compiles))
    entry = Order(compiler="gcc", template="gcc", dir=tmp_path, jobs=1,
                  flags=["-O2", f"-fprofile-use={profiles}", "-Wmissing-profile"],
                  pgo=Profiling(profile_dir=profiles, instrumented=["-O2"],
                                train_argv=["prog", "in"], timeout=1, input="x"))
    variants._profile_used(b, entry)
    return b


STAGES = "make ...\nflagsweep: training run prog in: exit 0 (its output: training.out)\n"


def test_a_profile_that_does_not_fit_its_code_is_a_mismatch(tmp_path):
    b = _built(tmp_path, STAGES + "a.c:3:1: warning: number of counters in profile data for "
               "function 'f' does not match its profile data (counter 'arcs', expected 7 and "
               "have 5) [-Wcoverage-mismatch]\n")
    assert b.status == "flags-mismatch" and not b.flags_verified and not b.pgo.matched
    assert "profile-guided build: a.c:3:1: warning: number of counters" in b.detail


def test_missing_profiles_are_counted_and_fail_only_when_no_compile_found_one(tmp_path):
    missing = ("b.c:1:1: warning: '/p/#b.gcda' profile count data file not found "
               "[-Wmissing-profile]\n")
    some = _built(tmp_path / "some", STAGES + missing, compiles=3)
    assert some.status == "ok" and some.pgo.matched and some.pgo.objects_without_profile == 1
    every = _built(tmp_path / "all", STAGES + missing * 3, compiles=3)
    assert every.status == "flags-mismatch" and "no compile of the last stage found its profile" \
        in every.detail
    empty = _built(tmp_path / "none", STAGES, profile=False)
    assert empty.status == "flags-mismatch"                  # the training wrote nothing
    # warnings from the instrumented stage, before the training, are not the last stage's
    early = _built(tmp_path / "early", "x.c: coverage mismatch\n" + STAGES)
    assert early.status == "ok"


def test_the_stage_flags_of_each_compiler():
    d = Path("/p")
    assert pgo.generate("gcc", d) == ["-fprofile-generate=/p", "-fprofile-update=single"]
    assert pgo.use("gcc", d) == ["-fprofile-use=/p", "-Wmissing-profile"]
    assert pgo.generate("clang", d) == ["-fprofile-instr-generate=/p/%m-%p.profraw"]
    assert pgo.use("clang", d) == ["-fprofile-instr-use=/p/merged.profdata"]


def test_the_clean_between_stages_keeps_make_options_and_drops_targets():
    """`make clean bzip2` would clean and build again with the Makefile's own flags."""
    from flagsweep.compilation.steps import _make_options

    assert _make_options(["bzip2"]) == []
    assert _make_options(["-C", "programs", "zstd-release", "HAVE_THREAD=0"]) == \
        ["-C", "programs", "HAVE_THREAD=0"]
    assert _make_options(["ASSOCMATHCFLAGS="]) == ["ASSOCMATHCFLAGS="]
