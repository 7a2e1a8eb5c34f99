"""The files' schemas: the JSON Schema each kind of file's model generates (`flagsweep schema
results|suite|merged|tune|qualify`), the upgrades from older results.json versions, and one line
for what is wrong with a document a model refused.
"""

from __future__ import annotations

import json
import types
from typing import Any, Callable, Union, get_args, get_origin

from pydantic import BaseModel

from flagsweep.model.across import Merged, Suite
from flagsweep.model.results import SCHEMA, Results
from flagsweep.model.campaign import Campaign
from flagsweep.model.qualification import Qualification
from flagsweep.model.tuning import Tune
from flagsweep.model.values import Record


def declared(value: Any, kind: Any) -> Any:
    """value with only the keys the model `kind` (a model class, or a field's type: a list, a
    map or a union of them) declares, at every level; anything else as it is."""
    origin = get_origin(kind)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        if not isinstance(value, dict):
            return value
        fields = {f.alias or name: f.annotation for name, f in kind.model_fields.items()}
        return {k: declared(v, fields[k]) for k, v in value.items() if k in fields}
    if origin in (Union, types.UnionType):
        fits = [a for a in get_args(kind) if _shape(a) is type(value)]
        return declared(value, fits[0]) if fits else value
    if origin is list and isinstance(value, list):
        return [declared(x, get_args(kind)[0]) for x in value]
    if origin is dict and isinstance(value, dict) and get_args(kind):
        return {k: declared(v, get_args(kind)[1]) for k, v in value.items()}
    return value


def _shape(kind: Any) -> type | None:
    """The JSON value's Python type a field's type holds: dict for a model or a map, list."""
    origin = get_origin(kind)
    if (isinstance(kind, type) and issubclass(kind, BaseModel)) or origin is dict:
        return dict
    return list if origin is list else None


def _closed(doc: dict) -> dict:
    """flagsweep/1 let any object hold keys its model did not name (a newer minor writer's);
    flagsweep/2 names every key it holds, so those are left out."""
    return {**declared(doc, Results), "schema": "flagsweep/2"}


# Older results.json schema -> a function returning that document one version on (its
# "schema" key set to the version it now is).
UPGRADES: dict[str, Callable[[dict], dict]] = {"flagsweep/1": _closed}

KINDS: dict[str, type[Record]] = {"results": Results, "suite": Suite, "merged": Merged,
                                 "tune": Tune, "qualify": Qualification, "campaign": Campaign}


def json_schema(kind: str) -> str:
    """The JSON Schema of results.json, suite.json, merged.json, tune.json or qualify.json,
    as JSON text."""
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
    if first["type"] == "extra_forbidden":
        return (f"key '{key_path(first['loc'])}' is not a key of {what} (`flagsweep schema "
                f"{what.removesuffix('.json')}` names them all)")
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
