"""The flag audit: was the measured binary built only from code compiled with the variant's flags?

Reads the compile log the wrapper wrote during the variant's build step. A variant passes when
  - every compile command carries the variant's code-generation flags (plus the target's fixed
    project flags), in that order, and no other code-generation flag (projects' own -D, -I, -W,
    -g, -std are fine: they do not pick the optimisation being measured);
  - link commands add no code-generation flag of their own (an -flto or -O3 there changes code);
  - no command reads options the log does not show: response files (@file), spec files
    (-specs=), other compiler programs (-B, -wrapper), or long spellings of options (gcc takes
    --optimize=0 for -O0, and any unambiguous abbreviation of it);
  - the compiler hands its driver the command it was given (a root-owned script named as the
    compiler that appends -O0 is refused: `added_by`);
  - the measured binary traces back to this build: a recorded link wrote it and nothing changed
    it since (its bytes, as the wrapper hashed them then), and every object it links is the
    output of a recorded compile with those very bytes, every archive in the build or source
    tree holds only such objects, every library built there was linked by a recorded command
    (stale or prebuilt objects shipped with the source are refused), and no code of it is in a
    shared library of the tree loaded from elsewhere at run time (libtool's .libs/ programs,
    its wrapper scripts);
  - the code those compiles compiled sets no optimisation of its own (`#pragma GCC optimize`,
    `__attribute__((optimize))`, clang's `#pragma clang optimize off` and `optnone`), except
    -f options the target tolerates, and no target that overrides the variant's -march or -m
    flags (`#pragma GCC target`, `__attribute__((target))`, `target_clones`); a target that only
    adds an instruction set, for code picked at run time, passes;
  - what those compiles read as it was, not compiled from C here (assembly, preprocessed
    text), is the source's own as unpacked or this build's output with the variant's flags;
  - every object file the build produced was compiled through the wrapper (a Makefile that
    calls `gcc` directly would otherwise build unaudited code).

What is judged is what was compiled, not what the files say afterwards. The wrapper compiles
a snapshot of each source in its place (wrapper.c): the source run through the compiler's own
preprocessor (headers in, macros expanded) or copied, into a file named by its sha256, which
the audit reads and checks against that sha256. Re-reading the files after the build, as the
audit once did (each compile run again with -E), judged a source or header rewritten for its
compile and put back, mtime and all, by its honest text; hashing the files around the compile
would still miss one swapped during it. The snapshot is what the compiler read, so nothing
done to the files before or after counts. It costs one preprocessing per compile (which a
warm ccache hit used to skip; a cold compile then reads the preprocessed text and does not
preprocess again) and saves the audit's own; ccache keys the snapshot by its text, so the
same code in another run or folder is still a hit. A compile without a snapshot is refused,
never taken on trust.

Commands are read with cmdline.py's table of two-word options, so `-I dir` or `-MF -O3.d` is
one option with its value. The problems name the offending command or file, so
"flags-mismatch" is never a mystery. The
audit guards against build systems that bypass the flags, not against one that forges the log.

This module compares the flags and gives the verdict; its parts are records.py (the log read),
provenance.py (the binary traced to its compiles; binaries.py reads the files), snapshots.py
(what each compile compiled; pragmas.py reads what the code sets) and driver.py (what the
compiler hands its driver).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from flagsweep import model
from flagsweep.compilation import cmdline, records
from flagsweep.compilation.driver import added_by
from flagsweep.compilation.provenance import Trace, link_flags
from flagsweep.compilation.records import (Command, codegen_flags, dedupe, norm, outputs,
                                           program_of, short, writes_nothing)
from flagsweep.compilation.snapshots import SourceScan

OBJECT_SUFFIXES = (".o", ".obj")
# Long options that change nothing the audit compares. Any other is refused: gcc reads
# --optimize=0 as -O0 and accepts any unambiguous abbreviation (--op is -O1).
HARMLESS_LONG = ("--sysroot=", "--std=", "--coverage", "--verbose", "--pedantic", "--pedantic-errors",
                 "--no-warnings", "--pipe", "--all-warnings", "--extra-warnings", "--version",
                 "--help", "--trace-includes")
SYSTEM_LIB_DIRS = ("/usr/lib", "/lib", "/usr/lib64", "/lib64", "/usr/local/lib")
MAX_PROBLEMS = 10


@dataclass
class Audit:
    verified: bool
    compiles: int = 0
    links: int = 0
    problems: list[str] = field(default_factory=list)
    tolerated_seen: list[str] = field(default_factory=list)
    compile_line: list[str] | None = None   # the first compile's argv, shown in the report
    # Compile lines whose flags differ, counted per flag: a project's own -fPIC on 300 compiles
    # is one finding with one fix, not 300 problems.
    extra: dict[str, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    in_source: dict[str, int] = field(default_factory=dict)  # set by optimize attributes, pragmas
    every_problem: list[str] = field(default_factory=list)   # uncapped, for the build log
    # The variant's link flags the link that wrote the binary lacks, and where that link ran.
    link_missing: list[str] = field(default_factory=list)
    link_cwd: Path | None = None
    # Programs the build compiled and linked in one go and the binary holds none of (a
    # generator it runs, as nettle's eccdata): not held to the flags, named so none is hidden.
    build_programs: list[str] = field(default_factory=list)

    def summary(self) -> model.AuditSummary:
        """What of the audit a build's record keeps (results.json's build.audit)."""
        return model.AuditSummary(verified=self.verified, compiles=self.compiles,
                                  links=self.links, problems=self.problems,
                                  tolerated_seen=self.tolerated_seen,
                                  compile_line=self.compile_line,
                                  build_programs=self.build_programs)


def audit(compile_log: Path, tree: Path, expected: list[str], tolerated: list[str],
          since: float, binary: Path | None = None, source: Path | None = None,
          pristine: frozenset[str] = frozenset()) -> Audit:
    """Check a variant's compile log against its expected code-generation flags; with the
    measured binary, also trace it back to the recorded compiles (source: the source tree;
    pristine: the sha256 of its files before the build, snapshots.pristine)."""
    # A command that failed left nothing a binary could be made of.
    commands = every = [c for c in records.read(compile_log) if c.exit == 0]
    # The variant's flags are read like a command line of the compiler that ran, so `--param
    # x=y` (and clang's `-mllvm x`) compares as one flag.
    compiler = next((c.argv[0] for c in commands if c.kind == "compile"), "cc")
    want = dedupe(codegen_flags([compiler, *expected]))
    result = Audit(verified=False)
    # A root as the build named it (a link: superbuild.linked) and as it really is.
    roots = list(dict.fromkeys(r for p in (tree, source) if p is not None
                               for r in (norm(p.absolute()), p.resolve())))
    trace = Trace(commands, roots, tree.resolve(), link_flags(expected)) if binary else None
    traced = trace.binary(binary) if trace else []
    if trace:
        commands, result.build_programs = _held(commands, trace.used, tree)
    objects_logged = _check_commands(commands, want, tolerated, result)
    if trace and trace.link_missing:
        result.link_missing, result.link_cwd = trace.link_missing, trace.link_cwd
    scan = SourceScan(want, tolerated, pristine, every)    # what any command made
    scan.run([cmd for cmd in commands if cmd.kind == "compile" and not writes_nothing(cmd)],
             trace.used if trace else None)
    for compiler in dict.fromkeys(c.argv[0] for c in commands if c.kind == "compile"):
        if (why := added_by(compiler, tuple(expected))) is not None:
            result.problems.append(why)
    result.problems += scan.problems
    result.tolerated_seen = dedupe(result.tolerated_seen + scan.tolerated_seen)
    result.in_source = scan.in_source
    result.problems += traced
    result.problems += _unaudited_objects(tree, objects_logged, since)
    if result.compiles == 0:
        result.problems.append(f"no compile command was recorded in {compile_log.name}: "
                               "the build did not use the audited compiler")
    result.problems = result.every_problem = dedupe(result.problems)
    if len(result.problems) > MAX_PROBLEMS:
        extra = len(result.problems) - MAX_PROBLEMS
        result.problems = result.problems[:MAX_PROBLEMS] + [f"... and {extra} more"]
    result.verified = not result.problems
    return result


def _held(commands: list[Command], used: set[int],
          tree: Path) -> tuple[list[Command], list[str]]:
    """The commands held to the variant's flags, and the names of the programs compiled and
    linked in one go that the measured binary was not made from (records.program_of): such a
    program holds code of no other file, so none of it reaches the binary or a library it
    loads. nettle's build compiles its generator eccdata with $(CC_FOR_BUILD), without CFLAGS
    by design; the measured binary compiled that way stays held."""
    held, names = [], []
    for cmd in commands:
        program = program_of(cmd)
        if program is None or id(cmd) in used:
            held.append(cmd)
        else:
            where = norm(tree.absolute())
            names.append(str(program.relative_to(where)) if program.is_relative_to(where)
                         else str(program))
    return held, list(dict.fromkeys(names))


def _check_commands(commands: list[Command], want: list[str], tolerated: list[str],
                    result: Audit) -> set[Path]:
    """Each command's flags against the variant's, into result; the objects compiled."""
    objects_logged: set[Path] = set()
    for cmd in commands:
        argv, what = cmd.argv, cmd.kind
        result.problems += _hidden_options(cmd, what)
        if what == "other" or (what == "compile" and writes_nothing(cmd)):
            # a probe whose output goes to /dev/null (libdeflate's Makefile asks the compiler
            # about a warning option that way, without CFLAGS): no code of it reaches a binary
            continue
        got = codegen_flags(argv)
        # A tolerated flag that is also one of the variant's own is simply expected.
        extra_ok = [f for f in got if f in tolerated and f not in want]
        result.tolerated_seen = dedupe(result.tolerated_seen + extra_ok)
        got = dedupe([f for f in got if f not in extra_ok])
        if what == "compile":
            result.compiles += 1
            result.compile_line = result.compile_line or argv
            objects_logged |= outputs(cmd)
            if got != want:
                result.problems.append(_mismatch(argv, cmd.cwd, got, want))
                for flag in (f for f in got if f not in want):
                    result.extra[flag] = result.extra.get(flag, 0) + 1
                for flag in (f for f in want if f not in got):
                    result.missing[flag] = result.missing.get(flag, 0) + 1
        else:
            result.links += 1
            extra = [f for f in got if f not in want]
            if extra:
                result.problems.append(f"link step adds {' '.join(extra)}: {short(argv, cmd.cwd)}")
    return objects_logged


def _hidden_options(cmd: Command, what: str) -> list[str]:
    """Options that make the compiler read flags, or run programs, the log does not show. In a
    call that looks like neither a compile nor a link only a response file matters: the whole
    compile may be in it."""
    problems = []
    # gcc expands a response file wherever it stands, even as another option's value; the
    # other checks are of the compiler's own options (-Xlinker --as-needed is the linker's).
    options = set(cmdline.options(cmd.argv))
    for arg in cmd.argv[1:]:
        why = None
        linker_words = arg[4:].split(",") if arg.startswith("-Wl,") else []
        if arg.startswith("@") or any(w.startswith("@") for w in linker_words):
            why = "reads more options from a response file, which the audit cannot check"
        elif what == "other" or arg not in options:
            continue
        elif arg.startswith(("-specs", "--specs")):
            why = "reads a spec file, which can change any option the compiler passes on"
        elif arg.startswith("-B") or arg == "-wrapper":
            why = "runs compiler programs other than the audited compiler's own"
        elif (arg.startswith("--") and not arg.startswith("--param")
              and not arg.startswith(HARMLESS_LONG)):
            why = ("is a long option spelling, which gcc also accepts abbreviated "
                   "(--optimize=0 is -O0); write the flag in its short form")
        if why:
            problems.append(f"{arg} {why}: {short(cmd.argv, cmd.cwd)}")
    return problems


def _unaudited_objects(tree: Path, logged: set[Path], since: float) -> list[str]:
    """Objects built during this step that no recorded compile produced."""
    fresh = [p for p in tree.rglob("*") if p.suffix in OBJECT_SUFFIXES and p.is_file()
             and p.stat().st_mtime >= since - 1]
    stray = sorted(norm(p) for p in fresh if norm(p) not in logged)
    if not stray:
        return []
    shown = ", ".join(str(p.relative_to(tree)) for p in stray[:3])
    return [f"{len(stray)} object file(s) were not compiled through the audited compiler "
            f"(a hard-coded compiler in the build?): {shown}"]


def _mismatch(argv: list[str], cwd: Path, got: list[str], want: list[str]) -> str:
    extra = [f for f in got if f not in want]
    missing = [f for f in want if f not in got]
    parts = [f"extra {' '.join(extra)}"] if extra else []
    parts += [f"missing {' '.join(missing)}"] if missing else []
    if not parts:
        parts = [f"order {' '.join(got)} instead of {' '.join(want)}"]
    return f"compile has {'; '.join(parts)}: {short(argv, cwd)}"


def explain(a: Audit, log: Path) -> str:
    """An unverified audit in a few lines: each differing flag once with how many compile
    lines it was on, the first other problems, and where the full list is."""
    parts = [f"extra {flag} on {n} of {a.compiles} compile lines" for flag, n in a.extra.items()]
    parts += [f"missing {flag} on {n} of {a.compiles} compile lines"
              for flag, n in a.missing.items()]
    flags_differ = [p for p in a.every_problem if p.startswith("compile has ")]
    others = [p for p in a.every_problem if not p.startswith("compile has ")]
    lines = ["; ".join(parts) + f" (first: {flags_differ[0]})"] if parts else []
    lines += others[:3]
    if len(others) > 3:
        lines.append(f"... and {len(others) - 3} more")
    lines.append(f"the full list ({len(a.every_problem)}) is in {log}")
    return "\n".join(lines)


def fixes(a: Audit, target_file: Path, tolerated: list[str]) -> list[str]:
    """What to change, for the differences the audit counted per flag."""
    out = []
    # An optimisation level the project sets over the variant's is never to be tolerated: it
    # is the very thing measured (docs/targets.md, project_flags vs tolerated_flags).
    own = list(dict.fromkeys(f for f in [*a.extra, *a.in_source] if not f.startswith("-O")))
    if own:
        line = ", ".join(f'"{f}"' for f in dedupe(tolerated + own))
        out.append(f"if the project's build adds {' '.join(own)} itself (as CMake does -fPIC "
                   f"for shared libraries), add under [build] in {target_file}: "
                   f"tolerated_flags = [{line}]")
    levels = [f for f in a.extra if f.startswith("-O")]
    if levels or a.missing:
        out.append("the build puts its own flags over the variant's "
                   f"({' '.join(levels + ['no ' + f for f in a.missing])}): make its CFLAGS (make) "
                   "or CMAKE_C_FLAGS (cmake) come only from flagsweep, and put the defines it "
                   "needs in project_flags (docs/targets.md)")
    return out
