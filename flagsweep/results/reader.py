"""Reading a results.json: one loader that refuses, with the file and the key named, what is
not one."""

from __future__ import annotations

import json
from pathlib import Path

from flagsweep.errors import FlagsweepError

SCHEMA = "flagsweep/1"
REQUIRED = ("schema", "target", "recipe", "metric", "baseline", "machine", "variants")
REQUIRED_VARIANT = ("id", "compiler", "flags", "build")

# The keys whose values the report, compare, merge, pick and suite compute with: each must hold
# a number or a pair of numbers (an interval), or null; [...]: a list of such. "*": any key.
NUM, PAIR = "a number", "a pair of numbers"
NUMERIC = {
    "threshold_pct": NUM,
    "variants": [{
        "build": {"seconds": NUM, "size_bytes": NUM},
        "samples": {"*": [NUM]},
        "summary": {"n": NUM, "median": NUM, "mean": NUM, "cv": NUM, "outliers": NUM,
                    "disturbed": NUM, "retaken": NUM, "ci95": PAIR},
        "vs_baseline": {"ratio": NUM, "p_value": NUM, "p_adjusted": NUM, "n_pairs": NUM,
                        "rounds_needed": NUM, "ci95": PAIR, "ci90": PAIR},
    }],
    "aa": {"ratio": NUM, "p_value": NUM, "bound_pct": NUM, "ci95": PAIR},
    "noise": {"baseline_cv": NUM, "mde_pct": NUM, "sd_log_diff": NUM, "power": NUM,
              "n_pairs": NUM, "comparisons": NUM},
    "effects": [{"effect_pct": NUM, "p_value": NUM, "p_adjusted": NUM, "ci95_pct": PAIR}],
    "history": [{"points": [{"median": NUM, "n": NUM, "ci95": PAIR}],
                 "steps": [{"ratio": NUM, "ci95": PAIR}]}],
}


def load(path: Path) -> dict:
    """Read a results.json, refusing (with the file and the key named) what is not one."""
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise FlagsweepError(f"{path}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FlagsweepError(f"{path}: not a results.json (not valid JSON: {e})") from None
    except OSError as e:
        raise FlagsweepError(f"{path}: cannot read it: {e.strerror}") from None
    if not isinstance(doc, dict):
        raise FlagsweepError(f"{path}: not a results.json (expected a JSON object)")
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise FlagsweepError(f"{path}: not a results.json: missing key(s) {', '.join(missing)}")
    if doc["schema"] != SCHEMA:
        raise FlagsweepError(f"{path}: key 'schema' is {doc['schema']!r}; this flagsweep "
                             f"reads {SCHEMA!r}")
    if not isinstance(doc["variants"], list) or not all(isinstance(v, dict) for v in doc["variants"]):
        raise FlagsweepError(f"{path}: key 'variants': expected a list of objects")
    for i, v in enumerate(doc["variants"]):
        gone = [k for k in REQUIRED_VARIANT if k not in v]
        if gone:
            raise FlagsweepError(f"{path}: variants[{i}] lacks key(s) {', '.join(gone)}")
    _check_numbers(doc, NUMERIC, "", path)
    return doc


def _check_numbers(value, spec, key: str, path: Path) -> None:
    """Walk value along spec (see NUMERIC); the first value of the wrong kind is refused with
    its key path, e.g. variants[2].vs_baseline.ratio. Null passes: absent numbers are null."""
    if value is None:
        return
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise FlagsweepError(f"{path}: key '{key}': expected an object, got {_shown(value)}")
        for name, inner in spec.items():
            for k in (value if name == "*" else [name] if name in value else []):
                _check_numbers(value[k], inner, f"{key}.{k}" if key else k, path)
    elif isinstance(spec, list):
        if not isinstance(value, list):
            raise FlagsweepError(f"{path}: key '{key}': expected a list, got {_shown(value)}")
        for i, item in enumerate(value):
            _check_numbers(item, spec[0], f"{key}[{i}]", path)
    elif not _fits(value, spec):
        raise FlagsweepError(f"{path}: key '{key}': expected {spec} or null, got {_shown(value)}")


def _fits(value, kind: str) -> bool:
    if kind == PAIR:
        return isinstance(value, list) and len(value) == 2 and all(map(_number, value))
    return _number(value)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _shown(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
