"""Which flag of a failing candidate breaks the build or the output: found by halving.

A candidate that fails adds many flags to the base; telling the search only "this set failed"
would let it propose the culprit again in the next set. Halving the set (the one-culprit case of
Zeller's delta debugging, "Simplifying and Isolating Failure-Inducing Input", TSE 2002) finds
one flag that fails on its own on the base in about log2(n) builds, and the search never
proposes it again. When neither half fails alone the failure needs flags together: the set is
recorded as a combination, and no single flag is dropped.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from flagsweep.compilation import variants
from flagsweep.experiment import matrix
from flagsweep.jobs.batch import Setting, flag_text, fresh, vid
from flagsweep.results import analysis, contract
from flagsweep.workload import check, inputs


def culprit(changes: tuple[str, ...], fails: Callable[[tuple[str, ...]], bool]
            ) -> tuple[str, ...]:
    """The smallest part found by halving that still fails (one flag, unless flags fail only
    together). `changes` fails as a whole."""
    while len(changes) > 1:
        half = len(changes) // 2
        first, second = changes[:half], changes[half:]
        if fails(first):
            changes = first
        elif fails(second):
            changes = second
        else:
            return changes
    return changes


class Probe:
    """Builds (and, for an output, checks) the base plus some of a candidate's flags, in
    `out`; counts its builds for the tune's cost."""

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
        self.builds += len(cells)
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
        got = contract.Check.model_validate(found[probe.variant.id])
        return got.status in analysis.PASSED
