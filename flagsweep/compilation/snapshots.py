"""What each compile compiled, read in the snapshots the wrapper kept (wrapper.c): the
optimisation and targets the project's code sets for itself (pragmas.py), and where code read
as it was (assembly, preprocessed text) came from: the source as unpacked (pristine) or this
build."""

from __future__ import annotations

import bisect
import functools
import os
import re
import stat
from pathlib import Path
from typing import Callable

from flagsweep import files, process
from flagsweep.compilation import cmdline, pragmas
from flagsweep.compilation.records import Command, SourceSnapshot, codegen_flags, dedupe, short
from flagsweep.host import environment


LINE_MARKER = re.compile(r'^# (\d+) "((?:\\.|[^"\\])*)"[ \d]*$', re.M)
STDIN = "<stdin>"      # how line markers name a source read from standard input
# Options dropped when a compile is run again as `-E`: what it writes besides the text.
NOT_FOR_E = ("-c", "-S", "-MD", "-MMD", "-MP", "-M", "-MM", "-pipe")
# What a compiler writes into the assembly it generates and no assembler source carries, written
# by hand or by the build's macro processor (nettle's m4 writes aes-decrypt-internal.s from its
# .asm; OpenSSL's perl its .s): gcc's and clang's `.ident`, a `.file` naming a C or C++ source.
COMPILER_MARK = re.compile(r'^[ \t]*(?:\.ident[ \t]|\.file[ \t]+(?:\d+[ \t]+)?"[^"\n]*'
                           r'\.(?:c|cc|cp|cpp|cxx|c\+\+|C|i|ii)")', re.M)
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
                                     f"{short(cmd.argv, cmd.cwd)}")
            for snap, text in texts:
                where = _Lines(cmd, text, system_dirs(cmd.argv[0], snap.language))
                if cmdline.SNAPSHOT[snap.language][0] != "assembler":
                    self._check(where, text)
                self._origin(where, snap, text)

    def _check(self, where: "_Lines", code: str) -> None:
        """The text of the project's own files in the snapshot (the compiler's system headers
        around it are most of it, and not the project's to judge), comments blanked."""
        if not pragmas.worth_reading(code):
            return   # most compiles: nothing to look at closer
        for start, end in where.spans(lambda name: self._mine_named(where, name)):
            if pragmas.worth_reading(part := code[start:end]):
                self._scan(where, start, pragmas.uncommented(part))

    def _scan(self, where: "_Lines", base: int, code: str) -> None:
        """Pragmas and attributes in code, which starts at offset base of the snapshot."""
        for found in pragmas.GCC_PRAGMA.finditer(code):
            args = pragmas.pragma_args(found)
            self._settings(where, base + found.start(), f"#pragma GCC optimize ({args})", args)
        for found in pragmas.TARGET_PRAGMA.finditer(code):
            args = pragmas.pragma_args(found)
            self._targets(where, base + found.start(), f"#pragma GCC target ({args})", args)
        for found in pragmas.CLANG_OFF.finditer(code):
            self._problem(where, base + found.start(), "#pragma clang optimize off", "-O0")
        for span in pragmas.ATTRIBUTE.finditer(code):
            at = base + span.start()
            body = pragmas.balanced(code, span.end(), "[]" if span.group() == "[[" else "()")
            for attr in pragmas.OPTIMIZE_ATTR.finditer(body):
                args = pragmas.balanced(body, attr.end())
                self._settings(where, at, f"attribute optimize({args})", args)
            for attr in pragmas.TARGET_ATTR.finditer(body):
                args = pragmas.balanced(body, attr.end())
                self._targets(where, at, f"attribute {attr.group(1)}({args})", args)
            if pragmas.OPTNONE.search(body):
                self._problem(where, at, "attribute optnone", "-O0")

    def _settings(self, where: "_Lines", at: int, what: str, args: str) -> None:
        """One optimize pragma or attribute: each of its settings, as the flag it stands for."""
        flags = pragmas.optimize_flags(args)
        if not flags:
            self._problem(where, at, what, None)
        for flag in flags:
            if flag.startswith("-O") and flag == self._level():
                # the variant's own level again (xxhash.h's AVX2 path asks -O2 of gcc): gcc
                # keeps the options the command line set explicitly, so nothing changes
                if where.file(at) is not None:
                    self.tolerated_seen = dedupe(self.tolerated_seen + [flag])
                continue
            if flag.startswith("-O") or (flag not in self.want and flag not in self.tolerated):
                self._problem(where, at, what, flag)
            elif flag not in self.want and where.file(at) is not None:
                self.tolerated_seen = dedupe(self.tolerated_seen + [flag])

    def _level(self) -> str:
        """The variant's optimisation level as an optimize setting writes it (-O is -O1)."""
        level = next((f for f in reversed(self.want) if f.startswith("-O")), "-O0")
        return "-O1" if level == "-O" else level

    def _targets(self, where: "_Lines", at: int, what: str, args: str) -> None:
        """One target pragma or attribute: each setting that overrides one of the variant's
        flags, unless the target tolerates the flag it stands for."""
        settings = pragmas.target_settings(args)
        if settings is None:
            self._problem(where, at, what, None, over="target")
        for setting in settings or []:
            if (found := pragmas.target_override(setting, self.want)) is None:
                continue
            flag, over = found
            if flag not in self.tolerated:
                self._problem(where, at, what, flag, over=over)
            elif self._ours(where, at):
                self.tolerated_seen = dedupe(self.tolerated_seen + [flag])

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
        elif snap.language == "assembler" and not COMPILER_MARK.search(text):
            return      # no compiler made it, so no compiler's flags could have reached it
        elif not snap.preprocessed:
            what = "assembly" if snap.language == "assembler" else "preprocessed code"
            if (why := self._foreign(snap.sha256)) is not None:
                self.problems.append(f"{cmd.path(snap.source)}: the {what} this compile read "
                                     f"{why} (code made elsewhere, with other flags?): "
                                     f"{short(cmd.argv, cmd.cwd)}")

    def _foreign(self, sha: str) -> str | None:
        """Why bytes with this sha256 are neither the source's as unpacked nor written by a
        recorded command with the variant's flags, or None when they are."""
        if sha in self.pristine:
            return None
        maker = self.made.get(sha)
        if maker is None:
            return ("is neither a file of the source as unpacked nor written by a recorded "
                    "command of this build")
        got = dedupe([f for f in codegen_flags(maker.argv) if f not in self.tolerated
                      or f in self.want])
        if maker.kind != "other" or got == self.want:   # a compile's flags are checked as one
            return None
        return (f"was written by a command without the variant's flags "
                f"({short(maker.argv, maker.cwd)})")

    def _preprocessed_assembly(self, where: "_Lines", snap: SourceSnapshot) -> None:
        """A .S: every file its assembly came from (but the compiler's own headers) is the
        source's own (or this build's), and preprocessing them again gives the very text
        assembled (a file changed for the compile and put back would not)."""
        cmd = where.cmd
        for file in where.files():
            if where.judged(file) and file.is_file():
                if (why := self._foreign(files.sha256_file(file))) is not None:
                    self.problems.append(f"{file}: assembled by {cmd.path(snap.source)}, it {why}"
                                         f": {short(cmd.argv, cmd.cwd)}")
        again, error = _run_preprocessor(cmd, [snap.source])
        if error or files.sha256_bytes((again or "").encode()) != snap.sha256:
            self.problems.append(f"{cmd.path(snap.source)}: what this compile assembled is not what "
                                 f"its files give now ({error or 'a file changed for the compile'}"
                                 f"): {short(cmd.argv, cmd.cwd)}")


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
