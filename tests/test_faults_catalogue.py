"""docs/faults.md names a test for every fault it lists: each must exist, so the catalogue
cannot point at a test that was renamed or removed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "docs" / "faults.md"
# tests/stage/test_x.py::name, or ::name alone after one of them in the same cell
REFERENCE = re.compile(r"(tests/(?:\w+/)?test_\w+\.py)?::(\w+)")


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def _references() -> list[tuple[str, str]]:
    refs = []
    for line in CATALOGUE.read_text().splitlines():
        if not line.startswith("| "):
            continue
        cell = line.rstrip(" |").rsplit("|", 1)[-1]
        current = None
        for file, name in REFERENCE.findall(cell):
            current = file or current
            refs.append((current, name))
    return refs


def test_every_test_the_catalogue_names_exists():
    refs = _references()
    assert len(refs) > 100
    missing = [f"{f}::{n}" for f, n in refs if f is None or n not in _tests_in(ROOT / f)]
    assert missing == []
