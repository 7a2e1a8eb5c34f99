"""The environment every build command runs in: one flagsweep writes, not whatever the shell held.

Compilers, make, CMake, configure and ccache all read the environment, and what they read there
changes the code, or runs a program, without showing on any recorded command line:
CCACHE_COMPILER=/usr/bin/clang built "gcc -O3" with clang; a CCACHE_PREFIX script adding -O0
compiled -O0 code and stored it in ccache under the -O3 command's key, for every later build to
reuse; GCC_EXEC_PREFIX or COMPILER_PATH with a cc1 in it runs that cc1; CCC_OVERRIDE_OPTIONS
edits clang's command line; MAKEFLAGS and MAKEFILES give make variables and makefiles of their
own; MAKE is the program gcc's LTO step runs at every link of a -flto=auto build; CONFIG_SITE is
a script every autotools configure sources. A list of such names grows every time a tool is
read more closely, so it is not a list of what to drop but of what to pass.

So a build's environment is written here: the few variables of PASSED, taken from the
environment flagsweep starts in, and the ones flagsweep sets itself (the locale, HOME, ccache's
settings, where the wrapper records). Everything else is dropped; the dropped names that a build
tool is known to read are named once in a warning (`ignored`), so that a shell's exported CFLAGS
or MAKE is said and a session's TERM or SSH_CONNECTION is not. What is passed and can change the
code is in the build cache's key (`keyed`).
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Mapping

from flagsweep import files
from flagsweep.caches import CCACHE

# Variables that are compiler options by another name: with them gcc or clang runs programs
# from another folder (GCC_EXEC_PREFIX and COMPILER_PATH are -B; clang adds any option
# CCC_OVERRIDE_OPTIONS names, -fplugin= included), writes files (-MF, clang's logs) or compiles
# twice with other options. Flags are code-generation options only (spec/flags.py), so a shell
# that sets one is refused (toolchain.check_environment), not ignored: a build without them
# would differ without saying why.
DRIVER_ENV = ("GCC_EXEC_PREFIX", "COMPILER_PATH", "CCC_OVERRIDE_OPTIONS", "DEPENDENCIES_OUTPUT",
              "SUNPRO_DEPENDENCIES", "GCC_COMPARE_DEBUG", "CC_PRINT_OPTIONS_FILE",
              "CC_PRINT_HEADERS_FILE", "CC_LOG_DIAGNOSTICS_FILE", "CC_PRINT_PROC_STAT_FILE")
# The variables a build gets from the environment flagsweep starts in, each for a reason:
#   PATH               finds make, cmake, ninja, ccache and the as and ld gcc runs (keyed);
#   SOURCE_DATE_EPOCH  the date __DATE__ and __TIME__ give in a reproducible build: a number,
#                      which gcc refuses otherwise (keyed);
# and flagsweep's own FLAGSWEEP_CCACHE (0: the wrapper calls the compiler without ccache, the
# same code).
# Not passed, though builds could read them: TMPDIR (gcc's temporary .s and LTO files go to
# /tmp, a sticky folder, rather than to a folder another user may write and swap them in),
# LD_LIBRARY_PATH (the libraries cc1 and ld load, libisl's version among them, change the code),
# the compilers' and pkg-config's search paths (a target names its own in configure_args or
# make_args), TZ and LANG (LC_ALL is set; SOURCE_DATE_EPOCH is the way to fix a build's date).
PASSED = ("PATH", "SOURCE_DATE_EPOCH")
PASSED_OWN = ("FLAGSWEEP_CCACHE",)
# Of those, and of what flagsweep writes, what can change the code: the build cache's key, so
# that a build under another PATH is built again.
KEYED = ("PATH", "SOURCE_DATE_EPOCH", "HOME")
# The dropped variables the warning names: the ones build tools read (the tools and their flags,
# the compilers' and pkg-config's search paths, the loader's, make's, configure's, ccache's and
# CMake's own), so that setting one is said; the many a session sets (TERM, LANG, TMPDIR,
# SSH_*, XDG_*, ...) go unnamed: saying them on every build would hide the ones that matter.
NAMED = frozenset((
    "CC", "CXX", "CPP", "CXXCPP", "AS", "LD", "AR", "RANLIB", "NM", "STRIP", "OBJCOPY",
    "OBJDUMP", "LIBS", "LDLIBS", "TARGET_ARCH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH", *DRIVER_ENV,
))
NAMED_PREFIXES = ("CCACHE_", "CMAKE_", "PKG_CONFIG_", "LD_", "MAKE", "CONFIG_")
NAMED_SUFFIXES = ("FLAGS",)      # CFLAGS, LDFLAGS, MAKEFLAGS, MFLAGS, ...
# What apt reads of the environment to reach a mirror (apt(): nothing else is passed to it).
APT_PROXIES = ("http_proxy", "https_proxy", "ftp_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY",
               "FTP_PROXY", "NO_PROXY")
# Bumped when flagsweep's ccache settings change: entries stored under other settings (or
# before a build's environment was its own) are never hit again.
CCACHE_NAMESPACE = "flagsweep-1"
CCACHE_CONFIG = "# flagsweep's ccache reads only this file (CCACHE_CONFIGPATH); leave it empty\n"


def ignored(environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables set here that builds will not see and that a build tool reads, sorted."""
    env = os.environ if environ is None else environ
    return sorted(name for name in env if name not in PASSED + PASSED_OWN and (
        name in NAMED or name.startswith(NAMED_PREFIXES) or name.endswith(NAMED_SUFFIXES)))


def clean(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a build command or a compiler probe: PASSED from the environment
    (environ, else this process's), and what flagsweep writes itself."""
    env = os.environ if environ is None else environ
    written = {name: env[name] for name in PASSED + PASSED_OWN if env.get(name)}
    if "PATH" in written:
        written["PATH"] = search_path(written["PATH"])[0]
    written["HOME"] = home()
    written["LC_ALL"] = "C"          # build logs and compiler answers in one language
    return written


def search_path(value: str) -> tuple[str, list[str]]:
    """PATH as a build (or apt) gets it: only the folders no one but root and this user can
    change, since make, cmake, ninja, as and ld are run from the first folder that has one,
    and a `make` planted in a folder others may write would run as root. A relative entry
    (".", or the empty one, which is the current folder: the build tree) goes too. Returns
    the PATH kept and, for the warning, each entry dropped with why."""
    kept, dropped = [], []
    for entry in value.split(os.pathsep):
        why = None if os.path.isabs(entry) else "not an absolute path"
        if why is None:
            try:
                why = files.others_can_change(Path(entry))
            except FileNotFoundError:
                continue                # nothing to run there; left out without a word
            except OSError as e:
                why = f"cannot be read ({files.reason(e)})"
        if why is None:
            kept.append(entry)
        else:
            dropped.append(f"{entry or '(empty)'}: {why}")
    return os.pathsep.join(kept), dropped


def home() -> str:
    """This user's home as the password database has it, not as the shell says: git reads its
    configuration there (core.fsmonitor runs a program) and CMake its package registry (a
    folder of CMake code find_package includes), so a HOME from the environment would choose
    code a build runs. "/" when the user has no entry."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_dir or "/"
    except KeyError:
        return "/"


def apt(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of apt-get and apt-cache when they fetch a Debian source package (as
    root, often): written like a build's. APT_CONFIG names a configuration file apt reads
    before any other, and its APT::Update::Pre-Invoke runs a command; the proxies are what a
    machine needs to reach its mirror, and run nothing."""
    env = os.environ if environ is None else environ
    written = {name: env[name] for name in ("PATH", *APT_PROXIES) if env.get(name)}
    if "PATH" in written:
        written["PATH"] = search_path(written["PATH"])[0]
    written["HOME"] = home()
    written["LC_ALL"] = "C"           # messages in the error tail the user can search for
    return written


def keyed(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What of a build's environment can change the code, for the build cache's key."""
    env = clean(environ)
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
    """The environment of a build command: clean, flagsweep's ccache settings, and where the
    wrapper records and keeps what it compiled (wrapper.c)."""
    env = clean()
    env.update(ccache_env)
    if compile_log is not None:
        env["FLAGSWEEP_COMPILE_LOG"] = str(compile_log)
    if snapshots is not None:
        env["FLAGSWEEP_SNAPSHOTS"] = str(snapshots)
    return env
