"""qualify.json: what `flagsweep calibrate --qualify` found of a runner, and the gate it needs
(jobs/qualification.py makes it; docs/calibrate.md reads it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flagsweep.model.values import Bool, Num, Pair, Record, Str

QUALIFY_SCHEMA = "flagsweep-qualify/1"


class GateSetting(Record):
    """One practical threshold tried: the A/A false calls at it and the power it leaves."""
    threshold_pct: Num
    aa_false_calls: int                      # of `comparisons` A/A comparisons
    aa_false_pct: Num
    aa_false_ci95: Pair                      # Clopper-Pearson, in percent
    detectable_pct: Num = None               # smallest change called at 80% power at `runs`
    rounds_for_power: int | None = None      # rounds calling twice the threshold at 80% power
    acceptable: Bool


class PlantCaught(Record):
    """A planted change, judged at `runs` rounds in each of the comparisons."""
    planted_pct: Num
    variant: Str
    found: int                               # comparisons that called it slower
    comparisons: int


class Qualification(Record):
    schema_: Literal[QUALIFY_SCHEMA] = Field(QUALIFY_SCHEMA, alias="schema")
    results: Str                             # the calibrate run's results.json
    metric: Str
    runs: int                                # rounds of one comparison (a gate's night)
    comparisons: int                         # disjoint blocks of `runs` rounds compared
    threshold_pct: Num                       # the threshold asked for
    settings: list[GateSetting]
    planted: list[PlantCaught]
    qualified: Bool
    gate_threshold_pct: Num = None           # what `history --check --threshold` needs here
    gate_max_runs: int | None = None         # what `run --max-runs` needs for it
    why: Str
