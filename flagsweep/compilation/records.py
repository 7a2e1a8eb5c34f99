"""The wrapper's records of a build's compiler calls (compile.jsonl), read: each call as a
Command with the snapshots of what it compiled, its kind (compile, link, other), its
code-generation flags and the files it writes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from flagsweep.compilation import cmdline


# -f options that only change diagnostics or recorded paths, never the generated code.
NON_CODEGEN_F = ("-fdiagnostics", "-fno-diagnostics", "-fcolor-diagnostics", "-fno-color-diagnostics",
                 "-fmessage-length", "-fmax-errors", "-fshow-column", "-fno-show-column",
                 "-fdebug-prefix-map", "-ffile-prefix-map", "-fmacro-prefix-map",
                 "-ftrack-macro-expansion", "-fno-caret-diagnostics", "-fcaret-diagnostics",
                 "-fansi-escape-codes", "-fsyntax-only", "-fworking-directory", "-fno-working-directory")


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
        return norm(self.cwd / arg)

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


def writes_nothing(cmd: Command) -> bool:
    """A compile whose output goes nowhere (a build system's probe of whether the compiler takes
    an option, zstd's `-x c - -o /dev/null`): nothing of it can reach the binary, so there is
    no code of it to read."""
    return output_arg(cmd.argv) == os.devnull or "-fsyntax-only" in cmd.argv


def one_go(cmd: Command) -> bool:
    """A compile that links in one go (no -c, -S or -E): it writes a program or a library
    (xxhash's `$(CC) xxhash.c -shared -o libxxhash.so...`)."""
    return cmd.kind == "compile" and not set(cmdline.options(cmd.argv)) & {"-c", "-S", "-E"}


def program_of(cmd: Command) -> Path | None:
    """The program a compile writes when it compiles and links in one go, not as a shared
    library or a partial link (-shared, -r): nettle's `$(CC_FOR_BUILD) eccdata.c -o eccdata`,
    a generator the build runs; None for any other command."""
    if not one_go(cmd) or set(cmdline.options(cmd.argv)) & {"-shared", "-r"}:
        return None
    return next(iter(outputs(cmd)))


def output_arg(argv: list[str]) -> str | None:
    """The -o value ("-o FILE" or "-oFILE"; the last one wins, as in gcc)."""
    return cmdline.output(argv)


def read(log: Path) -> list[Command]:
    if not log.exists():
        return []
    # Arguments need not be UTF-8; undecodable bytes must not hide a command from the audit.
    lines = log.read_text(errors="replace").splitlines()
    return [Command(r["argv"], Path(r["cwd"]), r.get("exit", 0), dict(r.get("outputs", [])),
                    [SourceSnapshot(source, language, sha, Path(path))
                     for source, language, sha, path in r.get("snapshots", [])],
                    r.get("snapshot_error"))
            for r in map(json.loads, filter(str.strip, lines))]


def dedupe(items: list[str]) -> list[str]:
    """Repeating a flag changes nothing; a different flag, or a different order, does."""
    seen: list[str] = []
    for f in items:
        if f not in seen:
            seen.append(f)
    return seen


def _sources(argv: list[str]) -> list[str]:
    """The files a command compiles (by -x, or by suffix), `-` for standard input."""
    return [w.text for w in cmdline.sources(argv)]


def outputs(cmd: Command) -> set[Path]:
    """The files a compile writes: its -o, else <stem>.o (.s with -S) per source, in its cwd."""
    out = output_arg(cmd.argv)
    if out is not None:
        return {cmd.path(out)}
    opts = cmdline.options(cmd.argv)
    if "-c" not in opts and "-S" not in opts:
        return {cmd.path("a.out")}
    suffix = ".s" if "-S" in opts else ".o"
    return {cmd.path(Path(s).stem + suffix) for s in _sources(cmd.argv)}


def norm(path: Path) -> Path:
    return Path(os.path.normpath(path))


def short(argv: list[str], cwd: Path) -> str:
    """The command as a user would paste it, without its longest include lists."""
    text = " ".join(argv)
    return (text if len(text) < 400 else text[:400] + " ...") + f"  (in {cwd})"
