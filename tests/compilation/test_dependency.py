"""A library and its frontend from two sources, built as one target: the library (a
`[[dependency]]`) is built first with each variant's flags into the variant's tree, the program
against it, so the measured binary holds code built with the flags under study. Built for real
(gcc, CMake, both sources tiny): the build step alone, two variants and one whose dependency
drops the variant's flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flagsweep import model
from flagsweep.compilation import dependency, records, variants
from flagsweep.compilation.manifest import Dependency, Manifest, Tools
from flagsweep.errors import ConfigError
from flagsweep.experiment import matrix, recipe, target
from flagsweep.report import variants as report_variants
from report_fixture import results_doc

# The library: two files whose loops -O1 and -O2 compile differently; installed as a static
# archive and its header, as a distribution's library package is. Given -DREPLACE, its
# CMakeLists replaces the flags it is given, as a library's own build may (one build, three
# variants, shows both cases).
CODEC = {
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.18)\nproject(codec C)\n"
                      "if(CMAKE_C_FLAGS MATCHES REPLACE)\n  set(CMAKE_C_FLAGS -O0)\nendif()\n"
                      "add_library(codec STATIC mix.c sum.c)\n"
                      "install(TARGETS codec ARCHIVE DESTINATION lib)\n"
                      "install(FILES codec.h DESTINATION include)\n",
    "codec.h": "unsigned mix(const unsigned char *p, unsigned n);\nint sum(const int *a, int n);\n",
    "mix.c": "unsigned mix(const unsigned char *p, unsigned n) {\n  unsigned h = 2166136261u;\n"
             "  for (unsigned i = 0; i < n; i++) { h ^= p[i]; h *= 16777619u; }\n  return h;\n}\n",
    "sum.c": "int sum(const int *a, int n) {\n  int s = 0;\n"
             "  for (int i = 0; i < n; i++) s += a[i] * 3 + (a[i] >> 2);\n  return s;\n}\n",
}
# The frontend: found the library where CMAKE_PREFIX_PATH says, as find_package would.
FRONTEND = {
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.18)\nproject(front C)\n"
                      "find_library(CODEC codec REQUIRED)\nfind_path(CODEC_H codec.h REQUIRED)\n"
                      "add_executable(front main.c)\n"
                      "target_include_directories(front PRIVATE ${CODEC_H})\n"
                      "target_link_libraries(front ${CODEC})\n",
    "main.c": "#include <codec.h>\nint main(void) {\n  int a[64];\n"
              "  for (int i = 0; i < 64; i++) a[i] = i;\n"
              "  return (int)((mix((const unsigned char *)a, sizeof a) + sum(a, 64)) & 1);\n}\n",
}
TARGET = ('summary = "a frontend and its library"\nversion = "1"\n[source]\npath = "front"\n'
          '[build]\nsystem = "cmake"\nbinary = "front"\n'
          '[[dependency]]\nname = "codec"\nversion = "1.0"\nsystem = "cmake"\n'
          'source = { path = "codec" }\n'
          '[inputs]\nkind = "file"\npath = "x"\n[run]\nargv = ["{binary}"]\n'
          '[check]\nmethod = "exact"\n')


def _write(folder: Path, codec: dict[str, str]) -> target.Target:
    for sub, texts in (("codec", codec), ("front", FRONTEND)):
        (folder / sub).mkdir(parents=True)
        for name, text in texts.items():
            (folder / sub / name).write_text(text)
    (folder / "target.toml").write_text(TARGET)
    return target.load(str(folder))


def _build(folder: Path, flag_sets: list[str], cache: Path):
    """Built afresh (rebuild: the trees are read, not a cached binary) in the session's cache,
    which a module's fixture, set up before each test's own, must be handed."""
    t = _write(folder / "p", CODEC)
    m = matrix.expand(recipe.from_flags(flag_sets, ["gcc"]))
    out = folder / "run"
    builds = variants.build_all(t, m, variants.Options(out_dir=out, jobs=2, cache=cache,
                                                       rebuild=True))
    return out, {" ".join(b.variant.flags): b for b in builds}


@pytest.fixture(scope="module")
def built(tmp_path_factory, session_cache):
    return _build(tmp_path_factory.mktemp("dependency"), ["-O1", "-O2", "-O2 -DREPLACE"],
                  session_cache)


@pytest.mark.integration
def test_the_dependency_is_built_with_each_variants_flags_and_audited(built):
    out, builds = built
    low, high = builds["-O1"], builds["-O2"]
    assert [low.status, high.status] == ["ok", "ok"], [low.detail, high.detail]
    assert low.flags_verified and high.flags_verified
    # the frontend's main.c and the library's two files, all through the wrapper, audited
    assert low.audit.compiles == high.audit.compiles == 3
    for b, level in ((low, "-O1"), (high, "-O2")):
        vdir = out / "builds" / b.variant.id
        lines = [c for c in records.read(vdir / "compile.jsonl") if c.kind == "compile"]
        compiled = {Path(a).name for c in lines for a in c.argv if a.endswith(".c")}
        assert compiled == {"mix.c", "sum.c", "main.c"}
        assert all(level in c.argv for c in lines)
        assert (dependency.prefix(vdir / "tree") / "lib" / "libcodec.a").is_file()
    # the library's code is in the binary: other code, and other archives
    assert low.code_sha256 != high.code_sha256 and high.identical_to is None
    archives = [(dependency.prefix(out / "builds" / b.variant.id / "tree") / "lib" /
                 "libcodec.a").read_bytes() for b in (low, high)]
    assert archives[0] != archives[1]


@pytest.mark.integration
def test_the_frontend_loads_nothing_but_the_runtime_and_its_record_names_the_library(built):
    out, builds = built
    for b in (builds["-O1"], builds["-O2"]):
        assert b.external and all(lib.runtime for lib in b.external), b.external
        assert b.libraries == []
        doc = b.contract(out)
        assert doc["dependencies"] == [{"name": "codec", "version": "1.0", "system": "cmake",
                                        "sha256": None}]
        model.Build.model_validate(doc)
    # nothing from outside the tree; the library built with it named, in the terminal and page
    line = ("built with the program, from their own sources and with each variant's flags: "
            "codec 1.0 (cmake)")
    assert variants.foreign(list(builds.values())) == [line]
    doc = results_doc()
    doc["variants"][0]["build"]["dependencies"] = builds["-O2"].contract(out)["dependencies"]
    assert report_variants.foreign(model.Results.model_validate(doc)) == [line]


@pytest.mark.integration
def test_a_dependency_that_replaces_the_variants_flags_is_a_mismatch(built):
    _, builds = built
    b = builds["-O2 -DREPLACE"]
    assert b.status == "flags-mismatch" and not b.flags_verified
    assert any("-O0" in p for p in b.audit.problems), b.audit.problems


def test_a_target_file_checks_its_dependencies(tmp_path):
    def load(extra: str, system: str = "cmake") -> str:
        (tmp_path / "target.toml").write_text(
            TARGET.replace('system = "cmake"\nbinary', f'system = "{system}"\nbinary')
            .replace("[inputs]", extra + "[inputs]"))
        with pytest.raises(ConfigError) as e:
            target.load(str(tmp_path))
        return str(e.value)

    twice = '[[dependency]]\nname = "codec"\nversion = "2"\nsystem = "cmake"\n' \
            'source = { path = "other" }\n'
    assert "dependency names must differ, got ['codec', 'codec']" in load(twice)
    assert "build.system is 'make'" in load("", "make")
    (tmp_path / "target.toml").write_text(TARGET.replace('system = "cmake"\nsource',
                                                         'system = "meson"\nsource'))
    with pytest.raises(ConfigError) as e:
        target.load(str(tmp_path))
    assert "dependency.0.system" in str(e.value)


def test_the_manifest_carries_the_dependencies_and_the_template_key_covers_them(tmp_path):
    d = Dependency(name="opus", version="1.4", system="autotools", source=tmp_path,
                   source_id="a" * 64, configure_args=["--disable-shared"])
    m = Manifest(system="autotools", source=tmp_path, binary="b", configure_args=[],
                 make_args=[], ccache_env={}, compilers={}, templates={}, variants={},
                 dependencies=[d])
    m.write(tmp_path / "manifest.json")
    assert Manifest.read(tmp_path / "manifest.json").dependencies == [d]
    # a manifest written before dependencies existed still reads
    old = json.loads((tmp_path / "manifest.json").read_text())
    del old["dependencies"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert Manifest.read(tmp_path / "old.json").dependencies == []
    other = Dependency(**{**d.__dict__, "configure_args": []})
    assert dependency.key([d]) != dependency.key([other])
    assert dependency.records([d])[0].sha256 == "a" * 64


def test_the_configure_steps_point_inside_the_tree(tmp_path):
    tree = tmp_path / "tree"
    p = dependency.prefix(tree)
    assert dependency.configure_args("cmake", tree) == [f"-DCMAKE_PREFIX_PATH={p}"]
    assert dependency.configure_args("autotools", tree)[:2] == [f"CPPFLAGS=-I{p}/include",
                                                                f"LDFLAGS=-L{p}/lib"]
    assert dependency.environment(tree, {"PATH": "/usr/bin"})["PKG_CONFIG_PATH"].startswith(
        str(p))
    d = Dependency(name="opus", version="1.4", system="autotools", source=tmp_path / "src",
                   source_id="tree:x", configure_args=["--disable-shared"])
    tools = Tools(cc="/w/cc", version="12")
    stages = dict(dependency.commands(d, tools, tree, tree / "b", 2, ["-O3", "-g"], []))
    assert stages["configure"][:4] == [str(tmp_path / "src" / "configure"), f"--prefix={p}",
                                       "CC=/w/cc", "CFLAGS=-O3 -g"]
    # its Makefile's per-file additions (opus' -msse4.1) stay: no CFLAGS on make's line
    assert stages["build"] == ["make", "-j2"]
    own = dict(dependency.commands(d, tools, tree, tree / "b", 2, None, []))
    assert not any(a.startswith("CFLAGS=") for a in own["configure"])
    # at make, the flags replace what configure put in CFLAGS (libogg's own -O2 first)
    d.flags_at = "make"
    at_make = dict(dependency.commands(d, tools, tree, tree / "b", 2, ["-O3", "-g"], []))
    assert "CFLAGS=-O2" in at_make["configure"]
    assert at_make["build"] == ["make", "-j2", "CFLAGS=-O3 -g", "CXXFLAGS=-O3 -g"]
    assert at_make["install"] == ["make", "install", "CFLAGS=-O3 -g", "CXXFLAGS=-O3 -g"]


def test_a_library_the_link_took_from_the_system_is_named(tmp_path):
    lib = dependency.prefix(tmp_path) / "lib"
    lib.mkdir(parents=True)
    (lib / "libopus.a").write_bytes(b"!<arch>\n")
    external = [model.SharedLibrary(name="libopus.so.0", path="/usr/lib/libopus.so.0"),
                model.SharedLibrary(name="libc.so.6", path="/lib/libc.so.6", runtime=True)]
    assert [e.name for e in dependency.shadowed(tmp_path, external)] == ["libopus.so.0"]


# An autotools program (opus-tools' shape): its configure, run once per compiler, must find the
# library already installed; its Makefile keeps the prefix it was pointed at.
CONFIGURE = """#!/bin/sh
srcdir=$(dirname "$0")
for a in "$@"; do case $a in CC=*) cc=${a#CC=};; CPPFLAGS=*) cpp=${a#CPPFLAGS=};;
  LDFLAGS=*) ld=${a#LDFLAGS=};; esac; done
test -f "${ld#-L}/libcodec.a" || { echo "configure: no libcodec in ${ld#-L}"; exit 1; }
printf 'CC = %s\\nCFLAGS = -O2\\nCPPFLAGS = %s\\nLDFLAGS = %s\\n' "$cc" "$cpp" "$ld" > Makefile
printf 'front: main.o\\n\\t$(CC) $(CFLAGS) $(LDFLAGS) -o front main.o -lcodec\\n' >> Makefile
printf 'main.o:\\n\\t$(CC) $(CPPFLAGS) $(CFLAGS) -c %s/main.c -o main.o\\n' "$srcdir" >> Makefile
"""


@pytest.mark.integration
def test_an_autotools_program_is_configured_once_and_built_against_its_variants_library(
        tmp_path, session_cache):
    t = _write(tmp_path / "p", CODEC)
    (t.folder / "front" / "configure").write_text(CONFIGURE)
    (t.folder / "front" / "configure").chmod(0o755)
    t.path.write_text(t.path.read_text().replace('system = "cmake"\nbinary',
                                                 'system = "autotools"\nbinary'))
    t = target.load(str(t.folder))
    m = matrix.expand(recipe.from_flags(["-O1"], ["gcc"]))
    out = tmp_path / "run"
    (b,) = variants.build_all(t, m, variants.Options(out_dir=out, jobs=2, cache=session_cache,
                                                     rebuild=True))
    assert (b.status, b.audit.compiles) == ("ok", 3), b.detail
    tree = out / "builds" / b.variant.id / "tree"
    # the cached configure tree, relocated: the variant's own prefix, filled by its own build
    assert f"LDFLAGS = -L{dependency.prefix(tree)}/lib" in (tree / "Makefile").read_text()
    lines = [c for c in records.read(tree.parent / "compile.jsonl") if c.kind == "compile"]
    assert len(lines) == 3 and all("-O1" in c.argv for c in lines)
    assert all(lib.runtime for lib in b.external)
