"""`flagsweep new`'s trials: -O2 builds through flagsweep's own builder and audit until the
target file verifies (the executable found, the program's own make rule, libtool built
static, the project's own flags tolerated and options kept), then the user's run command run
once on the input with the verified binary."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Callable

from flagsweep import process
from flagsweep.compilation import debian, own_build, variants
from flagsweep.errors import FlagsweepError
from flagsweep.experiment import matrix, recipe, target
from flagsweep.jobs import check_choice, packaging
from flagsweep.jobs.project import (executables, libtool_configured, make_goal,
                                    own_library_loaded, pick, tracking_needed)
from flagsweep.jobs.sizing import shown, trial_corpus
from flagsweep.jobs.target_file import RUN_TIMEOUT, Draft, render, writes_output
from flagsweep.results.analysis import build_reason


TRIALS = 4     # builds at most: as written, the program's own make rule, its binary, tolerated


def trial_builds(d: Draft, path: Path, trial: Path, jobs: int,
                 say: Callable[[str], None]) -> variants.VariantBuild | None:
    """Build at -O2 until the file verifies: with the executable found, then with the
    project's own flags tolerated. The verified build, or None (the why in d.build_note)."""
    for attempt in range(1, TRIALS + 1):
        path.write_text(render(d))
        b = o2_build(target.load(str(path)), trial / str(attempt), jobs)
        say(f"trial build {attempt} at -O2: {b.status}")
        _say_failure(b, say)
        tree = trial / str(attempt) / "builds" / b.variant.id / "tree"
        if b.status == "ok":
            if not d.binary_note:
                _named(d, tree, say)
            _drop_stale(d, b, say)
            d.build_note = (f"a trial -O2 build verified: {b.audit.compiles} compile lines "
                            "carried exactly the variant's flags")
            # a program the audit left out; code the sweep would measure too, and no flag
            # of it reaches there
            for line in variants.build_programs([b]) + variants.foreign([b]):
                say(f"note: {line}")
                d.build_note += f"; {line}"
            _suggest_dependencies(d, b, say)
            # a SIMD or assembly path configure left out (nasm missing): not what ships
            for line in variants.left_out([b], d.release.build_depends):
                say(f"warning: {line}")
                d.left_out_note = line
            return b
        if b.status != "ok" and attempt < TRIALS and libtool_configured(d, tree):
            continue
        if b.status == "flags-mismatch" and attempt < TRIALS and own_library_loaded(d, b.detail):
            say(f"configure: {d.configure_note}")
            continue
        if b.status == "failed" and attempt < TRIALS and tracking_needed(d, b.detail):
            say(f"configure: {d.tracking_note}")
            continue
        if b.status == "failed" and "is missing from" in b.detail and attempt < TRIALS:
            if found_binary(d, tree, say):
                say(f"executable: {d.binary}: {d.binary_note}")
                continue
            if d.binary_given:
                return None     # d.build_note names what the build made instead
            break
        if b.status == "failed" and attempt < TRIALS and _made_anyway(d, b, tree, say):
            continue
        goal = make_goal(d, tree) if b.status == "failed" and attempt < TRIALS else None
        if goal:
            # zstd's full `make` links a shared library that needs the -fPIC its CFLAGS gave,
            # and the variant's CFLAGS replace; the program alone needs no library.
            d.make_args = [goal]
            d.make_note = (f"`make` of everything failed in the trial ({build_reason(b.detail)}); "
                           f"the Makefile has a rule for {goal}, so only it is built")
            continue
        if b.status == "flags-mismatch" and (_tolerable(b) or b.dropped) and attempt < TRIALS:
            _keep_project_options(d, b)
            compiles = b.audit.compiles
            for flag in _tolerable(b):
                d.tolerated[flag] = (
                    f"the project's build adds it on {b.extra_flags[flag]} of {compiles} "
                    "compile lines of the trial -O2 build" if flag in b.extra_flags else
                    f"the project's source sets it in {b.source_flags[flag]} optimize "
                    "attribute(s) or pragma(s) (see the trial's build log)")
            continue
        break
    said = _first(b.detail)
    d.build_errors = _error_lines(b)
    d.build_note = (f"the trial -O2 build is {b.status}, kept in {trial}: {said}. Fix this "
                    f"file, then check it with `flagsweep build {path.parent} --flags -O2`")
    if b.status != "failed":     # a failed one's lines were said with it
        say(f"{b.variant.id}: {b.status}: {b.detail}")
    return None


def _made_anyway(d: Draft, b: variants.VariantBuild, tree: Path,
                 say: Callable[[str], None]) -> bool:
    """An autotools build that failed after making the program, in a folder of its own: the
    program's goal in that folder (`make -C src indent`) for the next trial, True. indent's
    regression/ has a hand-written Makefile and no Makefile.in, so an out-of-tree build has no
    such folder and `make` stops there, the program already made."""
    if d.system != "autotools" or d.goal or d.make_args or "is missing from" in b.detail:
        return False
    if not (tree / d.binary).is_file() and not found_binary(d, tree):
        return False
    folder, _, name = d.binary.rpartition("/")
    try:
        target.check_goal(name)
        target.check_goal(folder or name)
    except ValueError:
        return False        # not one plain word make could be given
    d.goal, d.goal_dir = name, folder or None
    asked = f"make -C {folder} {name}" if folder else f"make {name}"
    d.goal_note = (f"the whole build failed ({build_reason(b.detail)}) after making {d.binary}: "
                   f"only its goal is built, `{asked}`")
    say(f"goal: {d.goal_note}")
    return True


def found_binary(d: Draft, tree: Path, say: Callable[[str], None] = lambda line: None) -> bool:
    """After a trial build that did not make d.binary: the executable to measure among those
    it made, in d.binary (True), or why there is none in d.build_note (False). The user's
    --binary is looked for by name anywhere in the tree, never swapped for another; else one
    Debian's binary packages ship is preferred (their file lists read now, when first
    needed)."""
    found = executables(tree)
    made = [p.relative_to(tree).as_posix() for p in found]
    listed = f"{', '.join(made[:12])}{' ...' if len(made) > 12 else ''}"
    if d.binary_given:
        same = [m for m in made if m == d.binary or m.rsplit("/", 1)[-1] == d.binary]
        if len(same) == 1:
            d.binary = same[0]
            d.binary_note = f"--binary {d.binary_given}: the trial build made it as {same[0]}"
            return True
        d.build_note = (f"--binary {d.binary_given}: the trial build made "
                        + (f"{len(same)} executables of that name: {', '.join(same)}; give "
                           "one's path in the build tree" if same else
                           f"no executable of that name; it made: {listed or 'none'}"))
        return False
    if not found:
        return False
    if d.shipped is None and not d.shipped_note:
        packaging.shipped_programs(d, say)
    names = [d.package, d.release.package, d.name]
    shipped = [p for p in found if d.shipped and p.name in d.shipped]
    if shipped:
        # named like the package, then like the binary package that ships it, else the largest
        by = dict.fromkeys(d.shipped[p.name] for p in shipped) if d.shipped else {}
        d.binary = pick(shipped, [*names, *by], tree)
        d.binary_note = (f"the trial build made {len(found)} executable(s): {listed}; Debian "
                         f"ships {', '.join(p.name for p in shipped)} (in "
                         f"{', '.join(by)}); this one was picked (--binary NAME to choose "
                         "another)")
        return True
    d.binary = pick(found, names, tree)
    d.binary_note = (f"the trial build made {len(found)} executable(s): {listed}; this one "
                     "was picked (--binary NAME to choose another)")
    if d.shipped is not None:
        d.binary_note += f"; Debian ships none of them ({d.shipped_note})"
    elif d.shipped_note:
        d.binary_note += f"; not checked against Debian's: {d.shipped_note}"
    return True


def _named(d: Draft, tree: Path, say: Callable[[str], None]) -> None:
    """The executable the first guess found (named like the package, or --binary), with the
    others the build made and whether Debian ships it."""
    others = [p.relative_to(tree).as_posix() for p in executables(tree)]
    others = [m for m in others if m != d.binary]
    d.binary_note = (f"{'--binary' if d.binary_given else 'named like the package'}; the trial "
                     + (f"build also made {len(others)} other executable(s): "
                        f"{', '.join(others[:12])}{' ...' if len(others) > 12 else ''}"
                        if others else "build made no other executable"))
    name = d.binary.rsplit("/", 1)[-1]
    if d.shipped is not None:
        d.binary_note += (f"; Debian ships it (in {d.shipped[name]})" if name in d.shipped
                          else f"; Debian does not ship it ({d.shipped_note})")
    say(f"executable: {d.binary}: {d.binary_note}")


def _error_lines(b: variants.VariantBuild) -> list[str]:
    """The lines of a failed build's log that say why (the compiler's errors, else the log's
    last lines, as the build quoted them), when that is more than a binary not found."""
    if b.status != "failed" or "is missing from" in b.detail:
        return []
    return [line.rstrip() for line in b.detail.splitlines()[1:] if line.strip()]


def _say_failure(b: variants.VariantBuild, say: Callable[[str], None]) -> None:
    """A failed trial build with its reason and the log lines that say it: a status alone
    leaves the user to dig through NAME/trial/."""
    if b.status != "failed":
        return
    say(f"  {_first(b.detail)}")
    for line in _error_lines(b):
        say(f"    {line}")


def _drop_stale(d: Draft, b: variants.VariantBuild, say: Callable[[str], None]) -> None:
    """Leave out tolerated flags that no compile line (or source attribute) of the verified
    build carried: an earlier trial needed them (a shared library's -fPIC before a static
    build), this build does not, and a tolerance nothing needs only hides a flag later."""
    seen = set(b.audit.tolerated_seen if b.audit else [])
    stale = [flag for flag in d.tolerated if flag not in seen]
    if not stale:
        return
    say(f"tolerated_flags: {' '.join(stale)} stale: no compile line of the verified trial "
        "build carried them; left out")
    for flag in stale:
        del d.tolerated[flag]


def _first(detail: str) -> str:
    return detail.splitlines()[0].rstrip(":") if detail else "no detail"


def _suggest_dependencies(d: Draft, b: variants.VariantBuild,
                          say: Callable[[str], None]) -> None:
    """Each library from outside the tree that a Debian package installed, its source package
    named for a commented [[dependency]]: a frontend's codec can then be built with the flags."""
    for lib in b.external:
        src = None if lib.runtime or not lib.path else debian.source_of(lib.path)
        if src is None or src.package in {s.package for _, s, _ in d.dependencies}:
            continue
        try:
            release = next((r for r in debian.debian_releases(src.package)
                            if r.version == src.version), None)
        except FlagsweepError:      # no Sources index reachable: the sha256 is left to fill
            release = None
        d.dependencies.append((lib.name, src, release))
        say(f"note: {lib.name} is Debian's {src.package} {src.version}: the target file holds "
            "it as a commented [[dependency]], to build it with each variant's flags")


def o2_build(t: target.Target, out: Path, jobs: int) -> variants.VariantBuild:
    m = matrix.expand(recipe.from_flags(["-O2"], ["gcc"]))
    (b,) = variants.build_all(t, m, variants.Options(out_dir=out, jobs=jobs))
    return b


def _keep_project_options(d: Draft, b: variants.VariantBuild) -> None:
    """The project's own -D/-U/-I/-include/-std options that the trial's flags dropped (the
    builder compares its compile lines with the project's own build's): kept in project_flags,
    or, when project_flags cannot carry one, listed as meant to be dropped, saying why."""
    for option, why in b.dropped.items():
        try:
            if "<tree>" in option or "<source>" in option:
                raise ValueError("it names a folder of the build by its absolute path")
            target.check_project_flags(own_build.as_words(option))
            d.kept[option] = why
        except ValueError as e:
            d.dropped[option] = f"{why}; project_flags cannot carry it: {e}"


def _tolerable(b: variants.VariantBuild) -> list[str]:
    """The flags the audit counted as extra that a target may tolerate: not -O levels."""
    return [f for f in dict.fromkeys([*b.extra_flags, *b.source_flags]) if not f.startswith("-O")]


STDERR_LINES = 5                     # as many as a failed check run quotes (docs/targets.md)


def _trial_input(d: Draft, folder: Path) -> tuple[Path, str]:
    """The file the trial run reads, and how to name it."""
    if d.input_path:
        return folder / d.input_path, d.input_path
    return trial_corpus(1.0), "a generated 1 MB corpus"


def prove(d: Draft, folder: Path, b: variants.VariantBuild,
          say: Callable[[str], None]) -> bool:
    """Run the user's run command once on the input with the trial -O2 binary: True when it
    works (or there is no command of the user's to prove); else the finding in d.run_note."""
    if not d.run_given:
        return True
    data, named = _trial_input(d, folder)
    out = folder / "trial" / "output"
    out.unlink(missing_ok=True)
    args = [a.format(binary=str(b.binary), input=str(data), output=str(out)) for a in d.argv]
    try:
        # process.run: a timeout ends the program's whole process group, not only the program
        done = process.run(args, timeout=RUN_TIMEOUT)
        failed, stderr = _failure(done.returncode), done.stderr
    except process.TimeoutExpired:
        failed, stderr = f"ran over {RUN_TIMEOUT} s", ""
    except OSError as e:
        failed, stderr = f"could not be started ({e.strerror})", ""
    if not failed and writes_output(d.argv) and not out.is_file():
        # [check] reads the {output} file: a run that writes none cannot be checked.
        failed = "exited 0 but wrote no {output} file"
    if not failed:
        say(f"trial run: `{shown(d.argv)}` on {named} exited 0")
        check_choice.choose(d, b.binary, data, say)
        return True
    tail = [line.rstrip() for line in stderr.splitlines() if line.strip()][-STDERR_LINES:]
    d.run_note = [f"`{shown(d.argv)}` on {named} {failed}"
                  + ("; the last lines of its stderr:" if tail else "; its stderr was empty")]
    d.run_note += [f"  {line[:300]}" for line in tail]
    if not d.input_path:
        d.size_note = "not sized: the run command failed in the trial, see [run]"
    say(f"trial run: {d.run_note[0]}")
    return False


def _failure(returncode: int) -> str:
    """How a run ended, when not well: an exit status or the signal that killed it."""
    if returncode > 0:
        return f"exited {returncode}"
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return ""
