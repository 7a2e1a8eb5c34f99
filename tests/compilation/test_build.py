"""Builds through the real path: the CMake superbuild, Ninja, the recording wrapper and ccache,
on the bundled tiny target and on small make projects that try to slip flags past the audit."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from report_fixture import RUN_ID, results_doc

from flagsweep.compilation import superbuild, variants
from flagsweep.errors import BuildError, ConfigError
from flagsweep.experiment import matrix, recipe, target

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


# discount's configure.sh in little: it reads its own configure.inc from the folder it runs in,
# refuses any argument it does not know (CC=... too: the compilers come from its environment),
# and writes a Makefile whose link reads LDFLAGS alone, set to a copy of configure's CFLAGS.
HAND_CONFIGURE = """#!/bin/sh
. ./configure.inc
for a in "$@"; do echo "Bad option $a" >&2; exit 1; done
printf 'CC=%s\\nCFLAGS=%s\\nLDFLAGS=%s\\nprog: main.o\\n\\t$(CC) $(LDFLAGS) -o prog main.o\\n' \\
    "$CC" "$CFLAGS" "$CFLAGS" > Makefile
echo "$NOTE"
"""


def test_a_hand_written_configure_runs_in_a_copy_of_the_source_and_the_variant_links_audited(
        tmp_path, isolated_cache):
    """The target's `configure` names a script that only runs where its files are, with the
    compilers in its environment; the variants make with their flags, the link flags too,
    and the source stays as it was."""
    t = _project(tmp_path, "autotools", {"main.c": MAIN_C, "configure.sh": HAND_CONFIGURE,
                                         "configure.inc": "NOTE='configured in place'\n"})
    (tmp_path / "src/configure.sh").chmod(0o755)
    text = (tmp_path / "target.toml").read_text()
    (tmp_path / "target.toml").write_text(
        text.replace('binary = "prog"\n', 'binary = "prog"\nconfigure = "configure.sh"\n'))
    t = target.load(str(tmp_path))
    (b,) = _build(t, ["-O1 -Wl,-z,now"], tmp_path / "run").values()
    assert b.status == "ok" and b.flags_verified, b.detail
    said = (tmp_path / "run/builds/configure-gcc.log").read_text()
    assert "$ ./configure.sh" in said and "configured in place" in said
    # the link took the variant's link flags, not configure's copy of its own CFLAGS (-O2)
    (link,) = [r["argv"] for r in map(json.loads, (b.log.parent / "compile.jsonl")
                                      .read_text().splitlines()) if "-c" not in r["argv"]]
    assert "-Wl,-z,now" in link and "-O2" not in link
    assert sorted(p.name for p in (tmp_path / "src").iterdir()) == ["configure.inc",
                                                                    "configure.sh", "main.c"]


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
        "superbuild.log, builds); builds start in a new folder so that no earlier binary or compile log is "
        "reused: choose another --out, or remove this one")
    assert first.binary.read_bytes() == binary
    assert (first.log.parent / "compile.jsonl").read_text() == log


PGO_RECIPE = ('summary = "pgo"\ncompilers = ["gcc"]\nbaseline = { mode = "plain" }\n[axes]\n'
              'mode = [{ label = "plain", flags = "-O2" }, '
              '{ label = "pgo", flags = "-O2", build = "pgo" }]\n')


@pytest.mark.parametrize("refused", ["a compiler environment", "a pgo variant untrained"])
def test_a_refused_start_leaves_an_output_folder_the_retry_accepts(tmp_path, monkeypatch,
                                                                   fixture_target, refused):
    """The start refused after the matrix expanded (the environment then set a variable that
    makes gcc run programs; a profile-guided variant built with no training input): the
    same --out, once the cause is gone, builds."""
    t, out = fixture_target("honest"), tmp_path / "run"
    out.mkdir()                     # as --out given as a folder the user made
    if refused == "a compiler environment":
        m = matrix.expand(recipe.from_flags(["-O1"], ["gcc"]))
        monkeypatch.setenv("GCC_EXEC_PREFIX", f"{tmp_path}/planted/")
        error = ConfigError
    else:
        (tmp_path / "pgo.toml").write_text(PGO_RECIPE)
        m = matrix.expand(recipe.load(str(tmp_path / "pgo.toml")))
        error = BuildError
    with pytest.raises(error):
        variants.build_all(t, m, variants.Options(out_dir=out, jobs=2, rebuild=True))
    assert list(out.iterdir()) == []
    monkeypatch.delenv("GCC_EXEC_PREFIX", raising=False)
    (b,) = _build(t, ["-O1"], out, rebuild=True).values()
    assert b.status == "ok", b.detail


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
    assert b.status == "ok" and b.audit.tolerated_seen == ["-fPIC"]


def _sparse_make_project(folder: Path, megabytes: int) -> Path:
    """A make project whose source tree holds a sparse file: `megabytes` long, one block of
    data at its end."""
    src = folder / "src"
    src.mkdir(parents=True)
    (src / "prog.c").write_text("int main(void) { return 0; }\n")
    (src / "Makefile").write_text("prog: prog.c\n\t$(CC) $(CFLAGS) -o prog prog.c\n")
    with open(src / "holes.img", "wb") as f:
        f.seek(megabytes * 10**6 - 5)
        f.write(b"data\n")
    (folder / "target.toml").write_text(
        'summary = "a tree with a sparse file"\nversion = "1"\n[source]\npath = "src"\n'
        '[build]\nsystem = "make"\nbinary = "prog"\n[inputs]\nkind = "corpus"\nmegabytes = 1\nquick_megabytes = 1\n'
        '[run]\nargv = ["{binary}"]\n[check]\nmethod = "exact"\n')
    return folder / "target.toml"


def test_a_sparse_file_is_copied_sparsely_into_each_variant(tmp_path, isolated_cache):
    """Each make variant builds in a copy of the tree: a sparse file used to be copied as real
    data (10.7 GB per variant for a 10 GB sparse member). 300 MB here."""
    t = target.load(str(_sparse_make_project(tmp_path / "t", 300)))
    builds = _build(t, ["-O2", "-O1"], tmp_path / "run")
    assert {b.status for b in builds.values()} == {"ok"}
    for b in builds.values():
        copy = b.log.parent / "tree" / "holes.img"
        assert copy.stat().st_size == 300 * 10**6
        assert copy.stat().st_blocks * 512 < 10**6            # holes stayed holes
        with open(copy, "rb") as f:
            f.seek(300 * 10**6 - 5)
            assert f.read() == b"data\n"
        assert (f"flagsweep: {tmp_path / 't' / 'src' / 'holes.img'} is a sparse file; copied "
                "sparsely (its holes stay holes)") in b.log.read_text()


def _earlier_results(out: Path) -> None:
    """What a finished run leaves beside its builds: results.json and samples.csv."""
    (out / "results.json").write_text(json.dumps(results_doc()))
    (out / "samples.csv").write_text("run_id,variant_id,round\n")


@pytest.mark.parametrize("planted", ["results", "scratch link", "explain link"])
def test_an_output_folder_holding_another_runs_outputs_is_refused(planted, tmp_path,
                                                                   fixture_target):
    """Another run's results.json and samples.csv (no builds) were overwritten silently; a
    scratch/ planted as a link had the launcher write through it."""
    out, victim = tmp_path / "run", tmp_path / "elsewhere"
    out.mkdir()
    victim.mkdir()
    if planted == "results":
        _earlier_results(out)
        names = "results.json, samples.csv"
    else:
        name = planted.split()[0]
        (out / name).symlink_to(victim / "gone")     # dangling: it still counts
        names = name
    with pytest.raises(BuildError) as info:
        _build(fixture_target("honest"), ["-O1"], out)
    assert str(info.value) == (
        f"output folder {out} already holds another run's outputs ({names}); a run starts in a "
        "new folder so that no earlier result is overwritten or written through: choose another "
        "--out, or remove this one")
    assert sorted(p.name for p in out.iterdir()) == sorted(names.split(", "))
    assert list(victim.iterdir()) == []
    if planted == "results":
        assert json.loads((out / "results.json").read_text())["run_id"] == RUN_ID


def test_run_into_a_folder_with_another_runs_results_is_one_line(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    _earlier_results(out)
    done = subprocess.run([sys.executable, "-m", "flagsweep", "run", "tiny", "--quick", "--runs",
                           "2", "--flags", "-O2", "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        f"flagsweep: output folder {out} already holds another run's outputs (results.json, "
        "samples.csv)")
    assert json.loads((out / "results.json").read_text())["run_id"] == RUN_ID


@pytest.mark.parametrize("payload, refused", [
    ('x")\nexecute_process(COMMAND touch {marker})\n#', "'\"', which CMake's ExternalProject "
     "writes unescaped into its scripts, so it cannot be in a path"),
    ("x)\nexecute_process(COMMAND touch {marker})\n", "a newline (U+000A), which CMake and "
     "Ninja cannot carry in a path")])
def test_an_output_path_is_data_to_cmake_never_code(payload, refused, tmp_path, fixture_target):
    """plan.cmake held --out as "...": a folder named `")`, a newline and execute_process(...)
    ran the command when the superbuild configured."""
    marker = tmp_path / "MARKER"
    out = tmp_path / payload.format(marker=marker)
    with pytest.raises(BuildError) as info:
        _build(fixture_target("honest"), ["-O1"], out)
    assert str(info.value) == f"output folder {str(out)!r} holds {refused}: choose another --out"
    assert not marker.exists() and not out.exists()


def test_an_output_path_that_closes_a_command_runs_nothing(tmp_path, fixture_target):
    """Without a newline nothing can follow set(...) as a second command; the path is carried."""
    marker = tmp_path / "MARKER"
    out = tmp_path / f"x ) execute_process(COMMAND touch {marker}) '" / "run"
    (b,) = _build(fixture_target("honest"), ["-O1"], out, rebuild=True).values()  # a plan
    assert b.status == "ok" and b.flags_verified, b.detail
    assert not marker.exists()
    assert (out / "plan.cmake").read_text().startswith(
        f"set(FLAGSWEEP_MANIFEST [[{out}/manifest.json]])\n")


@pytest.mark.parametrize("name", ["paren)(", "sp ace", "quote'", "br{ace}", "a*?b", "x=y,z"])
def test_an_output_path_with_cmake_syntax_builds(name, tmp_path, fixture_target):
    """Parentheses, braces, spaces, quotes, wildcards, '=' and ',' in --out are carried as they are."""
    out = tmp_path / name / "run"
    (b,) = _build(fixture_target("honest"), ["-O1"], out, rebuild=True).values()  # built here
    assert b.status == "ok" and b.flags_verified, b.detail
    assert b.binary.is_relative_to(out)


@pytest.mark.parametrize("char, why", [
    (";", "CMake reads as a list separator"),
    ('"', "CMake's ExternalProject writes unescaped into its scripts"),
    ("\\", "CMake reads as an escape or a Windows path separator"),
    ("$", "ccache and make expand as a variable"),
    ("]", "CMake's lists read as a group (a ';' inside it separates nothing)"),
    ("#", "CMake refuses in the name of a file a build step makes"),
    ("<", "CMake refuses in the name of a file a build step makes")])
def test_a_character_the_build_tools_cannot_carry_is_refused_naming_it(char, why, tmp_path,
                                                                       fixture_target):
    """Before: each failed the superbuild's configure ("see superbuild.log") or every variant's
    build ('$x': ccache refused CCACHE_BASEDIR), none saying which character or why."""
    out = tmp_path / f"a{char}b" / "run"
    with pytest.raises(BuildError) as info:
        _build(fixture_target("honest"), ["-O1"], out)
    assert str(info.value) == (f"output folder {str(out)!r} holds {char!r}, which {why}, so it "
                               "cannot be in a path: choose another --out")
    assert not (tmp_path / f"a{char}b").exists()


def test_cmake_text_is_a_bracket_argument_its_text_cannot_close():
    assert superbuild.cmake_text('a")') == '[[a")]]'
    assert superbuild.cmake_text("a]]b]=]c") == "[==[a]]b]=]c]==]"


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
    assert b.audit.compiles == 3
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
    # read in what the compile compiled, kept by the wrapper, which the audit then drops
    tree = tmp_path / "run" / "builds" / "gcc-O2" / "tree"
    assert b.detail.startswith(f"{tree}/fast.c:1: #pragma GCC optimize (\"O0\") sets the "
                               "optimisation level (-O0) in the source, over the variant's flags")
    assert not (tree.parent / "compiled").exists()
