"""What the compiler the build ran hands its driver: the same command it was given, or one
with flags of its own (a script named as the compiler that appends -O0)."""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import tempfile
from pathlib import Path

from flagsweep import process
from flagsweep.compilation import cmdline
from flagsweep.host import environment


@functools.lru_cache(maxsize=64)
def added_by(compiler: str, flags: tuple[str, ...]) -> str | None:
    """Why the compiler the build ran does not hand its driver the command it was given, or
    None when it does. A root-owned script named as the compiler that appends -O0 to every call
    passes every other check: the compile lines the wrapper records are the ones it was given.
    The driver says what it received when asked with -### (on a probe, with the variant's
    flags): gcc in COLLECT_GCC_OPTIONS, clang in the -cc1 line's -record-command-line, each in
    its own spelling (-DX as -D X) and gcc's with the options its configuration adds by default
    (-march=, -mtune=). So the same question goes to the driver that answered (COLLECT_GCC, the
    recorded program) directly, unless it is the compiler named, and the two answers must be
    the same."""
    clang = cmdline.family(compiler) == "clang"
    with tempfile.TemporaryDirectory(prefix="flagsweep-driver-") as folder:
        Path(folder, "probe.c").write_text("int probe;\n")
        argv = [*flags, "-c", "probe.c", "-o", "probe.o", "-###",
                *(["-frecord-command-line"] if clang else [])]
        named = _received(compiler, argv, folder)
        if isinstance(named, str):
            return named
        driver, got = named
        if _same_program(driver, compiler):
            return None
        real = _received(driver, argv, folder)
        if isinstance(real, str):
            return real
    extra, missing = _minus(got, real[1]), _minus(real[1], got)
    if not extra and not missing:
        return None
    said = "; ".join([f"adds {' '.join(extra)}"] * bool(extra) +
                     [f"drops {' '.join(missing)}"] * bool(missing))
    return (f"the compiler {compiler} {said} (what {driver}, which it runs, received for a "
            "compile with the variant's flags, against the command it was given): it changes "
            "the flags behind the compile lines; name the compiler itself in the recipe")


def _received(compiler: str, argv: list[str], folder: str) -> tuple[str, list[str]] | str:
    """The driver that answered `compiler argv` (with -###) and the options it says it
    received, or why the audit cannot tell."""
    try:
        done = process.run([compiler, *argv], cwd=folder, timeout=60, env=environment.build({}))
    except (OSError, process.TimeoutExpired) as e:
        return f"could not ask the compiler {compiler} what it runs ({e})"
    driver = compiler
    for line in done.stderr.splitlines():
        if line.startswith("COLLECT_GCC="):
            driver = line.split("=", 1)[1]
        elif line.startswith("COLLECT_GCC_OPTIONS="):
            return driver, shlex.split(line.split("=", 1)[1])
        elif '"-record-command-line"' in line:
            words = shlex.split(line)
            given = shlex.split(words[words.index("-record-command-line") + 1])
            return given[0], given[1:]
    return (f"could not tell what the compiler {compiler} runs: -### showed no compile "
            f"(exit {done.returncode})")


def _same_program(a: str, b: str) -> bool:
    found = [shutil.which(p, path=environment.build({}).get("PATH")) if "/" not in p else p
             for p in (a, b)]
    try:
        return None not in found and os.path.samefile(*found)
    except OSError:
        return False


def _minus(words: list[str], others: list[str]) -> list[str]:
    """words without one of each of others (what one command line has more than another)."""
    left = list(others)
    out = []
    for word in words:
        if word in left:
            left.remove(word)
        else:
            out.append(word)
    return out
