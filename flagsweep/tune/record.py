"""A tune's record: its options, its space and its state as the store keeps them, and the tune
in progress (Tuning) that reads and keeps them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from flagsweep.results import contract
from flagsweep.tune import space as spaces
from flagsweep.tune.batch import Setting


@dataclass
class TuneOptions:
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
    measure: dict = field(default_factory=dict)     # MeasureOptions' fields
    scheduler: str | None = None    # a Dask fleet's scheduler: the batches run on its workers
    cpu_label: str | None = None    # ... of this one CPU label


@dataclass
class Tuning:
    """A tune in progress: its study, its options, its setting and its clock."""
    name: str
    out: Path
    study: Any
    opts: TuneOptions
    space: spaces.Space
    setting: Setting
    began: float                    # this session's start (monotonic)
    spent: float                    # seconds spent by earlier sessions
    wait: bool = False              # queue behind a sweep holding this machine's CPU

    def elapsed(self) -> float:
        return self.spent + time.monotonic() - self.began

    def record(self, key: str) -> Any:
        return self.study.user_attrs.get(key)

    def keep(self, key: str, value: Any) -> None:
        self.study.set_user_attr(key, value)


class StoredSpace(BaseModel):
    """A tune's space as its record keeps it (_space_json)."""
    model_config = ConfigDict(extra="ignore")
    base: str | list[str]
    compiler: str
    source: str
    dimensions: list[tuple[str, list[str]]]
    excluded: list[str] = []


class StoredTune(BaseModel):
    """What a resume reads of a tune's record (the study's user attributes), each key of the
    type the tune wrote it with: the record is data, and a value of another type (changed by
    hand, or by another user of the store) is one line naming the key, not a traceback."""
    model_config = ConfigDict(extra="ignore")
    options: TuneOptions
    target_path: str
    target_sha256: str
    out: str
    space: StoredSpace
    phase: Literal["search", "ablation", "proof", "done"]
    spent_s: float | None = None


def space_json(space: spaces.Space) -> dict:
    return {"base": space.base, "compiler": space.compiler, "source": space.source,
            "dimensions": [[d.name, list(d.choices)] for d in space.dimensions],
            "excluded": list(space.excluded)}


def space_of(doc: dict) -> spaces.Space:
    return spaces.Space(doc["base"], doc["compiler"], doc["source"],
                        tuple(spaces.Dimension(n, tuple(c)) for n, c in doc["dimensions"]),
                        tuple(doc["excluded"]))


def keep_model(tune: Tuning, key: str, model: contract.Open) -> None:
    tune.keep(key, model.dump())


def kept_model(tune: Tuning, key: str, kind: type[contract.Open]):
    found = tune.record(key)
    return kind.model_validate(found) if found else None
