"""The compiler wrapper: every compile line of every variant, recorded, then handed to ccache.

Builds use the wrapper as CC/CXX. It runs `ccache <real compiler> ...` (or the compiler itself
when ccache is absent or FLAGSWEEP_CCACHE=0) and, when $FLAGSWEEP_COMPILE_LOG is set, waits for
it and appends the exact argv, working directory, exit code and the sha256 of each file it
wrote as one JSON line. In a variant's build ($FLAGSWEEP_SNAPSHOTS set) it compiles a snapshot
of each source in its place: the source preprocessed (headers and all) or copied into a file
named by its sha256, which the audit reads, so what the audit judges is what was compiled
(wrapper.c says how). The audit reads that log: flags reach the compiler, and the measured
binary is what the recorded commands made, or the run says so (Phoronix's trick of a logging
wrapper first on PATH, made exact).

The wrapper is the small C program wrapper.c, compiled here once per real compiler with that
same family's C compiler and cmdline.py's tables for it; its path is stable because cached
configure trees bake it in.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from flagsweep.compilation import cmdline
from flagsweep.host import native

SOURCE = Path(__file__).with_name("wrapper.c")


def install(real: Path, dest: Path, build_cc: Path, launcher: str | None) -> Path:
    """Build the wrapper for `real` at dest, unless the one there was built the same way."""
    return native.build_tool(SOURCE, dest, build_cc,
                             {"REAL": f'"{real}"', "LAUNCHER": f'"{launcher or ""}"',
                              **tables(cmdline.family(str(real)))})


def tables(kind: str | None) -> dict[str, str]:
    """cmdline.py's reading of a command line for a compiler of that family, as C initialisers
    (wrapper.c reads a command as the audit does)."""
    def text(value: str) -> str:
        return json.dumps(value)     # an ASCII C string literal

    valued = [f"{{{text(option)}, {n}}}" for option, n in cmdline.SEPARATE[kind].items()]
    prefixes = [text(p) for p in cmdline.SEPARATE_FAMILIES[kind]]
    suffixes = [f"{{{text(s)}, {text(lang)}}}" for s, lang in cmdline.LANGUAGES.items()]
    snapshot = [f"{{{text(lang)}, {text(as_)}, {int(pre)}}}"
                for lang, (as_, pre) in cmdline.SNAPSHOT.items()]
    return {"VALUED": "{" + ", ".join([*valued, "{0, 0}"]) + "}",
            "VALUED_PREFIXES": "{" + ", ".join([*prefixes, "0"]) + "}",
            "SUFFIXES": "{" + ", ".join([*suffixes, "{0, 0}"]) + "}",
            "SNAPSHOT": "{" + ", ".join([*snapshot, "{0, 0, 0}"]) + "}",
            "CLANG": "1" if kind == "clang" else "0"}


def ccache() -> str | None:
    """ccache's path, or None: builds still work without it, only slower on rebuilds."""
    return shutil.which("ccache")
