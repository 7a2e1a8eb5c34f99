"""The compiler wrapper: every compile line of every variant, recorded, then handed to ccache.

Builds use this wrapper as CC/CXX. It appends the exact argv and working directory of each call
as one JSON line to $FLAGSWEEP_COMPILE_LOG (when set), then execs `ccache <real compiler> ...`
(or the compiler itself when ccache is absent or FLAGSWEEP_CCACHE=0). The audit reads that log:
flags reach the compiler, or the run says so (Phoronix's trick of a logging wrapper first on
PATH, made exact).

The script runs once per compile, so it is tiny and starts Python with -I -S (no site import).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

SCRIPT = '''#!{python} -IS
# flagsweep compiler wrapper (generated; see flagsweep/wrapper.py)
import json, os, sys
REAL = {real!r}
LAUNCHER = {launcher!r}
log = os.environ.get("FLAGSWEEP_COMPILE_LOG")
if log:
    line = json.dumps({{"argv": [REAL] + sys.argv[1:], "cwd": os.getcwd()}}) + "\\n"
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, line.encode())  # one write with O_APPEND: lines from make -j never interleave
    os.close(fd)
use_launcher = LAUNCHER and os.environ.get("FLAGSWEEP_CCACHE", "1") != "0"
argv = ([LAUNCHER] if use_launcher else []) + [REAL] + sys.argv[1:]
os.execv(argv[0], argv)
'''


def install(real: Path, dest: Path, python: str, launcher: str | None) -> Path:
    """Write the wrapper for one real compiler at dest (rewritten only when it changes).

    The path is stable (it is baked into cached configure trees), so content changes are
    written in place rather than to a new name.
    """
    text = SCRIPT.format(python=python, real=str(real), launcher=launcher)
    if not dest.exists() or dest.read_text() != text:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        os.replace(tmp, dest)
    return dest


def ccache() -> str | None:
    """ccache's path, or None: builds still work without it, only slower on rebuilds."""
    return shutil.which("ccache")
