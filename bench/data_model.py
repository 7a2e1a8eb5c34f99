"""How the code reaches its data: figures for the one-data-model rule (docs/architecture.md).

Counts, over flagsweep/ by AST:
- subscripts with a string key (`x["key"]`) and `.get("key", ...)` calls, and of those the ones
  whose key is a field name of the typed model (flagsweep/model/), outside the model itself
  (its schema code reads raw documents by design);
- attribute reads of a contract field name (`x.key`), the way a model is read;
- signatures that take a `doc: dict`;
- models of flagsweep/model/ that take keys they do not declare (not extra="forbid");
- class names defined more than once;
- modules importing subprocess.

Run: .venv/bin/python bench/data_model.py [--by-folder]
"""

from __future__ import annotations

import argparse
import ast
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "flagsweep"


def contract_fields() -> set[str]:
    """The field names of every model in flagsweep/model/ (each of its modules, so a model the
    package's __init__ does not name counts too)."""
    sys.path.insert(0, str(ROOT))
    import importlib

    from pydantic import BaseModel
    names: set[str] = set()
    for path in sorted((PACKAGE / "model").glob("*.py")):
        module = importlib.import_module(f"flagsweep.model.{path.stem}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, BaseModel) and obj is not BaseModel:
                names.update(obj.model_fields)
    return names


def open_models() -> list[str]:
    """The models in flagsweep/model/ that take keys they do not declare (extra other than
    "forbid"): a writer could add a key `flagsweep schema` does not name."""
    import importlib

    from pydantic import BaseModel
    found = set()
    for path in sorted((PACKAGE / "model").glob("*.py")):
        module = importlib.import_module(f"flagsweep.model.{path.stem}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, BaseModel) and obj is not BaseModel \
                    and obj.model_config.get("extra") != "forbid":
                found.add(obj.__name__)
    return sorted(found)


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _string_key(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def access(tree: ast.AST, fields: set[str]) -> collections.Counter:
    n: collections.Counter = collections.Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and (key := _string_key(node.slice)) is not None:
            n["subscripts"] += 1
            n["contract subscripts"] += key in fields
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and node.args
              and (key := _string_key(node.args[0])) is not None):
            n[".get"] += 1
            n["contract .get"] += key in fields
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) \
                and node.attr in fields:
            n["contract attribute reads"] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for a in node.args.args + node.args.kwonlyargs:
                if a.arg == "doc" and a.annotation is not None \
                        and ast.unparse(a.annotation).startswith("dict"):
                    n["doc: dict signatures"] += 1
    return n


def classes(trees: dict[Path, ast.AST]) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = collections.defaultdict(list)
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                seen[node.name].append(str(path.relative_to(ROOT)))
    return {name: where for name, where in seen.items() if len(where) > 1}


def subprocess_users(trees: dict[Path, ast.AST]) -> list[str]:
    users = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "subprocess" for n in names):
                users.append(str(path.relative_to(ROOT)))
                break
    return users


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--by-folder", action="store_true", help="the access counts per folder")
    args = ap.parse_args()
    fields = contract_fields()
    trees = {p: ast.parse(p.read_text()) for p in modules()}
    total: collections.Counter = collections.Counter()
    folders: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for path, tree in trees.items():
        if path.parent == PACKAGE / "model":
            continue
        n = access(tree, fields)
        total += n
        rel = path.relative_to(PACKAGE)
        folders[rel.parts[0] if len(rel.parts) > 1 else "(top)"] += n
    print(f"modules {len(trees)}, contract field names {len(fields)}")
    for key in ("subscripts", ".get", "contract subscripts", "contract .get",
                "contract attribute reads", "doc: dict signatures"):
        print(f"{key:28s} {total[key]:6d}")
    print(f"{'contract subscripts + .get':28s} "
          f"{total['contract subscripts'] + total['contract .get']:6d}")
    if args.by_folder:
        for folder, n in sorted(folders.items()):
            print(f"  {folder:14s} contract subscripts+.get "
                  f"{n['contract subscripts'] + n['contract .get']:5d}, attribute reads "
                  f"{n['contract attribute reads']:5d}")
    loose = open_models()
    print(f"models not closed (extra other than forbid): {len(loose)} {loose}")
    twice = classes(trees)
    print(f"class names defined more than once: {len(twice)}")
    for name, where in sorted(twice.items()):
        print(f"  {name}: {', '.join(where)}")
    users = subprocess_users(trees)
    print(f"modules importing subprocess: {len(users)} {users}")


if __name__ == "__main__":
    main()
