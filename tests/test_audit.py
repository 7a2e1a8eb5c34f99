"""The flag audit on recorded compile lines: what counts as a code-generation flag, and which
logs pass. The end-to-end cases (real make projects that cheat) are in test_build.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

from flagsweep import audit


def _log(tmp_path: Path, *commands: list[str]) -> Path:
    log = tmp_path / "compile.jsonl"
    log.write_text("".join(json.dumps({"argv": c, "cwd": str(tmp_path)}) + "\n" for c in commands))
    return log


def test_codegen_flags_keep_optimisation_and_drop_project_flags():
    argv = ["gcc", "-DX=1", "-I", "inc", "-Wall", "-g", "-O2", "-std=c99", "-march=native",
            "-fno-strict-aliasing", "-fdiagnostics-color=always", "--param", "l1-cache-size=32",
            "-MF", "-O3", "-c", "a.c", "-o", "a.o"]
    # "-MF -O3": a dependency file oddly named -O3 is a value, not a flag.
    assert audit.codegen_flags(argv) == ["-O2", "-march=native", "-fno-strict-aliasing",
                                         "--param=l1-cache-size=32"]


def test_kind_tells_compile_link_and_probes_apart():
    assert audit.kind(["cc", "-c", "a.c"]) == "compile"
    assert audit.kind(["cc", "-O2", "a.c", "-o", "a"]) == "compile"
    assert audit.kind(["cc", "a.o", "b.o", "-o", "prog"]) == "link"
    assert audit.kind(["cc", "-E", "-dM", "x.c"]) == "other"
    assert audit.kind(["cc", "--version"]) == "other"


def test_exact_flags_pass(tmp_path):
    log = _log(tmp_path, ["cc", "-O2", "-march=x86-64-v3", "-DNDEBUG", "-c", "a.c", "-o", "a.o"],
               ["cc", "-O2", "-march=x86-64-v3", "a.o", "-o", "prog"])
    result = audit.audit(log, tmp_path, ["-O2", "-march=x86-64-v3"], [], time.time())
    assert result.verified and result.compiles == 1 and result.links == 1
    assert result.problems == []


def test_appended_optimisation_level_is_a_mismatch(tmp_path):
    log = _log(tmp_path, ["cc", "-O0", "-O2", "-c", "a.c", "-o", "a.o"])
    result = audit.audit(log, tmp_path, ["-O0"], [], time.time())
    assert not result.verified
    assert result.problems[0].startswith("compile has extra -O2: cc -O0 -O2 -c a.c")


def test_missing_flag_and_wrong_order_are_mismatches(tmp_path):
    missing = audit.audit(_log(tmp_path, ["cc", "-O2", "-c", "a.c"]), tmp_path,
                          ["-O2", "-mfpmath=387"], [], time.time())
    assert "missing -mfpmath=387" in missing.problems[0]
    swapped = audit.audit(_log(tmp_path, ["cc", "-mno-avx", "-mavx", "-c", "a.c"]), tmp_path,
                          ["-mavx", "-mno-avx"], [], time.time())
    assert "order -mno-avx -mavx instead of -mavx -mno-avx" in swapped.problems[0]


def test_repeated_flag_is_not_a_mismatch(tmp_path):
    log = _log(tmp_path, ["cc", "-O3", "-DX", "-O3", "-c", "a.c"])
    assert audit.audit(log, tmp_path, ["-O3"], [], time.time()).verified


def test_tolerated_flags_pass_and_are_listed(tmp_path):
    log = _log(tmp_path, ["cc", "-O2", "-msse", "-c", "a.c"])
    result = audit.audit(log, tmp_path, ["-O2"], ["-msse"], time.time())
    assert result.verified and result.tolerated_seen == ["-msse"]


def test_link_step_adding_lto_is_a_mismatch(tmp_path):
    log = _log(tmp_path, ["cc", "-O2", "-c", "a.c"], ["cc", "-O2", "-flto", "a.o", "-o", "p"])
    result = audit.audit(log, tmp_path, ["-O2"], [], time.time())
    assert result.problems == [f"link step adds -flto: cc -O2 -flto a.o -o p  (in {tmp_path})"]


def test_objects_not_in_the_log_are_caught(tmp_path):
    since = time.time()
    (tmp_path / "a.o").write_bytes(b"")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.o").write_bytes(b"")
    log = _log(tmp_path, ["cc", "-O2", "-c", "a.c"])  # no -o: a.o in the cwd
    result = audit.audit(log, tmp_path, ["-O2"], [], since)
    assert not result.verified
    assert result.problems == ["1 object file(s) were not compiled through the audited compiler "
                               "(a hard-coded compiler in the build?): sub/b.o"]


def test_empty_log_is_never_verified(tmp_path):
    result = audit.audit(tmp_path / "absent.jsonl", tmp_path, ["-O2"], [], time.time())
    assert not result.verified
    assert "no compile command was recorded" in result.problems[0]


def test_two_word_param_in_the_variant_matches_the_compile_line(tmp_path):
    log = _log(tmp_path, ["cc", "-O2", "--param", "max-unroll-times=4", "-c", "a.c"])
    assert audit.audit(log, tmp_path, ["-O2", "--param", "max-unroll-times=4"], [],
                       time.time()).verified


def test_a_tolerated_flag_that_is_also_the_variants_own_is_expected(tmp_path):
    log = _log(tmp_path, ["cc", "-O2", "-msse", "-c", "a.c"], ["cc", "-O2", "-msse", "-msse", "-c", "b.c"])
    own = audit.audit(log, tmp_path, ["-O2", "-msse"], ["-msse"], time.time())
    assert own.verified and own.tolerated_seen == []
    other = audit.audit(log, tmp_path, ["-O2"], ["-msse"], time.time())
    assert other.verified and other.tolerated_seen == ["-msse"]  # listed once
