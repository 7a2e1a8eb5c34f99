"""The flag audit on recorded compile lines: what counts as a code-generation flag, and which
logs pass. The end-to-end cases (real make projects that cheat) are in test_build.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

from flagsweep import files
from flagsweep.compilation import audit, provenance, records
from flagsweep.compilation.snapshots import pristine


def _log(tmp_path: Path, *commands: list[str]) -> Path:
    """A compile log of these commands, run in tmp_path, each compile with the (empty) snapshot
    of its source the wrapper would have kept: the audit reads what every compile compiled."""
    kept = tmp_path / "compiled" / files.sha256_bytes(b"")
    kept.mkdir(parents=True, exist_ok=True)

    def record(argv: list[str]) -> dict:
        sources = [a for a in argv[1:] if a.endswith(".c")]
        for source in sources:
            (kept / source).touch()
        return {"argv": argv, "cwd": str(tmp_path),
                "snapshots": [[s, "c", files.sha256_bytes(b""), str(kept / s)] for s in sources]}

    log = tmp_path / "compile.jsonl"
    log.write_text("".join(json.dumps(record(c)) + "\n" for c in commands))
    return log


def test_codegen_flags_keep_optimisation_and_drop_project_flags():
    argv = ["gcc", "-DX=1", "-I", "inc", "-Wall", "-g", "-O2", "-std=c99", "-march=native",
            "-fno-strict-aliasing", "-fdiagnostics-color=always", "--param", "l1-cache-size=32",
            "-MF", "-O3", "-c", "a.c", "-o", "a.o"]
    # "-MF -O3": a dependency file oddly named -O3 is a value, not a flag.
    assert records.codegen_flags(argv) == ["-O2", "-march=native", "-fno-strict-aliasing",
                                           "--param=l1-cache-size=32"]


def test_kind_tells_compile_link_and_probes_apart():
    assert records.kind(["cc", "-c", "a.c"]) == "compile"
    assert records.kind(["cc", "-O2", "a.c", "-o", "a"]) == "compile"
    assert records.kind(["cc", "a.o", "b.o", "-o", "prog"]) == "link"
    assert records.kind(["cc", "-E", "-dM", "x.c"]) == "other"
    assert records.kind(["cc", "--version"]) == "other"


def test_exact_flags_pass(tmp_path):
    log = _log(tmp_path, ["cc", "-O2", "-march=x86-64-v3", "-DNDEBUG", "-c", "a.c", "-o", "a.o"],
               ["cc", "-O2", "-march=x86-64-v3", "a.o", "-o", "prog"])
    result = audit.audit(log, tmp_path, ["-O2", "-march=x86-64-v3"], [], time.time())
    assert result.verified and result.compiles == 1 and result.links == 1
    assert result.problems == []


def test_a_probe_that_writes_nothing_is_not_held_to_the_flags(tmp_path):
    log = _log(tmp_path, ["cc", "-Wdeclaration-after-statement", "-c", "-x", "c", "/dev/null",
                          "-o", "/dev/null"],
               ["cc", "-O2", "-c", "a.c", "-o", "a.o"])
    result = audit.audit(log, tmp_path, ["-O2"], [], time.time())
    assert result.verified and result.compiles == 1
    log = _log(tmp_path, ["cc", "-c", "a.c", "-o", "a.o"])
    assert not audit.audit(log, tmp_path, ["-O2"], [], time.time()).verified


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


def test_a_clang_value_handed_on_in_the_variant_matches_the_compile_line(tmp_path):
    log = _log(tmp_path, ["clang", "-O2", "-mllvm", "-unroll-threshold=100", "-c", "a.c"])
    assert audit.audit(log, tmp_path, ["-O2", "-mllvm", "-unroll-threshold=100"], [],
                       time.time()).verified


def test_a_tolerated_flag_that_is_also_the_variants_own_is_expected(tmp_path):
    log = _log(tmp_path, ["cc", "-O2", "-msse", "-c", "a.c"], ["cc", "-O2", "-msse", "-msse", "-c", "b.c"])
    own = audit.audit(log, tmp_path, ["-O2", "-msse"], ["-msse"], time.time())
    assert own.verified and own.tolerated_seen == []
    other = audit.audit(log, tmp_path, ["-O2"], ["-msse"], time.time())
    assert other.verified and other.tolerated_seen == ["-msse"]  # listed once


# ---- real make projects that slip code past the flags: built through the real wrapper -------

import os
import shlex
import platform
import shutil
import subprocess

import pytest

from flagsweep.compilation import wrapper

MAIN = "int helper(int x);\nint main(void) { return helper(0); }\n"
HELPER = "int helper(int x) { int s = 0; for (int i = 0; i < 100; i++) s += x * i; return s; }\n"
HONEST = ("prog: a.o b.o\n\t$(CC) $(CFLAGS) -o prog a.o b.o\n"
          "%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n")


@pytest.fixture
def make_project(tmp_path, isolated_cache):
    """Build a make project (files: name -> text) with the real wrapper as CC and `make
    CFLAGS=<flags>`, as the step driver does, then audit it with the measured binary `prog`."""
    def build(files: dict[str, str], flags: str = "-O2", tolerated: tuple[str, ...] = (),
              before=None, compiler: str = "gcc") -> audit.Audit:
        real = Path(shutil.which(compiler))
        cc = wrapper.install(real, isolated_cache / "wrappers" / f"audit-test-{compiler}" / "cc",
                             real, None)
        tree = tmp_path / "tree"
        tree.mkdir()
        for name, text in files.items():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_text(text)
        if before:
            before(tree)      # what the project ships: made before the build step starts
        shipped = pristine(tree)
        since = time.time()
        log, snapshots = tmp_path / "compile.jsonl", tmp_path / "compiled"
        snapshots.mkdir()
        env = dict(os.environ, FLAGSWEEP_COMPILE_LOG=str(log), FLAGSWEEP_SNAPSHOTS=str(snapshots),
                   LC_ALL="C")
        subprocess.run(["make", "-s", f"CC={cc}", f"CFLAGS={flags}"], cwd=tree, env=env,
                       check=True, capture_output=True)
        return audit.audit(log, tree, shlex.split(flags), list(tolerated), since,
                           binary=tree / "prog", source=None, pristine=shipped)
    return build


def _one_problem(result: audit.Audit) -> str:
    assert not result.verified
    assert len(result.problems) == 1, result.problems
    return result.problems[0]


def test_an_honest_make_project_traces_to_its_compiles(make_project):
    result = make_project({"Makefile": HONEST, "a.c": MAIN, "b.c": HELPER})
    assert result.verified, result.problems
    assert (result.compiles, result.links) == (2, 1)


def test_an_archive_of_compiled_objects_passes(make_project):
    makefile = ("prog: a.o libb.a\n\t$(CC) $(CFLAGS) -o prog a.o -L. -lb\n"
                "libb.a: b.o\n\tar rcs libb.a b.o\n"
                "%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n")
    result = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER})
    assert result.verified, result.problems


@pytest.mark.parametrize("rule, opts", [
    ("$(CC) $(CFLAGS) @opts -c b.c -o b.o", "-O0"),
    ("$(CC) @opts", "-O0 -c b.c -o b.o"),          # the whole compile in the file
])
def test_a_response_file_is_refused(make_project, rule, opts):
    makefile = HONEST + f"b.o: b.c\n\t{rule}\n"
    result = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER, "opts": opts})
    assert not result.verified
    assert any(p.startswith("@opts reads more options from a response file, which the audit "
                            "cannot check: ") for p in result.problems), result.problems


@pytest.mark.parametrize("spelling", ["--optimize=0", "--optimize", "--op", "--machine-arch=x86-64"])
def test_long_option_spellings_are_refused(make_project, spelling):
    makefile = HONEST + f"b.o: b.c\n\t$(CC) $(CFLAGS) {spelling} -c b.c -o b.o\n"
    problem = _one_problem(make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER}))
    assert problem.startswith(f"{spelling} is a long option spelling, which gcc also accepts "
                              "abbreviated (--optimize=0 is -O0); write the flag in its short form")


def test_a_spec_file_is_refused(make_project):
    makefile = HONEST + "b.o: b.c\n\t$(CC) $(CFLAGS) -specs=my.specs -c b.c -o b.o\n"
    problem = _one_problem(make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER,
                                         "my.specs": "*cc1_options:\n+ -O0\n"}))
    assert problem.startswith("-specs=my.specs reads a spec file, which can change any option "
                              "the compiler passes on: ")


def test_a_hard_coded_compile_and_link_in_one_step_is_refused(make_project):
    # The build compiles something through $(CC), but the measured binary comes from gcc itself.
    makefile = "all: a.o prog\nprog: a.c b.c\n\tgcc -O0 a.c b.c -o prog\n%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n"
    problem = _one_problem(make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER}))
    assert problem == ("the measured binary prog was not linked by the audited compiler "
                       "(a hard-coded compiler, or a prebuilt or stale file?)")


def test_a_binary_rewritten_after_its_recorded_link_is_refused(make_project):
    makefile = ("prog: a.o b.o\n\t$(CC) $(CFLAGS) -o prog a.o b.o\n\tsleep 0.02\n"
                "\tgcc -O0 a.c b.c -o prog\n%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n")
    problem = _one_problem(make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER}))
    assert problem.startswith("prog changed after the recorded command that wrote it (rewritten "
                              "by a command the audit did not see: a hard-coded compiler, strip, "
                              "a copy?): ")


def test_a_stale_object_shipped_with_the_source_is_refused(make_project):
    def ship_stale_object(tree: Path) -> None:
        subprocess.run(["gcc", "-O0", "-c", "b.c", "-o", "b.o"], cwd=tree, check=True)
        os.utime(tree / "b.o", (time.time() - 3600,) * 2)   # older than the build, like a tarball's
        (tree / "b.c").unlink()                               # no rule can remake it
    makefile = "prog: a.o b.o\n\t$(CC) $(CFLAGS) -o prog a.o b.o\n%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n"
    problem = _one_problem(make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER},
                                        before=ship_stale_object))
    assert problem.startswith("link input b.o was not compiled in this build (a prebuilt or "
                              "stale file, or a hard-coded compiler): ")


def test_an_object_with_an_odd_suffix_from_a_hard_coded_compiler_is_refused(make_project):
    makefile = ("prog: a.o b.obj2\n\t$(CC) $(CFLAGS) -o prog a.o b.obj2\n"
                "b.obj2: b.c\n\tgcc -O0 -c b.c -o b.obj2\n%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n")
    problem = _one_problem(make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER}))
    assert problem.startswith("link input b.obj2 was not compiled in this build")


@pytest.mark.parametrize("link", ["a.o libb.a", "a.o -L. -lb", "a.o -Wl,libb.a"])
def test_an_archive_made_by_a_hard_coded_compiler_is_refused(make_project, link):
    makefile = (f"prog: a.o libb.a\n\t$(CC) $(CFLAGS) -o prog {link}\n"
                "libb.a: b.c\n\tgcc -O0 -c b.c -o b.tmp && ar rcs libb.a b.tmp && rm b.tmp\n"
                "%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n")
    problem = _one_problem(make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER}))
    assert problem == ("archive libb.a holds b.tmp, which no recorded compile of this build "
                       "produced (a hard-coded compiler, or a prebuilt or stale object?)")


@pytest.mark.parametrize("code, flag", [
    ('#pragma GCC optimize ("O0")\n', "-O0"),
    ('#pragma GCC optimize "O3,unroll-loops"\n', "-O3"),
    ('#define NOVEC _Pragma("GCC optimize(\\"O1\\")")\nNOVEC\n', "-O1"),
    ("__attribute__((optimize(0))) int cold_path(void);\n", "-O0"),
    ('[[gnu::optimize("Os")]] int cold_path(void);\n', "-Os"),
    ("#pragma clang optimize off\n", "-O0"),
    ("__attribute__((optnone)) int cold_path(void);\n", "-O0"),
])
def test_optimisation_set_in_the_source_is_refused(make_project, tmp_path, code, flag):
    result = make_project({"Makefile": HONEST, "a.c": MAIN, "b.c": code + HELPER})
    assert not result.verified
    problem = result.problems[0]    # "O3,unroll-loops" also sets an untolerated -funroll-loops
    # Where it takes effect: a macro's pragma is reported where the macro is used.
    assert problem.startswith(f"{tmp_path}/tree/b.c:{code.count(chr(10))}: ")
    assert f"sets the optimisation level ({flag}) in the source, over the variant's flags" in problem


def test_the_variants_own_level_set_again_in_the_source_passes_and_is_listed(make_project):
    # xxhash.h's AVX2 path: `#pragma GCC optimize ("-O2")`, under a variant at -O2
    result = make_project({"Makefile": HONEST, "a.c": MAIN,
                           "b.c": '#pragma GCC optimize ("-O2")\n' + HELPER})
    assert result.verified, result.problems
    assert result.tolerated_seen == ["-O2"]


def test_optimisation_in_an_included_project_header_is_found(make_project, tmp_path):
    problem = _one_problem(make_project({
        "Makefile": HONEST, "a.c": MAIN, "b.c": '#include "inc/slow.h"\n' + HELPER,
        "inc/slow.h": '/* a comment\n   of two lines */\n#pragma GCC optimize ("O0")\n'}))
    assert problem == (f"{tmp_path}/tree/inc/slow.h:3: #pragma GCC optimize (\"O0\") sets the "
                       "optimisation level (-O0) in the source, over the variant's flags")


# zstd's way of keeping a few functions scalar whatever the flags.
DONT_VECTORIZE = ('#define DONT_VECTORIZE __attribute__((optimize("no-tree-vectorize")))\n'
                  "DONT_VECTORIZE int scalar(int x) { return x; }\n")


def test_an_optimize_f_option_passes_only_when_tolerated(make_project):
    files = {"Makefile": HONEST, "a.c": MAIN, "b.c": DONT_VECTORIZE + HELPER}
    problem = _one_problem(make_project(files))
    assert problem.endswith('b.c:2: attribute optimize("no-tree-vectorize") sets '
                            "-fno-tree-vectorize in the source, which the variant's flags do not "
                            "have (list it in the target's build.tolerated_flags if it is the "
                            "project's own)")


def test_a_tolerated_optimize_f_option_is_listed(make_project):
    result = make_project({"Makefile": HONEST, "a.c": MAIN, "b.c": DONT_VECTORIZE + HELPER},
                          tolerated=("-fno-tree-vectorize",))
    assert result.verified and result.tolerated_seen == ["-fno-tree-vectorize"]


def test_optimisation_the_compile_never_sees_is_not_counted(make_project):
    # Comments, a branch the preprocessor drops (zstd's xxhash.h has one), a macro never used,
    # and a function that happens to be called optimize.
    code = ('/* #pragma GCC optimize ("O0") */\n// __attribute__((optimize(0)))\n'
            '#ifdef NOT_DEFINED\n#pragma GCC optimize ("-O2")\n#endif\n'
            '#define UNUSED __attribute__((optimize("O0")))\n'
            "static int optimize(int x) { return x; }\n")
    result = make_project({"Makefile": HONEST, "a.c": MAIN, "b.c": code + HELPER})
    assert result.verified, result.problems


@pytest.mark.parametrize("makefile, problem", [
    ("override CFLAGS = -O0\n" + HONEST, "compile has extra -O0; missing -O2"),
    ("override CFLAGS := $(filter-out -O%,$(CFLAGS)) -O1\n" + HONEST, "compile has extra -O1; missing -O2"),
    ("prog: a.o b.o\n\t$(CC) -o prog a.o b.o\n%.o: %.c\n\t$(CC) -O1 -c $< -o $@\n",
     "compile has extra -O1; missing -O2"),
])
def test_makefiles_that_replace_the_flags_stay_caught(make_project, makefile, problem):
    result = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER})
    assert not result.verified
    assert result.problems[0].startswith(problem), result.problems


@pytest.mark.parametrize("flags, extra", [("-O2", "--std=c99"), ("-O2 --coverage", "")])
def test_long_options_that_change_nothing_unseen_pass(make_project, flags, extra):
    makefile = HONEST.replace("$(CFLAGS) -c", f"$(CFLAGS) {extra} -c")
    result = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER}, flags=flags)
    assert result.verified, result.problems



LAYOUT_FLAGS = "-O2 -ffunction-sections -fuse-ld=lld -Wl,--shuffle-sections=*=3"


@pytest.mark.parametrize("makefile, verified", [
    (HONEST, True),
    (HONEST.replace("$(CC) $(CFLAGS) -o prog", "$(CC) -o prog"), False),   # links without them
])
def test_link_flags_must_reach_the_link_that_writes_the_binary(make_project, makefile, verified):
    """A variant's linker options (a layout's shuffle, -Wl,...) act only on the link: a build
    that links without CFLAGS or drops LDFLAGS silently gives every layout the same order."""
    if shutil.which("ld.lld") is None:
        pytest.skip("LLD is not installed")
    result = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER}, flags=LAYOUT_FLAGS)
    assert result.verified == verified, result.problems
    if not verified:
        assert _one_problem(result).startswith(
            "the link that wrote prog lacks the variant's link flags -fuse-ld=lld "
            "-Wl,--shuffle-sections=*=3 (a build that drops LDFLAGS, or links without CFLAGS): ")


DISTRO_FLAGS = "-O2 -fstack-protector-strong -D_FORTIFY_SOURCE=2 -Wl,-z,relro -Wl,-z,now -flto"


@pytest.mark.parametrize("makefile, verified", [
    (HONEST, True),
    (HONEST.replace("$(CC) $(CFLAGS) -o prog", "$(CC) -O2 -o prog"), False),   # drops LDFLAGS
])
def test_a_package_that_drops_the_distributions_link_flags_is_a_mismatch(make_project, makefile,
                                                                         verified):
    """The frame-pointer lesson for link flags: a package whose own link line leaves out what
    the distribution passes (relro, now, LTO) silently ships without them."""
    result = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER}, flags=DISTRO_FLAGS)
    assert result.verified == verified, result.problems
    if not verified:
        assert _one_problem(result).startswith(
            "the link that wrote prog lacks the variant's link flags -Wl,-z,relro -Wl,-z,now "
            "-flto (a build that drops LDFLAGS, or links without CFLAGS): ")


def test_a_linker_option_split_as_libtool_writes_it_is_on_the_link():
    """libtool passes -Wl,-z,relro on as -Wl,-z -Wl,relro: the linker reads the same words."""
    link = ["gcc", "-O2", "-Wl,-z", "-Wl,relro", "-Xlinker", "-z", "-Xlinker", "now", "-o", "p"]
    assert provenance.on_link("-Wl,-z,relro", link) and provenance.on_link("-Wl,-z,now", link)
    assert not provenance.on_link("-Wl,-z,lazy", link)
    assert not provenance.on_link("-Wl,now,-z", link)              # the words in their order
    assert provenance.on_link("-flto", ["gcc", "-flto", "-o", "p"])
    assert not provenance.on_link("-flto", link)


# ---- compiles judged by what they compiled --------------------------------------------------

SLOW_B = '#pragma GCC optimize ("O0")\n' + HELPER


@pytest.mark.parametrize("rule, where", [
    # written, compiled and removed within one rule: the object is the only trace
    ("cp slow.txt gen.c && $(CC) $(CFLAGS) -c gen.c -o b.o && rm gen.c", "gen.c"),
    ("$(CC) $(CFLAGS) -x c -c - -o b.o < slow.txt", "<stdin>"),
    # compiled as it was, then rewritten in place: the file says nothing of it now
    ("cp slow.txt gen.c && $(CC) $(CFLAGS) -c gen.c -o b.o && sleep 0.05 && cp honest.txt gen.c",
     "gen.c"),
    ("rm -f gen.c && mkfifo gen.c && (cat slow.txt > gen.c &) && "
     "$(CC) $(CFLAGS) -x c -c gen.c -o b.o", "gen.c"),
])
def test_a_compile_whose_source_cannot_be_read_again_is_refused(make_project, tmp_path, rule,
                                                                 where):
    """Its source gone, rewritten or streamed, the compile is judged by what it compiled."""
    makefile = HONEST + f"b.o:\n\t{rule}\n"
    result = make_project({"Makefile": makefile, "a.c": MAIN, "slow.txt": SLOW_B,
                           "honest.txt": HELPER})
    assert _one_problem(result) == (f"{tmp_path}/tree/{where}:1: #pragma GCC optimize (\"O0\") "
                                    "sets the optimisation level (-O0) in the source, over the "
                                    "variant's flags")


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_a_snapshot_compiles_where_the_source_did_warnings_as_errors_and_all(make_project,
                                                                            compiler):
    """The snapshot is compiled with the command's own options: -I, -D and -include have
    nothing left to do on preprocessed text, which clang warns of (an error with -Werror)."""
    rule = "$(CC) $(CFLAGS) -Wall -Werror -I inc -DLIMIT=100 -include inc/config.h -c b.c -o b.o"
    result = make_project({"Makefile": HONEST + f"b.o: b.c\n\t{rule}\n", "a.c": MAIN,
                           "b.c": HELPER, "inc/config.h": "static const int config = 1;\n"},
                          compiler=compiler)
    assert result.verified, result.problems


def test_a_fall_through_comment_still_counts_in_the_snapshot(make_project):
    """gcc reads a fall-through comment in the text it compiles: the snapshot keeps comments
    (xz marks its fall-throughs so, and built with 46 warnings without them), and a pragma
    inside one still sets nothing."""
    code = ("int helper(int x) { int r = 0;\n  switch (x) {\n  case 1: r += 1;\n"
            "    /* FALLTHROUGH */\n  case 2: r += 2; break;\n  }\n  return r; }\n"
            '/* an example:\n#pragma GCC optimize ("O0")\n*/\n')
    rule = "$(CC) $(CFLAGS) -Werror=implicit-fallthrough -c b.c -o b.o"
    result = make_project({"Makefile": HONEST + f"b.o: b.c\n\t{rule}\n", "a.c": MAIN, "b.c": code})
    assert result.verified, result.problems


@pytest.mark.parametrize("rule, why", [
    ("env -u FLAGSWEEP_SNAPSHOTS $(CC) $(CFLAGS) -c b.c -o b.o",
     "the wrapper kept no snapshot of what it compiled"),
    ("FLAGSWEEP_SNAPSHOTS=/nonexistent $(CC) $(CFLAGS) -c b.c -o b.o",
     "the wrapper compiled its sources as they were: cannot write /nonexistent/.draft-"),
])
def test_a_compile_with_no_snapshot_is_refused(make_project, rule, why):
    """A build that keeps the wrapper from taking its snapshot leaves nothing the audit can
    trust: the compile is refused, never judged by what its files say now."""
    makefile = HONEST + f"b.o: b.c\n\t{rule}\n"
    problem = _one_problem(make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER}))
    assert problem.startswith("could not read the code this compile compiled to look for "
                              f"optimisation set in it ({why}")


@pytest.mark.parametrize("probe", [
    # zstd's Makefile asks whether the compiler takes an option this way
    "$(CC) $(CFLAGS) -x c -Werror -c - -o /dev/null < slow.txt",
    "$(CC) $(CFLAGS) -fsyntax-only -x c - < slow.txt",
])
def test_a_compile_that_writes_nothing_is_not_read_again(make_project, probe):
    """A probe compiled from standard input to /dev/null can put nothing into the binary."""
    makefile = HONEST.replace("prog: a.o b.o\n", f"prog: a.o b.o\n\t{probe}\n")
    result = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER, "slow.txt": SLOW_B})
    assert result.verified, result.problems


def test_a_probe_the_binary_is_not_made_from_is_not_read_again(make_project):
    """zstd's Makefile writes have_pthread.c, builds a scratch program from it and removes
    both: a compile the measured binary does not trace to cannot have put code into it."""
    probe = ("cp slow.txt probe.c && $(CC) $(CFLAGS) -c probe.c -o probe.o && "
             "$(CC) $(CFLAGS) -o probe probe.o && rm -f probe.c probe.o probe")
    makefile = HONEST.replace("prog: a.o b.o\n", f"prog: a.o b.o\n\t{probe}\n")
    result = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER,
                           "slow.txt": SLOW_B.replace("int helper", "int main(void) { return 0; }\nint helper")})
    assert result.verified, result.problems


@pytest.mark.parametrize("files, rule", [
    # a source whose suffix is not C, compiled as C
    ({"b.txt": SLOW_B}, "$(CC) $(CFLAGS) -x c -c b.txt -o b.o"),
    # preprocessed text: compiled as it is, pragma and all
    ({"b.i": '# 1 "b.c"\n' + SLOW_B}, "$(CC) $(CFLAGS) -c b.i -o b.o"),
])
def test_a_source_of_any_name_or_already_preprocessed_is_read(make_project, files, rule):
    makefile = HONEST + f"b.o:\n\t{rule}\n"
    result = make_project({"Makefile": makefile, "a.c": MAIN, **files})
    assert not result.verified
    assert any("sets the optimisation level (-O0) in the source" in p for p in result.problems), \
        result.problems


# nettle's eccdata in small: a generator compiled and linked in one go with the build's own
# compiler and no CFLAGS ($(CC_FOR_BUILD)), run to write a table the program compiles in.
GENERATOR = ("prog: a.o b.o\n\t$(CC) $(CFLAGS) -o prog a.o b.o\n"
             "b.o: b.c table.h\n\t$(CC) $(CFLAGS) -c b.c -o b.o\n"
             "table.h: gen\n\t./gen > table.h\n"
             "gen: gen.c\n\t$(CC) gen.c -o gen\n"
             "%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n")
GEN = '#include <stdio.h>\nint main(void) { printf("#define ROWS 100\\n"); return 0; }\n'


def test_a_generator_the_build_runs_is_named_not_held_to_the_flags(make_project):
    result = make_project({"Makefile": GENERATOR, "a.c": MAIN, "gen.c": GEN,
                           "b.c": '#include "table.h"\n' + HELPER.replace("100", "ROWS")})
    assert result.verified, result.problems
    assert result.build_programs == ["gen"] and result.compiles == 2
    assert result.summary().build_programs == ["gen"]


def test_the_measured_program_compiled_and_linked_in_one_go_stays_held(make_project):
    result = make_project({"Makefile": "prog: a.c b.c\n\t$(CC) a.c b.c -o prog\n",
                           "a.c": MAIN, "b.c": HELPER})
    assert "compile has missing -O2" in _one_problem(result)
    assert result.build_programs == []


# ---- options written as two words ------------------------------------------------------------

# Each option with its value as a separate word, as honest projects write them, on the compile
# (and where it belongs, the link) of b.c; the files and folders they name are in the tree.
TWO_WORD = {
    "-I": "-I inc", "-iquote": "-iquote inc", "-isystem": "-isystem inc",
    "-idirafter": "-idirafter inc", "-include": "-include inc/config.h",
    "-imacros": "-imacros inc/config.h", "-iprefix": "-iprefix inc/ -iwithprefix sub",
    "-iwithprefixbefore": "-iprefix inc/ -iwithprefixbefore sub", "-isysroot": "-isysroot /",
    "-D": "-D LIMIT=100", "-U": "-U LIMIT -D LIMIT=100", "-MF": "-MD -MF b.d -MT b.o -MQ b.o",
    "-x": "-x c", "-aux-info": "-aux-info b.aux", "-dumpbase": "-dumpbase b.c -dumpdir ./",
    "-Xpreprocessor": "-Xpreprocessor -DLIMIT=100",
    "--param": "--param max-unroll-times=4",
}
TWO_WORD_LINK = {
    "-L": "-L lib -l helper", "-Xlinker": "-Xlinker -z -Xlinker now", "-u": "-u main",
    "-z": "-z now", "-Xlinker --as-needed": "-Xlinker --as-needed",
    "-Xassembler": "-Xassembler --noexecstack",
}


@pytest.mark.parametrize("option", list(TWO_WORD))
def test_an_option_with_its_value_as_the_next_word_passes(make_project, option):
    words = TWO_WORD[option]
    flags = "-O2 --param max-unroll-times=4" if option == "--param" else "-O2"
    extra = words if option != "--param" else ""
    makefile = (f"prog: a.o b.o\n\t$(CC) $(CFLAGS) -o prog a.o b.o\n"
                f"a.o: a.c\n\t$(CC) $(CFLAGS) -c a.c -o a.o\n"
                f"b.o: b.c\n\t$(CC) $(CFLAGS) {extra} -c b.c -o b.o\n")
    helper = "#ifndef LIMIT\n#define LIMIT 100\n#endif\n" + HELPER.replace("100", "LIMIT")
    result = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": helper,
                           "inc/config.h": "#define FROM_CONFIG 1\n", "inc/sub/x.h": ""},
                          flags=flags)
    assert result.verified, result.problems


@pytest.mark.parametrize("option", list(TWO_WORD_LINK))
def test_a_link_option_with_its_value_as_the_next_word_passes(make_project, option):
    """Linker (and assembler) options, their values long options of those tools, not gcc's."""
    inputs = "-L lib -l helper" if option == "-L" else f"lib/libhelper.a {TWO_WORD_LINK[option]}"
    makefile = (f"prog: a.o lib/libhelper.a\n\t$(CC) $(CFLAGS) -o prog a.o {inputs}\n"
                "lib/libhelper.a: b.o\n\tmkdir -p lib && ar rcs lib/libhelper.a b.o\n"
                "%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n")
    result = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER})
    assert result.verified, result.problems


@pytest.mark.parametrize("passed", ["-Xpreprocessor -fno-tree-vectorize",
                                    "-Wp,-fno-tree-vectorize"])
def test_a_flag_handed_to_the_compiler_through_the_preprocessor_is_compared(make_project,
                                                                             passed):
    """gcc's preprocessor is cc1 itself, so its options choose code like any other flag."""
    makefile = HONEST.replace("$(CFLAGS) -c", f"$(CFLAGS) {passed} -c")
    problem = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER}).problems[0]
    assert problem.startswith("compile has extra -fno-tree-vectorize: ")


@pytest.mark.parametrize("compiler, verified", [("gcc", True), ("clang", False)])
def test_a_word_is_a_value_only_where_the_compiler_reads_it_so(make_project, compiler, verified):
    """gcc takes the word after -aux-info as its file; clang 14 reads it as an option of its
    own, so there -O0 is the level the code was compiled at."""
    makefile = HONEST.replace("$(CFLAGS) -c", "$(CFLAGS) -aux-info -O0 -c")
    result = make_project({"Makefile": makefile, "a.c": MAIN, "b.c": HELPER}, compiler=compiler)
    assert result.verified == verified, result.problems
    if not verified:
        assert result.problems[0].startswith("compile has extra -O0: ")


# ---- what the compiler read, not what the files say afterwards --------------------------------

PRAGMA = {"gcc": '#pragma GCC optimize ("O0")\n', "clang": "#pragma clang optimize off\n"}
SAID = {"gcc": '#pragma GCC optimize ("O0") sets the optimisation level (-O0)',
        "clang": "#pragma clang optimize off sets the optimisation level (-O0)"}


def _same_size(line: str) -> str:
    """A comment as long as the line: the honest file the cheat puts back, byte for byte as
    long as the one it compiled."""
    return "/*" + " " * (len(line) - 5) + "*/\n"


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_a_source_rewritten_for_its_compile_and_put_back_mtime_and_all_is_refused(
        make_project, tmp_path, compiler):
    """The Makefile writes a pragma line into b.c (same size, same inode), compiles it, then
    puts the honest text back with the mtime the compile saw: size, inode and mtime all say
    nothing changed. The audit reads the snapshot the compiler compiled."""
    honest = _same_size(PRAGMA[compiler]) + HELPER
    cheat = ("b.o: b.c\n\tcat slow.txt > b.c && touch -r b.c stamp && "
             "$(CC) $(CFLAGS) -c b.c -o b.o && cat honest.txt > b.c && touch -r stamp b.c\n")
    result = make_project({"Makefile": HONEST + cheat, "a.c": MAIN, "b.c": honest,
                           "honest.txt": honest, "slow.txt": PRAGMA[compiler] + HELPER},
                          compiler=compiler)
    assert (tmp_path / "tree" / "b.c").read_text() == honest    # nothing left to see in the file
    assert _one_problem(result).startswith(f"{tmp_path}/tree/b.c:1: {SAID[compiler]} in the "
                                           "source, over the variant's flags")


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_a_header_swapped_for_a_compile_and_put_back_is_refused(make_project, tmp_path, compiler):
    """A project header swapped for one with a pragma just for b.c's compile, then restored
    (as a concurrent process could do during it): the snapshot holds the header compiled."""
    cheat = ("b.o: b.c\n\tcp -p inc.h inc.keep && cp slow.h inc.h && "
             "$(CC) $(CFLAGS) -c b.c -o b.o; cp -p inc.keep inc.h\n")
    result = make_project({"Makefile": HONEST + cheat, "a.c": MAIN,
                           "b.c": '#include "inc.h"\n' + HELPER, "inc.h": "/* honest */\n",
                           "slow.h": PRAGMA[compiler]}, compiler=compiler)
    assert _one_problem(result) == (f"{tmp_path}/tree/inc.h:1: {SAID[compiler]} in the source, "
                                    "over the variant's flags")


def test_a_header_the_build_put_outside_the_trees_is_judged_too(make_project, tmp_path):
    """`-include /tmp/slow.h` (-include is no code-generation flag): only the compiler's own
    headers are left unjudged, wherever else a header is (and whatever -isystem says)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "slow.h").write_text(PRAGMA["gcc"])
    cheat = f"b.o: b.c\n\t$(CC) $(CFLAGS) -isystem {elsewhere} -include slow.h -c b.c -o b.o\n"
    result = make_project({"Makefile": HONEST + cheat, "a.c": MAIN, "b.c": HELPER})
    assert _one_problem(result).startswith(f"{elsewhere}/slow.h:1: {SAID['gcc']} in the source")


ELSEWHERE = "the assembly this compile read is neither a file of the source as unpacked nor " \
            "written by a recorded command of this build (code made elsewhere, with other flags?)"


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
@pytest.mark.parametrize("made", ["b.s", "b.S"])
def test_assembly_compiled_elsewhere_is_refused(make_project, tmp_path, compiler, made):
    """`gcc -O0 -S b.c -o b.s`, then the variant's compiler assembles it with the variant's
    flags: its compile line is right, its code is -O0."""
    cheat = f"b.o: b.c\n\t{compiler} -O0 -S b.c -o {made} && $(CC) $(CFLAGS) -c {made} -o b.o\n"
    result = make_project({"Makefile": HONEST + cheat, "a.c": MAIN, "b.c": HELPER},
                          compiler=compiler)
    if made == "b.s":
        assert _one_problem(result).startswith(f"{tmp_path}/tree/b.s: {ELSEWHERE}: ")
    else:      # a .S is preprocessed first: the files its text came from are judged
        assert _one_problem(result).startswith(
            f"{tmp_path}/tree/b.S: assembled by {tmp_path}/tree/b.S, it is neither a file of the "
            "source as unpacked nor written by a recorded command of this build: ")


def _assembly(compiler: str) -> str:
    """helper() as -O2 assembly, as a project would ship it handwritten."""
    done = subprocess.run([compiler, "-O2", "-S", "-x", "c", "-", "-o", "-"], input=HELPER,
                          capture_output=True, text=True, check=True)
    return done.stdout


def test_assembly_the_build_writes_from_its_own_assembler_source_passes(make_project):
    """nettle's m4 writes aes-decrypt-internal.s from its .asm, and $(CC) assembles it: no
    compiler wrote that text (no `.ident`, no `.file` of a C source), so no flag reached it.
    Compiler output passed off the same way stays refused (above)."""
    handwritten = "".join(line + "\n" for line in _assembly("gcc").splitlines()
                          if not line.strip().startswith((".ident", ".file")))
    rule = "b.o: b.asm\n\tsed 's/@NAME@/helper/g' b.asm > b.s\n\t$(CC) $(CFLAGS) -c b.s -o b.o\n"
    result = make_project({"Makefile": HONEST + rule, "a.c": MAIN,
                           "b.asm": handwritten.replace("helper", "@NAME@")})
    assert result.verified, result.problems


@pytest.mark.parametrize("files, rule", [
    # handwritten assembly shipped in the source, a .S including a project header
    ({"b.s": "ASM"}, "$(CC) $(CFLAGS) -c b.s -o b.o"),
    ({"b.S": '#include "asm.h"\nASM', "asm.h": "#define UNUSED 1\n"}, "$(CC) $(CFLAGS) -c b.S -o b.o"),
    # assembly this build's compiler wrote with the variant's flags, then assembled
    ({"b.c": HELPER}, "$(CC) $(CFLAGS) -S b.c -o b.s && $(CC) $(CFLAGS) -c b.s -o b.o"),
    ({"b.c": HELPER}, "$(CC) $(CFLAGS) -E b.c -o b.i && $(CC) $(CFLAGS) -c b.i -o b.o"),
])
def test_assembly_shipped_or_made_by_the_build_passes(make_project, files, rule):
    shipped = {name: text.replace("ASM", _assembly("gcc")) for name, text in files.items()}
    result = make_project({"Makefile": HONEST + f"b.o:\n\t{rule}\n", "a.c": MAIN, **shipped})
    assert result.verified, result.problems


def test_a_header_of_a_S_swapped_for_its_compile_and_put_back_is_refused(make_project, tmp_path):
    """The .S is the source's own, but the header it includes holds -O0 assembly only while it
    is assembled: preprocessing its files again does not give what was assembled."""
    cheat = ("b.o: b.S\n\tcp -p code.h code.keep && cp slow.txt code.h && "
             "$(CC) $(CFLAGS) -c b.S -o b.o; cp -p code.keep code.h\n")
    slow = subprocess.run(["gcc", "-O0", "-S", "-x", "c", "-", "-o", "-"], input=HELPER,
                          capture_output=True, text=True, check=True).stdout
    result = make_project({"Makefile": HONEST + cheat, "a.c": MAIN, "b.S": '#include "code.h"\n',
                           "code.h": _assembly("gcc"), "slow.txt": slow})
    assert _one_problem(result).startswith(f"{tmp_path}/tree/b.S: what this compile assembled is "
                                           "not what its files give now (a file changed for the "
                                           "compile): ")


@pytest.mark.parametrize("real", ["gcc", "clang"])
def test_a_compiler_that_adds_its_own_flags_is_refused(make_project, tmp_path, real):
    """A root-owned script named as the compiler, which answers like the compiler and hands it
    every command with -O0 appended: the recorded lines are the variant's, the code is -O0."""
    script = tmp_path / f"my{real}"
    script.write_text(f'#!/bin/sh\nexec {shutil.which(real)} "$@" -O0\n')
    script.chmod(0o755)
    result = make_project({"Makefile": HONEST, "a.c": MAIN, "b.c": HELPER},
                          compiler=str(script))
    assert _one_problem(result).startswith(f"the compiler {script} adds -O0 (what ")
    assert _one_problem(result).endswith(
        ", which it runs, received for a compile with the variant's flags, against the command "
        "it was given): it changes the flags behind the compile lines; name the compiler itself "
        "in the recipe")


X86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                         reason="x86 target names (nothing is run, so any x86-64 CPU will do)")
V3 = "-O2 -march=x86-64-v3"


@X86
@pytest.mark.parametrize("compiler, code, flag, over", [
    ("gcc", '#pragma GCC target ("arch=x86-64")\n', "-march=x86-64", "-march=x86-64-v3"),
    ("gcc", '_Pragma("GCC target(\\"no-avx2\\")")\n', "-mno-avx2", "-march=x86-64-v3"),
    ("gcc", '__attribute__((target("arch=x86-64"))) int slow(int x) { return x; }\n',
     "-march=x86-64", "-march=x86-64-v3"),
    ("gcc", '__attribute__((target_clones("arch=x86-64", "default"))) int slow(int x) '
     '{ return x; }\n', "-march=x86-64", "-march=x86-64-v3"),
    ("gcc", '__attribute__((target("tune=" "generic"))) int slow(int x) { return x; }\n',
     "-mtune=generic", "-march=x86-64-v3"),
    ("clang", '__attribute__((target("arch=x86-64"))) int slow(int x) { return x; }\n',
     "-march=x86-64", "-march=x86-64-v3"),
])
def test_a_target_that_overrides_the_variants_flags_is_refused(make_project, tmp_path, compiler,
                                                               code, flag, over):
    """`#pragma GCC target ("arch=x86-64")` silently cancels the variant's -march: named like
    an optimize pragma, with the flag it stands for and the variant's flag it overrides."""
    result = make_project({"Makefile": HONEST, "a.c": MAIN, "b.c": code + HELPER}, flags=V3,
                          compiler=compiler)
    problem = _one_problem(result)
    assert problem.startswith(f"{tmp_path}/tree/b.c:1: ")
    assert problem.endswith(f" sets {flag} in the source, over the variant's {over} (list it in "
                            "the target's build.tolerated_flags if it is the project's own)")


@X86
@pytest.mark.parametrize("code, tolerated", [
    # code for the CPU found at run time (zstd's BMI2 paths, xz's CLMUL CRC): only adds
    ('__attribute__((target("avx2,bmi2"))) int fast(int x) { return x; }\n', ()),
    ('__attribute__((target_clones("avx2", "default"))) int fast(int x) { return x; }\n', ()),
    ('#pragma GCC target ("arch=x86-64")\n', ("-march=x86-64",)),
])
def test_a_target_that_only_adds_or_is_tolerated_passes(make_project, code, tolerated):
    result = make_project({"Makefile": HONEST, "a.c": MAIN, "b.c": code + HELPER}, flags=V3,
                          tolerated=tolerated)
    assert result.verified, result.problems
    assert result.tolerated_seen == list(tolerated)
