"""Builds through the real path: the CMake superbuild, Ninja, the recording wrapper and ccache,
on the bundled tiny target and on small make projects that try to slip flags past the audit."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from flagsweep.build import variants
from flagsweep.errors import BuildError
from flagsweep.spec import matrix, recipe, target

pytestmark = pytest.mark.integration


def _build(t: target.Target, flag_sets: list[str], out: Path, compiler: str = "gcc",
           filter_cpu: bool = True, rebuild: bool = False) -> dict[str, variants.VariantBuild]:
    m = matrix.expand(recipe.from_flags(flag_sets, [compiler]), filter_cpu=filter_cpu)
    builds = variants.build_all(t, m, variants.Options(out_dir=out, jobs=2, rebuild=rebuild))
    return {" ".join(b.variant.flags): b for b in builds}


def _ccache_stats(cache: Path) -> dict[str, int]:
    out = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, check=True,
                         env={"CCACHE_DIR": str(cache / "ccache"), "PATH": "/usr/bin:/bin"})
    return {k: int(v) for k, v in (line.split("\t") for line in out.stdout.splitlines())}


def test_tiny_four_variants_build_verified_and_grouped(tmp_path, isolated_cache):
    builds = _build(target.load("tiny"), ["-O2", "-O2 -mfpmath=sse", "-O0", "-O2 -mfpmath=387"],
                    tmp_path / "run")
    assert {b.status for b in builds.values()} == {"ok"}
    assert all(b.flags_verified for b in builds.values())
    # SSE is x86-64's floating-point unit already: same code as -O2, so measured once.
    assert builds["-O2 -mfpmath=sse"].identical_to == "gcc-O2"
    assert builds["-O2 -mfpmath=sse"].code_sha256 == builds["-O2"].code_sha256
    # x87 arithmetic and -O0 are different code.
    assert builds["-O2 -mfpmath=387"].identical_to is None
    assert len({builds[f].code_sha256 for f in ("-O2", "-O0", "-O2 -mfpmath=387")}) == 3
    # Every compile line carried exactly the variant's flags, through the wrapper.
    lines = [json.loads(x) for x in
             (tmp_path / "run/builds/gcc-O2-mfpmath-387/compile.jsonl").read_text().splitlines()]
    compiles = [r["argv"] for r in lines if "-c" in r["argv"]]
    assert len(compiles) == 2 and all(a[1:3] == ["-O2", "-mfpmath=387"] for a in compiles)
    # The binary runs.
    out = subprocess.run([str(builds["-O0"].binary), str(Path(target.load("tiny").local_source(), "main.c"))],
                         capture_output=True, text=True, check=True)
    assert out.stdout.startswith("bytes ")


def test_rebuild_in_a_fresh_folder_hits_ccache_and_gives_the_same_code(tmp_path, isolated_cache):
    t = target.load("tiny")
    first = _build(t, ["-O1 -fno-inline"], tmp_path / "a", rebuild=True)
    before = _ccache_stats(isolated_cache)
    second = _build(t, ["-O1 -fno-inline"], tmp_path / "b", rebuild=True)   # past the build cache
    after = _ccache_stats(isolated_cache)
    hits = sum(after[k] - before.get(k, 0) for k in ("direct_cache_hit", "preprocessed_cache_hit"))
    assert hits >= 2  # main.c and kernel.c (and CMake's compiler probe), in a new build folder
    assert after["cache_miss"] == before["cache_miss"]
    assert first["-O1 -fno-inline"].code_sha256 == second["-O1 -fno-inline"].code_sha256


def test_a_copy_of_the_source_elsewhere_hits_the_same_cache_entries(tmp_path, isolated_cache):
    """--source-dir with CMake: the same code in another folder is the same ccache entry."""
    t = target.load("tiny")
    m = matrix.expand(recipe.from_flags(["-O1 -fno-unroll-loops"], ["gcc"]))
    (first,) = variants.build_all(t, m, variants.Options(out_dir=tmp_path / "a", jobs=2,
                                                         rebuild=True))
    copy = tmp_path / "elsewhere" / "deeper" / "src"
    shutil.copytree(t.local_source(), copy)
    before = _ccache_stats(isolated_cache)
    (second,) = variants.build_all(t, m, variants.Options(out_dir=tmp_path / "b", jobs=2,
                                                          source_dir=copy, rebuild=True))
    after = _ccache_stats(isolated_cache)
    hits = sum(after[k] - before.get(k, 0) for k in ("direct_cache_hit", "preprocessed_cache_hit"))
    assert hits >= 2 and after["cache_miss"] == before["cache_miss"]
    assert second.status == "ok" and second.flags_verified
    assert first.code_sha256 == second.code_sha256
    assert (tmp_path / "b" / "source").resolve() == copy.resolve()


def test_a_failing_variant_does_not_sink_the_others(tmp_path):
    # The matrix skips flags the compiler refuses (test_matrix); unfiltered, such a variant is
    # the simplest build that fails, and the build stage must survive it all the same.
    builds = _build(target.load("tiny"), ["-O2", "-O2 -fno-such-flag-exists", "-O1"], tmp_path,
                    filter_cpu=False)
    bad = builds["-O2 -fno-such-flag-exists"]
    assert bad.status == "failed" and not bad.flags_verified
    # CMake's compiler check rejects the flag; the detail leads with the compiler's own words.
    assert bad.detail.startswith("cmake configure exited 1")
    assert "gcc: error: unrecognized command-line option '-fno-such-flag-exists'" in bad.detail
    assert builds["-O2"].status == "ok" and builds["-O1"].status == "ok"


def test_honest_make_project_is_verified(tmp_path, fixture_target):
    builds = _build(fixture_target("honest"), ["-O1"], tmp_path)
    assert builds["-O1"].status == "ok" and builds["-O1"].flags_verified


def test_project_appending_its_own_O2_is_a_flags_mismatch(tmp_path, fixture_target):
    builds = _build(fixture_target("sneaky"), ["-O0"], tmp_path)
    b = builds["-O0"]
    assert b.status == "flags-mismatch" and not b.flags_verified
    assert b.detail.startswith("extra -O2 on 2 of 2 compile lines (first: compile has extra -O2")
    assert "tolerated_flags" not in b.detail   # an -O level is what is measured: never tolerated
    assert b.log.read_text().count("compile has extra -O2") == 2   # the full list
    assert b.binary is not None and b.binary.exists()  # built, shown, but not trusted


def test_hard_coded_compiler_is_caught(tmp_path, fixture_target):
    builds = _build(fixture_target("bypass"), ["-O2"], tmp_path)
    b = builds["-O2"]
    assert b.status == "flags-mismatch"
    assert "were not compiled through the audited compiler" in b.detail and "b.o" in b.detail


@pytest.mark.parametrize("compiler", ["gcc", "/usr/bin/gcc"])  # a path is a valid compiler name
def test_autotools_configure_runs_once_per_compiler_and_is_reused(tmp_path, compiler):
    """A minimal autotools-style project: configure writes the Makefile, variants copy it."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.c").write_text("int main(void) { return 0; }\n")
    (src / "configure").write_text(
        "#!/bin/sh\n# counts its runs; writes a Makefile that refers to this build folder\n"
        f"echo run >> {tmp_path}/configure-runs\n"
        "srcdir=$(dirname \"$0\")\n"
        "for a in \"$@\"; do case $a in CC=*) cc=${a#CC=};; esac; done\n"
        "printf 'BUILD = %s\\nCC = %s\\nCFLAGS = -O2\\nprog: $(BUILD)/main.o\\n"
        "\\t$(CC) $(CFLAGS) -o prog main.o\\n$(BUILD)/main.o:\\n"
        "\\t$(CC) $(CFLAGS) -c %s/main.c -o main.o\\n' \"$(pwd)\" \"$cc\" \"$srcdir\" > Makefile\n")
    (src / "configure").chmod(0o755)
    (tmp_path / "target.toml").write_text(
        'summary = "fake autotools"\nversion = "1"\n[source]\npath = "src"\n'
        '[build]\nsystem = "autotools"\nbinary = "prog"\n'
        '[inputs]\nkind = "file"\npath = "x"\n[run]\nargv = ["{binary}"]\n[check]\nmethod = "exact"\n')
    t = target.load(str(tmp_path))
    builds = _build(t, ["-O1", "-O3"], tmp_path / "run1", compiler)
    assert {b.status for b in builds.values()} == {"ok"}, [b.detail for b in builds.values()]
    (o2,) = _build(t, ["-O2"], tmp_path / "run2", compiler).values()
    assert (tmp_path / "configure-runs").read_text().count("run") == 1
    # The copied tree was relocated: its Makefile names its own folder, not the cached one.
    tree = tmp_path / "run2/builds" / o2.variant.id / "tree"
    assert f"BUILD = {tree}" in (tree / "Makefile").read_text()


def _project(folder: Path, system: str, files: dict[str, str]) -> target.Target:
    """A purpose-made target: its source files and a target.toml building `prog` with system."""
    src = folder / "src"
    src.mkdir(parents=True)
    for name, text in files.items():
        (src / name).write_text(text)
    (folder / "target.toml").write_text(
        f'summary = "test project"\nversion = "1"\n[source]\npath = "src"\n'
        f'[build]\nsystem = "{system}"\nbinary = "prog"\n'
        '[inputs]\nkind = "file"\npath = "x"\n[run]\nargv = ["{binary}"]\n[check]\nmethod = "exact"\n')
    return target.load(str(folder))


MAIN_C = "int main(void) { return 0; }\n"


def test_an_output_folder_built_into_before_is_refused(tmp_path, fixture_target):
    out = tmp_path / "run"
    (first,) = _build(fixture_target("honest"), ["-O1"], out, rebuild=True).values()
    binary, log = first.binary.read_bytes(), (first.log.parent / "compile.jsonl").read_text()
    # Another program into the same folder: make would find prog up to date and the audit
    # would read the old compile log, so the old binary would be measured as verified.
    with pytest.raises(BuildError) as info:
        _build(fixture_target("sneaky"), ["-O1"], out)
    assert str(info.value) == (
        f"output folder {out} already holds a build (manifest.json, plan.cmake, superbuild, "
        "builds); builds start in a new folder so that no earlier binary or compile log is "
        "reused: choose another --out, or remove this one")
    assert first.binary.read_bytes() == binary
    assert (first.log.parent / "compile.jsonl").read_text() == log


def test_a_stale_object_shipped_in_the_source_is_a_flags_mismatch(tmp_path):
    t = _project(tmp_path / "stale", "make", {
        "Makefile": "prog: main.o fast.o\n\t$(CC) $(CFLAGS) -o prog main.o fast.o\n"
                    "main.o: main.c\n\t$(CC) $(CFLAGS) -c main.c -o main.o\n",
        "main.c": "int fast(void);\nint main(void) { return fast(); }\n",
        "fast.c": "int fast(void) { return 0; }\n"})
    # Shipped prebuilt at -O0, like an object left in a tarball; no rule remakes it.
    subprocess.run(["gcc", "-O0", "-c", "fast.c", "-o", "fast.o"], cwd=t.local_source(), check=True)
    (b,) = _build(t, ["-O2"], tmp_path / "run").values()
    assert b.status == "flags-mismatch" and not b.flags_verified
    assert b.detail.startswith("link input fast.o was not compiled in this build (a prebuilt or "
                               "stale file, or a hard-coded compiler): ")


def test_a_binary_that_links_outside_the_build_tree_fails(tmp_path):
    t = _project(tmp_path / "link", "make", {
        "Makefile": "prog: main.o\n\tln -sf /usr/bin/true prog\n"
                    "main.o: main.c\n\t$(CC) $(CFLAGS) -c main.c -o main.o\n",
        "main.c": MAIN_C})
    (b,) = _build(t, ["-O2"], tmp_path / "run").values()
    assert b.status == "failed" and b.binary is None
    tree = tmp_path / "run" / "builds" / "gcc-O2" / "tree"
    assert b.detail.startswith(f"prog in {tree} is a link to /usr/bin/true, outside the build "
                               "tree: the measured program must be the one built there;")


def test_cmake_project_setting_its_own_flags_stays_caught(tmp_path):
    t = _project(tmp_path / "cm", "cmake", {
        "CMakeLists.txt": 'cmake_minimum_required(VERSION 3.18)\nproject(p C)\n'
                          'set(CMAKE_C_FLAGS "-O0")\nadd_executable(prog main.c)\n',
        "main.c": MAIN_C})
    (b,) = _build(t, ["-O2"], tmp_path / "run").values()
    assert b.status == "flags-mismatch"
    assert b.detail.startswith("extra -O0 on 1 of 1 compile lines; missing -O2 on 1 of 1 compile "
                               "lines (first: compile has extra -O0; missing -O2: ")
    assert b.fixes[0].startswith("the build puts its own flags over the variant's "
                                                "(-O0 no -O2): make its CFLAGS (make) or "
                                                "CMAKE_C_FLAGS (cmake) come only from flagsweep")


def test_a_flag_the_project_adds_itself_is_one_line_with_the_tolerated_flags_to_add(tmp_path):
    files = {"CMakeLists.txt": 'cmake_minimum_required(VERSION 3.18)\nproject(p C)\n'
                               'add_compile_options(-fPIC)\n'
                               'add_executable(prog main.c a.c b.c c.c)\n',
             "main.c": "int a(void); int b(void); int c(void);\n"
                       "int main(void) { return a() + b() + c(); }\n",
             **{f"{n}.c": f"int {n}(void) {{ return 0; }}\n" for n in "abc"}}
    t = _project(tmp_path / "pic", "cmake", files)
    (b,) = _build(t, ["-O2"], tmp_path / "run").values()
    assert b.status == "flags-mismatch"
    lines = b.detail.splitlines()
    assert lines[0].startswith("extra -fPIC on 4 of 4 compile lines (first: compile has extra -fPIC")
    assert lines[1] == f"the full list (4) is in {b.log}"
    assert b.fixes == [("if the project's build adds -fPIC itself (as CMake does -fPIC for shared "
                        f"libraries), add under [build] in {t.path}: "
                        'tolerated_flags = ["-fPIC"]')]
    # Five variants with the same own flag: five one-line failures, the fix said once.
    said = variants.failures([b] * 5)
    assert len(said) == 6 and said[-1] == b.fixes[0]
    assert said[0] == f"gcc-O2: flags-mismatch, not measured: {lines[0]}"
    # The line, added as it says, is the fix.
    toml = t.path.read_text().replace("[build]\n", '[build]\ntolerated_flags = ["-fPIC"]\n')
    t.path.write_text(toml)
    (b,) = _build(target.load(str(t.path.parent)), ["-O2"], tmp_path / "run2").values()
    assert b.status == "ok" and b.audit["tolerated_seen"] == ["-fPIC"]


# Every option an honest Makefile may write as two words, on the compile and the link.
TWO_WORD_MAKEFILE = (
    "prog: main.o b.o lib/libhelper.a\n"
    "\t$(CC) $(CFLAGS) -o prog main.o b.o -L lib -l helper -Xlinker -z -Xlinker now -u main\n"
    "lib/libhelper.a: helper.o\n\tmkdir -p lib && ar rcs lib/libhelper.a helper.o\n"
    "main.o: main.c\n\t$(CC) $(CFLAGS) -I inc -iquote inc -isystem inc -idirafter inc "
    "-include inc/config.h -imacros inc/config.h -D LIMIT=9 -U UNUSED -MD -MF main.d -MT main.o "
    "-c main.c -o main.o\n"
    "b.o: b.txt\n\t$(CC) $(CFLAGS) -Xpreprocessor -DFROM_CPP -x c -c b.txt -x none -o b.o\n"
    "helper.o: helper.c\n\t$(CC) $(CFLAGS) -iprefix inc/ -iwithprefix sub -c helper.c -o helper.o\n")


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_options_written_as_two_words_build_verified(tmp_path, compiler):
    t = _project(tmp_path / "two", "make", {
        "Makefile": TWO_WORD_MAKEFILE,
        "main.c": "int b(void); int helper(void);\n"
                  "int main(void) { return b() + helper() + LIMIT + FROM_CONFIG - 10; }\n",
        "b.txt": "int b(void) { return FROM_CPP - 1; }\n",
        "helper.c": '#include "inner.h"\nint helper(void) { return INNER; }\n'})
    (t.local_source() / "inc" / "sub").mkdir(parents=True)
    (t.local_source() / "inc" / "config.h").write_text("#define FROM_CONFIG 1\n")
    (t.local_source() / "inc" / "sub" / "inner.h").write_text("#define INNER 0\n")
    (b,) = _build(t, ["-O2"], tmp_path / "run", compiler=compiler).values()
    assert b.status == "ok" and b.flags_verified, b.detail
    assert b.audit["compiles"] == 3
    assert subprocess.run([b.binary]).returncode == 0


def test_a_source_generated_compiled_and_removed_is_a_flags_mismatch(tmp_path):
    t = _project(tmp_path / "gone", "make", {
        "Makefile": "prog: main.o fast.o\n\t$(CC) $(CFLAGS) -o prog main.o fast.o\n"
                    "main.o: main.c\n\t$(CC) $(CFLAGS) -c main.c -o main.o\n"
                    "fast.o: fast.in\n\tcp fast.in fast.c && $(CC) $(CFLAGS) -c fast.c -o fast.o "
                    "&& rm fast.c\n",
        "main.c": "int fast(void);\nint main(void) { return fast(); }\n",
        "fast.in": '#pragma GCC optimize ("O0")\nint fast(void) { return 0; }\n'})
    (b,) = _build(t, ["-O2"], tmp_path / "run").values()
    assert b.status == "flags-mismatch" and not b.flags_verified
    assert b.detail.startswith("could not read the code this compile compiled to look for "
                               "optimisation set in it (its source fast.c is no longer there "
                               "(removed or moved after the compile; a build that generates a "
                               "source must keep it)): ")
