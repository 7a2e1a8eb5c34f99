"""What the compiler says it did to each function: its vectorisation remarks.

A remarks rebuild compiles a variant's recorded compile commands again (compile.jsonl, the
wrapper's log of the variant's own build: the same compiler, flags and sources) with the
compiler's optimisation record switched on, every object written to a scratch folder so the
variant's tree is left as it was:

  gcc:   -fsave-optimization-record writes <object>.c.opt-record.json.gz, JSON records holding
         the -fopt-info-vec remarks (same messages) with the function each belongs to;
  clang: -fsave-optimization-record -foptimization-record-passes=loop-vectorize|slp-vectorizer
         writes <object>.opt.yaml, YAML documents (!Passed, !Missed, !Analysis) of the
         -Rpass=loop-vectorize family, each with its Function.

The text forms (-fopt-info-vec on stderr, -Rpass=loop-vectorize) name a file and line but not
the function, and a profile's row is a function, hence the records.

The compiler runs directly, not through ccache: ccache (4.7.5 here) caches the object of a
command with -fsave-optimization-record but not the record, so a cache hit leaves no remarks.
The parsed remarks are kept in flagsweep's cache instead, keyed by the commands and the
compiler, so a variant's rebuild happens once. LTO: with -flto the compile step writes IR and
the vectoriser runs at link time, so a -flto variant's compile records hold no vectorisation;
its remarks are marked as not collected rather than read as "nothing vectorised". A
profile-guided gcc build likewise (gcc finds each object's profile by the object's path); a
clang one reads its single merged profile, and a rebuild that cannot is refused.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shlex
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from flagsweep import process
from flagsweep.compilation import pgo
from flagsweep.errors import FlagsweepError
from flagsweep.explain import symbols
from flagsweep.caches import REMARKS
from flagsweep.files import key_sha256, write_atomic
from flagsweep.host import environment, toolchain
from flagsweep.experiment import flags
from flagsweep.model import FunctionRemarks, RemarksRun

FORMAT = 2                  # of the cached remarks; bump when what is kept changes
SOURCES = (".c", ".cc", ".cpp", ".cxx", ".C", ".c++")
MISSED_KEPT = 5             # per function: the reasons a loop was not vectorised, the first few
COMPILE_TIMEOUT_S = 600.0
CLANG_PASSES = "loop-vectorize|slp-vectorizer"
LOOP = "loop"               # in a vectorised remark: a loop's (gcc "loop vectorized", clang
                            # "vectorized loop"), else a basic block's (SLP)
# Arguments that write files beside the object (dependency files) or elsewhere in the tree;
# the rebuild must not touch the variant's tree. With their argument when they take one.
_WIDTH = re.compile(r"using (\d+) byte vectors")     # gcc's "... vectorized using 32 byte vectors"
_DEP_ALONE = ("-MD", "-MMD", "-MP", "-save-temps")
_DEP_WITH_ARG = ("-MF", "-MT", "-MQ")


def _nothing() -> FunctionRemarks:
    """A function with no remark: every count said, as zero."""
    return FunctionRemarks(vectorized=[], missed=[], missed_total=0, loops=0, blocks=0,
                           widest=None)


@dataclass
class Remarks:
    status: str                              # ok | failed | skipped
    why: str | None = None
    commands: int = 0
    compiler: str | None = None              # gcc | clang
    functions: dict[str, FunctionRemarks] = field(default_factory=dict)

    def of(self, name: str) -> FunctionRemarks | None:
        """A function's remarks for results.json; None when none were collected. A function
        with no remark at all had no loop the vectoriser looked at (or was inlined away)."""
        if self.status != "ok":
            return None
        return self.functions.get(name) or _nothing()

    def summary(self) -> RemarksRun:
        return RemarksRun(status=self.status, why=self.why, commands=self.commands,
                          compiler=self.compiler)


def collect(compile_log: Path, templates: list[Path] | None = None,
            cache: Path | None = None) -> Remarks:
    """The vectorisation remarks of every function the logged compile commands built."""
    try:
        commands = _commands(compile_log, templates or [])
    except FlagsweepError as e:
        return Remarks("failed", str(e))
    if any(_is_lto(argv) for argv, _ in commands):
        return Remarks("skipped", "built with -flto: vectorisation happens at link time, after "
                       "the compile commands' records", len(commands))
    try:
        family = _family(commands)
    except FlagsweepError as e:
        return Remarks("failed", f"the compiler of {compile_log} cannot be run: {e}")
    if family == "gcc" and any(a.startswith("-fprofile-use") for argv, _ in commands for a in argv):
        return Remarks("skipped", "a profile-guided gcc build: gcc finds each object's profile by "
                       "the object's path, and the remarks rebuild writes its objects elsewhere, "
                       "so its remarks would be those of a build without the profile",
                       len(commands), family)
    where = (cache or REMARKS.folder()) / f"{key_sha256([FORMAT, family, commands])[:24]}.json"
    if where.is_file():
        return _load(where)
    try:
        found = _rebuild(commands, family)
    except FlagsweepError as e:
        return Remarks("failed", str(e), len(commands), family)
    found.commands, found.compiler = len(commands), family
    _keep(where, found)
    return found


def _keep(where: Path, found: Remarks) -> None:
    """Into the cache; a cache that cannot be written costs the next run a rebuild, no more."""
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(where, json.dumps({"commands": found.commands, "compiler": found.compiler,
                                        "functions": {n: r.dump()
                                                      for n, r in found.functions.items()}}))
    except (OSError, FlagsweepError):
        pass


def _load(path: Path) -> Remarks:
    kept = json.loads(path.read_text())
    return Remarks("ok", None, kept["commands"], kept["compiler"],
                   {n: FunctionRemarks.model_validate(r) for n, r in kept["functions"].items()})


# ---- the commands ---------------------------------------------------------------------------

def _commands(compile_log: Path, templates: list[Path]) -> list[tuple[list[str], str]]:
    """(argv, cwd) of each successful compile of a source file, in the log's order."""
    if not compile_log.is_file():
        raise FlagsweepError(f"{compile_log} is missing: the variant's compile commands were "
                             "not recorded, so there is nothing to rebuild with remarks")
    found = []
    for n, line in enumerate(compile_log.read_text().splitlines(), 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise FlagsweepError(f"{compile_log}, line {n}: not JSON ({e})") from e
        argv = rec.get("argv") or []
        if rec.get("exit") == 0 and "-c" in argv and any(a.endswith(SOURCES) for a in argv[1:]):
            found.append((argv, _cwd(rec.get("cwd") or "", templates, compile_log)))
    if not found:
        raise FlagsweepError(f"{compile_log} records no successful compile of a source file")
    return found


def _cwd(recorded: str, templates: list[Path], compile_log: Path) -> str:
    """The folder the command ran in, or the same place in the compiler's configured tree when
    that folder is gone (a build reused from the cache was built in an earlier run's folder:
    its relative -I paths and config.h are those of the configured tree it was copied from)."""
    if Path(recorded).is_dir():
        return recorded
    parts = Path(recorded).parts
    if "tree" in parts:
        at = len(parts) - 1 - parts[::-1].index("tree")
        below = Path(*parts[at + 1:])
        for t in templates:
            if (t / below).is_dir():
                return str(t / below)
    raise FlagsweepError(f"{compile_log}: the folder its commands ran in, {recorded}, is gone and "
                         "no configured tree has its place; rebuild the variant (run --rebuild) "
                         "to collect its remarks")


def _family(commands: list[tuple[list[str], str]]) -> str:
    """The family of the logged commands' compiler, once each command has shown it runs a
    compiler (toolchain.resolve) and nothing else: a results folder can come from anyone, and
    its log is run again here."""
    for argv, _ in commands:
        if found := flags.program_option(argv[1:]):
            raise FlagsweepError(f"a logged command holds {flags.abbreviated(found)}, with which "
                                 "the compiler runs or loads another program; flagsweep does not "
                                 "run it again")
    families = {toolchain.resolve(program).family for program in {a[0] for a, _ in commands}}
    if len(families) != 1:
        raise FlagsweepError(f"its commands mix compilers of families {sorted(families)}")
    return families.pop()


def _is_lto(argv: list[str]) -> bool:
    return any(a == "-flto" or a.startswith("-flto=") for a in argv)


def rewritten(argv: list[str], obj: Path, family: str) -> list[str]:
    """The command with its object in the scratch folder, no dependency files, and the
    optimisation record on."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "-o" or a in _DEP_WITH_ARG:
            skip = True
        elif (a.startswith("-o") or a.startswith(_DEP_WITH_ARG) or a in _DEP_ALONE
              or a.startswith(("-Wp,-MD,", "-Wp,-MMD,", "-save-temps="))):
            pass
        else:
            out.append(a)
    out += ["-o", str(obj), "-fsave-optimization-record"]
    if family == "clang":
        out += [f"-foptimization-record-passes={CLANG_PASSES}"]
    return out


def _rebuild(commands: list[tuple[list[str], str]], family: str) -> Remarks:
    with tempfile.TemporaryDirectory(prefix="flagsweep-remarks-") as scratch:
        jobs = [(rewritten(argv, Path(scratch) / str(i) / "o.o", family), cwd, Path(scratch) / str(i))
                for i, (argv, cwd) in enumerate(commands)]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            parsed = list(pool.map(lambda job: _compile(*job, family), jobs))
    vec: dict[str, Counter] = {}
    missed: dict[str, Counter] = {}
    for per_file in parsed:
        for name, (v, m) in per_file.items():
            vec.setdefault(name, Counter()).update(v)
            missed.setdefault(name, Counter()).update(m)
    found = Remarks("ok")
    for name in vec:
        found.functions[name] = FunctionRemarks(
            vectorized=_counted(vec[name]), missed=_counted(missed[name])[:MISSED_KEPT],
            missed_total=sum(missed[name].values()),
            loops=sum(n for m, n in vec[name].items() if LOOP in m),
            blocks=sum(n for m, n in vec[name].items() if LOOP not in m),
            widest=max((int(w) for m in vec[name] for w in _WIDTH.findall(m)), default=None))
    return found


def _counted(messages: Counter) -> list[str]:
    """Each message once, in the order first seen, with how often it was said when more than
    once (one line of source can hold several loops, and SLP reports each basic block)."""
    return [m if n == 1 else f"{m} (x{n})" for m, n in messages.items()]


def _compile(argv: list[str], cwd: str, folder: Path, family: str) -> dict:
    folder.mkdir()
    result = process.run(argv, cwd=cwd, timeout=COMPILE_TIMEOUT_S,
                         env=environment.clean())
    if not result.ok:
        raise FlagsweepError(f"the remarks rebuild failed (exit {result.returncode}) in {cwd}: "
                             f"{shlex.join(argv)}\n{result.tail(5)}")
    unfit = pgo.mismatched(result.stderr) + [line for line in result.stderr.splitlines()
                                             if pgo.MISSING.search(line)]
    if unfit:
        # clang's one profile file: gone or changed since the build, so this compile would not
        # be the measured code.
        raise FlagsweepError(f"the remarks rebuild of {shlex.join(argv)} did not use the "
                             f"profile the build used: {unfit[0]}")
    records = sorted(folder.glob("*.opt-record.json.gz" if family == "gcc" else "*.opt.yaml"))
    if not records:
        raise FlagsweepError(f"{argv[0]} wrote no optimisation record in {folder} for "
                             f"{shlex.join(argv)}; expected -fsave-optimization-record's file")
    found: dict[str, tuple[list[str], list[str]]] = {}
    for path in records:
        for name, kind, text in (gcc_remarks(path) if family == "gcc" else clang_remarks(path)):
            vec, missed = found.setdefault(symbols.canonical(name), ([], []))
            (vec if kind == "vectorized" else missed).append(text)
    return found


# ---- the records ----------------------------------------------------------------------------

def gcc_remarks(path: Path):
    """(function, vectorized|missed, "file:line: message") from a gcc optimisation record.

    The record is [metadata, passes, remarks]; passes and remarks nest through "children", and
    each remark names its pass by id. The loop vectoriser (pass "vect") says "loop vectorized
    using N byte vectors" (an epilogue with smaller vectors too) or, for a loop it gave up on,
    "not vectorized: <reason>"; the basic-block vectoriser (pass "slp") says "basic block part
    vectorized using N byte vectors". slp's failures are per statement and left out, as
    -fopt-info-vec-missed readers learn to skip them. gcc versions the layout in the metadata's
    "format" ("1" in gcc 10-14)."""
    try:
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
    except (OSError, EOFError, json.JSONDecodeError) as e:
        raise FlagsweepError(f"{path}: not a gcc optimisation record ({e})") from e
    if not (isinstance(doc, list) and len(doc) == 3 and isinstance(doc[1], list)
            and isinstance(doc[2], list)):
        raise FlagsweepError(f"{path}: expected gcc's [metadata, passes, records] layout")
    passes = _pass_names(doc[1])
    stack = doc[2][::-1]            # popped in the compiler's order, children after their parent
    while stack:
        rec = stack.pop()
        stack.extend((rec.get("children") or [])[::-1])
        name, kind, step = rec.get("function"), rec.get("kind"), passes.get(rec.get("pass"))
        if not name or step not in ("vect", "slp"):
            continue
        text = _gcc_message(rec.get("message") or [])
        if kind == "success" and " vectorized using " in text:
            yield name, "vectorized", _where(rec.get("location"), text)
        elif kind == "failure" and step == "vect" and text.startswith("not vectorized"):
            yield name, "missed", _where(rec.get("location"), text)


def _pass_names(passes: list) -> dict[str, str]:
    names, stack = {}, list(passes)
    while stack:
        p = stack.pop()
        names[p.get("id")] = p.get("name")
        stack.extend(p.get("children") or [])
    return names


def _gcc_message(parts: list) -> str:
    """A message's strings and its embedded items ({"expr": ...}, {"stmt": ...}, {"symtab_node":
    ...}; an item's "location" is where, not what, and is left out)."""
    text = "".join(p if isinstance(p, str) else
                   next((str(v) for k, v in p.items() if k != "location" and isinstance(v, str)), "")
                   for p in parts)
    return " ".join(text.split())


class _RemarkLoader(yaml.SafeLoader):
    """clang's records tag each document !Passed, !Missed, !Analysis...: read them as mappings
    and keep the tag."""


def _tagged(loader, suffix, node):
    d = loader.construct_mapping(node, deep=True)
    d["_kind"] = suffix
    return d


_RemarkLoader.add_multi_constructor("!", _tagged)


def clang_remarks(path: Path):
    """(function, vectorized|missed, "file:line: message") from a clang optimisation record:
    !Passed documents of the vectorisers are what they vectorised; !Missed and !Analysis of
    loop-vectorize say why a loop was not (-Rpass-missed / -Rpass-analysis)."""
    try:
        docs = list(yaml.load_all(path.read_text(), Loader=_RemarkLoader))
    except (OSError, yaml.YAMLError) as e:
        raise FlagsweepError(f"{path}: not a clang optimisation record ({e})") from e
    for d in docs:
        if not isinstance(d, dict) or not d.get("Function"):
            continue
        text = " ".join("".join(str(v) for a in d.get("Args") or [] if isinstance(a, dict)
                                for v in a.values()).split())
        loc = d.get("DebugLoc") or {}
        where = {"file": loc.get("File"), "line": loc.get("Line")}
        if d["_kind"] == "Passed" and d.get("Pass") in CLANG_PASSES.split("|"):
            yield d["Function"], "vectorized", _where(where, text)
        elif d["_kind"] in ("Missed", "Analysis") and d.get("Pass") == "loop-vectorize" and text:
            yield d["Function"], "missed", _where(where, text)


def _where(location: dict | None, text: str) -> str:
    loc = location or {}
    if not loc.get("file"):
        return text
    return f"{Path(str(loc['file'])).name}:{loc.get('line')}: {text}"
