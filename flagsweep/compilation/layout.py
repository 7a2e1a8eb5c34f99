"""Layouts: the same code linked in another order.

Every function goes into a section of its own (-ffunction-sections, -fdata-sections for data),
and LLD places those sections in an order shuffled by a seed (`--shuffle-sections=*=SEED`, the
glob form of LLD 13 and later). The objects do not change with the seed, only the link does, so
replicates of one variant have the same compiled code and differ in placement alone: what
Mytkowicz et al. (ASPLOS 2009) and STABILIZER (Curtsinger & Berger, ASPLOS 2013) showed can move
a program's speed by several percent. Checked here with gcc 12 and clang 14 (tests/compilation/test_layout.py):
the function order of the binary changes with the seed, the objects do not, and the program's
output is the same. GNU ld has no shuffle; mold's `--shuffle-sections=SEED` works too, but LLD
ships with clang's toolchain and takes a glob, so one linker serves both compilers.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

from flagsweep import process
from flagsweep.experiment.matrix import Matrix, Cell
from flagsweep.host import environment

COMPILE_FLAGS = ("-ffunction-sections", "-fdata-sections")
LINKER = "lld"
MARK = ".L"         # a replicate's id: its variant's id, then MARK and its layout seed
# A layout's build once the set's first layout is compiled (a link, its compiles ccache's),
# with its output check. lame's and flac's checks here: 20 and 12 binaries in about 150 and
# 145 s at the search's 15 and 24 s a build, so about 0.4 of a build after each set's first.
RELINK_SHARE = 0.4
METHOD = ("two-level: each layout's level is its median over rounds against the round's "
          "baseline mean; variant and baseline compared over their layouts by Welch's t test "
          "(flagsweep.stats.layout)")


def described(k: int) -> dict:
    """results.json's `measurement.layouts`: how many, how they were made, how compared."""
    return {"k": k, "seeds": f"1..{k} for every variant, {k + 1}..{2 * k} for the A/A twin",
            "flags": [*COMPILE_FLAGS, f"-fuse-ld={LINKER}", "-Wl,--shuffle-sections=*=SEED"],
            "method": METHOD}


def cost(sets: int, k: int, build_s: float, run_s: float, rounds: int) -> tuple[float, float]:
    """(builds, rounds) in seconds of measuring `sets` flag sets (the baseline's among them)
    over k layouts each with the A/A twin's k more of the baseline: each set compiled once and
    linked in k layouts, a link again at RELINK_SHARE of a build of `build_s`; `rounds` rounds
    of every binary at `run_s` a run."""
    builds = sets * build_s + (sets * (k - 1) + k) * RELINK_SHARE * build_s
    return builds, rounds * (sets + 1) * k * run_s


def replicate(m: Matrix, k: int, twin: str) -> Matrix:
    """Every variant of m as k builds, layout seeds 1..k: the same flags, compiled the same,
    linked in k shuffled orders. The baseline gets k more (seeds k+1..2k) under the id `twin`:
    its A/A arm, the same code in other layouts, so the arm shows what layout alone does. One
    seed gives every variant the same shuffle of its own functions. The baseline of the result
    is the baseline's first replicate (checks compare outputs with a binary)."""
    out = [_replicate(v, v.id, seed) for v in m.variants for seed in range(1, k + 1)]
    out += [_replicate(m.baseline, twin, seed) for seed in range(k + 1, 2 * k + 1)]
    return replace(m, variants=out, baseline=out[0])


def _replicate(v: Cell, of: str, seed: int) -> Cell:
    return Cell(f"{of}{MARK}{seed}", v.compiler, (*v.flags, *flags(seed)), v.factors,
                   layout_of=of, layout=seed, pgo=v.pgo)


def flags(seed: int) -> tuple[str, ...]:
    """The flags that make layout `seed`: every function and datum in a section of its own,
    and LLD shuffling them. The compile flags reach the compile lines and the audit checks them
    there like the variant's; the link flags must reach the link that writes the binary."""
    return (*COMPILE_FLAGS, *link_flags(seed))


def link_flags(seed: int) -> list[str]:
    """The link options of layout `seed` (0 is the linker's own order: no shuffle)."""
    flags = [f"-fuse-ld={LINKER}"]
    return flags + ([f"-Wl,--shuffle-sections=*={seed}"] if seed else [])


def unavailable(compiler: str) -> str | None:
    """Why `compiler` cannot link shuffled layouts here, or None when it can."""
    if shutil.which("ld.lld") is None:
        return "LLD (ld.lld) is not installed: apt-get install lld"
    done = process.run([compiler, f"-fuse-ld={LINKER}", "-Wl,--version"], env=environment.clean())
    if not done.ok:
        return f"{compiler} cannot link with LLD: {done.tail(2)}"
    return None
