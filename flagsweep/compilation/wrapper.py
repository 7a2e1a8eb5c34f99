"""The compiler wrapper: every compile line of every variant, recorded, then handed to ccache.

Builds use the wrapper as CC/CXX. It runs `ccache <real compiler> ...` (or the compiler itself
when ccache is absent or FLAGSWEEP_CCACHE=0) and, when $FLAGSWEEP_COMPILE_LOG is set, waits for
it and appends the exact argv, working directory, exit code and the -o file's identity (mtime,
size, inode) as one JSON line. The audit reads that log: flags reach the compiler, and the
measured binary is what the recorded commands made, or the run says so (Phoronix's trick of a
logging wrapper first on PATH, made exact).

The wrapper is the small C program wrapper.c, compiled here once per real compiler with that
same family's C compiler; its path is stable because cached configure trees bake it in.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from flagsweep.host import native

SOURCE = Path(__file__).with_name("wrapper.c")


def install(real: Path, dest: Path, build_cc: Path, launcher: str | None) -> Path:
    """Build the wrapper for `real` at dest, unless the one there was built the same way."""
    return native.build_tool(SOURCE, dest, build_cc,
                             {"REAL": f'"{real}"', "LAUNCHER": f'"{launcher or ""}"'})


def ccache() -> str | None:
    """ccache's path, or None: builds still work without it, only slower on rebuilds."""
    return shutil.which("ccache")
