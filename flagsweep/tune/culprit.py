"""Which flag of a failing candidate breaks the build or the output: found by halving.

A candidate that fails adds many flags to the base; telling the search only "this set failed"
would let it propose the culprit again in the next set. Halving the set (the one-culprit case of
Zeller's delta debugging, "Simplifying and Isolating Failure-Inducing Input", TSE 2002) finds
one flag that fails on its own on the base in about log2(n) builds, and the search never
proposes it again. When neither half fails alone the failure needs flags together, and the
set is reduced to the flags it needs (`together`): a combination, recorded so that no later set
holding all of it is built, while none of its flags is dropped alone.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, NamedTuple

from flagsweep.compilation import variants
from flagsweep.experiment import matrix
from flagsweep.tune.batch import Setting, flag_text, fresh, vid
from flagsweep import model
from flagsweep.results import analysis
from flagsweep.workload import check, inputs


class Found(NamedTuple):
    """What fails: one flag, or flags that fail only together."""
    flags: tuple[str, ...]
    minimal: bool        # leaving out any one of them makes it pass (False: probes ran out first)


def culprit(changes: tuple[str, ...], fails: Callable[[tuple[str, ...]], bool],
            more: Callable[[], bool] = lambda: True) -> Found:
    """The smallest part found that still fails: one flag, found by halving (about 2 log2(n)
    probes, whatever `more` says), or the flags that fail only together (`together`, while
    `more()` allows). `changes` fails as a whole."""
    while len(changes) > 1:
        half = len(changes) // 2
        first, second = changes[:half], changes[half:]
        if fails(first):
            changes = first
        elif fails(second):
            changes = second
        else:
            return together(changes, fails, more)
    return Found(changes, True)


def together(changes: tuple[str, ...], fails: Callable[[tuple[str, ...]], bool],
             more: Callable[[], bool] = lambda: True) -> Found:
    """`changes`, which fails while each half passes alone, reduced to the flags it needs.

    Each part in turn is left out while what remains still fails, parts from a quarter of the
    set down to one flag: the reduction to complements of Zeller and Hildebrandt's ddmin
    ("Simplifying and Isolating Failure-Inducing Input", TSE 28(2), 2002). Every set kept has
    failed, so stopping when `more()` says no leaves a smaller set that still fails; run to
    the end, leaving out any one flag more makes it pass (if a set fails, so does every set
    holding it). On gzip a set of 106 changes that failed to build came down to 8 switches in
    about 50 probes, where halving alone stops at the 106 (docs/tune.md)."""
    size = max(1, len(changes) // 4)           # a half left out was tried: the other passed
    while size and len(changes) > 1:
        size = min(size, len(changes) - 1)
        i = 0
        while i < len(changes) and len(changes) > size:
            if not more():
                return Found(changes, False)
            rest = changes[:i] + changes[i + size:]
            if fails(rest):
                changes = rest
            else:
                i += size
        size //= 2
    return Found(changes, True)


class Probe:
    """Builds (and, for an output, checks) the base plus some of a candidate's flags, in
    `out`; counts the builds it made for the tune's cost (the base, built once, and any set
    built before come from the build cache: no build)."""

    def __init__(self, s: Setting, out: Path, kind: str):
        self.s, self.out, self.kind, self.builds, self.n = s, out, kind, 0, 0

    def __call__(self, extra: tuple[str, ...]) -> bool:
        self.n += 1
        flags = self.s.base + extra
        cells = [matrix.Cell(vid(self.s, f), self.s.compiler, f, {"flags": flag_text(f)})
                 for f in dict.fromkeys((self.s.base, flags))]
        folder = self.out / f"probe-{self.n}"
        fresh(folder)
        m = matrix.Matrix(cells, cells[0], [], "explicit")
        got = {b.variant.id: b for b in
               variants.build_all(self.s.target, m, replace(self.s.build, out_dir=folder))}
        self.builds += sum(1 for b in got.values() if not b.reused)
        probe = got[vid(self.s, flags)]
        if probe.status != "ok":
            return True
        if self.kind == "build" or len(cells) == 1 or probe.identical_to:
            return False
        return not self._output_ok(folder, got[vid(self.s, self.s.base)], probe)

    def _output_ok(self, folder: Path, base: variants.VariantBuild,
                   probe: variants.VariantBuild) -> bool:
        inp = inputs.prepare(self.s.target, quick=True)
        workload = check.Invocation(self.s.target, inp.path, folder / "scratch")
        workload.scratch.mkdir(parents=True, exist_ok=True)
        found = check.check_all(workload, {base.variant.id: base.binary,
                                           probe.variant.id: probe.binary}, base.variant.id)
        got = model.Check.model_validate(found[probe.variant.id])
        return got.status in analysis.PASSED
