"""A tune in progress (Tuning) and its record (flagsweep.model.tune.TuneRecord), kept with its
Optuna study as one attribute and read back through the model: the record is data, checked as
typed input is before anything runs, and each change to it is written whole.

A tune started before the record was one attribute kept it as one attribute per key, the same
keys: that record is read as the model reads this one, and written as one attribute from its
first change on, so such a tune resumes."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flagsweep.experiment.strict import validate
from flagsweep.model.tune import StoredSpace, TrialRecord, TuneOptions, TuneRecord
from flagsweep import model
from flagsweep.tune import search
from flagsweep.tune import space as spaces
from flagsweep.tune.batch import Setting


@dataclass
class Tuning:
    """A tune in progress: its study, its record, its setting and its clock."""
    name: str
    out: Path
    study: Any
    state: TuneRecord
    space: spaces.Space
    setting: Setting
    began: float                    # this session's start (monotonic)
    spent: float                    # seconds spent by earlier sessions
    wait: bool = False              # queue behind a sweep holding this machine's CPU

    @property
    def opts(self) -> TuneOptions:
        return self.state.options

    def elapsed(self) -> float:
        return self.spent + time.monotonic() - self.began

    def save(self) -> None:
        """The record written whole, as one attribute: a change is never half kept."""
        self.study.set_user_attr(search.RECORD, self.state.model_dump())


def read(study, row: str) -> TuneRecord:
    """The study's record, checked: a key of another type, or one the record does not have,
    is one line naming it (`row` names the record)."""
    return validate(TuneRecord, search.stored_record(study.user_attrs), row)


def trial_record(trial) -> TrialRecord:
    """A trial's attributes as the tune noted and told them, checked as the record is."""
    return validate(TrialRecord, trial.user_attrs, f"trial {trial.number}'s attributes")


def stored_space(space: spaces.Space) -> StoredSpace:
    return StoredSpace(base=space.base, compiler=space.compiler, source=space.source,
                       dimensions=[(d.name, list(d.choices)) for d in space.dimensions],
                       excluded=list(space.excluded))


def space_of(stored: StoredSpace) -> spaces.Space:
    return spaces.Space(stored.base, stored.compiler, stored.source,
                        tuple(spaces.Dimension(n, tuple(c)) for n, c in stored.dimensions),
                        tuple(stored.excluded))


def kept_ablation(tune: Tuning) -> model.TuneAblation | None:
    found = tune.state.ablation
    return model.TuneAblation.model_validate(found) if found else None


def kept_proof(tune: Tuning) -> model.TuneProof | None:
    found = tune.state.proof
    return model.TuneProof.model_validate(found) if found else None


def keep_ablation(tune: Tuning, ablation: model.TuneAblation) -> None:
    tune.state.ablation = ablation.dump()
    tune.save()


def keep_proof(tune: Tuning, proof: model.TuneProof) -> None:
    tune.state.proof = proof.dump()
    tune.save()
