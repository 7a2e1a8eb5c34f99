"""Compilers: from a name in a recipe ("gcc", "clang-14", a path) to executables and a version.

Both the C and the C++ driver are resolved, so targets in either language build through the
same wrapper. The version is recorded in every result: a flag's effect belongs to a compiler.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from flagsweep import files, process
from flagsweep.errors import ConfigError
from flagsweep.host import environment

# C driver name -> C++ driver name, applied to the basename (gcc-12 -> g++-12).
CXX_OF = [(re.compile(r"^gcc(?=$|-)"), "g++"), (re.compile(r"^clang(?=$|-)"), "clang++"),
          (re.compile(r"^cc$"), "c++")]


PROBE_TIMEOUT_S = 60.0
DEFINE = re.compile(r"^#define (\w+) ?(.*)$", re.M)


@dataclass(frozen=True)
class Toolchain:
    name: str          # as the recipe names it
    family: str        # "gcc" or "clang": decides flag dialect questions
    cc: Path
    cxx: Path | None
    version: str


def resolve(name: str) -> Toolchain:
    """The compiler a recipe or --compiler names, once it has shown it is one, in an
    environment that adds no option to it."""
    check_environment()
    return _resolved(name)


def check_environment() -> None:
    """ConfigError naming the first variable of environment.DRIVER_ENV the environment sets."""
    for var in environment.DRIVER_ENV:
        if os.environ.get(var):
            value = os.environ[var]
            shown = value if len(value) <= 80 else f"{value[:80]}... ({len(value)} characters)"
            raise ConfigError(f"the environment sets {var}={shown}: with it the compiler runs "
                              "programs or writes files as a flag would, and flags are "
                              "code-generation options only (docs/recipes.md#what-a-flag-may-be); "
                              f"unset {var}")


@functools.lru_cache(maxsize=None)
def _resolved(name: str) -> Toolchain:
    """The compiler a recipe or --compiler names, once it has shown it is one.

    A compiler is a program flagsweep runs (as root, under `./setup.sh run`) with every
    variant's flags, so it must be a C compiler and a program only its owner can change:
    an executable file that, with every folder above it, is owned by root or by the user
    running flagsweep and writable by no one else (a sticky folder such as /tmp aside), as
    OpenSSH asks of the files it trusts; then it must say it is gcc or clang in the macros it
    predefines for an empty C file (`-dM -E`: __GNUC__, __clang__) and compile a probe into an
    object file. It is run for that with no recipe flag on its command line."""
    cc = shutil.which(name)
    if cc is None:
        raise ConfigError(f"compiler '{name}' not found on PATH "
                          "(install it, e.g. apt-get install gcc clang, or give a path)")
    cc_path = Path(cc).resolve() if "/" in name else Path(cc)
    if why := replaceable(Path(cc)):
        raise ConfigError(f"compiler '{name}' ({cc_path}): {why}; flagsweep runs only a "
                          "compiler no other user can change")
    cxx = _cxx_for(cc_path)
    if cxx and (why := replaceable(cxx)):
        raise ConfigError(f"compiler '{name}': its C++ driver {cxx}: {why}; flagsweep runs "
                          "only a compiler no other user can change")
    macros = _predefined(name, cc_path)
    family = "clang" if "__clang__" in macros else "gcc"
    _probe(name, cc_path)
    return Toolchain(name=name, family=family, cc=cc_path, cxx=cxx,
                    version=_version(macros, family))


def replaceable(path: Path, program: bool = True) -> str | None:
    """Why someone other than root and this user could change the program (or, with program
    False, the file) at path (the file a link leads to, and every folder above the link and
    the file), or None."""
    real = path.resolve()
    st = real.stat()
    if not (stat.S_ISREG(st.st_mode) and (st.st_mode & 0o111 or not program)):
        return f"{real} is not {'an executable' if program else 'a regular'} file"
    return files.others_can_change(path)


def replaceable_tree(folder: Path) -> str | None:
    """Why someone other than root and this user could change a tree a build reads (the
    folder, every folder above it, every file and folder in it, and the file each link in it
    leads to), or None."""
    real = folder.resolve()
    if not real.is_dir():
        return f"{folder} is not a folder"
    if why := files.others_can_change(folder):
        return why
    for top, names, others in os.walk(real):
        for name in names + others:
            p = Path(top) / name
            try:
                st = p.stat()
            except OSError:
                continue        # a link that leads nowhere: nothing to read there
            if why := files.foreign(p, st):
                return why
    return None


def _predefined(name: str, cc: Path) -> set[str]:
    """The macro names the program predefines for an empty C file; ConfigError unless that
    shows gcc or clang."""
    out = _probe_run(name, [cc, "-dM", "-E", "-x", "c", "-"], "")
    macros = {m.group(1): m.group(2) for m in DEFINE.finditer(out.stdout)} if out.ok else {}
    if "__GNUC__" not in macros and "__clang__" not in macros:
        said = next((line for line in out.stderr.splitlines() if "error" in line),
                    out.tail(1))[:160] or "nothing"
        raise ConfigError(f"compiler '{name}' ({cc}) is not a C compiler that identifies itself "
                          f"as gcc or clang: `{cc.name} -dM -E -x c -` of an empty file should "
                          f"predefine __GNUC__ or __clang__ (exit {out.returncode}, it said: "
                          f"{said})")
    return macros


def _probe(name: str, cc: Path) -> None:
    """A one-line C program compiled into an object file, which must be ELF."""
    with tempfile.TemporaryDirectory(prefix="flagsweep-probe-") as scratch:
        obj = Path(scratch) / "probe.o"
        out = _probe_run(name, [cc, "-x", "c", "-c", "-o", obj, "-"],
                         "int main(void) { return 0; }\n")
        made = obj.is_file() and obj.read_bytes()[:4] == b"\x7fELF"
        if not (out.ok and made):
            raise ConfigError(f"compiler '{name}' ({cc}) did not compile a one-line C program "
                              f"into an object file (exit {out.returncode}): {out.tail(3)[:300]}")


def _cxx_for(cc: Path) -> Path | None:
    for pattern, cxx in CXX_OF:
        if pattern.search(cc.name):
            found = shutil.which(pattern.sub(cxx, cc.name), path=str(cc.parent))
            return Path(found) if found else None
    return None


def _probe_run(name: str, argv: list, text: str) -> process.Result:
    try:
        return process.run(argv, input=text, timeout=PROBE_TIMEOUT_S, env=environment.clean())
    except process.TimeoutExpired:
        raise ConfigError(f"compiler '{name}' ({argv[0]}) did not finish compiling an empty "
                          f"file in {PROBE_TIMEOUT_S:.0f} s") from None


def _version(macros: dict[str, str], family: str) -> str:
    """major.minor.patch from the predefined macros (what gcc's -dumpfullversion and clang's
    --version say)."""
    parts = (("__clang_major__", "__clang_minor__", "__clang_patchlevel__") if family == "clang"
             else ("__GNUC__", "__GNUC_MINOR__", "__GNUC_PATCHLEVEL__"))
    return ".".join(macros.get(p, "0") for p in parts)


def describe(compiler: Toolchain) -> dict:
    """The results-contract form: {"name", "path", "version"}."""
    return {"name": compiler.name, "path": str(compiler.cc), "version": compiler.version}


# clang only warns about flags it ignores ('-fgcse-las' is not supported, an -m option unused):
# a variant built with such a flag would be timed as if the flag meant something. As errors,
# both compilers refuse what they do not implement.
IGNORED_AS_ERRORS = {"gcc": [],
                     "clang": ["-Werror=ignored-optimization-argument",
                               "-Werror=unused-command-line-argument"]}


LINKER_ONLY = ("-Wl,", "-fuse-ld=")


@functools.lru_cache(maxsize=None)
def rejects(name: str, flags: tuple[str, ...]) -> str | None:
    """Why compiler `name` refuses these flags, or None when it accepts them: a one-line C
    program compiled with them, so the answer is the compiler's own (`-mfpmath=387` is gcc's,
    `-fipa-pta` is unknown to clang), not a table that goes stale."""
    c = resolve(name)
    # The linker's own options are left out: a compile alone calls them unused (clang makes
    # that an error here), and whether the linker takes them is the build's to find out, where
    # a failed link is recorded with ld's reason.
    compiled = [f for f in flags if not f.startswith(LINKER_ONLY)]
    out = process.run([c.cc, *IGNORED_AS_ERRORS[c.family], *compiled, "-x", "c", "-c",
                       "-o", "/dev/null", "-"], input="int main(void) { return 0; }\n",
                      env=environment.clean())
    if out.ok:
        return None
    lines = [line for line in (out.stderr or out.stdout).splitlines() if "error" in line]
    return (lines[0] if lines else out.tail(1)).strip()
