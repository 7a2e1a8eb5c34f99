"""Reading a results.json: one loader that refuses, with the file and the key named, what is
not one, and upgrades one written under an older schema (flagsweep.results.contract)."""

from __future__ import annotations

import json
from pathlib import Path

from flagsweep.errors import FlagsweepError
from flagsweep.results import contract


def load(path: Path) -> contract.Results:
    """Read a results.json, refusing (with the file and the key named) what is not one; the
    document as the current schema's model."""
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise FlagsweepError(f"{path}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FlagsweepError(f"{path}: not a results.json (not valid JSON: {e})") from None
    except OSError as e:
        raise FlagsweepError(f"{path}: cannot read it: {e.strerror}") from None
    if isinstance(doc, dict) and "schema" in doc:
        doc = contract.upgrade(doc, path)
    _metric_column(doc)
    return contract.validate(doc, path)


def _metric_column(doc: dict) -> None:
    """A results.json written before the run's metric was always a sample column gets it:
    cpu_s was left for the reader to add up from user_s and sys_s."""
    if not isinstance(doc, dict) or doc.get("metric") != "cpu_s" \
            or not isinstance(doc.get("variants"), list):
        return
    for v in doc["variants"]:
        s = v.get("samples") if isinstance(v, dict) else None
        s = s if isinstance(s, dict) else None
        if s and "cpu_s" not in s and "user_s" in s and "sys_s" in s:
            s["cpu_s"] = [u + k if u is not None and k is not None else None
                          for u, k in zip(s["user_s"], s["sys_s"])]
