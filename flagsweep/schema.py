"""Strict loading of flagsweep's TOML files (targets and recipes).

Both formats are data, validated by pydantic models that forbid unknown keys, so a typo is an
error instead of a silently ignored setting (asv's `__dict__.update` loader is the cautionary
tale). Errors name the file, the dotted key and what was expected.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import ConfigError


class Strict(BaseModel):
    """Base for every file model: unknown keys are errors, values keep their declared types."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


M = TypeVar("M", bound=BaseModel)


def read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None


def validate(model: type[M], data: dict, path: Path, context: dict | None = None) -> M:
    """Validate data against model; a failure becomes one ConfigError listing every problem."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as e:
        raise ConfigError(f"{path}: " + "; ".join(_describe(err) for err in e.errors())) from None


def _describe(err: dict) -> str:
    key = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-")) or "(top level)"
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"unknown key '{key}'"
    if kind == "missing":
        return f"missing key '{key}'"
    got = err.get("input")
    shown = "" if isinstance(got, (dict, list)) else f", got {got!r}"
    return f"key '{key}': {_expected(err)}{shown}"


def _expected(err: dict) -> str:
    """pydantic's message, minus its 'Value error, ' prefix on our own validators' messages."""
    msg = err["msg"]
    return msg.removeprefix("Value error, ").removeprefix("Input should be ").join(
        ["expected ", ""] if msg.startswith("Input should be") else ["", ""])
