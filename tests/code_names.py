"""The names a module of the package defines, for the checks that docs name real code
(tests/test_docs_names.py, tests/test_architecture_doc.py)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


@cache
def defined(path: Path, strings: bool = False) -> frozenset[str]:
    """Every name a module defines at any depth (functions, classes, methods, assignments,
    imports), and its submodules when it is a package; with `strings`, also the identifiers it
    holds as string constants (a lazy attribute a package's __getattr__ gives)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif strings and isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.isidentifier():
            names.add(node.value)
    if path.name == "__init__.py":
        names.update(p.stem for p in path.parent.glob("*.py"))
        names.update(p.name for p in path.parent.iterdir() if (p / "__init__.py").is_file())
    return frozenset(names)
