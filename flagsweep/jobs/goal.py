"""`flagsweep new`'s choice of what a variant builds: the measured binary's own goal, when
building it alone works, else everything.

libjpeg-turbo's build makes 16 executables from 279 compile lines, and a sweep measures one:
every variant paid for the other fifteen. The goal is tried on the trial build, in the forms a
build system takes it, most direct first:
- cmake: `cmake --build TREE --target GOAL`, the binary's path in the tree (Ninja builds a file
  by its path), then its name (a CMake target named like its output);
- make and autotools: `make GOAL` at the top with the binary's path (a non-recursive tree, or a
  binary at the top), then `make -C FOLDER NAME` in a recursive tree, which builds what the
  binary links against only if that folder's Makefile has rules for it.
The first that builds the binary and verifies is written into the target file (`goal`,
`goal_dir`); when none does, the whole build stays, with each form's finding in a comment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from flagsweep.compilation import records, variants
from flagsweep.experiment import target
from flagsweep.jobs.target_file import Draft, render
from flagsweep.jobs.trial import o2_build
from flagsweep.results.analysis import build_reason


def candidates(d: Draft) -> list[tuple[str, str | None]]:
    """The (goal, goal_dir) forms that may build d.binary alone, most direct first; none when
    make_args already name a goal (the program's own make rule) or no form is valid."""
    if any(not w.startswith("-") and "=" not in w for w in d.make_args):
        return []
    folder, _, name = d.binary.rpartition("/")
    forms: list[tuple[str, str | None]] = [(d.binary, None)]
    if folder:
        forms.append((name, None) if d.system == "cmake" else (name, folder))
    valid = []
    for goal, where in forms:
        try:
            target.check_goal(goal)
            if where is not None:
                target.check_goal(where)
        except ValueError:
            continue        # a path make or cmake could not be given as one plain word
        valid.append((goal, where))
    return valid


def command(system: str, goal: str, where: str | None) -> str:
    """How the build is asked for the goal, as the user would type it."""
    if system == "cmake":
        return f"cmake --build TREE --target {goal}"
    return f"make -C {where} {goal}" if where else f"make {goal}"


def alone(d: Draft, path: Path, trial: Path, jobs: int, whole: variants.VariantBuild,
          say: Callable[[str], None]) -> variants.VariantBuild:
    """Try each form of the binary's goal on a trial build; the build of the first that works
    (d.goal and d.goal_dir set), else the whole build (d.goal left unset). Either way
    d.goal_note says what was found, with the compile lines each build took."""
    if d.goal or not _more(whole):
        return whole        # built for its goal already, or nothing to leave out
    found = []
    for n, (goal, where) in enumerate(candidates(d), 1):
        d.goal, d.goal_dir = goal, where
        path.write_text(render(d))
        try:
            b = o2_build(target.load(str(path)), trial / f"goal-{n}", jobs)
        except BaseException:
            d.goal = d.goal_dir = None      # the file `new` leaves names no goal untried
            raise
        asked = command(d.system, goal, where)
        if b.status == "ok" and b.binary is not None and b.audit is not None:
            # by functions, not the code hash: a CMake binary's run path names its own folder
            same = ("the same functions as the whole build's"
                    if b.functions_sha256 == whole.functions_sha256
                    else "other functions than the whole build's: compare them before a sweep")
            d.goal_note = (f"built alone: `{asked}` made {d.binary} from {b.audit.compiles} of "
                           f"the whole build's {_compiles(whole)} compile lines ({same})")
            say(f"goal: {d.goal_note}")
            return b
        found.append(f"`{asked}` {b.status}: {_reason(b.detail)}")
        say(f"goal: `{asked}` alone: {b.status}")
    d.goal = d.goal_dir = None
    if found:
        d.goal_note = (f"the whole build ({_compiles(whole)} compile lines): {d.binary} could "
                       "not be built alone: " + "; ".join(found))
        say(f"goal: {d.goal_note}")
    return whole


def _more(whole: variants.VariantBuild) -> bool:
    """The whole build linked more than the binary and its build tree's shared libraries
    (another program, a test, a library it does not load): built alone, it would link less.
    A compile that links in one go counts: xxhash's `make` links libxxhash.so from xxhash.c
    so, beside xxhsum, its one link."""
    links = whole.audit.links if whole.audit is not None else None
    if links is None:
        return True
    log = whole.log.parent / "compile.jsonl"
    linked = {out for cmd in records.read(log) if cmd.exit == 0 and records.one_go(cmd)
              for out in records.outputs(cmd)}
    return links + len(linked) > 1 + len(whole.libraries)


def _compiles(b: variants.VariantBuild) -> str:
    return str(b.audit.compiles) if b.audit is not None and b.audit.compiles is not None else "?"


def _reason(detail: str) -> str:
    """Why the build failed: make's own `***` line (no rule for the goal, or for what it
    links against) when it says one, else the compiler's first error (build_reason)."""
    said = [line.strip() for line in detail.splitlines() if "***" in line]
    # a build log's text, bound for a TOML comment: printable only
    return "".join(c if c.isprintable() else "?" for c in (said[0] if said else
                                                           build_reason(detail))[:200])
