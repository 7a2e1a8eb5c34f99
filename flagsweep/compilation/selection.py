"""What to build: a target, a recipe (or flag sets that replace it), where and how; resolved
into the target, recipe, matrix and build options every command that builds starts from.

Its own module, below the sweep, so `flagsweep build` (and a second build that the build cache
answers in a second) does not import the statistics, the store and the renderer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from flagsweep import files, shipped
from flagsweep.compilation import variants
from flagsweep.errors import FlagsweepError
from flagsweep.experiment import matrix, recipe, target


@dataclass
class Selection:
    """What to build and how: a target, a recipe (or flag sets that replace it), and where."""

    target_name: str | None = None
    recipe_name: str | None = None
    flag_sets: tuple[str, ...] = ()       # the first is the baseline
    compilers: tuple[str, ...] = ()       # instead of the recipe's
    jobs: int | None = None               # None: every CPU this process may use
    out_dir: Path | None = None           # None: reports/TARGET-TIMESTAMP
    offline: bool = False
    source_dir: Path | None = None
    rebuild: bool = False                 # ignore the build cache
    package_tests: bool = False           # --package-tests: detect and run the package's suite


def prepare(sel: Selection, say: Callable[[str], None]
            ) -> tuple[target.Target, recipe.Recipe, matrix.Matrix, variants.Options]:
    """The target, recipe, matrix and build options a selection names, its --out checked
    writable before any work."""
    if not sel.target_name:
        raise FlagsweepError("no target given: name one (flagsweep list shows them)")
    t = target.load(sel.target_name)
    r = recipe_of(sel)
    m = matrix.expand(r, list(sel.compilers) or None)
    out = sel.out_dir or shipped.reports_dir() / f"{t.name}-{stamp()}"
    files.check_writable(out, "--out")
    opts = variants.Options(out_dir=out, jobs=sel.jobs or cpu_count(), offline=sel.offline,
                            source_dir=sel.source_dir, rebuild=sel.rebuild,
                            package_tests=sel.package_tests)
    say(f"{t.name} {t.spec.version}: recipe {r.name}, {len(m.variants)} variants "
        f"({m.design}), {len(m.skipped)} skipped")
    for skipped in m.skipped:
        say(skipped.line)
    return t, r, m, opts


def recipe_of(sel: Selection) -> recipe.Recipe:
    """The --flags sets as a recipe of their own, else the named recipe (olevels by default)."""
    if sel.flag_sets and sel.recipe_name:
        raise FlagsweepError("give --recipe or --flags, not both")
    if sel.flag_sets:
        return recipe.from_flags(list(sel.flag_sets), list(sel.compilers) or ["gcc"])
    return recipe.load(sel.recipe_name or "olevels")


def stamp() -> str:
    """The timestamp in default output folder names."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")


def cpu_count() -> int:
    """CPUs this process may run on (its affinity, not the machine's count)."""
    return len(os.sched_getaffinity(0))
