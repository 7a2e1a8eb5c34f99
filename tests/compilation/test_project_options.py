"""The project's own options: a Makefile whose CFLAGS hold -DFEATURE and -Iinclude, which
`make CFLAGS=...` replaces. The program still builds without them, as another program (it says
"no feature"), so only the comparison with the project's own build tells."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from demo_source import release_of

from flagsweep.jobs import scaffold
from flagsweep.compilation import own_build, variants
from flagsweep.errors import ConfigError
from flagsweep.experiment import matrix, recipe, target

FEATURE = {
    "Makefile": "CFLAGS = -O2 -DFEATURE -Iinclude\n"
                "prog: main.o\n\t$(CC) $(CFLAGS) -o prog main.o\n"
                "main.o: main.c\n\t$(CC) $(CFLAGS) -c main.c -o main.o\n",
    "include/feature.h": "#define FEATURE_NAME \"feature\"\n",
    "main.c": "#include <stdio.h>\n"
              "#if __has_include(\"feature.h\")\n#include \"feature.h\"\n"
              "#else\n#define FEATURE_NAME \"plain\"\n#endif\n"
              "int main(void) {\n#ifdef FEATURE\n  puts(FEATURE_NAME);\n"
              "#else\n  puts(\"no feature\");\n#endif\n  return 0;\n}\n",
}


def _project(folder: Path, build_extra: str = "") -> target.Target:
    src = folder / "src"
    for name, text in FEATURE.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    (folder / "target.toml").write_text(
        'summary = "defines in CFLAGS"\nversion = "1"\n[source]\npath = "src"\n'
        f'[build]\nsystem = "make"\nbinary = "prog"\n{build_extra}'
        '[inputs]\nkind = "file"\npath = "x"\n[run]\nargv = ["{binary}"]\n[check]\nmethod = "exact"\n')
    return target.load(str(folder))


def _build(t: target.Target, flags: str, out: Path) -> variants.VariantBuild:
    m = matrix.expand(recipe.from_flags([flags], ["gcc"]))
    (b,) = variants.build_all(t, m, variants.Options(out_dir=out, jobs=2))
    return b


def _says(b: variants.VariantBuild) -> str:
    return subprocess.run([str(b.binary)], capture_output=True, text=True, check=True).stdout


@pytest.mark.integration
def test_a_variant_that_drops_the_projects_defines_is_a_flags_mismatch_naming_them(tmp_path):
    t = _project(tmp_path / "p")
    b = _build(t, "-O1", tmp_path / "run")
    assert _says(b) == "no feature\n"      # built, but not the program the project builds
    assert b.status == "flags-mismatch" and not b.flags_verified
    first = b.detail.splitlines()[0]
    assert first.startswith("the variant's build dropped the project's own -DFEATURE (missing "
                            "on 1 of 1 compile lines), -Iinclude (missing on 1 of 1 compile lines)")
    assert "gcc -O2 -DFEATURE -Iinclude -c main.c -o main.o" in first
    assert b.fixes == [
        "the variants drop the project's own -DFEATURE -Iinclude: to keep them, add under [build] "
        f'in {t.path}: project_flags = ["-DFEATURE", "-Iinclude"]; if the variants are meant to '
        'build without them: dropped_flags = ["-DFEATURE", "-Iinclude"] (docs/targets.md, '
        "project_flags vs tolerated_flags)"]
    assert variants.failures([b])[0].startswith("gcc-O1: flags-mismatch, not measured: the "
                                                "variant's build dropped")


@pytest.mark.integration
@pytest.mark.parametrize("line, says", [
    ('project_flags = ["-DFEATURE", "-Iinclude"]\n', "feature\n"),
    ('dropped_flags = ["-DFEATURE", "-Iinclude"]\n', "no feature\n"),
])
def test_either_fix_it_names_verifies(line, says, tmp_path):
    b = _build(_project(tmp_path / "p", line), "-O1", tmp_path / "run")
    assert b.status == "ok" and b.flags_verified, b.detail
    assert _says(b) == says


@pytest.mark.integration
def test_the_projects_own_build_is_built_once_per_source_tree(tmp_path):
    t = _project(tmp_path / "p")
    (tmp_path / "p/src/README").write_text(str(tmp_path))    # a source tree no test built
    _build(t, "-O1", tmp_path / "first")
    assert "own-flags-gcc" in json.loads((tmp_path / "first/manifest.json").read_text())["variants"]
    b = _build(t, "-O3", tmp_path / "second")   # another variant, the same project
    built = json.loads((tmp_path / "second/manifest.json").read_text())["variants"]
    assert list(built) == ["gcc-O3"]            # its own build came from the cache
    assert b.status == "flags-mismatch" and "-DFEATURE" in b.dropped


def test_project_options_are_read_as_the_compiler_reads_them():
    argv = ["gcc", "-O2", "-D", "X=1", "-DY", "-I", "inc", "-include", "c.h", "--std=c11",
            "-MF", "-DZ.d", "-c", "a.c", "-o", "a.o"]
    assert own_build.options(argv) == ["-DX=1", "-DY", "-Iinc", "-include c.h", "-std=c11"]
    assert own_build.as_words("-include c.h") == ["-include", "c.h"]


def test_a_header_folder_up_out_of_the_tree_compares_as_the_folder_it_names(tmp_path):
    """meson writes -I from its tree up to the source: the project's own build and a variant's
    tree sit at other depths, so the same folder is spelled with other numbers of `..`."""
    source = tmp_path / "src"

    def compiles(tree: Path) -> list[str]:
        up = "/".join([".."] * len(tree.relative_to(tmp_path).parts))
        log = tree / "compile.jsonl"
        tree.mkdir(parents=True)
        log.write_text(json.dumps({"argv": ["cc", f"-I{up}/src/include", "-Iinc", "-c",
                                            f"{up}/src/a.c", "-o", "a.o"],
                                   "cwd": str(tree)}) + "\n")
        return next(iter(own_build.compiles(log, tree, source).values())).options

    assert compiles(tmp_path / "own") == compiles(tmp_path / "b" / "c" / "tree") == \
        ["-I<source>/include", "-Iinc"]


def test_the_target_keys_take_project_options(tmp_path):
    t = _project(tmp_path / "ok", 'project_flags = ["-Iinclude", "-include", "cfg.h", "-DX"]\n'
                 'dropped_flags = ["-DNDEBUG", "-include cfg.h", "-std=gnu99"]\n')
    assert t.spec.build.dropped_flags == ["-DNDEBUG", "-include cfg.h", "-std=gnu99"]
    with pytest.raises(ConfigError) as e:
        _project(tmp_path / "bad", 'dropped_flags = ["-O2"]\n')
    assert "build.dropped_flags" in str(e.value) and "'-O2': expected a project option" in str(e.value)
    with pytest.raises(ConfigError) as e:
        _project(tmp_path / "evaluated", 'project_flags = ["-I$(HOME)"]\n')
    assert "contains '$'" in str(e.value)


@pytest.mark.integration
def test_new_keeps_the_projects_own_options_saying_where_each_came_from(tmp_path, monkeypatch):
    release_of(tmp_path, monkeypatch, FEATURE)
    said: list[str] = []
    path = scaffold.new("demo", "demo-src", tmp_path / "demo", said.append)
    t = target.load(str(path))
    assert t.spec.build.project_flags == ["-DFEATURE", "-Iinclude"]
    text = path.read_text()
    assert ("#   -DFEATURE: the project's own build passes it on 1 of 1 compile lines (first: "
            "gcc -O2 -DFEATURE -Iinclude -c main.c -o main.o  (in <tree>))") in text
    assert [line for line in said if line.startswith("trial build")] == [
        "trial build 1 at -O2: failed", "trial build 2 at -O2: flags-mismatch",
        "trial build 3 at -O2: ok"]
    b = _build(t, "-O2", tmp_path / "check")
    assert b.status == "ok" and _says(b) == "feature\n"


@pytest.mark.integration
def test_a_cmake_projects_default_build_type_defines_are_its_own(tmp_path):
    """CMake: the variant blanks CMAKE_C_FLAGS_RELEASE and with it the -DNDEBUG of the Release
    type the project picks itself; what add_compile_definitions adds stays on every line."""
    src = tmp_path / "p/src"
    src.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(p C)\n"
        "if(NOT CMAKE_BUILD_TYPE)\n  set(CMAKE_BUILD_TYPE Release)\nendif()\n"
        "add_compile_definitions(KEEP)\nadd_executable(prog main.c)\n")
    (src / "main.c").write_text("#include <assert.h>\nint main(void) { assert(1); return 0; }\n")
    (tmp_path / "p/target.toml").write_text(
        'summary = "cmake"\nversion = "1"\n[source]\npath = "src"\n'
        '[build]\nsystem = "cmake"\nbinary = "prog"\n'
        '[inputs]\nkind = "file"\npath = "x"\n[run]\nargv = ["{binary}"]\n[check]\nmethod = "exact"\n')
    b = _build(target.load(str(tmp_path / "p")), "-O2", tmp_path / "run")
    assert b.status == "flags-mismatch" and list(b.dropped) == ["-DNDEBUG"], b.detail


def test_cache_clear_removes_the_projects_own_builds(tmp_path, monkeypatch):
    # A cache of its own: --clear empties every cache, the session's launcher and ccache too.
    own = tmp_path / "cache"
    monkeypatch.setenv("FLAGSWEEP_CACHE", str(own))
    own_build.store("k" * 64, own_build.Reference(compiles={}), own)
    done = subprocess.run([sys.executable, "-m", "flagsweep", "cache", "--clear"],
                          capture_output=True, text=True, check=True)
    (said,) = [line for line in done.stdout.splitlines() if line.startswith("own-flags ")]
    assert said == f"own-flags cache {own / 'own-flags'}: 1 projects' own builds removed"
    assert own_build.load("k" * 64, own) is None


@pytest.mark.integration
def test_options_a_makefile_keeps_in_its_cc_are_the_projects_own_too(tmp_path):
    """Lua's Makefile says `CC= gcc -std=gnu99`: `make CC=...` drops the -std with the
    compiler, so the project's own build runs with its own CC (the wrapper found on PATH under
    the compiler's usual names) and sees it."""
    t = _project(tmp_path / "p")
    makefile = tmp_path / "p/src/Makefile"
    makefile.write_text("CC = cc -std=gnu99\n" + makefile.read_text())
    b = _build(t, "-O1", tmp_path / "run")
    assert b.status == "flags-mismatch"
    assert "-std=gnu99" in b.dropped and "-DFEATURE" in b.dropped


@pytest.mark.integration
def test_a_variant_left_unchecked_by_a_failed_own_build_is_not_cached_as_verified(tmp_path):
    """The project's own build fails (its own CFLAGS break it), so nothing says what a variant
    drops: the variant is measured, with the warning, but not kept in the build cache, where a
    later sweep would reuse it as verified without the check."""
    t = _project(tmp_path / "p")
    makefile = tmp_path / "p/src/Makefile"
    makefile.write_text(makefile.read_text().replace("-DFEATURE", "-DFEATURE -DBROKEN"))
    main = tmp_path / "p/src/main.c"
    main.write_text("#ifdef BROKEN\n#error the project's own flags break it\n#endif\n"
                    + main.read_text())
    (tmp_path / "p/src/README").write_text(str(tmp_path))    # a source tree no test built
    first = _build(t, "-O1", tmp_path / "first")
    assert first.status == "ok" and first.flags_verified
    _build(t, "-O1", tmp_path / "second")
    built = json.loads((tmp_path / "second/manifest.json").read_text())["variants"]
    assert "gcc-O1" in built                   # built again: the first was not cached
