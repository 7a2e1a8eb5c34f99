"""A build's environment is flagsweep's own: hostile variables in the shell (ccache's, the
compilers', make's, CMake's) neither build other code than the variant's nor poison ccache or
the build cache for later builds. Real ccache, real compilers, planted programs."""

from __future__ import annotations

import logging
import os
import pwd
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from flagsweep.compilation import variants
from flagsweep.errors import ConfigError
from flagsweep.experiment import matrix, recipe, target
from flagsweep.host import environment

pytestmark = pytest.mark.integration

LOOP = ("int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * i; return s; }\n"
        "int main(int argc, char **argv) { (void)argv; return work(argc * 1000) & 1; }\n")


def _target(folder: Path, system: str = "make") -> target.Target:
    if system == "make":
        # main.o by make's own rule, which also reads CPPFLAGS and TARGET_ARCH
        build = {"Makefile": "prog: main.o\n\t$(CC) $(CFLAGS) -o prog main.o\n"}
    else:
        build = {"CMakeLists.txt": "cmake_minimum_required(VERSION 3.18)\nproject(p C)\n"
                                   "add_executable(prog main.c)\n"}
    return _project(folder, {"main.c": LOOP, **build}, system)


def _project(folder: Path, members: dict[str, str], system: str) -> target.Target:
    """A target whose source folder holds members, built by `system`, its program `prog`."""
    for name, text in members.items():
        _write(folder / "src" / name, text)
    (folder / "target.toml").write_text(
        f'summary = "one loop"\nversion = "1"\n[source]\npath = "src"\n'
        f'[build]\nsystem = "{system}"\nbinary = "prog"\n'
        '[inputs]\nkind = "file"\npath = "x"\n[run]\nargv = ["{binary}"]\n[check]\nmethod = "exact"\n')
    return target.load(str(folder))


def _matrix(compiler: str = "gcc") -> matrix.Matrix:
    return matrix.expand(recipe.from_flags(["-O2"], [compiler]))


def _build(t: target.Target, out: Path, cache: Path, compiler: str = "gcc",
           rebuild: bool = False, m: matrix.Matrix | None = None) -> variants.VariantBuild:
    """The -O2 build; with m, that matrix, expanded before a hostile variable was set: the
    compiler probes refuse the variables that run programs (tests/experiment/test_flag_policy.py), so
    the build's own environment is tested past them."""
    m = m or _matrix(compiler)
    (b,) = variants.build_all(t, m, variants.Options(out_dir=out, jobs=2, cache=cache,
                                                     rebuild=rebuild))
    return b


def _comment(binary: Path) -> str:
    """The compilers that left their banner in the binary."""
    with open(binary, "rb") as f:
        section = ELFFile(f).get_section_by_name(".comment")
        return section.data().decode(errors="replace") if section else ""


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return path


def _cc1_adding_O0(folder: Path) -> Path:
    real = subprocess.run(["gcc", "-print-prog-name=cc1"], capture_output=True, text=True,
                          check=True).stdout.strip()
    _script(folder / "cc1", f'exec {real} "$@" -O0\n')
    return folder


# Each variable, pointed at something that compiles -O0 code where the variant asked -O2.
HOSTILE = {
    "CCACHE_PREFIX": lambda d: str(_script(d / "prefix", 'exec "$@" -O0\n')),
    "MAKEFILES": lambda d: str(_write(d / "extra.mk", "override CFLAGS += -O0\n")),
    "MAKEFLAGS": lambda d: "TARGET_ARCH=-O0",
    "TARGET_ARCH": lambda d: "-O0",
    "CPPFLAGS": lambda d: "-O0",
}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def reference(session_cache, tmp_path_factory) -> tuple[target.Target, str]:
    """The project and the code of its -O2 build in an environment of nothing hostile: built
    once a module, since the tests only read it (each builds the project in folders and caches
    of its own), in the environment the suite's isolated_cache gives each test."""
    folder = tmp_path_factory.mktemp("reference")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLAGSWEEP_CACHE", str(session_cache))
        mp.setenv("XDG_CONFIG_HOME", str(session_cache / "config"))
        mp.delenv("CCACHE_DIR", raising=False)
        t = _target(folder / "project")
        b = _build(t, folder / "reference", folder / "reference-cache")
    assert b.status == "ok", b.detail
    return t, b.code_sha256


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_variable_neither_builds_other_code_nor_poisons_later_builds(
        reference, tmp_path, monkeypatch, name):
    t, code = reference
    cache, m = tmp_path / "cache", _matrix()
    with monkeypatch.context() as env:
        env.setenv(name, HOSTILE[name](tmp_path / "planted"))
        hostile = _build(t, tmp_path / "hostile", cache, rebuild=True, m=m)
    assert hostile.status == "ok" and hostile.flags_verified, hostile.detail
    assert hostile.code_sha256 == code
    # A clean build after it, past the build cache (ccache only) and through it.
    assert _build(t, tmp_path / "clean", cache, rebuild=True).code_sha256 == code
    assert _build(t, tmp_path / "again", cache).code_sha256 == code


def test_ccache_compiler_in_the_environment_does_not_swap_the_compiler(reference, tmp_path,
                                                                        monkeypatch):
    t, _ = reference
    cache = tmp_path / "cache"
    with monkeypatch.context() as env:
        env.setenv("CCACHE_COMPILER", "/usr/bin/clang")
        swapped = _build(t, tmp_path / "hostile", cache)
    assert "GCC:" in _comment(swapped.binary) and "clang" not in _comment(swapped.binary)
    later = _build(t, tmp_path / "later", cache)          # the build cache's entry
    assert "clang" not in _comment(later.binary)


# The variables with which the compiler itself runs programs: refused by name when a compiler
# is resolved, so also when the build starts after a matrix expanded in a clean environment.
RUNNING = {
    "GCC_EXEC_PREFIX": ("gcc", lambda d: f"{_cc1_adding_O0(d / 'exec')}/"),
    "COMPILER_PATH": ("gcc", lambda d: str(_cc1_adding_O0(d / 'path'))),
    "CCC_OVERRIDE_OPTIONS": ("clang", lambda d: "+-O0"),
}


@pytest.mark.parametrize("name", list(RUNNING))
def test_a_variable_with_which_the_compiler_runs_programs_stops_the_build(tmp_path, monkeypatch,
                                                                          name):
    compiler, value = RUNNING[name]
    t, m = _target(tmp_path / "project"), _matrix(compiler)
    monkeypatch.setenv(name, value(tmp_path / "planted"))
    with pytest.raises(ConfigError, match=f"^the environment sets {name}="):
        _build(t, tmp_path / "hostile", tmp_path / "cache", compiler, rebuild=True, m=m)
    assert not list((tmp_path / "hostile").rglob("*.o"))        # no compile ran


def test_a_cmake_launcher_from_the_environment_is_not_used(tmp_path, monkeypatch):
    t = _target(tmp_path / "project", "cmake")
    code = _build(t, tmp_path / "reference", tmp_path / "reference-cache").code_sha256
    monkeypatch.setenv("CMAKE_C_COMPILER_LAUNCHER",
                       str(_script(tmp_path / "launcher", 'exec "$@" -O0\n')))
    b = _build(t, tmp_path / "hostile", tmp_path / "cache", rebuild=True)
    assert b.status == "ok" and b.flags_verified, b.detail
    assert b.code_sha256 == code


def test_what_the_build_ignores_is_said_and_what_it_reads_is_in_the_key(tmp_path, monkeypatch,
                                                                         caplog):
    t = _target(tmp_path / "project")
    cache = tmp_path / "cache"
    _build(t, tmp_path / "first", cache)
    monkeypatch.setenv("CFLAGS", "-O0")
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "users-ccache"))
    with caplog.at_level(logging.WARNING):
        same = _build(t, tmp_path / "same", cache)
    assert same.reused       # what the build does not see does not make it another build
    assert ("the build ignores CCACHE_DIR, CFLAGS from the environment: a build's compiler, "
            "flags and ccache settings are flagsweep's own") in caplog.text
    # PATH chooses the assembler and linker gcc runs: another PATH is another build.
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert not _build(t, tmp_path / "other-path", cache).reused


# Two files, so that gcc's LTO step has more than one partition to compile: with
# -flto=auto it hands them to make, as $MAKE when the environment sets it.
TWO_FILES = {
    "a.c": "int work(int n);\nint main(int argc, char **argv) { (void)argv; "
           "return work(argc * 1000) & 1; }\n",
    "b.c": "int square(int i) { return i * i; }\n"
           "int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += square(i); return s; }\n",
}


def _marking(path: Path, marker: Path, then: str = "") -> Path:
    """A planted program that leaves a line in marker each time it runs, then does `then`."""
    return _script(path, f'echo "$0 $*" >> {marker}\n{then}')


def test_make_from_the_environment_never_runs_at_an_lto_link(tmp_path, monkeypatch):
    t = _project(tmp_path / "project", {
        **TWO_FILES, "Makefile": "prog: a.o b.o\n\t$(CC) $(CFLAGS) $(LDFLAGS) -o prog a.o b.o\n"},
        "make")
    m = matrix.expand(recipe.from_flags(["-O2 -flto=auto -flto-partition=max"], ["gcc"]))
    marker = tmp_path / "ran"
    monkeypatch.setenv("MAKE", str(_marking(tmp_path / "planted" / "make", marker,
                                            'exec /usr/bin/make "$@"\n')))
    b = _build(t, tmp_path / "out", tmp_path / "cache", m=m)
    assert not marker.exists(), marker.read_text()
    assert b.status == "ok" and b.flags_verified and b.lto, b.detail


# configure.ac and Makefile.in of a project built out of its tree, as the step driver does
AUTOCONF = {
    "configure.ac": "AC_INIT([demo], [1.0])\nAC_PROG_CC\nAC_CONFIG_FILES([Makefile])\n"
                    "AC_OUTPUT\n",
    "Makefile.in": "VPATH = @srcdir@\nCC = @CC@\nCFLAGS = @CFLAGS@\n"
                   "prog: a.o b.o\n\t$(CC) $(CFLAGS) $(LDFLAGS) -o prog a.o b.o\n",
}


@pytest.mark.skipif(subprocess.run(["sh", "-c", "command -v autoreconf"]).returncode != 0,
                    reason="autoconf is not installed")
def test_a_config_site_from_the_environment_is_never_sourced(tmp_path, monkeypatch):
    t = _project(tmp_path / "project", {**TWO_FILES, **AUTOCONF}, "autotools")
    subprocess.run(["autoreconf", "-fi"], cwd=tmp_path / "project" / "src", check=True,
                   capture_output=True)
    m, marker = _matrix(), tmp_path / "sourced"
    # What every configure does with it: `. "$CONFIG_SITE"`, in configure's own shell.
    monkeypatch.setenv("CONFIG_SITE", str(_write(tmp_path / "planted" / "site.sh",
                                                 f"echo sourced >> {marker}\nCFLAGS=-O0\n")))
    b = _build(t, tmp_path / "out", tmp_path / "cache", m=m)
    assert not marker.exists()
    assert b.status == "ok" and b.flags_verified, b.detail


# What make and the shell add of their own to a recipe's environment: make exports the
# variables of its command line (flagsweep's CC=, CFLAGS=, ...) to every recipe.
MAKES_OWN = {"MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES", "MAKE_TERMOUT", "MAKE_TERMERR",
             "PWD", "OLDPWD", "SHLVL", "_", "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS",
             "FLAGSWEEP_LDFLAGS"}


def test_a_build_sees_only_the_variables_flagsweep_writes(tmp_path, monkeypatch):
    t = _project(tmp_path / "project", {
        "main.c": LOOP, "Makefile": "prog: main.o\n\tenv > seen.env\n\t$(CC) $(CFLAGS) -o prog main.o\n"},
        "make")
    m = _matrix()
    planted = {"BUILD_HOOK": "anything no list has heard of", "LD_LIBRARY_PATH": str(tmp_path),
               "TMPDIR": str(tmp_path), "HOME": str(tmp_path / "home"), "LANG": "de_DE.UTF-8",
               "SOURCE_DATE_EPOCH": "1700000000"}
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    b = _build(t, tmp_path / "out", tmp_path / "cache", m=m)
    assert b.status == "ok", b.detail
    seen = dict(line.split("=", 1) for line in (b.binary.parent / "seen.env").read_text()
                .splitlines() if "=" in line)
    assert set(seen) - MAKES_OWN == {
        "PATH", "SOURCE_DATE_EPOCH", "HOME", "LC_ALL", "FLAGSWEEP_COMPILE_LOG",
        "FLAGSWEEP_SNAPSHOTS", "CCACHE_DIR",
        "CCACHE_CONFIGPATH", "CCACHE_NAMESPACE", "CCACHE_BASEDIR"}
    assert seen["PATH"] == environment.search_path(os.environ["PATH"])[0]
    assert seen["SOURCE_DATE_EPOCH"] == "1700000000"
    assert seen["HOME"] == pwd.getpwuid(os.geteuid()).pw_dir and seen["LC_ALL"] == "C"


def test_what_a_build_tool_reads_is_named_and_only_what_a_build_sees_is_keyed(
        tmp_path, monkeypatch, caplog):
    t = _target(tmp_path / "project")
    cache = tmp_path / "cache"
    _build(t, tmp_path / "first", cache)
    dropped = {"MAKE": str(tmp_path / "make"), "CONFIG_SITE": str(tmp_path / "site.sh"),
               "LD_LIBRARY_PATH": str(tmp_path), "PKG_CONFIG_PATH": str(tmp_path),
               # a session's own: dropped too, but no warning names them
               "TERM": "xterm-256color", "LANG": "de_DE.UTF-8", "TMPDIR": str(tmp_path),
               "SSH_CONNECTION": "10.0.0.1 50000 10.0.0.2 22", "HOME": str(tmp_path)}
    for name, value in dropped.items():
        monkeypatch.setenv(name, value)
    with caplog.at_level(logging.WARNING):
        same = _build(t, tmp_path / "same", cache)
    assert same.reused          # none of them reaches the build, so none is another build
    said = [r.getMessage() for r in caplog.records if "the build ignores" in r.getMessage()]
    assert said == ["the build ignores CONFIG_SITE, LD_LIBRARY_PATH, MAKE, PKG_CONFIG_PATH from "
                    "the environment: a build's compiler, flags and ccache settings are "
                    "flagsweep's own, and of the environment it reads only PATH and "
                    "SOURCE_DATE_EPOCH (docs/architecture.md, ccache)"]
    # __DATE__ and __TIME__ follow SOURCE_DATE_EPOCH: another date is another build.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert not _build(t, tmp_path / "dated", cache).reused


def test_a_build_or_compiler_probe_environment_is_written_not_inherited():
    shell = {"PATH": "/usr/local/bin:/usr/bin", "MAKE": "/tmp/make", "CONFIG_SITE": "/tmp/x",
             "HOME": "/tmp/home", "TMPDIR": "/tmp/mine", "LD_PRELOAD": "/tmp/x.so",
             "PERL5OPT": "-Mevil", "FLAGSWEEP_CCACHE": "0", "LC_ALL": "de_DE.UTF-8"}
    assert environment.clean(shell) == {"PATH": "/usr/local/bin:/usr/bin", "FLAGSWEEP_CCACHE": "0",
                                        "HOME": pwd.getpwuid(os.geteuid()).pw_dir, "LC_ALL": "C"}
    assert environment.ignored(shell) == ["CONFIG_SITE", "LD_PRELOAD", "MAKE"]


def test_a_make_planted_in_a_path_folder_others_can_write_never_runs(tmp_path, monkeypatch, caplog):
    """A PATH whose first folder every user can write (a careless `export PATH=/srv/tools:$PATH`
    for a shared folder, say): a `make` planted there would run as root in every build. The
    build's PATH keeps only folders no one else can change, and the warning names the one
    left out."""
    t = _project(tmp_path / "project", {"main.c": LOOP, "Makefile":
                                        "prog: main.o\n\t$(CC) $(CFLAGS) -o prog main.o\n"}, "make")
    m = _matrix()
    shared = tmp_path / "shared-tools"
    marker = tmp_path / "ran"
    _marking(shared / "make", marker, 'exec /usr/bin/make "$@"\n')
    shared.chmod(0o777)
    monkeypatch.setenv("PATH", f"{shared}{os.pathsep}.{os.pathsep}{os.environ['PATH']}")
    b = _build(t, tmp_path / "out", tmp_path / "cache", m=m)
    assert not marker.exists(), marker.read_text()
    assert b.status == "ok" and b.flags_verified, b.detail
    assert f"the build's PATH leaves out {shared}: {shared} is writable by every user; " \
           ".: not an absolute path:" in caplog.text
