"""The project's own build, and the project options a variant's build drops.

A variant's flags replace the build's own (`make CFLAGS=...`, an autotools tree's CFLAGS,
CMake's per-configuration flags): that is how an -O3 the Makefile wrote is kept out. But the
same CFLAGS often hold the defines, include folders and language standard the program needs
(`-DLUA_COMPAT_5_3`, `-DLUA_USE_LINUX`, `-Iinclude`, `-std=gnu99`), and a build without them
can still compile and pass the flag audit, as a different program from the one the project
ships.

So once per source tree, build configuration and compiler, the project is built with its own
flags (the same step driver, nothing given for CFLAGS/CXXFLAGS or CMAKE_<LANG>_FLAGS); its
compile lines' project options (PROJECT_OPTIONS: -D, -U, -I, -include, -std and the other
include options) are kept in the cache, and each variant's compile of the same source into the
same object is compared with it. An option the project's own line has and the variant's lacks
is "dropped": the variant is flags-mismatch, unless the target lists the option in
build.dropped_flags (meant to be dropped) or restores it with build.project_flags.

Paths in option values are compared with the build and source trees written as <tree> and
<source>, so two builds in different folders compare alike.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flagsweep import files
from flagsweep.caches import OWN_FLAGS
from flagsweep.compilation import cache as build_cache
from flagsweep.compilation import cmdline, records
from flagsweep.experiment.target import DEFINE_OPTIONS, INCLUDE_OPTIONS

FORMAT = 2    # 2: relative header folders anchored at the compile's folder
ID_PREFIX = "own-flags-"          # the superbuild's name for the project's own build
# Options that pick what source is compiled (macros, headers, the language), never the code
# generation the variants differ in; two-word spellings are written as one (`-D X` is `-DX`).
JOINED = (*DEFINE_OPTIONS, "-I")
SPACED = tuple(o for o in INCLUDE_OPTIONS if o != "-I")
SHORT_LINE = 300


def options(argv: list[str]) -> list[str]:
    """The project options of a compile line, each as one string: `-DX`, `-UX`, `-Idir`,
    `-include file`, `-std=c99`, in their order, repeats removed."""
    out: list[str] = []
    for word in cmdline.split(argv):
        text = word.text
        if not word.option:
            continue
        if text in JOINED and word.values:
            found = text + word.values[0]
        elif text.startswith(JOINED) and len(text) > 2 and not word.values:
            found = text
        elif text in SPACED and word.values:
            found = f"{text} {word.values[0]}"
        elif text.startswith(("-std=", "--std=")):
            found = "-std=" + text.split("=", 1)[1]
        elif text == "--std" and word.values:
            found = "-std=" + word.values[0]
        else:
            continue
        if found not in out:
            out.append(found)
    return out


def as_words(option: str) -> list[str]:
    """The option as compiler arguments (`-include file` is two)."""
    return option.split(" ", 1) if option.startswith(SPACED) else [option]


# ---- the compile lines of a build ---------------------------------------------------------------

class Places:
    """Writes a build's own folders as <tree> and <source>, whatever they were called."""

    def __init__(self, tree: Path, source: Path):
        pairs = [(str(p), name) for name, root in (("<tree>", tree), ("<source>", source))
                 for p in {os.path.normpath(root.absolute()), str(root.resolve())}]
        self.pairs = sorted(pairs, key=lambda p: -len(p[0]))   # the longest folder first

    def text(self, value: str) -> str:
        for path, name in self.pairs:
            value = value.replace(path, name)
        return value


class Unit(BaseModel):
    """What a build compiled into one object: the project options of its compiles, and the
    first of its compile lines (shown when a variant drops one)."""
    model_config = ConfigDict(extra="forbid")

    options: list[str] = []
    line: str


class Reference(BaseModel):
    """The project's own build, as the cache keeps it: each of its units by
    'sources -> output'."""
    model_config = ConfigDict(extra="forbid")

    compiles: dict[str, Unit]


def compiles(compile_log: Path, tree: Path, source: Path) -> dict[str, Unit]:
    """Each successful compile of a log, keyed by what it compiled into what (both written
    with Places): its project options and the line itself."""
    places = Places(tree, source)
    out: dict[str, Unit] = {}
    for command in records.read(compile_log):
        argv, cwd = command.argv, command.cwd
        if command.exit != 0 or not _is_compile(argv):
            continue
        key = _unit(argv, cwd, places)
        if key is None:
            continue
        known = out.setdefault(key, Unit(line=_short(argv, cwd, places)))
        mine = [places.text(_anchored(o, cwd)) for o in options(argv)]
        known.options += [o for o in mine if o not in known.options]
    return out


def _anchored(option: str, cwd: Path) -> str:
    """A header folder given up and out of where the compiler ran, as the folder it names: a
    meson build writes `-I../../../src` from its tree, and the variant's tree sits at another
    depth from the source than the project's own build's, so the same folder reads as another
    path."""
    for flag in ("-I", *SPACED):
        spaced = flag != "-I"
        head = flag + " " if spaced else flag
        if option.startswith(head) and len(option) > len(head):
            path = option[len(head):]
            # only a path out of the compile's folder: `-Iinclude` stays as the project wrote
            # it, so project_flags can carry it
            if path.split("/")[0] == ".." and flag not in ("-include", "-imacros"):
                return head + os.path.normpath(cwd / path)
    return option


def _is_compile(argv: list[str]) -> bool:
    opts = cmdline.options(argv)
    if "-E" in opts or "-M" in opts or "-MM" in opts or "-fsyntax-only" in opts:
        return False
    return bool(cmdline.sources(argv)) and cmdline.output(argv) != os.devnull


def _unit(argv: list[str], cwd: Path, places: Places) -> str | None:
    """'sources -> output' of a compile, as Places writes them; None for standard input."""
    sources = [w.text for w in cmdline.sources(argv)]
    if "-" in sources:
        return None
    names = [places.text(os.path.normpath(cwd / s)) for s in sources]
    output = cmdline.output(argv)
    return " ".join(names) + " -> " + (places.text(os.path.normpath(cwd / output))
                                       if output else "")


def _short(argv: list[str], cwd: Path, places: Places) -> str:
    text = places.text(" ".join([Path(argv[0]).name, *argv[1:]]))
    text = text if len(text) <= SHORT_LINE else text[:SHORT_LINE] + " ..."
    return f"{text}  (in {places.text(str(cwd))})"


# ---- the cached reference -----------------------------------------------------------------------

def key(source_id: str, build: dict, compiler: dict) -> str:
    """The reference's cache key: the source, what of the target decides the project's own
    build (system, configure and make arguments), the compiler and the builder's code. Not the
    whole target file: adding project_flags does not change the project's own build."""
    return files.key_sha256({"format": FORMAT, "source": source_id, "build": build,
                             "compiler": compiler, "builder": build_cache.builder_hash(),
                             "native": None})


def load(k: str, cache: Path) -> Reference | None:
    path = OWN_FLAGS.entry(f"{k}.json", cache)
    try:
        return Reference.model_validate_json(path.read_text()) if OWN_FLAGS.usable(path) else None
    except (OSError, ValueError):
        return None


def store(k: str, reference: Reference, cache: Path) -> None:
    OWN_FLAGS.write(OWN_FLAGS.entry(f"{k}.json", cache), reference.model_dump_json(), root=cache)


# ---- what a variant drops -----------------------------------------------------------------------

@dataclass
class Dropped:
    option: str
    lines: int          # the variant's compile lines without it
    of: int             # the project's own compile lines with it
    total: int          # the project's own compile lines
    first: str          # the first of the project's own lines with it

    def why(self) -> str:
        return (f"the project's own build passes it on {self.of} of {self.total} compile lines "
                f"(first: {self.first})")


def dropped(reference: Reference, variant: dict[str, Unit], allowed: list[str]) -> list[Dropped]:
    """The project options that the project's own compile of a unit has and the variant's
    compile of the same unit lacks, each counted once per unit, bar those allowed."""
    own = reference.compiles
    found: dict[str, Dropped] = {}
    for unit, mine in own.items():
        theirs = variant.get(unit)
        if theirs is None:          # not built by this variant (another make goal)
            continue
        for option in mine.options:
            if option in theirs.options or option in allowed:
                continue
            if option not in found:
                carrying = [c for c in own.values() if option in c.options]
                found[option] = Dropped(option, 0, len(carrying), len(own), carrying[0].line)
            found[option].lines += 1
    return list(found.values())


def problem(found: list[Dropped], compiles: int) -> str:
    """The audit problem: which options, on how many of the variant's lines, and the first of
    the project's own lines that had them."""
    parts = [f"{d.option} (missing on {d.lines} of {compiles} compile lines)" for d in found[:5]]
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    return (f"the variant's build dropped the project's own {', '.join(parts)}{more}: its flags "
            "replaced the build's own CFLAGS that held them, so it would measure another "
            f"program than the project builds (the project's own build: {found[0].first})")


def fixes(found: list[Dropped], target_file: Path, project_flags: list[str],
          allowed: list[str]) -> list[str]:
    """The two ways out, each as the line to paste."""
    keep = [*project_flags, *(w for d in found for w in as_words(d.option))]
    meant = [*allowed, *(d.option for d in found)]
    names = " ".join(d.option for d in found)
    return [f"the variants drop the project's own {names}: to keep them, add under [build] in "
            f"{target_file}: project_flags = {json.dumps(keep)}; if the variants are meant to "
            f"build without them: dropped_flags = {json.dumps(meant)} (docs/targets.md, "
            "project_flags vs tolerated_flags)"]
