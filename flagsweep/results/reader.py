"""Reading a results.json (or a tune.json): one loader that refuses, with the file and the key
named, what is not one, and upgrades one written under an older schema
(flagsweep.model).

The file is data (anyone's, handed to report, compare, merge, pick, suite or explain), so
before the models see it the JSON itself is held to what flagsweep writes: strict JSON, without
the NaN and Infinity Python's json reads (a NaN passes every comparison a verdict makes), and
nested no deeper than MAX_DEPTH, checked without recursing (json recurses once per level, and
a file of 200,000 brackets ended in a RecursionError).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from flagsweep import model
from flagsweep.errors import FlagsweepError

# A results.json nests 6 levels deep (variants[2].build.audit.compile_line[0]), a tune.json as
# many; the open keys leave room for more, but not for thousands.
MAX_DEPTH = 64
STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
NOT_BRACKET = re.compile(r"[^\[\]{}]+")
LEVEL = {"[": 1, "{": 1, "]": -1, "}": -1}


def load(path: Path, kind: str = "results") -> model.Record:
    """Read a results.json (or, with kind "tune", a tune.json), refusing (with the file and
    the key named) what is not one; the document as the current schema's model."""
    doc = document(path, "results.json" if kind == "results" else f"{kind}.json")
    if kind == "results":
        if isinstance(doc, dict) and "schema" in doc:
            doc = upgrade(doc, path)
        _metric_column(doc)
    return validate(doc, path, kind)


def upgrade(doc: dict, path) -> dict:
    """doc as the current schema: each older version upgraded in turn; FlagsweepError naming
    the file and the version for one that this flagsweep does not know (or a newer one)."""
    seen = []
    while doc.get("schema") != model.SCHEMA:
        version = doc.get("schema")
        step = model.UPGRADES.get(version) if isinstance(version, str) else None
        if step is None or version in seen:
            raise FlagsweepError(f"{path}: key 'schema' is {version!r}; this flagsweep reads "
                         f"{', '.join(map(repr, model.readable()))} (a newer flagsweep wrote it? "
                         "upgrade flagsweep to read it)")
        seen.append(version)
        doc = step(doc)
    return doc


def validate(doc: Any, path, kind: str = "results") -> model.Record:
    """The document as its model; refused, with the file and the key path named, when it is
    not a document of this kind."""
    what = "results.json" if kind == "results" else f"{kind}.json"
    if not isinstance(doc, dict):
        raise FlagsweepError(f"{path}: not a {what} (expected a JSON object)")
    try:
        return model.KINDS[kind].model_validate(doc)
    except ValidationError as e:
        raise FlagsweepError(f"{path}: {model.problem(e.errors(), what)}") from None


def document(path: Path, what: str = "results.json") -> Any:
    """The JSON value in the file at path, refused in one line naming the file (and the key)
    when it cannot be read, is not JSON, nests deeper than MAX_DEPTH or holds a number JSON
    has not got (NaN, Infinity, or one too large for a double, which reads as infinite)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise FlagsweepError(f"{path}: no such file") from None
    except UnicodeDecodeError as e:
        raise FlagsweepError(f"{path}: not a {what} (not valid JSON: {e})") from None
    except OSError as e:
        raise FlagsweepError(f"{path}: cannot read it: {e.strerror}") from None
    if _depth(text) > MAX_DEPTH:
        raise FlagsweepError(f"{path}: not a {what} (its JSON nests deeper than {MAX_DEPTH} "
                             "levels)")
    try:
        doc, unfinite = _strict(text)
    except ValueError as e:         # JSONDecodeError, or an integer of more than 4300 digits
        raise FlagsweepError(f"{path}: not a {what} (not valid JSON: {e})") from None
    if unfinite:
        where, token = _first_token(doc)
        raise FlagsweepError(f"{path}: key '{model.key_path(where) or '(the document)'}': "
                             f"expected a finite number or null, got {token}")
    return doc


def _depth(text: str) -> int:
    """How deep the JSON in text nests, counted over its brackets outside strings (a loop,
    not a recursion)."""
    brackets = NOT_BRACKET.sub("", STRING.sub("", text))
    return max(itertools.accumulate(LEVEL[c] for c in brackets), default=0)


class _Token(str):
    """A number JSON has not got, as the file wrote it, where json read it: found again by
    its key path."""


def _strict(text: str) -> tuple[Any, bool]:
    """The JSON value in text, and whether it holds a number that is not finite (NaN,
    Infinity, 1e999 or an integer beyond a double), each left in place as a _Token."""
    seen = []

    def token(t: str) -> _Token:
        seen.append(t)
        return _Token(t)

    def number(t: str) -> float | _Token:
        value = float(t)
        return value if math.isfinite(value) else token(t)

    def integer(t: str) -> int | _Token:
        value = int(t)
        return value if len(t) < 300 or math.isfinite(float(t)) else token(t)

    doc = json.loads(text, parse_constant=token, parse_float=number, parse_int=integer)
    return doc, bool(seen)


def _first_token(doc: Any) -> tuple[tuple, _Token]:
    """The key path and the token of the first _Token in file order (a loop over a document
    known to nest no deeper than MAX_DEPTH)."""
    stack: list[tuple[tuple, Any]] = [((), doc)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, _Token):
            return where, node
        items = node.items() if isinstance(node, dict) else \
            enumerate(node) if isinstance(node, list) else ()
        stack.extend(reversed([((*where, k), v) for k, v in items]))
    raise AssertionError("a _Token was read, so the document holds one")


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
