"""The docs name the code as it is. Every module path a page names (`flagsweep/results/store.py`,
`measure/rounds.py`, `bench/duet.py`) exists; every dotted name under the package
(`flagsweep.compilation.steps`, `flagsweep.results.reader.load`) resolves to a module and the
names it defines; a code span that lists modules by their bare names, as the design sketch's
comparison does, lists modules that exist; and the store's schema version the docs state is the
store's own. tests/test_architecture_doc.py holds the overview pages to the same for the short
dotted names (`rounds.first_stop`) and the snake_case words of their code. A module moved or
renamed without its docs fails here, naming the page and the name."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from code_names import defined

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "flagsweep"
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
# The pages that describe the code's own layout, where a bare word in a list is a module name.
OVERVIEW = [ROOT / "docs" / name for name in ("architecture.md", "execution.md", "audit.md")]
# Dotted words that are files, not code: flagsweep.json, flagsweep.conf.
FILE_SUFFIXES = {"json", "conf", "toml", "md", "py", "c", "csv", "html", "lock", "sqlite"}


def _spans(text: str) -> list[str]:
    """The page's code: fenced blocks, then inline spans outside them."""
    blocks = re.findall(r"```.*?```", text, flags=re.S)
    return blocks + re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))


@cache
def _packages() -> frozenset[str]:
    return frozenset(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())


@cache
def _module_names() -> frozenset[str]:
    """Every module's and package's own name under flagsweep (`rounds`, `measure`)."""
    names = {p.stem for p in PACKAGE.rglob("*.py") if p.stem != "__init__"}
    return frozenset(names | _packages())


def _module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def resolves(dotted: str) -> bool:
    """flagsweep.a.b.c: the longest prefix that is a module, then names it defines (one more
    level through a class or a submodule)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        path = _module_file(parts[:cut])
        if path is None:
            continue
        rest = parts[cut:]
        return not rest or (rest[0] in defined(path) and len(rest) <= 2)
    return False


def module_path_exists(path: str) -> bool:
    """A path as the docs write it: from the checkout (`flagsweep/...`, `bench/...`,
    `tests/...`) or from the package (`measure/rounds.py`)."""
    first = path.split("/")[0]
    return (PACKAGE / path).is_file() if first in _packages() else (ROOT / path).is_file()


def module_list_strays(span: str) -> list[str]:
    """In a span of bare lowercase words that are mostly module names, the words that are not."""
    words = span.split()
    if len(words) < 3 or not all(re.fullmatch(r"[a-z_]+/?", w) for w in words):
        return []
    known = [w for w in words if w.rstrip("/") in _module_names()]
    if 2 * len(known) <= len(words):
        return []                      # a message in plain words, not a list of modules
    return [w for w in words if w.rstrip("/") not in _module_names()]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_module_path_a_page_names_exists(page):
    text = page.read_text()
    named = set(re.findall(r"(?<![\w./-])((?:[a-z_]+/)+[a-z_]+\.(?:py|c))\b", text))
    ours = {n for n in named if n.split("/")[0] in _packages() | {"flagsweep", "bench", "tests"}}
    missing = sorted(n for n in ours if not module_path_exists(n))
    assert not missing, f"{page.name} names modules that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_dotted_name_under_the_package_resolves(page):
    dotted = {name for span in _spans(page.read_text())
              for name in re.findall(r"(?<![\w./-])(flagsweep(?:\.[A-Za-z_]\w*)+)", span)}
    code = {d for d in dotted if d.rsplit(".", 1)[-1] not in FILE_SUFFIXES}
    dangling = sorted(d for d in code if not resolves(d))
    assert not dangling, f"{page.name} names code that does not exist: {dangling}"


@pytest.mark.parametrize("page", OVERVIEW, ids=lambda p: p.name)
def test_a_list_of_modules_names_only_modules(page):
    strays = sorted({w for span in _spans(page.read_text()) for w in module_list_strays(span)})
    assert not strays, f"{page.name} lists modules that do not exist: {strays}"


def test_the_store_schema_version_the_docs_state_is_the_stores():
    tree = ast.parse((PACKAGE / "results" / "tables.py").read_text())
    version = next(node.value.value for node in ast.walk(tree)
                   if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                   and any(isinstance(t, ast.Name) and t.id == "SCHEMA_VERSION"
                           for t in node.targets))
    stated = {}
    for page in OVERVIEW + [ROOT / "docs" / "store.md"]:
        for found in re.findall(r"`(?:tables\.SCHEMA_VERSION|schema)` = (\d+)"
                                r"|schema version \(currently (\d+)\)", page.read_text()):
            stated.setdefault(page.name, set()).add(int(next(v for v in found if v)))
    assert stated, "no page states the store's schema version any more"
    wrong = {name: sorted(values) for name, values in stated.items() if values != {version}}
    assert not wrong, f"the store's schema is {version}; the docs say {wrong}"


def test_the_overview_names_the_typed_models_home():
    text = (ROOT / "docs" / "architecture.md").read_text()
    homes = re.findall(r"\*\*The typed model lives in `([\w/.]+)`\*\*", text)
    assert homes, "architecture.md no longer says where the typed model lives"
    assert all((ROOT / home).exists() for home in homes), homes


def test_the_checks_catch_the_names_the_docs_once_got_wrong():
    """The sketch's module list named `runner` and `buildsystem`, which were never modules here
    (`build` and `schema` are now the model's); the store was said to be at schema 3."""
    assert module_list_strays("cli recipe matrix cpu build check system runner probes store") \
        == ["runner"]
    assert module_list_strays("schema target toolchain wrapper audit buildsystem lock") \
        == ["buildsystem"]
    assert module_list_strays("none of the planted effects") == []
    assert not resolves("flagsweep.results.runner")
    assert resolves("flagsweep.results.reader.load")
    assert not module_path_exists("host/buildsystem.py")
