"""The compiler wrapper: every compile line of every variant, recorded, then handed to ccache.

Builds use the wrapper as CC/CXX. It appends the exact argv and working directory of each call
as one JSON line to $FLAGSWEEP_COMPILE_LOG (when set), then execs `ccache <real compiler> ...`
(or the compiler itself when ccache is absent or FLAGSWEEP_CCACHE=0). The audit reads that log:
flags reach the compiler, or the run says so (Phoronix's trick of a logging wrapper first on
PATH, made exact).

The wrapper is the small C program wrapper.c, compiled here once per real compiler with that
same family's C compiler; its path is stable because cached configure trees bake it in.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from . import process
from .errors import BuildError

SOURCE = Path(__file__).with_name("wrapper.c")


def install(real: Path, dest: Path, build_cc: Path, launcher: str | None) -> Path:
    """Build the wrapper for `real` at dest, unless the one there was built the same way."""
    key = hashlib.sha256(json.dumps([SOURCE.read_text(), str(real), str(build_cc),
                                     launcher or ""]).encode()).hexdigest()
    stamp = dest.with_name(dest.name + ".key")
    if dest.exists() and stamp.exists() and stamp.read_text() == key:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f"{dest.name}.tmp{os.getpid()}")
    result = process.run([build_cc, "-O2", "-o", tmp, SOURCE, f'-DREAL="{real}"',
                          f'-DLAUNCHER="{launcher or ""}"'])
    if not result.ok:
        raise BuildError(f"could not build the compiler wrapper with {build_cc}: {result.tail(5)}")
    os.replace(tmp, dest)  # atomic: a concurrent sweep sees the old wrapper or the new one
    stamp.write_text(key)
    return dest


def ccache() -> str | None:
    """ccache's path, or None: builds still work without it, only slower on rebuilds."""
    return shutil.which("ccache")
