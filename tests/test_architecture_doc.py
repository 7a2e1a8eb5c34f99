"""docs/architecture.md and the pages its mechanism moved to (execution.md, audit.md) describe
the code as it is: every file they name exists, every dotted name whose first part is one of
flagsweep's modules (`rounds.first_stop`, `sweep.aa_twin`) resolves to something that module
defines, and every snake_case name they show in code (`aa_of`) is still somewhere in the code.
A rename that forgets the docs fails here."""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

import pytest

from code_names import defined

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "flagsweep"
DOC = ROOT / "docs" / "architecture.md"
PAGES = [DOC, ROOT / "docs" / "execution.md", ROOT / "docs" / "audit.md"]
# Dotted words that are files or columns, not code: results.json, store.sqlite, samples.csv ...
NOT_CODE = {"json", "jsonl", "csv", "html", "css", "md", "sqlite", "cmake", "key", "conf", "c",
            "py", "lock", "txt", "out", "gz", "xz", "bz2", "toml", "sources", "running", "so",
            "o", "s", "i", "ii", "wav", "mp3", "tar", "stderr", "stdout", "log", "j2", "xml"}
# Names of other programs' the doc quotes: CMake's, ccache's options, getrusage's fields.
FOREIGN = {"add_subdirectory", "ignore_options", "prefix_command", "ru_maxrss", "ru_utime",
           "ru_stime"}


@cache
def _modules() -> dict[str, list[Path]]:
    """Each module's and package's short names (`rounds`, `measure.rounds`) -> its files."""
    names: dict[str, list[Path]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        for i in range(len(parts)):
            names.setdefault(".".join(parts[i:]), []).append(path)
    return names


def _code_spans(text: str) -> list[str]:
    blocks = re.findall(r"```.*?```", text, flags=re.S)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return blocks + inline


def _dangling_dotted(span: str) -> list[str]:
    """Dotted names that are neither code that exists nor a key path of the results (every
    part a key the code writes: `build.layouts`, `samples.layout`)."""
    dangling = []
    for name in re.findall(r"(?<![\w./-])([a-z_][a-z0-9_]*(?:\.[A-Za-z_]\w*)+)(?:\(\))?", span):
        parts = name.split(".")
        if parts[-1] in NOT_CODE or parts[0] in sys.stdlib_module_names:
            continue
        if parts[0] in {n.split(".")[0] for n in _modules()}:
            if not _resolves(parts):
                dangling.append(name)
        elif not all(part in _keys() for part in parts):
            dangling.append(name)
    return dangling


@cache
def _keys() -> frozenset[str]:
    """The keys of what the code writes: every field of the model's classes (flagsweep/model), and
    every string the code holds."""
    fields = {node.target.id for path in (PACKAGE / "model").glob("*.py")
              for node in ast.walk(ast.parse(path.read_text()))
              if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}
    return frozenset(fields | {node.value for path in PACKAGE.rglob("*.py")
                               for node in ast.walk(ast.parse(path.read_text()))
                               if isinstance(node, ast.Constant) and isinstance(node.value, str)})


def _resolves(parts: list[str]) -> bool:
    """a.b.c: some split into a module (a.b, or a) and a name it defines (c, or b then c)."""
    for cut in range(len(parts) - 1, 0, -1):
        module, rest = ".".join(parts[:cut]), parts[cut:]
        for path in _modules().get(module, []):
            if all(name in defined(path, strings=True) or name in _everything() for name in rest[1:]) \
                    and rest[0] in defined(path, strings=True):
                return True
    return False


@cache
def _everything() -> str:
    return "\n".join(p.read_text() for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_file_the_doc_names_exists(page):
    text = page.read_text()
    named = set(re.findall(r"(?<![\w./-])((?:[a-z_]+/)+[a-z_]+\.(?:py|c))\b", text))
    assert page != DOC or len(named) > 40
    missing = sorted(n for n in named
                     if not (PACKAGE / n).is_file() and not (ROOT / n).is_file())
    assert not missing, missing


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_function_the_doc_names_exists(page):
    spans = _code_spans(page.read_text())
    dangling = sorted({name for span in spans for name in _dangling_dotted(span)})
    assert not dangling, dangling


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_snake_case_name_in_its_code_is_in_the_code(page):
    spans = _code_spans(page.read_text())
    words = {w for span in spans
             for w in re.findall(r"(?<![\w.$/-])[a-z]+(?:_[a-z0-9]+)+\b(?![.\w])", span)}
    assert page != DOC or len(words) > 50
    code = _everything()
    missing = sorted(w for w in words - FOREIGN if w not in code)
    assert not missing, missing
