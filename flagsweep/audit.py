"""The flag audit: did every object get compiled with exactly the variant's flags?

Reads the compile log the wrapper wrote during the variant's build step. A variant passes when
  - every compile command carries the variant's code-generation flags (plus the target's fixed
    project flags), in that order, and no other code-generation flag (projects' own -D, -I, -W,
    -g, -std are fine: they do not pick the optimisation being measured);
  - link commands add no code-generation flag of their own (an -flto or -O3 there changes code);
  - every object file the build produced was compiled through the wrapper (a Makefile that
    calls `gcc` directly would otherwise build unaudited code).
The problems name the offending command, so "flags-mismatch" is never a mystery.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".s", ".S", ".i", ".ii")
OBJECT_SUFFIXES = (".o", ".obj")
# -f options that only change diagnostics or recorded paths, never the generated code.
NON_CODEGEN_F = ("-fdiagnostics", "-fno-diagnostics", "-fcolor-diagnostics", "-fno-color-diagnostics",
                 "-fmessage-length", "-fmax-errors", "-fshow-column", "-fno-show-column",
                 "-fdebug-prefix-map", "-ffile-prefix-map", "-fmacro-prefix-map",
                 "-ftrack-macro-expansion", "-fno-caret-diagnostics", "-fcaret-diagnostics",
                 "-fansi-escape-codes", "-fsyntax-only", "-fworking-directory", "-fno-working-directory")
MAX_PROBLEMS = 10


@dataclass
class Audit:
    verified: bool
    compiles: int = 0
    links: int = 0
    problems: list[str] = field(default_factory=list)
    tolerated_seen: list[str] = field(default_factory=list)
    compile_line: list[str] | None = None   # the first compile's argv, shown in the report

    def to_json(self) -> dict:
        return {"verified": self.verified, "compiles": self.compiles, "links": self.links,
                "problems": self.problems, "tolerated_seen": self.tolerated_seen,
                "compile_line": self.compile_line}


def is_codegen(flag: str) -> bool:
    """True for flags that choose how code is generated: -O*, -f* (bar diagnostics), -m*, --param, -p/-pg."""
    if flag.startswith("-f"):
        return not flag.startswith(NON_CODEGEN_F)
    return flag.startswith(("-O", "-m", "--param")) or flag in ("-p", "-pg")


def codegen_flags(argv: list[str]) -> list[str]:
    """The code-generation flags of a command line, in order (`--param x=y` kept as one)."""
    out, args = [], iter(argv[1:])
    for arg in args:
        if arg == "--param":
            out.append(f"--param={next(args, '')}")
        elif arg in ("-o", "-MF", "-MT", "-MQ", "-I", "-D", "-U", "-include", "-isystem", "-x"):
            next(args, None)  # these take the next word as a value, which is never a flag here
        elif is_codegen(arg):
            out.append(arg)
    return out


def kind(argv: list[str]) -> str:
    """'compile', 'link', or 'other' (preprocessing, version probes)."""
    if "-E" in argv or "-M" in argv or "-MM" in argv:
        return "other"
    if "-c" in argv or "-S" in argv:
        return "compile"
    if any(a.endswith(SOURCE_SUFFIXES) for a in argv[1:]):
        return "compile"  # compile and link in one go
    return "link" if "-o" in argv else "other"


def audit(compile_log: Path, tree: Path, expected: list[str], tolerated: list[str],
          since: float) -> Audit:
    """Check a variant's compile log against its expected code-generation flags."""
    records = _records(compile_log)
    # The variant's flags are read like a command line, so `--param x=y` compares as one flag.
    want = _dedupe(codegen_flags(["cc", *expected]))
    result = Audit(verified=False)
    objects_logged: set[Path] = set()
    for rec in records:
        argv, cwd = rec["argv"], Path(rec["cwd"])
        what = kind(argv)
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
            objects_logged |= _outputs(argv, cwd)
            if got != want:
                result.problems.append(_mismatch(argv, cwd, got, want))
        else:
            result.links += 1
            extra = [f for f in got if f not in want]
            if extra:
                result.problems.append(f"link step adds {' '.join(extra)}: {_short(argv, cwd)}")
    result.problems += _unaudited_objects(tree, objects_logged, since)
    if result.compiles == 0:
        result.problems.append(f"no compile command was recorded in {compile_log.name}: "
                               "the build did not use the audited compiler")
    if len(result.problems) > MAX_PROBLEMS:
        extra = len(result.problems) - MAX_PROBLEMS
        result.problems = result.problems[:MAX_PROBLEMS] + [f"... and {extra} more"]
    result.verified = not result.problems
    return result


def _records(log: Path) -> list[dict]:
    if not log.exists():
        return []
    # Arguments need not be UTF-8; undecodable bytes must not hide a command from the audit.
    lines = log.read_text(errors="replace").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _dedupe(flags: list[str]) -> list[str]:
    """Repeating a flag changes nothing; a different flag, or a different order, does."""
    seen: list[str] = []
    for f in flags:
        if f not in seen:
            seen.append(f)
    return seen


def _outputs(argv: list[str], cwd: Path) -> set[Path]:
    if "-o" in argv:
        i = argv.index("-o")
        if i + 1 < len(argv):
            return {_norm(cwd / argv[i + 1])}
    sources = [a for a in argv[1:] if a.endswith(SOURCE_SUFFIXES)]
    return {_norm(cwd / (Path(s).stem + ".o")) for s in sources}


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


def _short(argv: list[str], cwd: Path) -> str:
    """The command as a user would paste it, without its longest include lists."""
    text = " ".join(argv)
    return (text if len(text) < 400 else text[:400] + " ...") + f"  (in {cwd})"
