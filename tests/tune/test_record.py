"""A tune's record (flagsweep.model.tune.TuneRecord) in its study: one user attribute, read back
through the model; a record from when it was one attribute per key still resumes."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from flagsweep.errors import ConfigError
from flagsweep.model.tune import StoredSpace, TuneOptions, TuneRecord
from flagsweep.tune import record, search


class Study(SimpleNamespace):
    """What the record reads and writes of an Optuna study: its user attributes."""

    def set_user_attr(self, key, value):
        self.user_attrs[key] = value


def _record() -> TuneRecord:
    return TuneRecord(options=TuneOptions(seed=5, measure={"max_runs": 3}),
                      target_path="/targets/tiny/target.toml", target_sha256="0" * 64,
                      out="/reports/tuned", sampler="tpe", seed=5, phase="ablation",
                      space=StoredSpace(base="-O2", compiler="gcc", source="two",
                                        dimensions=[("-fpeel-loops", ["", "-fpeel-loops"])]),
                      dropped=["-funroll-loops"], spent_s=12.5)


def test_the_record_is_one_attribute_written_whole_and_read_back_typed():
    study = Study(user_attrs={})
    tune = record.Tuning("tuned", Path("/reports/tuned"), study, _record(), None, None, 0.0, 0.0)
    tune.state.dropped.append("-fpeel-loops")
    tune.save()
    assert list(study.user_attrs) == [search.RECORD]
    got = record.read(study, "tune tuned's record")
    assert got == tune.state and got.options.measure == {"max_runs": 3}
    assert search.stored_record(study.user_attrs)["out"] == "/reports/tuned"


def test_a_tune_started_with_one_attribute_per_key_resumes_and_is_then_kept_as_one():
    """Its keys were the record's own: read as the record is, then written as one attribute
    (the old keys stay behind, unread)."""
    old = _record().model_dump(exclude_unset=True)
    study = Study(user_attrs=dict(old))
    got = record.read(study, "tune tuned's record")
    assert got.phase == "ablation" and got.dropped == ["-funroll-loops"] and got.seed == 5
    record.Tuning("tuned", Path("/reports/tuned"), study, got, None, None, 0.0, 0.0).save()
    assert record.read(study, "row") == got
    assert study.user_attrs[search.RECORD]["spent_s"] == 12.5


@pytest.mark.parametrize("change, expected", [
    ({"planted": 1}, "unknown key 'planted'"),
    ({"dropped": "-funroll-loops"}, "key 'dropped': expected a valid list"),
    ({"phase": "measuring"}, "key 'phase': expected 'search', 'ablation', 'proof' or 'done'"),
])
def test_a_record_changed_by_hand_is_one_line_naming_its_key(change, expected):
    study = Study(user_attrs={search.RECORD: {**_record().model_dump(), **change}})
    with pytest.raises(ConfigError) as e:
        record.read(study, "tune tuned's record")
    assert str(e.value).startswith("tune tuned's record: ") and expected in str(e.value)
    assert "\n" not in str(e.value)
