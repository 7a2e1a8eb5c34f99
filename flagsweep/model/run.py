"""The store's run record (results.store's `runs` row): the run, the machine it ran on, and its
options, everything a resume and results.json need, each a typed field.

A sweep writes its options when it starts (jobs.sweep.run_options) and adds what it learns
after (store.set_option): each key is declared here, so a write of an undeclared key or of a
wrong kind fails where it is made. A row is data (anyone with the store can write it): it is
read through this model, and a key an older flagsweep wrote that no field declares is left
out (flagsweep.model.schema.declared).
"""

from __future__ import annotations

from typing import Any

from flagsweep.model.explain import Explain, ExplainRun
from flagsweep.model.machine import Compiler, Distro, Machine
from flagsweep.model.measurement import ChosenMetric, Schedule, Sequential
from flagsweep.model.results import PriorStudy, Replaced, Skipped, Workload
from flagsweep.model.values import Bool, Num, Record, Str
from flagsweep.model.verdicts import Confirmation


class CounterSetup(Record):
    """What perf can count on this machine, as the sweep found it (host.probes.Preflight)."""
    perf: Str | None = None                  # perf's path, null: not installed
    mode: Str | None = None                  # hardware | software | none
    events: list[Str] = []
    paranoid: Num = None                     # perf_event_paranoid
    hw_counters: Bool = False
    reasons: list[Str] = []                  # why not hardware, in words


class EarlyStop(Record):
    """A variant that stopped early (measure.rounds.Stopping): after how many rounds, why."""
    rounds: Num
    verdict: Str | None = None
    why: Str | None = None


class Confirms(Record):
    """A confirmation sweep's parent: the run whose rows it measures again over layouts."""
    run_id: Str
    began: Num = None                        # time.time() when it started


class FleetLabel(Record):
    """A fleet sweep's run: the label of the machines it ran on."""
    label: Str


class StoredExplain(ExplainRun):
    """run --explain's profiles as kept with the run: the run's part and each variant's."""
    variants: dict[str, Explain] = {}


class RunOptions(Record):
    """Everything a run was asked and learnt that a resume and results.json need."""
    target_path: Str | None = None
    target_sha256: Str | None = None
    target_version: Str | None = None
    recipe_path: Str | None = None
    study: PriorStudy | None = None
    # flagsweep.measure.options.MeasureOptions as its fields: read back through
    # results.stored.from_store, which checks every value as the command line's are.
    measure: dict[str, Any] = {}
    compilers: list[Compiler] = []
    baseline: Str | None = None
    design: Str | None = None
    distro: Distro | None = None
    skipped: list[Skipped] = []
    confirms: Confirms | None = None         # a confirmation sweep: the run it confirms
    fleet: FleetLabel | None = None          # a fleet sweep: its machines' label
    schedule: Schedule | None = None         # duet or serial, once chosen
    workload: Workload | None = None         # once its input is prepared
    counters: CounterSetup | None = None
    sequential: Sequential | None = None     # the levels the stops and the rule spend
    confirmation: Confirmation | None = None  # its rows confirmed over layouts
    explain: StoredExplain | None = None
    metric_choice: ChosenMetric | None = None
    replaced: dict[str, Replaced] = {}       # variant -> its binary found replaced
    stopped: dict[str, EarlyStop] = {}            # variant -> its early stop


class RunRecord(Record):
    """One run as the store keeps it."""
    run_id: Str
    target: Str
    recipe: Str
    out_dir: Str
    started: Num
    finished: Num = None
    status: Str                # running | complete | busy | interrupted | failed
    stop_reason: Str | None = None
    options: RunOptions
    machine: Machine | None = None
