"""The files' schemas: the JSON Schema each kind of file's model generates (`flagsweep schema
results|suite|merged|tune`), the upgrades from older results.json versions, and one line
for what is wrong with a document a model refused.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from flagsweep.model.across import Merged, Suite
from flagsweep.model.results import SCHEMA, Results
from flagsweep.model.tuning import Tune
from flagsweep.model.values import Open

# Older results.json schema -> a function returning that document one version on (its
# "schema" key set to the version it now is). flagsweep/1 is the first: nothing to upgrade yet.
UPGRADES: dict[str, Callable[[dict], dict]] = {}

KINDS: dict[str, type[Open]] = {"results": Results, "suite": Suite, "merged": Merged,
                                 "tune": Tune}


def json_schema(kind: str) -> str:
    """The JSON Schema of results.json, suite.json or merged.json, as JSON text."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              **KINDS[kind].model_json_schema()}
    return json.dumps(schema, indent=1)


def readable() -> list[str]:
    """The results.json schema versions this flagsweep reads: the current one and every one
    UPGRADES turns into it."""
    return [*UPGRADES, SCHEMA]


def problem(errors: list[dict], what: str) -> str:
    """One line for the first thing wrong: keys missing from an object (all of that object's
    at once), else the value at a key path and the kind that was expected there."""
    missing = [e for e in errors if e["type"] == "missing"]
    top = [e["loc"][0] for e in missing if len(e["loc"]) == 1]
    if top:
        return f"not a {what}: missing key(s) {', '.join(map(str, top))}"
    first = errors[0]
    if first["type"] == "missing":
        parent = first["loc"][:-1]
        gone = [e["loc"][-1] for e in missing if e["loc"][:-1] == parent]
        return f"{key_path(parent)} lacks key(s) {', '.join(map(str, gone))}"
    return (f"key '{key_path(first['loc'])}': expected {_expected(first)}, "
            f"got {_shown(first['input'])}")


EXPECTED = {"string_type": "a string", "bool_type": "true or false", "list_type": "a list",
            "model_type": "an object", "dict_type": "an object", "int_type": "a whole number"}


def _expected(error: dict) -> str:
    if error["type"] == "expected":
        return error["msg"]
    if error["type"] == "literal_error":      # a schema version: suite.json's, merged.json's
        return error["ctx"]["expected"]
    return EXPECTED.get(error["type"], error["msg"])


def key_path(loc: tuple) -> str:
    """A pydantic error location as the key path a reader types: variants[2].vs_baseline.ratio."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
