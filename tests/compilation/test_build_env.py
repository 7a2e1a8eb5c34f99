"""A build's environment is flagsweep's own: hostile variables in the shell (ccache's, the
compilers', make's, CMake's) neither build other code than the variant's nor poison ccache or
the build cache for later builds. Real ccache, real compilers, planted programs."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from flagsweep.compilation import variants
from flagsweep.errors import ConfigError
from flagsweep.experiment import matrix, recipe, target

pytestmark = pytest.mark.integration

LOOP = ("int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * i; return s; }\n"
        "int main(int argc, char **argv) { (void)argv; return work(argc * 1000) & 1; }\n")


def _target(folder: Path, system: str = "make") -> target.Target:
    src = folder / "src"
    src.mkdir(parents=True)
    (src / "main.c").write_text(LOOP)
    if system == "make":
        # main.o by make's own rule, which also reads CPPFLAGS and TARGET_ARCH
        (src / "Makefile").write_text("prog: main.o\n\t$(CC) $(CFLAGS) -o prog main.o\n")
    else:
        (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.18)\nproject(p C)\n"
                                            "add_executable(prog main.c)\n")
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


@pytest.fixture
def reference(tmp_path) -> tuple[target.Target, str]:
    """The project and the code of its -O2 build in an environment of nothing hostile."""
    t = _target(tmp_path / "project")
    b = _build(t, tmp_path / "reference", tmp_path / "reference-cache")
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
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert not _build(t, tmp_path / "other-path", cache).reused
