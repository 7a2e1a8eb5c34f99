"""The environment every build command runs in: flagsweep's own, not whatever the shell held.

Compilers, make, CMake and ccache all read the environment, and what they read there changes
the code without showing on any recorded command line: CCACHE_COMPILER=/usr/bin/clang built
"gcc -O3" with clang; a CCACHE_PREFIX script adding -O0 compiled -O0 code and stored it in
ccache under the -O3 command's key, for every later build to reuse; GCC_EXEC_PREFIX or
COMPILER_PATH with a cc1 in it runs that cc1; CCC_OVERRIDE_OPTIONS edits clang's command
line; MAKEFLAGS and MAKEFILES give make variables and makefiles of their own.

So a build's environment is the user's with every such variable dropped (a build's compiler,
flags and ccache settings come from the recipe, the target file and flagsweep; a shell's
exported CFLAGS or CC is not an error, it is simply not this build's) and flagsweep's fixed
ccache settings added. What is left that can still change the code (the PATH that finds `as`,
`ld` and make, pkg-config's search path, ...) is in the build cache's key (`keyed`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from flagsweep.caches import CCACHE

# Variables that are compiler options by another name: with them gcc or clang runs programs
# from another folder (GCC_EXEC_PREFIX and COMPILER_PATH are -B; clang adds any option
# CCC_OVERRIDE_OPTIONS names, -fplugin= included), writes files (-MF, clang's logs) or compiles
# twice with other options. Flags are code-generation options only (spec/flags.py), so a shell
# that sets one is refused (toolchain.check_environment), not ignored: a build without them
# would differ without saying why. The search paths (CPATH, LIBRARY_PATH, ...) only read, are
# often a machine's own set-up (environment modules), and are part of the build cache's key.
DRIVER_ENV = ("GCC_EXEC_PREFIX", "COMPILER_PATH", "CCC_OVERRIDE_OPTIONS", "DEPENDENCIES_OUTPUT",
              "SUNPRO_DEPENDENCIES", "GCC_COMPARE_DEBUG", "CC_PRINT_OPTIONS_FILE",
              "CC_PRINT_HEADERS_FILE", "CC_LOG_DIAGNOSTICS_FILE", "CC_PRINT_PROC_STAT_FILE")
# Variables no build command sees, by name ...
DROPPED = frozenset((
    # the build's tools and flags, which the recipe and the target file give
    "CC", "CXX", "CPP", "CXXCPP", "AS", "LD", "AR", "RANLIB", "NM", "STRIP", "OBJCOPY",
    "OBJDUMP", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LIBS", "LDLIBS", "ASFLAGS",
    "CCASFLAGS", "TARGET_ARCH",
    # the compilers' search paths
    "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH",
    "LD_RUN_PATH",
    # make's variables and makefiles from outside
    "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES",
    *DRIVER_ENV,
))
# ... and by prefix: ccache's settings are flagsweep's own (`ccache`), CMake's are the step
# driver's (a CMAKE_TOOLCHAIN_FILE or CMAKE_C_COMPILER_LAUNCHER from the shell runs code of its
# own in every configure).
DROPPED_PREFIXES = ("CCACHE_", "CMAKE_")
# What a build still reads from the environment that can change the code: in the build
# cache's key, so that a build under another PATH or pkg-config path is built again.
KEYED = ("PATH", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR",
         "PKG_CONFIG_SYSROOT_DIR", "SOURCE_DATE_EPOCH")
# Bumped when flagsweep's ccache settings change: entries stored under other settings (or
# before a build's environment was its own) are never hit again.
CCACHE_NAMESPACE = "flagsweep-1"
CCACHE_CONFIG = "# flagsweep's ccache reads only this file (CCACHE_CONFIGPATH); leave it empty\n"


def dropped(name: str) -> bool:
    return name in DROPPED or name.startswith(DROPPED_PREFIXES)


def ignored(environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables set here that builds will not see, sorted."""
    return sorted(name for name in (os.environ if environ is None else environ) if dropped(name))


def clean(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without what builds must not see."""
    return {k: v for k, v in (os.environ if environ is None else environ).items()
            if not dropped(k)}


def keyed(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What of the environment a build reads and the build cache must key on."""
    env = os.environ if environ is None else environ
    return {k: env[k] for k in KEYED if env.get(k)}


def ccache(cache: Path, out: Path) -> dict[str, str]:
    """ccache's whole configuration, as variables: its store, a configuration file of
    flagsweep's own (which also keeps the system-wide one from being read), the namespace, and a
    base dir so that a fresh build tree still hits the cache (CCACHE_BASEDIR turns absolute
    paths under the run's folder into relative ones: the same compile in reports/A/builds/x and
    reports/B/builds/x is one entry)."""
    store = CCACHE.folder(cache)
    store.mkdir(parents=True, exist_ok=True)
    config = store / "flagsweep.conf"
    if not config.is_file() or config.read_text() != CCACHE_CONFIG:
        config.write_text(CCACHE_CONFIG)
    return {"CCACHE_DIR": str(store), "CCACHE_CONFIGPATH": str(config),
            "CCACHE_NAMESPACE": CCACHE_NAMESPACE, "CCACHE_BASEDIR": str(out)}


def build(ccache_env: Mapping[str, str], compile_log: Path | None = None,
          snapshots: Path | None = None) -> dict[str, str]:
    """The environment of a build command: clean, flagsweep's ccache settings, where the
    wrapper records and keeps what it compiled (wrapper.c), and build logs in one language."""
    env = clean()
    env.update(ccache_env)
    env.pop("FLAGSWEEP_COMPILE_LOG", None)
    env.pop("FLAGSWEEP_SNAPSHOTS", None)
    if compile_log is not None:
        env["FLAGSWEEP_COMPILE_LOG"] = str(compile_log)
    if snapshots is not None:
        env["FLAGSWEEP_SNAPSHOTS"] = str(snapshots)
    env["LC_ALL"] = "C"
    return env
