"""The code's one-home rules, checked on its syntax tree: a class name means one class, only
process.py starts programs, and no module reaches into another's private names (a `_name`
read from another flagsweep module is an internal that moved without its readers knowing)."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "flagsweep"


def _trees() -> dict[str, ast.AST]:
    return {str(p.relative_to(PACKAGE.parent)): ast.parse(p.read_text())
            for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_class_name_is_defined_twice():
    where = collections.defaultdict(list)
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(path)
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_only_the_process_module_imports_subprocess():
    users = set()
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name.split(".")[0] == "subprocess" for name in names):
                users.add(path)
    assert users == {"flagsweep/process.py"}


def test_no_module_reads_another_modules_private_names():
    reached = []
    for path, tree in _trees().items():
        imported = {a.asname or a.name for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("flagsweep")
                    for a in node.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("flagsweep"):
                reached += [f"{path}: from {node.module} import {a.name}" for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__")]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in imported and node.attr.startswith("_") \
                    and not node.attr.startswith("__"):
                reached.append(f"{path}: {node.value.id}.{node.attr}")
    assert reached == []
