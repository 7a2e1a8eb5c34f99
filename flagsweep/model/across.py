"""suite.json and merged.json: one recipe over several programs, one target over several
machines (flagsweep.across).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flagsweep.model.machine import Machine
from flagsweep.model.values import Bool, Num, Record, Pair, Str
from flagsweep.model.verdicts import Comparison


SUITE_SCHEMA = "flagsweep-suite/1"
MERGE_SCHEMA = "flagsweep-merge/1"


class ProgramCell(Record):
    """One program's (or machine's) own comparison of a variant (flagsweep.across.pick.Pair)."""
    program: Str | None = None
    machine: Str | None = None
    ratio: Num = None
    ci95: Pair = None
    verdict: Str


class SuiteProgram(Record):
    target: Str
    version: Str | None = None
    status: Str | None = None
    results: Str                                  # its results.json, relative to suite.json
    stop_reason: Str | None = None
    recommendation: Str | None = None
    unstable: Bool | None = None                  # its A/A gate failed: shown, not pooled


class SuiteVariant(Record):
    id: Str
    compiler: Str
    flags: list[Str]
    label: Str | None = None                      # what people call it (results.names.label)
    per_program: dict[str, ProgramCell | None]
    suite: Comparison | None = None
    missing: Str | None = None
    faster_on: list[Str] = []
    slower_on: list[Str] = []


class SuiteFailure(Record):
    target: Str
    error: Str


class Suite(Record):
    """suite.json: one recipe over several programs on one machine (flagsweep.across.suite)."""
    schema_: Literal[SUITE_SCHEMA] = Field(alias="schema")
    machine: Str
    metric: Str
    baseline: Str
    threshold_pct: Num = None
    recommendation: Str | None = None
    warnings: list[Str] = []
    failed: list[SuiteFailure] = []
    programs: list[SuiteProgram]
    variants: list[SuiteVariant]


class MergeCell(Record):
    change_pct: Num = None
    ci: Pair = None
    verdict: Str


class MergedMachine(Record):
    label: Str
    path: Str
    machine: Machine


class MergedVariant(Record):
    id: Str
    compiler: Str
    flags: list[Str]
    per_machine: list[MergeCell]


class Merged(Record):
    """merged.json: one target's results from several machines (flagsweep.across.merge)."""
    schema_: Literal[MERGE_SCHEMA] = Field(alias="schema")
    target: Str
    machines: list[MergedMachine]
    variants: list[MergedVariant]
