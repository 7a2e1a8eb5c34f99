"""Layouts: the same code linked in another order.

Every function goes into a section of its own (-ffunction-sections, -fdata-sections for data),
and LLD places those sections in an order shuffled by a seed (`--shuffle-sections=*=SEED`, the
glob form of LLD 13 and later). The objects do not change with the seed, only the link does, so
replicates of one variant have the same compiled code and differ in placement alone: what
Mytkowicz et al. (ASPLOS 2009) and STABILIZER (Curtsinger & Berger, ASPLOS 2013) showed can move
a program's speed by several percent. Checked here with gcc 12 and clang 14 (tests/test_layout.py):
the function order of the binary changes with the seed, the objects do not, and the program's
output is the same. GNU ld has no shuffle; mold's `--shuffle-sections=SEED` works too, but LLD
ships with clang's toolchain and takes a glob, so one linker serves both compilers.
"""

from __future__ import annotations

import shutil

from flagsweep import process

COMPILE_FLAGS = ("-ffunction-sections", "-fdata-sections")
LINKER = "lld"


def link_flags(seed: int) -> list[str]:
    """The link options of layout `seed` (0 is the linker's own order: no shuffle)."""
    flags = [f"-fuse-ld={LINKER}"]
    return flags + ([f"-Wl,--shuffle-sections=*={seed}"] if seed else [])


def unavailable(compiler: str) -> str | None:
    """Why `compiler` cannot link shuffled layouts here, or None when it can."""
    if shutil.which("ld.lld") is None:
        return "LLD (ld.lld) is not installed: apt-get install lld"
    done = process.run([compiler, f"-fuse-ld={LINKER}", "-Wl,--version"])
    if not done.ok:
        return f"{compiler} cannot link with LLD: {done.tail(2)}"
    return None
