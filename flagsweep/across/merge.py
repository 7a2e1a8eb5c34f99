"""Merge: results of one target from several machines, side by side per CPU.

`flagsweep merge A.json B.json ... --out DIR` keeps each machine's own comparison (every
variant against that sweep's baseline, paired by round on that machine) and lays them out as a
table of variant x machine: the change in % with its CI and verdict, the heatmap of the merged
report. Nothing is averaged into one number here (`flagsweep pick` does that, and says how).

Results merge only when their numbers mean the same thing; otherwise merge refuses and says
which key differs (pyperf refuses to merge runs whose metadata differ for the same reason):
the target and its version, the input's sha256, the metric, and the baseline's flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flagsweep.across import comparable
from flagsweep.across.history import given
from flagsweep.errors import FlagsweepError
from flagsweep.results import confirmation, reader
from flagsweep.model import (
    MERGE_SCHEMA, Merged, MergeCell, MergedMachine, MergedVariant, Results, Variant, is_control)


@dataclass
class MachineColumn:
    """One results file as a column of the merged table."""
    label: str                       # CPU, -march=native, host, pinned CPU, run id
    cpu_model: str
    path: str
    doc: Results


def load_all(paths: list[Path], partial: bool = False) -> list[MachineColumn]:
    """Each results file as one machine column; refused when two must not be merged, or when
    one is a sweep stopped early (busy) and `partial` does not allow it."""
    if len(paths) < 2:
        raise FlagsweepError("merge needs at least two results files")
    docs = [(Path(p), reader.load(Path(p))) for p in paths]
    comparable.refuse_partial(docs, partial)
    comparable.check(docs, "merged", comparable.ACROSS_MACHINES)
    return [MachineColumn(label(doc), given(doc.machine, "cpu_model"), str(path), doc)
            for path, doc in docs]


def label(doc: Results) -> str:
    """A machine column's name: CPU, what -march=native is on it, host, pinned CPU, run id."""
    m = doc.machine
    return (f"{given(m, 'cpu_model')} ({m.march_native or '?'}), {given(m, 'hostname')}"
            f" CPU {given(m, 'pinned_cpu')}, {given(doc, 'run_id')}")


def table(machines: list[MachineColumn]) -> tuple[list[Variant], list[list[MergeCell]]]:
    """Rows (variants, in the first file's order, then any others) x machine cells."""
    variants: dict[str, Variant] = {}
    for m in machines:
        for v in m.doc.variants:
            if not is_control(v.id):
                variants.setdefault(v.id, v)
    cells = [[_cell(m.doc, vid) for m in machines] for vid in variants]
    return list(variants.values()), cells


def _cell(doc: Results, vid: str) -> MergeCell:
    v = next((v for v in doc.variants if v.id == vid), None)
    if v is None:
        return MergeCell(change_pct=None, ci=None, verdict="absent")
    if vid == doc.baseline:
        return MergeCell(change_pct=0.0, ci=None, verdict="baseline")
    c = v.vs_baseline
    ratio, ci = (c.ratio, c.ci95) if c else (None, None)
    return MergeCell(change_pct=(ratio - 1) * 100 if ratio is not None else None,
                     ci=[(ci[0] - 1) * 100, (ci[1] - 1) * 100] if ci else None,
                     verdict=confirmation.final_verdict(c) or "not-measured")


def merged(machines: list[MachineColumn], variants: list[Variant],
           cells: list[list[MergeCell]]) -> Merged:
    """merged.json: the variant x machine table as data."""
    return Merged(
        schema=MERGE_SCHEMA, target=machines[0].doc.target,
        machines=[MergedMachine(label=m.label, path=m.path, machine=m.doc.machine)
                  for m in machines],
        variants=[MergedVariant(id=v.id, compiler=v.compiler, flags=v.flags, per_machine=row)
                  for v, row in zip(variants, cells)])
