"""A meson project's variant: its setup and its build, for the step driver (steps.py).

  prepare   meson setup <tree> <source> --buildtype=plain --wrap-mode=nodownload
                -Dc_args=<flags> -Dc_link_args=<flags> (and the cpp pair) <configure_args>
            with CC and CXX the compiler's recording wrappers, in the build's environment
  build     ninja -C <tree> -jN <make_args>

Why this way, checked with meson 1.0.1 (Debian 12's):
  - `--buildtype=plain` adds no -O and no -g of meson's own (its default, debug, adds -O0 -g):
    the variant's flags are the only code-generation flags, as CMake's emptied build type
    leaves them. It is also what Debian's dh_auto_configure gives meson.
  - the flags go as the c_args/c_link_args options, not CFLAGS/LDFLAGS: meson reads those
    variables only at a tree's first setup (a profile-guided variant sets it up twice), and
    the build's environment carries no flags (host/environment.py); the options are on the
    setup's command line in build.log. Meson splits an option's value as a shell does, so the
    flags go shlex-joined, each staying one argument.
  - the flags go on the link lines too (c_link_args), as CMake's CMAKE_C_FLAGS and automake's
    CFLAGS do: -flto, -fuse-ld= and a layout's -Wl,--shuffle-sections act at the link.
  - CC/CXX, not a native file: meson takes the compiler from them at setup, and with them set
    it does not put its own ccache in front (the wrapper runs ccache).
  - `--wrap-mode=nodownload`: a subproject's wrap file is never fetched during a build
    (Debian builds so too); one shipped in the source is used.
  - meson's other defaults stay the project's, as CMake's do: default_library (shared unless
    the project says), b_staticpic (static libraries' objects are -fPIC, which the audit shows
    and `new` tolerates as it does CMake's -fPIC), b_ndebug, warning_level.
  - a profile-guided variant's tree is set up again with `--wipe` and the final flags: meson
    1.0's `--reconfigure` keeps the old c_args in build.ninja. The profiles are kept outside
    the tree (pgo.py), so the wiped tree's objects, at the same paths, find theirs.

The project's own build (own_build.py) is set up without buildtype, c_args or link args: the
project's own build type (meson's default, or its default_options) and flags.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from flagsweep.compilation.manifest import Manifest, Order

LANGUAGES = ("c", "cpp")
BUILD_TYPE = "plain"


def setup(m: Manifest, v: Order, tree: Path, flags_list: list[str] | None = None,
          wipe: bool = False) -> list[str]:
    """`meson setup` of the variant's tree; flags_list: other flags than the variant's (a
    profile-guided variant's instrumented stage); wipe: set up an existing tree afresh."""
    argv = ["meson", "setup", str(tree), str(m.source), "--wrap-mode=nodownload"]
    argv += ["--wipe"] if wipe else []
    if v.own_flags:
        return argv + m.configure_args
    flags = shlex.join(v.flags if flags_list is None else flags_list)
    argv.append(f"--buildtype={BUILD_TYPE}")
    argv += [f"-D{lang}_{kind}={flags}" for lang in LANGUAGES for kind in ("args", "link_args")]
    return argv + m.configure_args


def compilers(m: Manifest, v: Order) -> dict[str, str]:
    """CC and CXX as the setup reads them: the variant compiler's recording wrappers."""
    tools = m.compilers[v.compiler]
    return {"CC": tools.cc, **({"CXX": tools.cxx} if tools.cxx else {})}


def build(v: Order, tree: Path, make_args: list[str]) -> list[str]:
    """Ninja in the variant's tree: every default target, or the target's make_args."""
    return ["ninja", "-C", str(tree), f"-j{v.jobs}", *make_args]
