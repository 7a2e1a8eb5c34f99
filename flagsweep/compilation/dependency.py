"""Dependencies: libraries a target builds before its program, each from its own source, with
the variant's flags, so that the code measured is the code built.

A frontend such as opus-tools' opusenc holds little of the work: the codec is a library from
another source package. Built alone, its sweep measures a WAV parser calling the system's codec.
A target's `[[dependency]]` tables name those libraries (docs/targets.md); for each variant the
step driver (steps.py) builds them in order, each against the ones before it, into one prefix
inside the variant's build tree, then configures and builds the program against that prefix.

Why these places and steps:
  - the prefix and the dependencies' build folders are inside the tree (FOLDER), so the
    audit's tree covers their archives and objects, and the project's own build (own_build.py)
    names their paths `<tree>/...` as the variants do;
  - their compiles run in the build step, after the audited start, through the same wrapper
    into the same compile log: every one of them must carry the variant's flags, and the
    binary's link is traced through their archives to those compiles (audit.py); their
    configure probes go to the configure log, as the program's do;
  - an autotools program's configure runs once per compiler (steps.template), so it is
    configured against the dependencies built with the neutral configure flags inside the
    cached tree; the copy relocated into a variant's tree points at that tree's prefix, which
    the build step then fills with the variant's own build; a CMake program is configured per
    variant, so its dependencies are built before its configure and again, audited, in the
    build step (ccache makes the second build cheap);
  - the environment stays the allow-list (host/environment.py) plus PKG_CONFIG_PATH, pointing
    inside the tree; autotools gets CPPFLAGS=-I and LDFLAGS=-L, CMake CMAKE_PREFIX_PATH.

A dependency built static (`--disable-shared`) is in the binary, hashed with it and loaded from
nowhere; one the link took from the system anyway is named by `shadowed`.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from typing import TYPE_CHECKING

from flagsweep import process
from flagsweep.compilation.manifest import Dependency, Tools

if TYPE_CHECKING:
    from flagsweep import model

# Inside a variant's tree: prefix/ (what the dependencies install) and build/<name>/.
FOLDER = ".flagsweep-deps"
# What configure probes with when the flags are given at make time (the program's, in
# steps.template, and a dependency's with flags_at = "make").
CONFIGURE_CFLAGS = "-O2"


def prefix(tree: Path) -> Path:
    return tree / FOLDER / "prefix"


def environment(tree: Path, env: dict[str, str]) -> dict[str, str]:
    """A build environment that finds the dependencies' pkg-config files first."""
    p = prefix(tree)
    return {**env, "PKG_CONFIG_PATH": f"{p}/lib/pkgconfig:{p}/share/pkgconfig"}


def configure_args(system: str, tree: Path) -> list[str]:
    """What points a program's (or a later dependency's) configure at the prefix."""
    p = prefix(tree)
    if system == "cmake":
        return [f"-DCMAKE_PREFIX_PATH={p}"]
    return [f"CPPFLAGS=-I{p}/include", f"LDFLAGS=-L{p}/lib",
            f"PKG_CONFIG_PATH={p}/lib/pkgconfig:{p}/share/pkgconfig"]


def build(deps: list[Dependency], tools: Tools, tree: Path, jobs: int, flags: list[str] | None,
          envs: tuple[dict[str, str], dict[str, str]], log: Path,
          cmake_flags: list[str]) -> str | None:
    """Build every dependency into the tree's prefix, afresh: None, or why one failed.

    flags None is the project's own build (no flags of flagsweep's); cmake_flags are the
    CMake options that give a CMake dependency those flags; envs are the configure's and the
    (audited) build's environments."""
    shutil.rmtree(tree / FOLDER, ignore_errors=True)
    configure_env, build_env = (environment(tree, e) for e in envs)
    for d in deps:
        work = tree / FOLDER / "build" / d.name
        work.mkdir(parents=True)
        stages = commands(d, tools, tree, work, jobs, flags, cmake_flags)
        for stage, argv in stages:
            env = configure_env if stage == "configure" else build_env
            with log.open("a") as f:
                f.write(f"flagsweep: dependency {d.name}: {shlex.join(argv)}\n")
            done = process.run(argv, cwd=work, log_file=log, env=env)
            if not done.ok:
                return f"dependency {d.name}: its {stage} exited {done.returncode}"
    return None


def commands(d: Dependency, tools: Tools, tree: Path, work: Path, jobs: int,
             flags: list[str] | None, cmake_flags: list[str]) -> list[tuple[str, list[str]]]:
    """The dependency's configure, build and install commands, with the variant's flags as
    the whole of its compiles' flags (docs/targets.md)."""
    p = str(prefix(tree))
    if d.system == "cmake":
        configure = ["cmake", "-S", str(d.source), "-B", str(work), "-G", "Ninja",
                     "--no-warn-unused-cli", f"-DCMAKE_C_COMPILER={tools.cc}",
                     *([f"-DCMAKE_CXX_COMPILER={tools.cxx}"] if tools.cxx else []),
                     *cmake_flags, f"-DCMAKE_INSTALL_PREFIX={p}", "-DCMAKE_INSTALL_LIBDIR=lib",
                     *configure_args("cmake", tree), *d.configure_args]
        return [("configure", configure),
                ("build", ["cmake", "--build", str(work), f"-j{jobs}", *d.make_args]),
                ("install", ["cmake", "--install", str(work)])]
    # autotools, configured per variant: the flags as configure's CFLAGS keep a Makefile's
    # per-file additions (opus' -msse4.1 for its SSE4.1 files, which `make CFLAGS=` would take
    # away); on make's line (flags_at = "make") they replace what configure put in CFLAGS
    # (libogg's own -O2 before them), as the program's do, configure probing with -O2.
    at_make = d.flags_at == "make" and flags is not None
    given = [] if flags is None else [CONFIGURE_CFLAGS] if at_make else flags
    cflags = [f"{name}={shlex.join(given)}" for name in ("CFLAGS", "CXXFLAGS") if given]
    cxx = [f"CXX={tools.cxx}", *cflags[1:]] if tools.cxx else []
    configure = [str(d.source / "configure"), f"--prefix={p}", f"CC={tools.cc}", *cflags[:1],
                 *cxx, *configure_args("autotools", tree), *d.configure_args]
    mine = [f"{name}={shlex.join(flags)}" for name in ("CFLAGS", "CXXFLAGS")] if at_make else []
    return [("configure", configure), ("build", ["make", f"-j{jobs}", *mine, *d.make_args]),
            ("install", ["make", "install", *mine])]


def drop_builds(tree: Path) -> None:
    """Keep only the prefix: a configure tree copied into every variant needs no objects."""
    shutil.rmtree(tree / FOLDER / "build", ignore_errors=True)


def key(deps: list[Dependency]) -> list:
    """What of the dependencies a cache key covers: their sources and how they are built."""
    return [[d.name, d.version, d.system, d.source_id, d.configure_args, d.make_args,
             d.flags_at] for d in deps]


def records(deps: list[Dependency]) -> list[model.DependencyBuild]:
    """What a variant's build record says was built with it."""
    # the model here, not at the top: the step driver imports this module at every start of
    # every variant's build, and pydantic's import alone costs it a quarter of a second
    from flagsweep import model

    return [model.DependencyBuild(name=d.name, version=d.version, system=d.system,
                                  sha256=None if d.source_id.startswith("tree:") else d.source_id)
            for d in deps]


def built_with(deps: list[model.DependencyBuild]) -> list[str]:
    """The libraries built into the tree before the program, in one line (none: no line): their
    code is in the run and carries the variant's flags, so the measurement covers them too."""
    if not deps:
        return []
    named = ", ".join(f"{d.name} {d.version} ({d.system})" for d in deps)
    return [f"built with the program, from their own sources and with each variant's flags: "
            f"{named}"]


def shadowed(tree: Path, external: list[model.SharedLibrary]) -> list[model.SharedLibrary]:
    """The libraries from outside the tree that the binary loads although a dependency built
    one of that name into its prefix: the link took the system's (a shared one it found
    first), so that code is not the variant's."""
    lib = prefix(tree) / "lib"
    built = {f.name.split(".")[0] for f in lib.glob("lib*")} if lib.is_dir() else set()
    return [e for e in external if e.name.split(".")[0] in built]
