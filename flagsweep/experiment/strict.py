"""Strict loading of flagsweep's TOML files (targets and recipes).

Both formats are data, validated by pydantic models that forbid unknown keys, so a typo is an
error instead of a silently ignored setting (asv's `__dict__.update` loader is the cautionary
tale). Errors name the file, the dotted key and what was expected.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from flagsweep.errors import ConfigError


class Strict(BaseModel):
    """Base for every file model: unknown keys are errors, values keep their declared types."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


M = TypeVar("M", bound=BaseModel)
QUOTED = 200                # characters of a value a message quotes


def read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read it: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (TOML files are UTF-8): byte "
                          f"0x{e.object[e.start]:02x} at offset {e.start}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None


def validate(model: type[M], data: dict, path: Path, context: dict | None = None) -> M:
    """Validate data against model; a failure becomes one ConfigError listing every problem."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as e:
        raise ConfigError(f"{path}: " + "; ".join(_describe(e.errors(), data))) from None


def _describe(errors: list[dict], data: dict) -> list[str]:
    """One line per key; a value that fits none of a union's forms lists what each wanted."""
    problems: list[str] = []
    wanted: dict[str, list[str]] = {}
    got: dict[str, str] = {}
    for err in errors:
        key, kind = _key(err, data), err["type"]
        if kind == "extra_forbidden":
            problems.append(f"unknown key '{key}'")
        elif kind == "missing":
            problems.append(f"missing key '{key}'")
        else:
            if key not in wanted:
                problems.append(key)  # placeholder, filled below once all forms are known
            wanted.setdefault(key, []).append(_expected(err))
            value = err.get("input")
            got[key] = "" if isinstance(value, (dict, list)) else f", got {quoted(value)}"
    out = []
    for p in dict.fromkeys(problems):
        if p in wanted:
            expected = " or ".join(dict.fromkeys(wanted[p])).replace(" or expected ", " or ")
            out.append(f"key '{p}': {expected}{got[p]}" if p else f"{expected}{got[p]}")
        else:
            out.append(p)
    return out


def quoted(value: object) -> str:
    """A value as a message quotes it: a long one (a 100 KB flag) cut, with its length."""
    text = repr(value)
    return text if len(text) <= QUOTED else f"{text[:QUOTED]}... ({len(text)} characters)"


def _key(err: dict, data: dict) -> str:
    """The dotted key as the user wrote it: pydantic's location also names union members and
    validators ('inputs.wav.seconds', 'axes.opt.0.str'), which are not keys in the file."""
    parts, node = [], data
    loc = err["loc"]
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(part, int) and isinstance(node, list) and part < len(node):
            parts.append(str(part))
            node = node[part]
        elif isinstance(node, dict) and part in node:
            parts.append(str(part))
            node = node[part]
        elif last and err["type"] in ("missing", "extra_forbidden"):
            parts.append(str(part))
    return ".".join(parts)


def _expected(err: dict) -> str:
    """pydantic's message in the words of this project's other errors."""
    if err["type"] == "too_short":
        return f"expected at least {err['ctx']['min_length']} item(s)"
    msg = err["msg"].removeprefix("Value error, ")
    msg = re.sub(r" or instance of \w+", "", msg)  # "a valid dictionary or instance of Level"
    if msg.startswith("Input should be "):
        return "expected " + msg.removeprefix("Input should be ")
    return msg
