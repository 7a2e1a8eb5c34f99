"""Builds: every variant of a matrix, through the CMake superbuild, audited and fingerprinted.

The flow: get the source tree; install the recording compiler wrappers; write the manifest the
step driver reads and the plan CMake reads; configure and run the superbuild with Ninja (`-k 0`,
so one broken variant never stops the rest); then read each variant's status, audit its compile
log and hash its code. The result per variant uses the results contract's `build` names.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from flagsweep import files, process, shipped
from flagsweep.caches import CONFIGURED, WRAPPERS
from flagsweep.compilation import audit as audit_mod
from flagsweep.compilation import cache as build_cache
from flagsweep.compilation import (fetch, fingerprint, own_build, pgo, provenance, snapshots, steps,
                                   wrapper)
from flagsweep.errors import BuildError
from flagsweep.host import environment, toolchain
from flagsweep.experiment.matrix import Matrix, Cell
from flagsweep.experiment.target import Target

log = logging.getLogger("flagsweep.compilation.variants")
# Bump when the step driver changes how a configure tree is made: cached trees are then redone
# (2: configure runs in a written environment; a tree configured under a CONFIG_SITE is not
# reused).
TEMPLATE_FORMAT = 2


@dataclass
class VariantBuild:
    variant: Cell
    status: str                       # "ok" | "failed" | "flags-mismatch"
    log: Path
    seconds: float | None = None
    binary: Path | None = None
    code_sha256: str | None = None
    functions_sha256: str | None = None   # by name and size, whatever their places (layouts)
    size_bytes: int | None = None
    pgo: dict | None = None               # profile-guided: training, profile sha256, matched
    sizes: dict[str, int] | None = None   # the ELF image: text, data, bss (fingerprint.sizes)
    cpu_seconds: float | None = None      # the build's CPU time (configure, compiles, link)
    identical_to: str | None = None
    flags_verified: bool = False
    detail: str = ""
    audit: dict | None = field(default=None)
    reused: bool = False              # from the build cache: not configured, compiled or linked
    fixes: list[str] = field(default_factory=list)   # what to change, said once per sweep
    extra_flags: dict[str, int] = field(default_factory=dict)   # flag -> compile lines it was on
    source_flags: dict[str, int] = field(default_factory=dict)  # flag -> places the source sets it
    dropped: dict[str, str] = field(default_factory=dict)   # project option -> where it came from

    def contract(self, out_dir: Path) -> dict:
        """The results contract's `build` object."""
        return {"status": self.status, "seconds": self.seconds,
                "log": str(self.log.relative_to(out_dir)),
                "binary": str(self.binary) if self.binary else None,
                "code_sha256": self.code_sha256, "functions_sha256": self.functions_sha256,
                "size_bytes": self.size_bytes, "sizes": self.sizes,
                "cpu_seconds": self.cpu_seconds, "lto": self.lto, "pgo": self.pgo,
                "identical_to": self.identical_to, "flags_verified": self.flags_verified,
                "detail": self.detail, "audit": self.audit, "reused": self.reused}

    @property
    def lto(self) -> bool | None:
        """Link-time optimised: -flto in its flags, and (for a verified build) on the link
        that wrote the binary, which the audit checks (provenance.link_flags)."""
        if not any(f.startswith("-flto") for f in self.variant.flags):
            return None
        return self.flags_verified


    def doc(self, out_dir: Path) -> dict:
        """The variant as results.json and builds.json list it."""
        v = self.variant
        layout = {"layout_of": v.layout_of, "layout": v.layout} if v.layout_of else {}
        return {"id": v.id, "compiler": v.compiler, "flags": list(v.flags),
                "factors": v.factors, **layout, "build": self.contract(out_dir)}


def write_summary(out: Path, target: Target, recipe, m: Matrix,
                  builds: list[VariantBuild]) -> Path:
    """builds.json: what `flagsweep build` reports, also kept beside a run's results."""
    summary = {"target": target.name, "recipe": recipe.name, "design": m.design,
               "baseline": m.baseline.id,
               "compilers": [toolchain.describe(toolchain.resolve(c))
                             for c in sorted({v.compiler for v in m.variants})],
               "variants": [b.doc(out) for b in builds],
               "skipped": [{"id": s.variant.id, "flags": list(s.variant.flags), "reason": s.reason}
                           for s in m.skipped]}
    path = out / "builds.json"
    path.write_text(json.dumps(summary, indent=2))
    return path


@dataclass(frozen=True)
class Options:
    out_dir: Path
    jobs: int = 2
    offline: bool = False
    source_dir: Path | None = None
    cache: Path | None = None
    rebuild: bool = False       # build every variant, whatever the build cache holds
    training: Training | None = None    # what a profile-guided variant is trained on


@dataclass(frozen=True)
class Training:
    """A profile-guided build's training input: not the measured one (pgo.py)."""
    path: Path
    sha256: str
    description: str


def source_tree(target: Target, opts: Options) -> Path:
    """The target's source: --source-dir, a shipped local folder, or the fetched tarball."""
    if opts.source_dir is not None:
        return fetch.use_source_dir(opts.source_dir)
    local = target.local_source()
    if local is not None:
        return local
    return fetch.prepare(target.tarball(), offline=opts.offline, cache=opts.cache)


# Told of each variant whose build ended: (variant id, "ok" or "failed", seconds, done, total).
OnBuilt = Callable[[str, str, "float | None", int, int], None]


def build_all(target: Target, matrix: Matrix, opts: Options,
              on_built: OnBuilt | None = None) -> list[VariantBuild]:
    """Build every variant of the matrix; never raises for a variant's own failure.

    What can refuse the start (the paths, the environment, the compilers, a profile-guided
    variant's needs, the wrappers) is decided before the first file of the build is written
    into the output folder, so that a refused start leaves the folder as it found it and the
    same --out is accepted once the cause is fixed."""
    cache = opts.cache or files.cache_dir()
    out = opts.out_dir.resolve()
    refuse_uncarried(out, "output folder", "choose another --out")
    refuse_uncarried(Path(sys.executable), "flagsweep's Python", "install flagsweep elsewhere")
    refuse_uncarried(shipped.IMPORT_ROOT, "flagsweep's package folder", "install it elsewhere")
    refuse_uncarried(cache, "cache folder", "set FLAGSWEEP_CACHE to another folder")
    refuse_earlier_build(out)
    if ignored := environment.ignored():
        log.warning("the build ignores %s from the environment: a build's compiler, flags and "
                    "ccache settings are flagsweep's own, and of the environment it reads only "
                    "%s (docs/architecture.md, ccache)", ", ".join(ignored),
                    " and ".join(environment.PASSED))
    if unsafe := environment.search_path(os.environ.get("PATH", ""))[1]:
        log.warning("the build's PATH leaves out %s: a program found there would run in the "
                    "build as you, and others could put one there", "; ".join(unsafe))
    source = source_tree(target, opts)
    refuse_uncarried(source, "source folder", "choose another --source-dir" if opts.source_dir
                     else "move the target's source, or set FLAGSWEEP_CACHE")
    sid = _source_id(target, source, opts)
    keys = _keys(target, matrix.variants, sid, opts)
    hits = {} if opts.rebuild else {vid: hit for vid, k in keys.items()
                                    if (hit := build_cache.load(k, cache)) is not None}
    todo = [v for v in matrix.variants if v.id not in hits]
    cmake = target.spec.build.system == "cmake"
    manifest = _manifest(target, todo, out / "source" if cmake else source, out, cache,
                         opts.jobs, opts.training)
    own = _own_flags(target, todo, sid, cache, opts.rebuild)
    # The start is accepted: from here on the output folder holds this build.
    (out / "builds").mkdir(parents=True, exist_ok=True)
    reused = {v.id: _reuse(v, *hits[v.id], target, out) for v in matrix.variants if v.id in hits}
    for done, vid in enumerate(reused, 1):
        if on_built:
            on_built(vid, "reused", None, done, len(matrix.variants))
    if cmake:
        _linked(source, out)
    manifest["variants"].update(_own_flags_entries(own, manifest, out))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    # what the source holds before any build touches it: the code a compile may read as it is
    pristine = snapshots.pristine(source) if todo else frozenset()
    if todo:
        _write_plan(manifest, out)
        with _watching(out, [v.id for v in todo], on_built, len(reused), len(matrix.variants)):
            _run_superbuild(out, opts.jobs)
    _own_flags_built(own, manifest, cache)
    # once per variant: a tune's batch may hold one set twice, and the audit reads (and then
    # removes) the snapshots its one build kept
    built: dict[str, VariantBuild] = {}
    for v in todo:
        if v.id not in built:
            built[v.id] = _collect(v, manifest, target, out, own[v.compiler][1], pristine)
    for b in built.values():
        # unchecked for dropped project options (its compiler's own build failed): kept out of
        # the cache, so a later sweep checks it rather than reuse it as verified
        if b.status == "ok" and b.flags_verified and own[b.variant.compiler][1] is not None:
            build_cache.store(keys[b.variant.id], _record(b), b.binary,
                              {"build.log": b.log, "compile.jsonl": b.log.parent / "compile.jsonl"},
                              cache)
    builds = [reused.get(v.id) or built[v.id] for v in matrix.variants]
    _group_identical(builds)
    return builds


def _source_id(target: Target, source: Path, opts: Options) -> str:
    tarball = (target.spec.source.sha256 if opts.source_dir is None
               and target.local_source() is None else None)
    return build_cache.source_id(tarball, source)


def _keys(target: Target, variants: list[Cell], sid: str, opts: Options) -> dict[str, str]:
    """Each variant's build-cache key."""
    flags = target.spec.build.project_flags
    trained = [f"+pgo:{opts.training.sha256}"] if opts.training else ["+pgo"]
    return {v.id: build_cache.key(sid, target.path,
                                  toolchain.describe(toolchain.resolve(v.compiler)),
                                  [*v.flags, *flags, *(trained if v.pgo else [])])
            for v in variants}


# What of a verified build the cache keeps beside its binary and logs.
RECORDED = ("seconds", "code_sha256", "functions_sha256", "size_bytes", "sizes", "cpu_seconds",
            "pgo", "audit")


def _record(b: VariantBuild) -> dict:
    return {name: getattr(b, name) for name in RECORDED}


def _reuse(v: Cell, record: dict, entry: Path, target: Target, out: Path) -> VariantBuild:
    """A cached build laid out as if built here: the binary at its place in the tree, the logs
    beside it (the build log saying where it came from)."""
    vdir = out / "builds" / v.id
    binary = vdir / "tree" / target.spec.build.binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(entry / "binary", binary)
    if (entry / "compile.jsonl").is_file():
        shutil.copy2(entry / "compile.jsonl", vdir / "compile.jsonl")
    told = (f"# reused from the build cache, {entry} (built {record.get('seconds') or 0:.1f} s "
            "then): every input of the build was the same; --rebuild builds it again\n")
    earlier = (entry / "build.log").read_text(errors="replace") if (entry / "build.log").is_file() else ""
    (vdir / "build.log").write_text(told + earlier)
    return VariantBuild(variant=v, status="ok", log=vdir / "build.log", binary=binary,
                        flags_verified=True, reused=True,
                        **{name: record.get(name) for name in RECORDED})


# What a build leaves in its output folder; any of them means the folder was built into before.
BUILD_OUTPUTS = ("manifest.json", "plan.cmake", "superbuild", "superbuild.log", "builds",
                 "builds.json", "source")
# The record a run's (or a tune's) folder holds from its start, naming its id: what shows a
# folder a store row names is that run's (results.stored).
RECORD = "flagsweep.json"
# What a run adds to it (scratch: the check and timing outputs; explain: the profiles).
RUN_OUTPUTS = ("results.json", "samples.csv", "index.html", "summary.md", "scratch", "explain",
               RECORD)


def refuse_earlier_build(out: Path) -> None:
    """Builds start from nothing: in a folder built into before, make finds its targets up to
    date and the audit reads the old compile logs, so the old binaries would be measured; a
    folder holding another run's results would have them overwritten. A name counts even as a
    link (dangling or not): every file flagsweep writes there must be its own."""
    found = [name for name in BUILD_OUTPUTS if os.path.lexists(out / name)]
    if found:
        raise BuildError(f"output folder {out} already holds a build ({', '.join(found)}); "
                         "builds start in a new folder so that no earlier binary or compile log "
                         "is reused: choose another --out, or remove this one")
    found = [name for name in RUN_OUTPUTS if os.path.lexists(out / name)]
    if found:
        raise BuildError(f"output folder {out} already holds another run's outputs "
                         f"({', '.join(found)}); a run starts in a new folder so that no earlier "
                         "result is overwritten or written through: choose another --out, or "
                         "remove this one")


def _linked(source: Path, out: Path) -> Path:
    """The source tree as CMake should see it: through out/source, a link to it.

    CMake names every source file by its absolute path, and ccache hashes the command line, so
    the same code in the cache's tree and in a --source-dir copy missed the cache (64 s instead
    of 3.8 s). Seen through a link in the run's folder, every source tree has one place relative
    to the build trees, and CCACHE_BASEDIR (the run's folder) makes those paths relative: the
    same source is the same cache entry wherever it lives."""
    link = out / "source"
    link.symlink_to(source, target_is_directory=True)
    return link


def _manifest(target: Target, variants: list[Cell], source: Path, out: Path, cache: Path,
              jobs: int, training: Training | None = None) -> dict:
    b = target.spec.build
    names = sorted({v.compiler for v in variants})
    compilers = {n: _wrappers(toolchain.resolve(n), cache) for n in names}
    per_variant_jobs = max(1, jobs // max(1, min(jobs, len(variants))))
    templates = {}
    if b.system == "autotools":  # keyed by a CMake-safe name: a compiler may be a path
        templates = {_slug(n): _template(target, source, n, compilers[n], cache, out)
                     for n in names}
    return {
        "system": b.system, "source": str(source), "binary": b.binary,
        "configure_args": b.configure_args, "make_args": b.make_args,
        "ccache_env": environment.ccache(cache, out), "compilers": compilers,
        "templates": templates,
        "variants": {v.id: _entry(target, v, out, per_variant_jobs, training)
                     for v in variants},
    }


def _entry(target: Target, v: Cell, out: Path, jobs: int, training: Training | None) -> dict:
    """The step driver's view of one variant; a profile-guided one also gets its stages'
    flags and training command, and is audited on its final flags (pgo.py)."""
    vdir = out / "builds" / v.id
    flags = [*v.flags, *target.spec.build.project_flags]
    entry = {"compiler": v.compiler, "template": _slug(v.compiler), "flags": flags,
             "dir": str(vdir), "jobs": jobs}
    if ldflags := provenance.link_flags(flags):     # for make's command line (steps._build_argv)
        entry["ldflags"] = ldflags
    if not v.pgo:
        return entry
    if training is None:
        raise BuildError(f"{v.id} is profile-guided and needs a training input; this command "
                         "builds without one (use `flagsweep build` or `flagsweep run`)")
    family = toolchain.resolve(v.compiler).family
    profiles = vdir / pgo.PROFILE_DIR
    values = {"binary": str(vdir / "tree" / target.spec.build.binary),
              "input": str(training.path), "output": str(vdir / "training.product")}
    entry["flags"] = [*flags, *pgo.use(family, profiles)]
    entry["pgo"] = {"profile_dir": str(profiles), "instrumented": [*flags, *pgo.generate(family, profiles)],
                    "train_argv": [a.format(**values) for a in target.spec.run.argv],
                    "timeout": target.spec.run.timeout, "input": training.description,
                    "profdata": _profdata(v.compiler) if family == "clang" else None}
    return entry


def _profdata(compiler: str) -> str:
    """llvm-profdata of the clang's own LLVM version (a profile's format follows LLVM's)."""
    major = toolchain.resolve(compiler).version.split(".")[0]
    for name in (f"llvm-profdata-{major}", "llvm-profdata"):
        if found := shutil.which(name):
            return found
    raise BuildError(f"clang PGO merges raw profiles with llvm-profdata-{major}, which is not "
                     "installed here (Debian's llvm package has it)")


def _wrappers(compiler: toolchain.Toolchain, cache: Path) -> dict:
    where = WRAPPERS.entry(_slug(compiler.name), cache)
    tools = {"cc": str(wrapper.install(compiler.cc, where / "cc", compiler.cc, wrapper.ccache()))}
    if compiler.cxx:
        tools["cxx"] = str(wrapper.install(compiler.cxx, where / "cxx", compiler.cc,
                                           wrapper.ccache()))
    tools["version"] = compiler.version
    return tools


def _template(target: Target, source: Path, name: str, tools: dict, cache: Path,
              out: Path) -> dict:
    """Where the compiler's configure tree is cached: keyed by everything configure sees."""
    key_parts = [TEMPLATE_FORMAT, str(source), target.spec.build.configure_args, tools,
                 (source / "configure").stat().st_mtime_ns if (source / "configure").exists() else 0,
                 environment.keyed()]
    key = files.key_sha256(key_parts)[:16]
    folder = f"{target.name}-{_slug(name)}-{key}"
    return {"compiler": name, "dir": str(CONFIGURED.entry(folder, cache)),
            "log": str(out / "builds" / f"configure-{_slug(name)}.log")}


def _slug(name: str) -> str:
    """A compiler name usable in file and CMake target names ('/usr/bin/gcc' -> '_usr_bin_gcc')."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", name)


def refuse_uncarried(path: Path, what: str, fix: str) -> None:
    """Refuse a path the build tools cannot take as it is. plan.cmake carries any text (each
    string is a bracket argument), but a newline ends a CMake, Ninja or make line, CMake splits
    a path at ';' into a list, ExternalProject writes paths into CMake scripts of its own
    between '"' unescaped (so '"' and '\\' break them) and passes them on as lists, where
    brackets group elements, and ccache expands '$NAME' in CCACHE_BASEDIR as make does '$(...)'."""
    text = str(path)
    for char in text:
        if ord(char) < 0x20 or ord(char) == 0x7f:
            name = "a newline" if char == "\n" else "a control character"
            why = f"holds {name} (U+{ord(char):04X}), which CMake and Ninja cannot carry in a path"
        elif char in UNCARRIED:
            why = f"holds {char!r}, which {UNCARRIED[char]}, so it cannot be in a path"
        else:
            continue
        raise BuildError(f"{what} {text!r} {why}: {fix}")


# Printable characters a path given to the superbuild may not hold, and who cannot carry them.
UNCARRIED = {";": "CMake reads as a list separator",
             '"': "CMake's ExternalProject writes unescaped into its scripts",
             "\\": "CMake reads as an escape or a Windows path separator",
             "$": "ccache and make expand as a variable",
             "#": "CMake refuses in the name of a file a build step makes",
             "<": "CMake refuses in the name of a file a build step makes",
             ">": "CMake refuses in the name of a file a build step makes",
             "[": "CMake's lists read as a group (a ';' inside it separates nothing)",
             "]": "CMake's lists read as a group (a ';' inside it separates nothing)"}


def cmake_text(text: str) -> str:
    """text as one CMake bracket argument: nothing in it is evaluated (no variable, escape or
    quote), whatever it holds; the bracket's level of '=' is one the text does not close."""
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    return f"[{'=' * level}[{text}]{'=' * level}]"


def _write_plan(manifest: dict, out: Path) -> None:
    def define(name: str, *values: str) -> str:
        return f"set({name} {' '.join(cmake_text(str(v)) for v in values)})"

    lines = [define("FLAGSWEEP_MANIFEST", out / "manifest.json"),
             define("FLAGSWEEP_PYTHON", sys.executable),
             define("FLAGSWEEP_PYTHONPATH", shipped.IMPORT_ROOT),
             define("FLAGSWEEP_SOURCE", manifest["source"]),
             define("FLAGSWEEP_BUILDS", out / "builds"),
             define("FLAGSWEEP_TEMPLATES", *manifest["templates"]),
             define("FLAGSWEEP_VARIANTS", *manifest["variants"])]
    lines += [define(f"FLAGSWEEP_COMPILER_{vid}", v["template"])
              for vid, v in manifest["variants"].items()]
    (out / "plan.cmake").write_text("\n".join(lines) + "\n")


def _run_superbuild(out: Path, jobs: int) -> None:
    sb, logfile = out / "superbuild", out / "superbuild.log"
    env = environment.build({})
    if limit := os.environ.get(CONFIGURED.variable()):   # the step driver trims that cache
        env[CONFIGURED.variable()] = limit
    configure = process.run(["cmake", "-S", shipped.SUPERBUILD, "-B", sb, "-G", "Ninja",
                             f"-DFLAGSWEEP_PLAN={out / 'plan.cmake'}"], log_file=logfile,
                            env=env, guard=True)
    if not configure.ok:
        raise BuildError(f"the superbuild did not configure; see {logfile}")
    started = time.time()
    # Guarded: killed by SIGKILL, flagsweep would leave the whole build running.
    process.run(["cmake", "--build", sb, "-j", str(jobs), "--", "-k", "0"], log_file=logfile,
                env=env, guard=True)
    log.info("superbuild finished in %.1f s", time.time() - started)


@contextmanager
def _watching(out: Path, ids: list[str], on_built: OnBuilt | None, before: int = 0,
              total: int | None = None) -> Iterator[None]:
    """Calls on_built as each variant's status.json says its build ended: the superbuild builds
    every variant in one CMake run, so without this a long build is silent until its end."""
    if on_built is None:
        yield
        return
    said: set[str] = set()

    def poll(final: bool) -> None:
        for vid in ids:
            status = _read_status(out / "builds" / vid)
            ended = status.get("status") in ("ok", "failed")
            if vid not in said and (ended or final):
                said.add(vid)
                on_built(vid, status.get("status") if ended else "failed", status.get("seconds"),
                         before + len(said), total or len(ids))

    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.5):
            poll(False)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
    poll(True)       # what ended in the last half second, and any variant that never started


def _collect(v: Cell, manifest: dict, target: Target, out: Path, own: dict | None = None,
             pristine: frozenset[str] = frozenset()) -> VariantBuild:
    vdir = out / "builds" / v.id
    result = VariantBuild(variant=v, status="failed", log=vdir / "build.log")
    status = _read_status(vdir)
    result.seconds, result.cpu_seconds = status.get("seconds"), status.get("cpu_seconds")
    if status.get("status") != "ok":
        shutil.rmtree(vdir / steps.SNAPSHOTS, ignore_errors=True)
        result.detail = _failure_detail(status, vdir, manifest, v)
        return result
    binary = vdir / "tree" / target.spec.build.binary
    a = audit_mod.audit(vdir / "compile.jsonl", vdir / "tree",
                        expected=manifest["variants"][v.id]["flags"],
                        tolerated=target.spec.build.tolerated_flags,
                        since=status["build_started"], binary=binary,
                        source=Path(manifest["source"]), pristine=pristine)
    # read by the audit alone: what it judged is in its result
    shutil.rmtree(vdir / steps.SNAPSHOTS, ignore_errors=True)
    dropped = _dropped(own, vdir, manifest, target, a)
    result.audit, result.flags_verified = a.to_json(), a.verified
    result.status = "ok" if a.verified else "flags-mismatch"
    if v.pgo:
        _profile_used(result, manifest["variants"][v.id])
    if not a.verified:
        _log_audit(result.log, a.every_problem)
        result.detail = audit_mod.explain(a, result.log)
        result.fixes = audit_mod.fixes(a, target.path, target.spec.build.tolerated_flags)
        if a.link_missing and a.link_cwd is not None and (fix := steps.link_fix(
                target.spec.build.system, a.link_missing, a.link_cwd, target.spec.build.binary,
                target.path)):
            result.fixes.append(fix)
        if dropped:
            b = target.spec.build
            result.fixes += own_build.fixes(dropped, target.path, b.project_flags, b.dropped_flags)
        result.dropped = {d.option: d.why() for d in dropped}
        result.extra_flags, result.source_flags = a.extra, a.in_source
    result.binary, result.size_bytes = binary, binary.stat().st_size
    result.sizes = fingerprint.sizes(binary)
    result.code_sha256 = fingerprint.code_hash(binary)
    result.functions_sha256 = fingerprint.functions_hash(binary)
    return result


# ---- the project's own build (own_build.py) ------------------------------------------------

def _own_flags(target: Target, todo: list[Cell], sid: str, cache: Path,
               rebuild: bool) -> dict[str, tuple[str, dict | None]]:
    """Per compiler of the variants to build: the cache key of the project's own build and
    its compile lines when the cache has them (None: built in this superbuild)."""
    b = target.spec.build
    config = {"system": b.system, "configure_args": b.configure_args, "make_args": b.make_args}
    out = {}
    for name in sorted({v.compiler for v in todo}):
        k = own_build.key(sid, config, toolchain.describe(toolchain.resolve(name)))
        out[name] = (k, None if rebuild else own_build.load(k, cache))
    return out


def _own_flags_entries(own: dict[str, tuple[str, dict | None]], manifest: dict,
                       out: Path) -> dict[str, dict]:
    """The superbuild entries of the project's own builds the cache does not have: a variant
    of the compiler without flags of flagsweep's own, built beside the real ones."""
    jobs = next((e["jobs"] for e in manifest["variants"].values()), 1)
    return {f"{own_build.ID_PREFIX}{_slug(name)}": {
                "compiler": name, "template": _slug(name), "flags": [], "own_flags": True,
                "dir": str(out / "builds" / f"{own_build.ID_PREFIX}{_slug(name)}"), "jobs": jobs}
            for name, (_, known) in own.items() if known is None}


def _own_flags_built(own: dict[str, tuple[str, dict | None]], manifest: dict,
                     cache: Path) -> None:
    """Read and cache the project's own builds that this superbuild ran; one that failed is
    said, and its variants go unchecked for dropped options."""
    for name, (k, known) in list(own.items()):
        if known is not None:
            continue
        vdir = Path(manifest["variants"][f"{own_build.ID_PREFIX}{_slug(name)}"]["dir"])
        if _read_status(vdir).get("status") != "ok":
            log.warning("the project's own build with %s (its own CFLAGS, none of flagsweep's) "
                        "did not succeed, so no variant is checked for project options it "
                        "drops: see %s", name, vdir / "build.log")
            continue
        compiles = own_build.compiles(vdir / "compile.jsonl", vdir / "tree",
                                      Path(manifest["source"]))
        own[name] = (k, {"compiles": compiles})
        own_build.store(k, own[name][1], cache)


def _dropped(own: dict | None, vdir: Path, manifest: dict, target: Target,
             a: audit_mod.Audit) -> list[own_build.Dropped]:
    """The project options the variant's build dropped, made the audit's first problem."""
    if own is None:
        return []
    mine = own_build.compiles(vdir / "compile.jsonl", vdir / "tree", Path(manifest["source"]))
    found = own_build.dropped(own, mine, target.spec.build.dropped_flags)
    if found:
        why = own_build.problem(found, len(mine))
        a.every_problem.insert(0, why)
        if a.problems is not a.every_problem:     # the audit cut its list short
            a.problems.insert(0, why)
        a.verified = False
    return found


def _profile_used(result: VariantBuild, entry: dict) -> None:
    """A profile-guided build whose last stage says a profile was missing or did not match is
    not the build it claims to be: flags-mismatch, with the compiler's words."""
    spec = entry["pgo"]
    text = result.log.read_text(errors="replace")
    last = text[text.rfind("flagsweep: training run"):]
    problems, absent = pgo.mismatched(last), pgo.missing(last)
    compiles = (result.audit or {}).get("compiles") or 0
    profile = pgo.profile_sha256(Path(spec["profile_dir"]))
    if not problems and (profile is None or absent >= compiles):
        problems = [f"no compile of the last stage found its profile ({absent} said so, "
                    f"{compiles} compiles)"]
    result.pgo = {"training": " ".join(spec["train_argv"]), "input": spec["input"],
                  "profile_sha256": profile, "matched": not problems,
                  "objects_without_profile": absent,
                  "use_flags": [f for f in entry["flags"] if f.startswith("-fprofile")
                                or f == "-Wmissing-profile"]}
    if result.pgo["matched"]:
        return
    result.flags_verified, result.status = False, "flags-mismatch"
    why = problems[0]
    result.detail = (f"profile-guided build: {why} ({len(problems)} such line(s) in "
                     f"{result.log.name}); the profile did not fit the code it was used on")


def failures(builds: list[VariantBuild]) -> list[str]:
    """Each build that cannot be measured in one line, then each fix once: five variants with
    the project's own -fPIC are five lines and one tolerated_flags line, not five lists."""
    lines = [f"{b.variant.id}: {b.status}, not measured: {b.detail.splitlines()[0]}"
             for b in builds if b.status != "ok" and b.detail]
    return lines + list(dict.fromkeys(f for b in builds for f in b.fixes))


def _log_audit(log: Path, problems: list[str]) -> None:
    """Every audit problem, after the build's own output, where the summary points."""
    with log.open("a") as f:
        f.write(f"\n---- flag audit: {len(problems)} problems ----\n")
        f.writelines(p + "\n" for p in problems)


def _read_status(vdir: Path) -> dict:
    try:
        return json.loads((vdir / "status.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def _failure_detail(status: dict, vdir: Path, manifest: dict, v: Cell) -> str:
    """Why it failed and the last lines of the log that says so."""
    if not status:  # never started: its configure tree failed, or the superbuild broke
        tmpl = manifest["templates"].get(_slug(v.compiler))
        logfile = Path(tmpl["log"]) if tmpl else vdir.parent.parent / "superbuild.log"
        why = "configure failed" if tmpl else "the superbuild never ran this variant"
        return f"{why}; {logfile}:\n{_excerpt(logfile)}"
    return f"{status.get('why', 'failed')}; {vdir / 'build.log'}:\n{_excerpt(vdir / 'build.log')}"


# The linker's own complaint ("/usr/bin/ld: unrecognized option ...") carries no "error:"; gcc's
# "collect2: error: ld returned 1 exit status" after it says only that the link failed.
LINKER_SAYS = re.compile(r"(^|/|\s)(ld|ld\.\w+|lld): ")


def _excerpt(path: Path, lines: int = 12) -> str:
    """The compiler's first error lines when there are any (they say why), else the log's tail."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log)"
    errors = list(dict.fromkeys(line.strip() for line in text if " error: " in line
                                or line.lstrip().startswith("error:") or LINKER_SAYS.search(line)))
    return "\n".join(errors[:5] if errors else text[-lines:])


def _group_identical(builds: list[VariantBuild]) -> None:
    hashes = {b.variant.id: b.code_sha256 for b in builds if b.code_sha256}
    groups = fingerprint.group(hashes)
    for b in builds:
        b.identical_to = groups.get(b.variant.id)
