"""A tune's record: what `flagsweep tune` was asked and how far it got, kept with its Optuna study
in the store (one user attribute, this model's JSON) and read back through this model, so a
resume reads typed fields, not string keys, and a record changed by hand (or by another user
of the store) is one line naming the key, not a traceback.

Each trial's own attributes (its flags, state and ratio) stay with the trial (TrialRecord).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Phase = Literal["search", "ablation", "proof", "done"]


class Closed(BaseModel):
    """A part of the record: a key it does not declare is an error, not carried along."""
    model_config = ConfigDict(extra="forbid")


class TuneOptions(Closed):
    """What `flagsweep tune` is asked (kept with the tune, so a resume goes on as it began)."""
    base: str | None = None         # None: the space file's, else -O2
    space: str = "gcc-optimizers"
    compiler: str = "gcc"
    budget_s: float = 3600.0
    sampler: str = "tpe"
    starts: bool = True             # begin with -O3's switches and -march=native (not random)
    seed: int | None = None
    batch: int = 6                  # candidates a batch measures together
    trials: int | None = None       # candidates at most (default: the budget decides)
    layouts: int | None = None      # K layouts a set of the proof (None: sized by power,
                                    # tune.budget); the ablation's check takes it too
    runners_up: int = 2             # sets after the best the proof measures too
    jobs: int = 2
    offline: bool = False
    source_dir: str | None = None
    measure: dict[str, Any] = {}    # MeasureOptions' fields, checked by measure.options
    scheduler: str | None = None    # a Dask fleet's scheduler: the batches run on its workers
    cpu_label: str | None = None    # ... of this one CPU label


class StoredSpace(Closed):
    """The tune's space as it was loaded, so a resume searches the same dimensions."""
    base: str | list[str]
    compiler: str
    source: str
    dimensions: list[tuple[str, list[str]]]     # (name, choices), choices[0] the default
    excluded: list[str] = []


class RecordedBatch(Closed):
    """A batch as it was asked: its trials, and the best set then (its baseline)."""
    batch: int
    trials: list[int]
    best: int | None = None


class BrokenFlags(Closed):
    """A flag, or flags only together, found to break a candidate's build or output check."""
    flag: str                       # the flags as one text
    flags: list[str] = []           # ... each (an older record kept `flag` alone)
    kind: Literal["build", "check"]
    minimal: bool = True            # False: not reduced further in the time it had
    detail: str | None = None
    trial: int


class BuildOpening(Closed):
    """The base's build as the tune started: the pace the budget's opening line was said at."""
    build_s: float | None = None
    compiles: int | None = None
    cached: bool = False


class StepCosts(Closed):
    """What the tune spent, step by step ("batch 3", "probe 12", a sweep's run id: builds,
    build_s, runs, probe_s), each set under its name so a step done again is counted once."""
    steps: dict[str, dict[str, float]] = {}
    # the running totals a record kept before steps were
    builds: float = 0
    runs: float = 0
    build_s: float = 0
    probe_s: float = 0


class Remeasurement(Closed):
    """The best set measured again as a later batch's baseline."""
    batch: int | None = None
    ratio: float
    ci95: list[float | None] | None = None


class AblationPlan(Closed):
    """The ablation's plan, kept so a resumed tune takes the same one: its removals, then
    what was decided along the way (the groups taken apart, the layout check, the greedy
    steps) and where its last sweep is."""
    method: Literal["leave-one-out", "groups"]
    why: str | None = None
    groups: list[list[str]]
    split: list[str] | None = None            # None: not decided yet
    last: str | None = None                   # the latest sweep's results folder
    layout_check: dict[str, Any] | None = None   # results' TuneLayoutCheck, and its rounds_s
    greedy: list[list[str]] | None = None     # None: not planned yet; []: none fits
    greedy_why: str | None = None


class TuneRecord(Closed):
    """The whole record. `ablation`, `proof` and `proof_plan` hold the results contract's
    TuneAblation, TuneProof and TuneProofPlan as tune.json writes them, read back through those
    models."""
    options: TuneOptions
    target_path: str
    target_sha256: str
    out: str
    space: StoredSpace
    sampler: str
    seed: int
    phase: Phase
    spent_s: float | None = None
    starts: list[dict[str, str]] = []
    batches: list[RecordedBatch] = []
    broken: list[BrokenFlags] = []
    dropped: list[str] = []                   # dimensions never proposed again
    codes: dict[str, tuple[int | str, float]] = {}   # code sha256 -> its first trial, ratio
    opening: BuildOpening | None = None
    phase_ended_s: dict[str, float] = {}
    cost: StepCosts = Field(default_factory=StepCosts)
    again: dict[str, list[Remeasurement | float]] = {}   # trial -> its remeasurements (a bare
                                                         # ratio from an older record)
    ablation_plan: AblationPlan | None = None
    ablation: dict[str, Any] | None = None
    proof: dict[str, Any] | None = None
    proof_plan: dict[str, Any] | None = None


class TrialRecord(Closed):
    """A trial's attributes: noted as it is asked (flags, batch, state "pending"), then told."""
    flags: list[str] | None = None
    changes: list[str] | None = None
    state: str | None = None
    batch: int | None = None
    variant: str | None = None
    ratio: float | None = None
    ci95: list[float | None] | None = None
    verdict: str | None = None
    runs: int | None = None
    identical_to: str | None = None
    detail: str | None = None
    run_id: str | None = None
    elapsed_s: float | None = None
