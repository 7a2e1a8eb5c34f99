"""Where flagsweep's own targets, recipes and superbuild are, and where the user's own are.

In a checkout they are the top-level folders `targets/`, `recipes/` and the superbuild
`CMakeLists.txt` beside the package, where they are edited. A wheel carries copies of them as
package data under `flagsweep/data/` (pyproject.toml says which), since an installed package has
no checkout beside it.

The user's own targets and recipes live in `$XDG_CONFIG_HOME/flagsweep/targets/<name>/target.toml`
and `$XDG_CONFIG_HOME/flagsweep/recipes/<name>.toml` (default `~/.config/flagsweep/`). A name
means the shipped target or recipe first, then the user's: a shipped name means the same program
on every machine, which is what makes a results.json's reproduce command and a suite comparable.
A user's entry that takes a shipped name is not used by that name; `flagsweep list` marks it and
looking the name up warns, naming its path, which still reaches it.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

log = logging.getLogger("flagsweep.shipped")

PACKAGE = Path(__file__).resolve().parent
# The folder holding the package: what the superbuild's step driver needs on PYTHONPATH.
IMPORT_ROOT = PACKAGE.parent
DATA = PACKAGE / "data"
INSTALLED = (DATA / "CMakeLists.txt").is_file()
ROOT = DATA if INSTALLED else PACKAGE.parent
TARGETS = ROOT / "targets"
RECIPES = ROOT / "recipes"
SUPERBUILD = ROOT                  # the folder whose CMakeLists.txt is the superbuild


def reports_dir() -> Path:
    """Where a run's folder goes unless --out says: reports/ in the folder the command runs
    in, where the user is (not inside a checkout or a venv they may not be looking at, or may
    not be able to write), asked at each call since the process may have changed folder."""
    return Path.cwd() / "reports"


@dataclass(frozen=True)
class Entry:
    """One target or recipe that a name can mean."""
    name: str
    path: Path                     # the target.toml or the recipe's .toml
    origin: str                    # "shipped" or "user"
    shadowed: bool = False         # a user's entry whose name a shipped one already has


def user_dir() -> Path:
    """$XDG_CONFIG_HOME/flagsweep, read on each call so that a changed environment counts."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    # The XDG spec: an unset, empty or relative value means the default, ~/.config.
    config = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return config / "flagsweep"


def targets(shipped: Path = TARGETS) -> list[Entry]:
    """The shipped targets by name, then the user's."""
    return _entries(shipped, user_dir() / "targets", "*/target.toml", lambda p: p.parent.name)


def recipes(shipped: Path = RECIPES) -> list[Entry]:
    """The shipped recipes by name, then the user's."""
    return _entries(shipped, user_dir() / "recipes", "*.toml", lambda p: p.stem)


def find(entries: list[Entry], name: str, kind: str) -> Path | None:
    """The file a name means (the shipped one before the user's), or None."""
    matches = [e for e in entries if e.name == name]
    for e in matches[1:]:
        log.warning("the user's %s '%s' (%s) has the name of a shipped %s and is not used by "
                    "name: give its path, or rename it", kind, name, e.path, kind)
    return matches[0].path if matches else None


def _entries(shipped: Path, user: Path, pattern: str, name: Callable[[Path], str]) -> list[Entry]:
    own = [Entry(name(p), p, "shipped") for p in sorted(shipped.glob(pattern))]
    taken = {e.name for e in own}
    users = [Entry(name(p), p.resolve(), "user", name(p) in taken)
             for p in sorted(user.glob(pattern))]
    return own + users
