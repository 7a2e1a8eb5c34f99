"""results.json: one sweep of one target on one machine.

Other tools (merge, pick, suite, history, anyone's script) read these files, so the names here
are stable: a key is added freely, but renamed or retyped only with a new schema version and an
entry in flagsweep.model.schema.UPGRADES that turns the older document into the current one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flagsweep.model.build import Build
from flagsweep.model.check import Check
from flagsweep.model.explain import Explain, ExplainRun
from flagsweep.model.history import HistorySeries
from flagsweep.model.machine import Compiler, Distro, Machine
from flagsweep.model.measurement import Measurement
from flagsweep.model.values import Num, Record, Str
from flagsweep.model.verdicts import AA, Effect, Noise, Recommendation, Summary, VsBaseline


SCHEMA = "flagsweep/2"                  # results.json, as written now: closed objects
AA_SUFFIX = ".aa"                       # the A/A twin's id is the baseline's id plus this
REF_SUFFIX = ".ref"                      # the reference arm's id (run --reference), likewise


def is_control(variant_id: str) -> bool:
    """The A/A twin or the reference arm: measured and compared with the baseline like any
    variant, but no cell of the design and never a flag set to choose."""
    return variant_id.endswith((AA_SUFFIX, REF_SUFFIX))


class Workload(Record):
    argv: list[Str] | None = None
    inputs: list[Str] | None = None
    stdout: Str | None = None
    input_sha256: Str | None = None
    timeout: Num = None
    input: Str | None = None                 # the input in words ("corpus: 1 MB")
    target_file: Str | None = None
    build_system: Str | None = None          # the target's [build] system: autotools, cmake, ...


class StudyTimings(Record):
    """One machine's published timings: seconds per level of the study's factor."""
    name: Str
    seconds: dict[str, Num]


class PriorStudy(Record):
    """A published study the recipe reproduces (the recipe's `study`): the report sets today's
    results beside it."""
    title: Str
    question: Str
    factor: Str
    baseline: Str
    machines: list[StudyTimings]


class EffectsDesign(Record):
    """How the effects were estimated (results.analysis): the design and a note in words."""
    design: Str
    note: Str
    undecided: Str | None = None             # why no effect is called yet


class Failure(Record):
    """A run of the variant that failed: its round (and layout) and why."""
    round: Num
    failure: Str | None = None
    layout: Num = None


class Replaced(Record):
    """A binary found replaced after the rounds (compilation.fingerprint): no verdict."""
    binary: Str
    recorded_sha256: Str | None = None
    now_sha256: Str | None = None
    why: Str


class Skipped(Record):
    id: Str
    flags: list[Str]
    reason: Str


class Variant(Record):
    id: Str
    compiler: Str
    flags: list[Str]
    factors: dict[str, Str | None] | None = None
    layout_of: Str | None = None             # a layout's binary (--layouts): its variant
    layout: Num = None                       # ... and its layout seed
    aa_of: Str | None = None                 # the A/A twin: the baseline it copies
    reference_of: Str | None = None          # the reference arm: the baseline it stands beside
    build: Build
    check: Check | None = None
    samples: dict[str, list[Num]] | None = Field(None, description=(
        "the counted samples as columns; always holds the run's `metric` (cpu_s: user_s + sys_s)"))
    summary: Summary | None = None
    vs_baseline: VsBaseline | None = None
    explain: Explain | None = None         # run --explain: faster/slower variants only
    failures: list[Failure] = []
    multiplexed: Num = None                  # counted samples whose counters perf multiplexed
    replaced: Replaced | None = None


class Results(Record):
    """results.json: one sweep of one target on one machine."""
    schema_: Literal[SCHEMA] = Field(alias="schema")   # `schema` is a BaseModel method
    target: Str
    recipe: Str
    metric: Str
    baseline: Str
    machine: Machine
    variants: list[Variant]
    run_id: Str | None = None
    target_version: Str | None = None
    started: Str | None = None
    finished: Str | None = None
    status: Str | None = None               # complete | busy | interrupted | failed | running
    stop_reason: Str | None = None
    compilers: list[Compiler] | None = None
    workload: Workload | None = None
    design: Str | None = None
    distro: Distro | None = None            # a distribution's flags every variant starts from
    skipped: list[Skipped] | None = None
    measurement: Measurement | None = None
    threshold_pct: Num = None
    effects: list[Effect] | None = None
    aa: AA | None = None
    noise: Noise | None = None
    recommendation: Recommendation | None = None
    history: list[HistorySeries] | None = None
    explain: ExplainRun | None = None
    study: PriorStudy | None = None
    effects_design: EffectsDesign | None = None
