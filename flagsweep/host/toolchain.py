"""Compilers: from a name in a recipe ("gcc", "clang-14", a path) to executables and a version.

Both the C and the C++ driver are resolved, so targets in either language build through the
same wrapper. The version is recorded in every result: a flag's effect belongs to a compiler.
"""

from __future__ import annotations

import functools
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from flagsweep import process
from flagsweep.errors import ConfigError

# C driver name -> C++ driver name, applied to the basename (gcc-12 -> g++-12).
CXX_OF = [(re.compile(r"^gcc(?=$|-)"), "g++"), (re.compile(r"^clang(?=$|-)"), "clang++"),
          (re.compile(r"^cc$"), "c++")]


@dataclass(frozen=True)
class Compiler:
    name: str          # as the recipe names it
    family: str        # "gcc" or "clang": decides flag dialect questions
    cc: Path
    cxx: Path | None
    version: str


@functools.lru_cache(maxsize=None)
def resolve(name: str) -> Compiler:
    cc = shutil.which(name)
    if cc is None:
        raise ConfigError(f"compiler '{name}' not found on PATH "
                          "(install it, e.g. apt-get install gcc clang, or give a path)")
    cc_path = Path(cc).resolve() if "/" in name else Path(cc)
    out = process.run([cc_path, "--version"])
    if not out.ok:
        raise ConfigError(f"compiler '{name}' ({cc_path}) failed to run --version: {out.tail(3)}")
    first = out.stdout.splitlines()[0] if out.stdout else ""
    family = "clang" if "clang" in first else "gcc"
    return Compiler(name=name, family=family, cc=cc_path, cxx=_cxx_for(cc_path),
                    version=_version(cc_path, family, first))


def _cxx_for(cc: Path) -> Path | None:
    for pattern, cxx in CXX_OF:
        if pattern.search(cc.name):
            found = shutil.which(pattern.sub(cxx, cc.name), path=str(cc.parent))
            return Path(found) if found else None
    return None


def _version(cc: Path, family: str, first_line: str) -> str:
    if family == "gcc":
        out = process.run([cc, "-dumpfullversion"])
        if out.ok and out.stdout.strip():
            return out.stdout.strip()
    match = re.search(r"\b(\d+\.\d+(?:\.\d+)?)\b", first_line)
    return match.group(1) if match else first_line


def describe(compiler: Compiler) -> dict:
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
                       "-o", "/dev/null", "-"], input="int main(void) { return 0; }\n")
    if out.ok:
        return None
    lines = [line for line in (out.stderr or out.stdout).splitlines() if "error" in line]
    return (lines[0] if lines else out.tail(1)).strip()
