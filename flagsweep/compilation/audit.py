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
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import re
import shlex
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from flagsweep import files, process
from flagsweep.compilation import cmdline
from flagsweep.host import environment

OBJECT_SUFFIXES = (".o", ".obj")
# -f options that only change diagnostics or recorded paths, never the generated code.
NON_CODEGEN_F = ("-fdiagnostics", "-fno-diagnostics", "-fcolor-diagnostics", "-fno-color-diagnostics",
                 "-fmessage-length", "-fmax-errors", "-fshow-column", "-fno-show-column",
                 "-fdebug-prefix-map", "-ffile-prefix-map", "-fmacro-prefix-map",
                 "-ftrack-macro-expansion", "-fno-caret-diagnostics", "-fcaret-diagnostics",
                 "-fansi-escape-codes", "-fsyntax-only", "-fworking-directory", "-fno-working-directory")
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

    def to_json(self) -> dict:
        return {"verified": self.verified, "compiles": self.compiles, "links": self.links,
                "problems": self.problems, "tolerated_seen": self.tolerated_seen,
                "compile_line": self.compile_line}


@dataclass(frozen=True)
class SourceSnapshot:
    """What a compile compiled in place of one of its sources (wrapper.c): the source as the
    command named it, its language, the sha256 of the bytes compiled and the file holding them."""

    source: str
    language: str
    sha256: str
    path: Path

    @property
    def preprocessed(self) -> bool:
        """Made by the preprocessor (a C source, a .S), not copied as it was (a .s, a .i)."""
        return cmdline.SNAPSHOT.get(self.language, ("", False))[1]


@dataclass
class Command:
    """One recorded compiler call."""

    argv: list[str]
    cwd: Path
    exit: int = 0
    outputs: dict[str, str] = field(default_factory=dict)   # file written -> its sha256 then
    snapshots: list[SourceSnapshot] = field(default_factory=list)
    snapshot_error: str | None = None     # why the wrapper compiled the sources as they were

    @property
    def kind(self) -> str:
        return kind(self.argv)

    def path(self, arg: str) -> Path:
        return _norm(self.cwd / arg)

    def written(self, path: Path) -> str | None:
        """The sha256 of a file this command wrote, as it left it (None: not recorded)."""
        return next((sha for word, sha in self.outputs.items() if self.path(word) == path), None)


def is_codegen(flag: str) -> bool:
    """True for flags that choose how code is generated: -O*, -f* (bar diagnostics), -m*,
    values handed on to the compiler proper (--param, -Xclang, -mllvm, ...), -p/-pg,
    --coverage."""
    if flag.startswith("-f"):
        return not flag.startswith(NON_CODEGEN_F)
    return (flag.startswith(("-O", "-m", *cmdline.PASSED_ON))
            or flag in ("-p", "-pg", "--coverage"))


def codegen_flags(argv: list[str]) -> list[str]:
    """The code-generation flags of a command line, in order (`--param x=y` kept as one, a
    value of -I, -include, -MF ... never read as a flag)."""
    return [flag for word in cmdline.split(argv) if word.option
            for flag in cmdline.passed_on(word) if is_codegen(flag)]


def kind(argv: list[str]) -> str:
    """'compile', 'link', or 'other' (preprocessing, version probes)."""
    opts = cmdline.options(argv)
    if "-E" in opts or "-M" in opts or "-MM" in opts:
        return "other"
    if "-c" in opts or "-S" in opts:
        return "compile"
    if _sources(argv):
        return "compile"  # compile and link in one go
    return "link" if output_arg(argv) is not None else "other"


def _writes_nothing(cmd: Command) -> bool:
    """A compile whose output goes nowhere (a build system's probe of whether the compiler takes
    an option, zstd's `-x c - -o /dev/null`): nothing of it can reach the binary, so there is
    no code of it to read."""
    return output_arg(cmd.argv) == os.devnull or "-fsyntax-only" in cmd.argv


def output_arg(argv: list[str]) -> str | None:
    """The -o value ("-o FILE" or "-oFILE"; the last one wins, as in gcc)."""
    return cmdline.output(argv)


def audit(compile_log: Path, tree: Path, expected: list[str], tolerated: list[str],
          since: float, binary: Path | None = None, source: Path | None = None,
          pristine: frozenset[str] = frozenset()) -> Audit:
    """Check a variant's compile log against its expected code-generation flags; with the
    measured binary, also trace it back to the recorded compiles (source: the source tree;
    pristine: the sha256 of its files before the build, audit.pristine)."""
    # A command that failed left nothing a binary could be made of.
    commands = [c for c in _records(compile_log) if c.exit == 0]
    # The variant's flags are read like a command line of the compiler that ran, so `--param
    # x=y` (and clang's `-mllvm x`) compares as one flag.
    compiler = next((c.argv[0] for c in commands if c.kind == "compile"), "cc")
    want = _dedupe(codegen_flags([compiler, *expected]))
    result = Audit(verified=False)
    objects_logged = _check_commands(commands, want, tolerated, result)
    # A root as the build named it (a link: variants._linked) and as it really is.
    roots = list(dict.fromkeys(r for p in (tree, source) if p is not None
                               for r in (_norm(p.absolute()), p.resolve())))
    trace = Trace(commands, roots, tree.resolve(), link_flags(expected)) if binary else None
    traced = trace.binary(binary) if trace else []
    if trace and trace.link_missing:
        result.link_missing, result.link_cwd = trace.link_missing, trace.link_cwd
    scan = SourceScan(want, tolerated, pristine, commands)
    scan.run([cmd for cmd in commands if cmd.kind == "compile" and not _writes_nothing(cmd)],
             trace.used if trace else None)
    for compiler in dict.fromkeys(c.argv[0] for c in commands if c.kind == "compile"):
        if (why := added_by(compiler, tuple(expected))) is not None:
            result.problems.append(why)
    result.problems += scan.problems
    result.tolerated_seen = _dedupe(result.tolerated_seen + scan.tolerated_seen)
    result.in_source = scan.in_source
    result.problems += traced
    result.problems += _unaudited_objects(tree, objects_logged, since)
    if result.compiles == 0:
        result.problems.append(f"no compile command was recorded in {compile_log.name}: "
                               "the build did not use the audited compiler")
    result.problems = result.every_problem = _dedupe(result.problems)
    if len(result.problems) > MAX_PROBLEMS:
        extra = len(result.problems) - MAX_PROBLEMS
        result.problems = result.problems[:MAX_PROBLEMS] + [f"... and {extra} more"]
    result.verified = not result.problems
    return result


def _check_commands(commands: list[Command], want: list[str], tolerated: list[str],
                    result: Audit) -> set[Path]:
    """Each command's flags against the variant's, into result; the objects compiled."""
    objects_logged: set[Path] = set()
    for cmd in commands:
        argv, what = cmd.argv, cmd.kind
        result.problems += _hidden_options(cmd, what)
        if what == "other":
            continue
        got = codegen_flags(argv)
        # A tolerated flag that is also one of the variant's own is simply expected.
        extra_ok = [f for f in got if f in tolerated and f not in want]
        result.tolerated_seen = _dedupe(result.tolerated_seen + extra_ok)
        got = _dedupe([f for f in got if f not in extra_ok])
        if what == "compile":
            result.compiles += 1
            result.compile_line = result.compile_line or argv
            objects_logged |= _outputs(cmd)
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
                result.problems.append(f"link step adds {' '.join(extra)}: {_short(argv, cmd.cwd)}")
    return objects_logged


def _records(log: Path) -> list[Command]:
    if not log.exists():
        return []
    # Arguments need not be UTF-8; undecodable bytes must not hide a command from the audit.
    lines = log.read_text(errors="replace").splitlines()
    return [Command(r["argv"], Path(r["cwd"]), r.get("exit", 0), dict(r.get("outputs", [])),
                    [SourceSnapshot(source, language, sha, Path(path))
                     for source, language, sha, path in r.get("snapshots", [])],
                    r.get("snapshot_error"))
            for r in map(json.loads, filter(str.strip, lines))]


def _dedupe(items: list[str]) -> list[str]:
    """Repeating a flag changes nothing; a different flag, or a different order, does."""
    seen: list[str] = []
    for f in items:
        if f not in seen:
            seen.append(f)
    return seen


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
            problems.append(f"{arg} {why}: {_short(cmd.argv, cmd.cwd)}")
    return problems


def _sources(argv: list[str]) -> list[str]:
    """The files a command compiles (by -x, or by suffix), `-` for standard input."""
    return [w.text for w in cmdline.sources(argv)]


def _outputs(cmd: Command) -> set[Path]:
    """The files a compile writes: its -o, else <stem>.o (.s with -S) per source, in its cwd."""
    out = output_arg(cmd.argv)
    if out is not None:
        return {cmd.path(out)}
    opts = cmdline.options(cmd.argv)
    if "-c" not in opts and "-S" not in opts:
        return {cmd.path("a.out")}
    suffix = ".s" if "-S" in opts else ".o"
    return {cmd.path(Path(s).stem + suffix) for s in _sources(cmd.argv)}


def _norm(path: Path) -> Path:
    return Path(os.path.normpath(path))


def _unaudited_objects(tree: Path, logged: set[Path], since: float) -> list[str]:
    """Objects built during this step that no recorded compile produced."""
    fresh = [p for p in tree.rglob("*") if p.suffix in OBJECT_SUFFIXES and p.is_file()
             and p.stat().st_mtime >= since - 1]
    stray = sorted(_norm(p) for p in fresh if _norm(p) not in logged)
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
    return f"compile has {'; '.join(parts)}: {_short(argv, cwd)}"


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
        line = ", ".join(f'"{f}"' for f in _dedupe(tolerated + own))
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


def _short(argv: list[str], cwd: Path) -> str:
    """The command as a user would paste it, without its longest include lists."""
    text = " ".join(argv)
    return (text if len(text) < 400 else text[:400] + " ...") + f"  (in {cwd})"


# ---- tracing the binary back to recorded compiles ------------------------------------------

def link_flags(flags: list[str]) -> list[str]:
    """The variant's flags that the link acts on (the linker's own options, the linker chosen,
    link-time optimisation, which is done at the link or not at all): they must be on the link
    that writes the measured binary, as code-generation flags must be on every compile."""
    return [f for f in flags if f.startswith(("-Wl,", "-fuse-ld=", "-flto"))]


def on_link(flag: str, argv: list[str]) -> bool:
    """Whether a link command carries the flag: as written, or for a linker option its words
    in the same order among the linker's arguments. libtool passes `-Wl,-z,relro` on as
    `-Wl,-z -Wl,relro`, which the linker reads alike."""
    if flag in argv:
        return True
    if not flag.startswith("-Wl,"):
        return False
    want, have = flag[4:].split(","), _linker_words(argv)
    return any(have[i:i + len(want)] == want for i in range(len(have) - len(want) + 1))


def _linker_words(argv: list[str]) -> list[str]:
    """What the compiler driver hands the linker of its -Wl, and -Xlinker options, in order."""
    out: list[str] = []
    for i, word in enumerate(argv):
        if word.startswith("-Wl,"):
            out += word[4:].split(",")
        elif word == "-Xlinker" and i + 1 < len(argv):
            out.append(argv[i + 1])
    return out


class Trace:
    """Follows the measured binary through the links that made it to the compiles behind them."""

    def __init__(self, commands: list[Command], roots: list[Path], tree: Path,
                 link_flags: list[str] | None = None):
        self.roots, self.tree, self.link_flags = roots, tree, link_flags or []
        self.writers: dict[Path, Command] = {}    # file -> the last recorded command writing it
        for cmd in commands:
            if cmd.kind != "other":
                for out in _outputs(cmd):
                    self.writers[out] = cmd
        self.problems: list[str] = []
        self._followed: set[int] = set()
        self.used: set[int] = set()     # ids of the commands the binary was made from
        self.link_missing: list[str] = []
        self.link_cwd: Path | None = None
        self.shared: dict[Path, Command | None] = {}   # libraries of the tree it was linked with

    def binary(self, binary: Path) -> list[str]:
        path = _norm(binary.resolve())
        cmd = self.writers.get(path)
        if cmd is None:   # a Makefile may link elsewhere and copy the result into place
            path, cmd = self._copy_of(path)
        if cmd is None and (wrapped := libtool_wrapper(path)) is not None:
            return [f"{self._name(path)} is libtool's wrapper script for "
                    f"{self._name(_norm(path.parent / wrapped))}, whose code "
                    "is in the project's shared library, loaded at run time: configure with "
                    "--disable-shared (and measure the program itself, never one in .libs/)"]
        if cmd is None:
            return [f"the measured binary {self._name(path)} was not linked by the audited "
                    "compiler (a hard-coded compiler, or a prebuilt or stale file?)"]
        self._unchanged(path, cmd)
        self.used.add(id(cmd))
        missing = [f for f in self.link_flags if not on_link(f, cmd.argv)]
        if missing:
            self.link_missing, self.link_cwd = missing, cmd.cwd
            self.problems.append(f"the link that wrote {self._name(path)} lacks the variant's "
                                 f"link flags {' '.join(missing)} (a build that drops LDFLAGS, "
                                 f"or links without CFLAGS): {_short(cmd.argv, cmd.cwd)}")
        self._follow(cmd)
        self._shared_code(path)
        return self.problems

    def _shared_code(self, binary: Path) -> None:
        """A program linked with the project's shared library holds none of its code: the
        loader finds the library at run time, in the build tree only through the program's run
        path, else wherever it looks (an installed copy, the system's). libtool's programs in
        .libs/ have no run path into the tree (its wrapper script sets one), so they measure
        another copy's code, or fail to start."""
        needed, runpath = dynamic(binary)
        built = self._libraries()
        for name in needed:
            if name not in built:
                continue
            lib, cmd = built[name]
            if lib.resolve().parent not in runpath:
                self.problems.append(
                    f"{self._name(binary)}'s code is in {name} ({self._name(lib)}), loaded at "
                    f"run time from where the loader finds it (the binary's run path: "
                    f"{' '.join(map(str, runpath)) or 'none'}), not from this build: configure "
                    "with --disable-shared (CMake: -DBUILD_SHARED_LIBS=OFF)")
            elif cmd is None:
                self.problems.append(f"{self._name(binary)} loads {self._name(lib)}, which "
                                     "no recorded command of this build linked (a prebuilt or "
                                     "stale file, or a hard-coded compiler)")
            else:
                self.used.add(id(cmd))
                self._follow(cmd)

    def _libraries(self) -> dict[str, tuple[Path, Command | None]]:
        """soname -> (file, the recorded link that wrote it) of every shared library the
        binary was linked with in the tree, and of every one this build linked (a program
        linked with an installed copy of the project's library still runs that copy)."""
        found = {_norm(p): cmd for p, cmd in self.writers.items()
                 if cmd.kind == "link" and _file_kind(p) == "shared"}
        found.update(self.shared)
        return {(soname(p) or p.resolve().name): (p, cmd) for p, cmd in found.items()}

    def _copy_of(self, binary: Path) -> tuple[Path, Command | None]:
        """The recorded output with the binary's very bytes (as its command left them), if
        there is one."""
        if _stat(binary) is None:
            return binary, None
        digest = files.sha256_file(binary)
        for path, cmd in self.writers.items():
            if cmd.kind != "other" and path != binary and cmd.written(path) == digest:
                return path, cmd
        return binary, None

    def _follow(self, link: Command) -> None:
        """Every input of a recorded link (or compile-and-link) must come from this build."""
        if id(link) in self._followed:
            return
        self._followed.add(id(link))
        for path, named in _link_inputs(link):
            self._input(path, named, link)

    def _input(self, path: Path, named: str, link: Command) -> None:
        inside = any(path.is_relative_to(r) for r in self.roots)
        if inside and _file_kind(path) == "shared":
            # libtool links libdemo.so, a symbolic link to the file its link wrote
            self.shared[path] = self.writers.get(path) or self.writers.get(_norm(path.resolve()))
            return
        cmd = self.writers.get(path)
        if cmd is not None:
            self._unchanged(path, cmd)
            self.used.add(id(cmd))
            if cmd.kind == "link":  # a library or a partial link built here: follow it too
                self._follow(cmd)
            return
        what = _file_kind(path)
        if what == "archive" and inside:
            self._archive(path, link)
        elif what in ("archive", "shared") and not inside:
            return  # a library the program depends on, not the program's own code
        elif what == "missing":
            self.problems.append(f"link input {self._name(path)} was made by no recorded "
                                 f"command and no longer exists: {_short(link.argv, link.cwd)}")
        elif inside or what == "object":
            self.problems.append(f"link input {self._name(path)} was not compiled in this build "
                                 f"(a prebuilt or stale file, or a hard-coded compiler): "
                                 f"{_short(link.argv, link.cwd)}")

    def _archive(self, path: Path, link: Command) -> None:
        """An archive built in the tree: each member must be an object compiled here."""
        compiled = self._compiled_objects
        for name, data in ar_members(path):
            if isinstance(data, Path):   # a thin archive names its members' files
                self._input(_norm(path.parent / data), name, link)
            elif (cmd := compiled.get(files.sha256_bytes(data))) is not None:
                self.used.add(id(cmd))
            else:
                self.problems.append(f"archive {self._name(path)} holds {name}, which no "
                                     "recorded compile of this build produced (a hard-coded "
                                     "compiler, or a prebuilt or stale object?)")

    @cached_property
    def _compiled_objects(self) -> dict[str, Command]:
        """sha256 of every object file a recorded compile left (as it left it) -> that compile."""
        return {sha: cmd for path, cmd in self.writers.items()
                if cmd.kind == "compile" and (sha := cmd.written(path)) is not None}

    def _unchanged(self, path: Path, cmd: Command) -> None:
        """The file still has the bytes its recorded command left (nothing rewrote it since,
        whatever its mtime says)."""
        if not path.is_file():
            return   # removed after use (make deletes intermediate objects): it was the recorded one
        if files.sha256_file(path) != cmd.written(path):
            self.problems.append(f"{self._name(path)} changed after the recorded command that "
                                 "wrote it (rewritten by a command the audit did not see: a "
                                 f"hard-coded compiler, strip, a copy?): {_short(cmd.argv, cmd.cwd)}")

    def _name(self, path: Path) -> str:
        return str(path.relative_to(self.tree)) if path.is_relative_to(self.tree) else str(path)


def _link_inputs(cmd: Command) -> list[tuple[Path, str]]:
    """(path, how it was named) for each file a link reads: positional arguments, -l libraries
    found in its -L folders, and files handed to the linker through -Wl, or -Xlinker."""
    inputs: list[tuple[Path, str]] = []
    libdirs, libs, linker_words = [], [], []
    for word in cmdline.split(cmd.argv):
        arg = word.text
        if not word.option:
            if word.language is None:    # a source is compiled by this very command, checked
                inputs.append((cmd.path(arg), arg))
        elif word.values:
            {"-L": libdirs, "-l": libs, "-Xlinker": linker_words}.get(arg, []).extend(word.values)
        elif arg.startswith("-L"):
            libdirs.append(arg[2:])
        elif arg.startswith("-l"):
            libs.append(arg[2:])
        elif arg.startswith("-Wl,"):
            linker_words += arg[4:].split(",")
    for word in linker_words:
        path = cmd.path(word)
        if not word.startswith("-") and _file_kind(path) in ("object", "archive", "shared"):
            inputs.append((path, word))
    for lib in libs:
        names = [lib[1:]] if lib.startswith(":") else [f"lib{lib}.so", f"lib{lib}.a"]
        found = next((cmd.path(d) / n for d in libdirs for n in names
                      if (cmd.path(d) / n).is_file()), None)
        if found is not None:
            inputs.append((_norm(found), "-l"))
    return inputs




def dynamic(binary: Path) -> tuple[list[str], list[Path]]:
    """The shared libraries an ELF binary needs (DT_NEEDED) and the folders of its run path
    (DT_RUNPATH, else DT_RPATH, $ORIGIN read as its folder); nothing for a static binary or a
    file that is not ELF."""
    try:
        with open(binary, "rb") as f:
            section = ELFFile(f).get_section_by_name(".dynamic")
            tags = list(section.iter_tags()) if section is not None else []
    except (OSError, ELFError):
        return [], []
    needed = [t.needed for t in tags if t.entry.d_tag == "DT_NEEDED"]
    paths = ([t.runpath for t in tags if t.entry.d_tag == "DT_RUNPATH"]
             or [t.rpath for t in tags if t.entry.d_tag == "DT_RPATH"])
    origin = str(binary.parent)
    folders = [d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
               for p in paths for d in p.split(":") if d]
    return needed, [Path(d).resolve() for d in folders]


def soname(library: Path) -> str | None:
    """A shared library's DT_SONAME, the name a program linked with it asks the loader for."""
    try:
        with open(library, "rb") as f:
            section = ELFFile(f).get_section_by_name(".dynamic")
            for tag in section.iter_tags() if section is not None else []:
                if tag.entry.d_tag == "DT_SONAME":
                    return tag.soname
    except (OSError, ELFError):
        pass
    return None


def libtool_wrapper(path: Path) -> str | None:
    """The program a libtool wrapper script runs (".libs/demo"), or None for any other file.
    libtool writes one in place of each uninstalled program linked with a shared library."""
    try:
        with open(path, "rb") as f:
            head = f.read(512).decode("latin-1")
    except OSError:
        return None
    found = re.search(r"^# \S+ - temporary wrapper script for (\S+)$", head, re.M)
    return found.group(1) if found and head.startswith("#!") else None


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _file_kind(path: Path) -> str:
    """'object', 'shared', 'archive', 'other' (a linker script, ...) or 'missing'."""
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError:
        return "other"
    if head.startswith((b"!<arch>\n", b"!<thin>\n")):
        return "archive"
    if head.startswith(b"\x7fELF") and len(head) == 18:
        e_type = int.from_bytes(head[16:18], "little" if head[5] == 1 else "big")
        return {1: "object", 3: "shared"}.get(e_type, "other")
    return "other"


def ar_members(path: Path) -> list[tuple[str, bytes | Path]]:
    """The members of a Unix (GNU/BSD) archive: name and bytes, or name and path in a thin
    archive. Symbol tables and the long-name table are left out."""
    data = path.read_bytes()
    thin = data.startswith(b"!<thin>\n")
    pos, longnames, members = 8, b"", []
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        raw = header[:16].decode("latin-1").rstrip()
        size = int(header[48:58].decode("latin-1").strip() or 0)
        pos += 60
        special = raw in ("/", "//", "/SYM64/", "__.SYMDEF", "__.SYMDEF SORTED")
        # Thin archives keep only the symbol and name tables inside; members stay outside.
        body_size = size if (special or not thin) else 0
        body = data[pos:pos + body_size]
        if raw == "//":
            longnames = body
        elif raw.startswith("#1/"):          # BSD: the name heads the body
            n = int(raw[3:])
            members.append((body[:n].decode("latin-1").rstrip("\0"), body[n:]))
        elif not special:
            if raw.startswith("/") and raw[1:].isdigit():   # GNU: an offset in the name table
                start = int(raw[1:])
                name = longnames[start:longnames.index(b"/\n", start)].decode("latin-1")
            else:
                name = raw.removesuffix("/")
            members.append((name, Path(name) if thin else body))
        pos += body_size + (body_size % 2)
    return members


# ---- what each compile compiled: optimisation and target set in it, and where it came from --

# `#pragma GCC optimize (...)` and `#pragma GCC target (...)` (the preprocessor writes
# `_Pragma("...")` out as one): the rest of the line is read.
GCC_PRAGMA = re.compile(r'^[ \t]*#[ \t]*pragma[ \t]+GCC[ \t]+optimize\b([^\n]*)', re.M)
TARGET_PRAGMA = re.compile(r'^[ \t]*#[ \t]*pragma[ \t]+GCC[ \t]+target\b([^\n]*)', re.M)
CLANG_OFF = re.compile(r'^[ \t]*#[ \t]*pragma[ \t]+clang[ \t]+optimize[ \t]+off\b', re.M)
ATTRIBUTE = re.compile(r"__attribute(?:__)?\s*\(\(|\[\[")   # GNU's, and C23/C++'s
OPTIMIZE_ATTR = re.compile(r"\b(?:gnu::|__gnu__::)?(?:__optimize__|optimize)\s*\(")
# target, target_clones (each clone's settings are read alike: the one the CPU runs is picked
# at run time, over the default clone compiled with the variant's flags)
TARGET_ATTR = re.compile(r"\b(?:gnu::|__gnu__::)?(__target__|target|__target_clones__|"
                         r"target_clones)\s*\(")
OPTNONE = re.compile(r"\b(?:clang::)?(?:__optnone__|optnone)\b")
LINE_MARKER = re.compile(r'^# (\d+) "((?:\\.|[^"\\])*)"[ \d]*$', re.M)
STDIN = "<stdin>"      # how line markers name a source read from standard input
# Options dropped when a compile is run again as `-E`: what it writes besides the text.
NOT_FOR_E = ("-c", "-S", "-MD", "-MMD", "-MP", "-M", "-MM", "-pipe")
NOT_FOR_E_VALUE = ("-o", "-MF", "-MT", "-MQ", "-MJ", "-dependency-file", "-dependency-dot",
                   "-serialize-diagnostics", "-Xlinker", "-L", "-l", "-u", "-e", "-T", "-z",
                   "-rpath")


class SourceScan:
    """What each compile compiled, read in the snapshots the wrapper compiled in place of its
    sources (wrapper.c): the preprocessor's text, conditionals evaluated, macros expanded and
    headers in, hashed when it was compiled, so it is the code the compiler read, whatever the
    files say now. In it, optimisation and targets the code sets for itself, in the sources and
    every header but the compiler's own (those of its #include <...> search list: the C
    library's are not the project's to judge; a header the build put in /tmp is). And for the
    compiles the binary is made from, where the code read
    as it was came from: assembly (.s, or a .S's after its preprocessing) and preprocessed text
    (.i) carry code another compiler and other flags made, so each must be the source's own as
    unpacked (pristine: the sha256 of every file of the source tree before the build) or the
    output of a recorded command of this build with the variant's flags."""

    def __init__(self, want: list[str], tolerated: list[str],
                 pristine: frozenset[str] = frozenset(), commands: list[Command] | None = None):
        self.want, self.tolerated, self.pristine = want, tolerated, pristine
        self.made: dict[str, Command] = {}      # sha256 of a file a recorded command wrote -> it
        for cmd in commands or []:
            for sha in cmd.outputs.values():
                self.made.setdefault(sha, cmd)
        self.problems: list[str] = []
        self.tolerated_seen: list[str] = []
        self.in_source: dict[str, int] = {}     # flag -> attributes or pragmas setting it
        self._named: dict[tuple[str, str, tuple[str, ...]], bool] = {}

    def run(self, compiles: list[Command], traced: set[int] | None = None) -> None:
        """traced: the ids of the compiles the measured binary was made from, when it was
        traced; only those are read (all, when nothing was traced): a build's own probes (a
        source written, compiled to a scratch program and removed, as zstd's Makefile does)
        put nothing into the binary. A compile whose code the audit does not have is refused."""
        for cmd in compiles:
            if traced is not None and id(cmd) not in traced:
                continue
            texts, error = _compiled(cmd)
            if error:
                self.problems.append(f"could not read the code this compile compiled to look for "
                                     f"optimisation set in it ({error}): "
                                     f"{_short(cmd.argv, cmd.cwd)}")
            for snap, text in texts:
                where = _Lines(cmd, text, system_dirs(cmd.argv[0], snap.language))
                if cmdline.SNAPSHOT[snap.language][0] != "assembler":
                    self._check(where, text)
                self._origin(where, snap, text)

    def _check(self, where: "_Lines", code: str) -> None:
        """The text of the project's own files in the snapshot (the compiler's system headers
        around it are most of it, and not the project's to judge), comments blanked."""
        if not _worth_reading(code):
            return   # most compiles: nothing to look at closer
        for start, end in where.spans(lambda name: self._mine_named(where, name)):
            if _worth_reading(part := code[start:end]):
                self._scan(where, start, _uncommented(part))

    def _scan(self, where: "_Lines", base: int, code: str) -> None:
        """Pragmas and attributes in code, which starts at offset base of the snapshot."""
        for found in GCC_PRAGMA.finditer(code):
            args = _pragma_args(found)
            self._settings(where, base + found.start(), f"#pragma GCC optimize ({args})", args)
        for found in TARGET_PRAGMA.finditer(code):
            args = _pragma_args(found)
            self._targets(where, base + found.start(), f"#pragma GCC target ({args})", args)
        for found in CLANG_OFF.finditer(code):
            self._problem(where, base + found.start(), "#pragma clang optimize off", "-O0")
        for span in ATTRIBUTE.finditer(code):
            at = base + span.start()
            body = _balanced(code, span.end(), "[]" if span.group() == "[[" else "()")
            for attr in OPTIMIZE_ATTR.finditer(body):
                args = _balanced(body, attr.end())
                self._settings(where, at, f"attribute optimize({args})", args)
            for attr in TARGET_ATTR.finditer(body):
                args = _balanced(body, attr.end())
                self._targets(where, at, f"attribute {attr.group(1)}({args})", args)
            if OPTNONE.search(body):
                self._problem(where, at, "attribute optnone", "-O0")

    def _settings(self, where: "_Lines", at: int, what: str, args: str) -> None:
        """One optimize pragma or attribute: each of its settings, as the flag it stands for."""
        flags = optimize_flags(args)
        if not flags:
            self._problem(where, at, what, None)
        for flag in flags:
            if flag.startswith("-O") or (flag not in self.want and flag not in self.tolerated):
                self._problem(where, at, what, flag)
            elif flag not in self.want and where.file(at) is not None:
                self.tolerated_seen = _dedupe(self.tolerated_seen + [flag])

    def _targets(self, where: "_Lines", at: int, what: str, args: str) -> None:
        """One target pragma or attribute: each setting that overrides one of the variant's
        flags, unless the target tolerates the flag it stands for."""
        settings = target_settings(args)
        if settings is None:
            self._problem(where, at, what, None, over="target")
        for setting in settings or []:
            if (found := target_override(setting, self.want)) is None:
                continue
            flag, over = found
            if flag not in self.tolerated:
                self._problem(where, at, what, flag, over=over)
            elif self._ours(where, at):
                self.tolerated_seen = _dedupe(self.tolerated_seen + [flag])

    def _ours(self, where: "_Lines", at: int) -> bool:
        file = where.file(at)
        return file is not None and where.judged(file)

    def _mine_named(self, where: "_Lines", name: str) -> bool:
        """Whether the file a line marker names is judged: the compiles of a build name the
        same headers thousands of times."""
        key = (str(where.cmd.cwd), name, where.system)
        if key not in self._named:
            self._named[key] = (path := where.path(name)) is not None and where.judged(path)
        return self._named[key]

    def _problem(self, where: "_Lines", at: int, what: str, flag: str | None,
                 over: str | None = None) -> None:
        if not self._ours(where, at):
            return
        place = f"{where.file(at)}:{where.line(at)}"
        if flag is None:
            self.problems.append(f"{place}: {what} sets {'the ' + over if over else 'optimisation'}"
                                 " in the source, and the audit cannot tell which")
            return
        if flag.startswith("-O"):
            self.problems.append(f"{place}: {what} sets the optimisation level ({flag}) in the "
                                 "source, over the variant's flags")
            return
        self.in_source[flag] = self.in_source.get(flag, 0) + 1
        said = f"over the variant's {over}" if over else "which the variant's flags do not have"
        self.problems.append(f"{place}: {what} sets {flag} in the source, {said} (list it in the "
                             "target's build.tolerated_flags if it is the project's own)")

    def _origin(self, where: "_Lines", snap: SourceSnapshot, text: str) -> None:
        """Code read as it was (not compiled from C here) is the source's own or this build's."""
        cmd = where.cmd
        if snap.language == "assembler-with-cpp":
            self._preprocessed_assembly(where, snap)
        elif not snap.preprocessed:
            what = "assembly" if snap.language == "assembler" else "preprocessed code"
            if (why := self._foreign(snap.sha256)) is not None:
                self.problems.append(f"{cmd.path(snap.source)}: the {what} this compile read "
                                     f"{why} (code made elsewhere, with other flags?): "
                                     f"{_short(cmd.argv, cmd.cwd)}")

    def _foreign(self, sha: str) -> str | None:
        """Why bytes with this sha256 are neither the source's as unpacked nor written by a
        recorded command with the variant's flags, or None when they are."""
        if sha in self.pristine:
            return None
        maker = self.made.get(sha)
        if maker is None:
            return ("is neither a file of the source as unpacked nor written by a recorded "
                    "command of this build")
        got = _dedupe([f for f in codegen_flags(maker.argv) if f not in self.tolerated
                       or f in self.want])
        if maker.kind != "other" or got == self.want:   # a compile's flags are checked as one
            return None
        return (f"was written by a command without the variant's flags "
                f"({_short(maker.argv, maker.cwd)})")

    def _preprocessed_assembly(self, where: "_Lines", snap: SourceSnapshot) -> None:
        """A .S: every file its assembly came from (but the compiler's own headers) is the
        source's own (or this build's), and preprocessing them again gives the very text
        assembled (a file changed for the compile and put back would not)."""
        cmd = where.cmd
        for file in where.files():
            if where.judged(file) and file.is_file():
                if (why := self._foreign(files.sha256_file(file))) is not None:
                    self.problems.append(f"{file}: assembled by {cmd.path(snap.source)}, it {why}"
                                         f": {_short(cmd.argv, cmd.cwd)}")
        again, error = _run_preprocessor(cmd, [snap.source])
        if error or files.sha256_bytes((again or "").encode()) != snap.sha256:
            self.problems.append(f"{cmd.path(snap.source)}: what this compile assembled is not what "
                                 f"its files give now ({error or 'a file changed for the compile'}"
                                 f"): {_short(cmd.argv, cmd.cwd)}")


class _Lines:
    """Maps an offset in preprocessed text back to its file and line through the line markers;
    system: the compiler's own include folders, whose files are not the project's to judge."""

    def __init__(self, cmd: Command, code: str, system: tuple[str, ...] = ()):
        self.cmd, self.code, self.system = cmd, code, system
        found = list(LINE_MARKER.finditer(code))
        self.markers = [(m.end() + 1, m.group(2), int(m.group(1))) for m in found]
        self.starts = [m[0] for m in self.markers]
        self.ends = [m.start() for m in found[1:]] + [len(code)]

    def spans(self, keep: Callable[[str], bool]) -> list[tuple[int, int]]:
        """(start, end) of each stretch of text from a file keep says yes to (by its name in
        the markers)."""
        return [(start, end) for (start, name, _), end in zip(self.markers, self.ends)
                if start < end and keep(name)]

    def _marker(self, at: int) -> tuple[int, str, int] | None:
        i = bisect.bisect_right(self.starts, at) - 1
        return self.markers[i] if i >= 0 else None

    def path(self, name: str) -> Path | None:
        """The file a line marker names (None: <built-in>, <command-line>)."""
        if name == STDIN:     # the compile's own source, read from its standard input
            return self.cmd.path(name)
        if name.startswith("<"):   # <built-in>, <command-line>
            return None
        return self.cmd.path(re.sub(r"\\(.)", r"\1", name))   # markers escape \\ and "

    def judged(self, file: Path) -> bool:
        """Any file but the compiler's own headers: the build and source trees', and a header
        the build put anywhere else (-include /tmp/x.h), or the compile's standard input."""
        return file.name == STDIN or not str(file).startswith(self.system)

    def file(self, at: int) -> Path | None:
        marker = self._marker(at)
        return None if marker is None else self.path(marker[1])

    def files(self) -> set[Path]:
        """Every file the text came from."""
        return {p for _, name, _ in self.markers if (p := self.path(name)) is not None}

    def line(self, at: int) -> int:
        marker = self._marker(at)
        return marker[2] + self.code.count("\n", marker[0], at) if marker else 0


def _compiled(cmd: Command) -> tuple[list[tuple[SourceSnapshot, str]], str | None]:
    """The text of each snapshot the compile compiled, checked against its sha256, or why the
    audit does not have it: a compile the audit cannot read is never taken on trust."""
    if not cmdline.sources(cmd.argv):   # a compile that succeeded had one: the audit misread it
        return [], "the audit found no source file in it"
    if cmd.snapshot_error:
        return [], f"the wrapper compiled its sources as they were: {cmd.snapshot_error}"
    if not cmd.snapshots:
        return [], "the wrapper kept no snapshot of what it compiled"
    texts = []
    for snap in cmd.snapshots:
        try:
            data = snap.path.read_bytes()
        except OSError as e:
            return [], f"its snapshot {snap.path} cannot be read ({e.strerror})"
        if files.sha256_bytes(data) != snap.sha256:
            return [], f"its snapshot {snap.path} is no longer what was compiled"
        texts.append((snap, data.decode(errors="replace")))
    return texts, None


@functools.lru_cache(maxsize=32)
def system_dirs(compiler: str, language: str) -> tuple[str, ...]:
    """The folders the compiler searches for #include <...> of itself (each with a trailing
    '/'), for a source of that language: its own headers, the C library's. Its answer to
    -v -E, not a command's options: -isystem /tmp/x makes no file the compiler's own."""
    ask = {"cpp-output": "c", "c++-cpp-output": "c++", "objective-c-cpp-output": "objective-c",
           "objective-c++-cpp-output": "objective-c++"}.get(language, language)
    try:
        done = process.run([compiler, "-x", ask, "-E", "-v", os.devnull], timeout=60,
                           env=environment.build({}))
    except (OSError, process.TimeoutExpired):
        return ()
    listed = re.search(r"#include <\.\.\.> search starts here:\n(.*?)\nEnd of search list",
                       done.stderr, re.S)
    folders = [line.strip().removesuffix(" (framework directory)")
               for line in (listed.group(1).splitlines() if listed else [])]
    return tuple(os.path.normpath(f) + "/" for f in folders if f)


# A string or character literal, which keeps what is in it, or a comment.
LEXEME = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)


def _worth_reading(code: str) -> bool:
    return "optimize" in code or "optnone" in code or "target" in code


def _uncommented(code: str) -> str:
    """The text with each comment blanked, its line breaks kept (so lines still count): gcc's
    snapshots keep comments when fall-through warnings are on (wrapper.c), and a pragma or
    attribute in one sets nothing."""
    return LEXEME.sub(lambda m: m.group() if m.group()[0] in "\"'" else
                      re.sub(r"[^\n]", " ", m.group()), code)


def _pragma_args(found: re.Match) -> str:
    args = found.group(1).strip()
    return _balanced(args, 1) if args.startswith("(") else args


def _run_preprocessor(cmd: Command, sources: list[str]) -> tuple[str | None, str | None]:
    """The command again with -E on the given sources, without what writes files or links."""
    argv = [cmd.argv[0]]
    for word in cmdline.split(cmd.argv):
        arg = word.text
        if not word.option:
            if arg in sources:
                argv.append(arg)
        elif not (arg in NOT_FOR_E or arg in NOT_FOR_E_VALUE
                  or arg.startswith(("-Wl,", "-l", "-L", "-save-temps", "-Wp,-M"))
                  or (arg.startswith("-o") and len(arg) > 2)):
            argv += word.words
    try:
        done = process.run(argv + ["-E"], cwd=cmd.cwd, timeout=600,
                           env=environment.build({}))   # as the build's compiler saw it
    except (OSError, process.TimeoutExpired) as e:
        return None, str(e)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        return None, f"exit {done.returncode}: {tail[0]}"
    return done.stdout, None


def target_settings(args: str) -> list[str] | None:
    """The settings of a target pragma's or attribute's arguments ("arch=x86-64,avx2" is two);
    None when an argument is not a string literal."""
    settings = []
    for arg in _split_args(args):
        text = _literal(arg)
        if text is None:
            return None
        settings += [part.strip() for part in text.split(",") if part.strip()]
    return settings


def target_override(setting: str, want: list[str]) -> tuple[str, str] | None:
    """The flag a target setting stands for ("arch=x86-64" is -march=x86-64, "no-avx2"
    -mno-avx2, "avx2" -mavx2) and the variant's flag it overrides, or None when it overrides
    none. A setting that only adds an instruction set the variant does not turn off passes:
    it is how programs pick code at run time for the CPU they find (zstd's BMI2 paths, xz's
    CLMUL CRC), and the code compiled with the variant's flags is still there for the others.
    What it overrides: arch= the variant's -march; tune= its -mtune (else the tuning its
    -march implies); any other name=value its -mname=; a no- feature the variant's -mfeature
    or its -march (which may enable it); an added feature the variant's -mno-feature."""
    setting = setting.strip()
    if not setting or setting == "default":   # target_clones' clone of the variant's own flags
        return None
    flag = f"-m{setting}"
    name, has_value, value = setting.partition("=")
    if has_value:
        mine = [f for f in want if f.startswith(f"-m{name}=")]
        if name == "tune" and not mine:
            mine = [f for f in want if f.startswith("-march=")]
        if mine and mine[-1].split("=", 1)[1] != value:
            return flag, mine[-1]
        return None
    if setting.startswith("no-"):
        over = [f for f in want if f == f"-m{setting[3:]}" or f.startswith("-march=")]
    else:
        over = [f for f in want if f == f"-mno-{setting}"]
    return (flag, over[-1]) if over else None


# ---- what the compiler proper receives ------------------------------------------------------

@functools.lru_cache(maxsize=64)
def added_by(compiler: str, flags: tuple[str, ...]) -> str | None:
    """Why the compiler the build ran does not hand its driver the command it was given, or
    None when it does. A root-owned script named as the compiler that appends -O0 to every call
    passes every other check: the compile lines the wrapper records are the ones it was given.
    The driver says what it received when asked with -### (on a probe, with the variant's
    flags): gcc in COLLECT_GCC_OPTIONS, clang in the -cc1 line's -record-command-line, each in
    its own spelling (-DX as -D X) and gcc's with the options its configuration adds by default
    (-march=, -mtune=). So the same question goes to the driver that answered (COLLECT_GCC, the
    recorded program) directly, unless it is the compiler named, and the two answers must be
    the same."""
    clang = cmdline.family(compiler) == "clang"
    with tempfile.TemporaryDirectory(prefix="flagsweep-driver-") as folder:
        Path(folder, "probe.c").write_text("int probe;\n")
        argv = [*flags, "-c", "probe.c", "-o", "probe.o", "-###",
                *(["-frecord-command-line"] if clang else [])]
        named = _received(compiler, argv, folder)
        if isinstance(named, str):
            return named
        driver, got = named
        if _same_program(driver, compiler):
            return None
        real = _received(driver, argv, folder)
        if isinstance(real, str):
            return real
    extra, missing = _minus(got, real[1]), _minus(real[1], got)
    if not extra and not missing:
        return None
    said = "; ".join([f"adds {' '.join(extra)}"] * bool(extra) +
                     [f"drops {' '.join(missing)}"] * bool(missing))
    return (f"the compiler {compiler} {said} (what {driver}, which it runs, received for a "
            "compile with the variant's flags, against the command it was given): it changes "
            "the flags behind the compile lines; name the compiler itself in the recipe")


def _received(compiler: str, argv: list[str], folder: str) -> tuple[str, list[str]] | str:
    """The driver that answered `compiler argv` (with -###) and the options it says it
    received, or why the audit cannot tell."""
    try:
        done = process.run([compiler, *argv], cwd=folder, timeout=60, env=environment.build({}))
    except (OSError, process.TimeoutExpired) as e:
        return f"could not ask the compiler {compiler} what it runs ({e})"
    driver = compiler
    for line in done.stderr.splitlines():
        if line.startswith("COLLECT_GCC="):
            driver = line.split("=", 1)[1]
        elif line.startswith("COLLECT_GCC_OPTIONS="):
            return driver, shlex.split(line.split("=", 1)[1])
        elif '"-record-command-line"' in line:
            words = shlex.split(line)
            given = shlex.split(words[words.index("-record-command-line") + 1])
            return given[0], given[1:]
    return (f"could not tell what the compiler {compiler} runs: -### showed no compile "
            f"(exit {done.returncode})")


def _same_program(a: str, b: str) -> bool:
    found = [shutil.which(p, path=environment.build({}).get("PATH")) if "/" not in p else p
             for p in (a, b)]
    try:
        return None not in found and os.path.samefile(*found)
    except OSError:
        return False


def _minus(words: list[str], others: list[str]) -> list[str]:
    """words without one of each of others (what one command line has more than another)."""
    left = list(others)
    out = []
    for word in words:
        if word in left:
            left.remove(word)
        else:
            out.append(word)
    return out


# ---- the source tree as unpacked ------------------------------------------------------------

PRISTINE_LARGEST = 64 << 20    # bytes: larger files are data, never code a compile reads


def pristine(tree: Path) -> frozenset[str]:
    """The sha256 of every regular file of a source tree, taken before the build: the code a
    compile may read as it is (handwritten assembly, shipped preprocessed files)."""
    found = set()
    for folder, _, names in os.walk(tree):
        for name in names:
            path = Path(folder, name)
            try:
                st = path.stat()
                if stat.S_ISREG(st.st_mode) and st.st_size <= PRISTINE_LARGEST:
                    found.add(files.sha256_file(path))
            except OSError:
                continue      # unreadable: nothing a compile could read either
    return frozenset(found)


def optimize_flags(args: str) -> list[str]:
    """The flags an optimize pragma's or attribute's arguments stand for, as gcc reads them:
    a number is -O<n>; each comma-separated part of a string is an option if it starts with
    '-', -O<...> if it starts with 'O', else -f<part>. [] when an argument is not a literal."""
    flags = []
    for arg in (a.strip() for a in _split_args(args)):
        if arg.isdigit():
            flags.append(f"-O{arg}")
        elif (text := _literal(arg)) is not None:
            for part in filter(None, (p.strip() for p in text.split(","))):
                flags.append(part if part.startswith("-") else
                             f"-{part}" if part.startswith("O") else f"-f{part}")
        else:
            return []
    return flags


STRING = re.compile(r'\s*"((?:\\.|[^"\\])*)"')


def _literal(arg: str) -> str | None:
    """The text of an argument made of string literals only ("O" "0" is "O0", as the compiler
    joins them), or None."""
    parts, at = [], 0
    while (found := STRING.match(arg, at)) is not None:
        parts.append(found.group(1))
        at = found.end()
    return "".join(parts) if parts and not arg[at:].strip() else None


def _split_args(text: str) -> list[str]:
    """Top-level comma-separated arguments, commas inside string literals kept."""
    parts = re.findall(r'"(?:\\.|[^"\\])*"|[^"]+', text)
    args, current = [], ""
    for part in parts:
        if part.startswith('"'):
            current += part
        else:
            pieces = part.split(",")
            current += pieces[0]
            for piece in pieces[1:]:
                args.append(current)
                current = piece
    args.append(current)
    return [a for a in args if a.strip()] if text.strip() else [""]


def _balanced(text: str, start: int, pair: str = "()") -> str:
    """text from start up to the bracket that closes the one just before start."""
    depth, i = 1, start
    while i < len(text) and depth:
        depth += {pair[0]: 1, pair[1]: -1}.get(text[i], 0)
        i += 1
    return text[start:i - 1] if depth == 0 else text[start:]
