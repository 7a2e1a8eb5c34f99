"""Builds: every variant of a matrix, through the CMake superbuild, audited and fingerprinted.

The flow: get the source tree; install the recording compiler wrappers; write the manifest the
step driver reads and the plan CMake reads; configure and run the superbuild with Ninja (`-k 0`,
so one broken variant never stops the rest); then read each variant's status, audit its compile
log and hash its code. The result per variant uses the results contract's `build` names. What
the superbuild is given, and how it is run, is superbuild.py's.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flagsweep import files, model, shipped
from flagsweep.compilation import audit as audit_mod
from flagsweep.compilation import cache as build_cache
from flagsweep.compilation import (binaries, dependency, features, fetch, fingerprint,
                                   own_build, package_tests, pgo, snapshots, steps, superbuild)
from flagsweep.compilation.manifest import Manifest, Order, Status
from flagsweep.host import environment, toolchain
from flagsweep.experiment.matrix import Matrix, Cell
from flagsweep.experiment.target import Target

log = logging.getLogger("flagsweep.compilation.variants")


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
    pgo: model.Pgo | None = None          # profile-guided: training, profile sha256, matched
    sizes: dict[str, int] | None = None   # the ELF image: text, data, bss (fingerprint.sizes)
    libraries: list[str] = field(default_factory=list)   # build-tree shared libraries it loads
    external: list[model.SharedLibrary] = field(default_factory=list)   # the others it loads
    cpu_seconds: float | None = None      # the build's CPU time (configure, compiles, link)
    identical_to: str | None = None
    flags_verified: bool = False
    detail: str = ""
    audit: model.AuditSummary | None = None
    reused: bool = False              # from the build cache: not configured, compiled or linked
    fixes: list[str] = field(default_factory=list)   # what to change, said once per sweep
    extra_flags: dict[str, int] = field(default_factory=dict)   # flag -> compile lines it was on
    source_flags: dict[str, int] = field(default_factory=dict)  # flag -> places the source sets it
    dropped: dict[str, str] = field(default_factory=dict)   # project option -> where it came from
    package_tests: model.PackageTests | None = None   # the package's own suite on this build
    dependencies: list[model.DependencyBuild] = field(default_factory=list)   # built with it
    left_out: model.LeftOut | None = None   # a SIMD or assembly path configure left out

    def contract(self, out_dir: Path) -> dict:
        """The results contract's `build` object."""
        return {"status": self.status, "seconds": self.seconds,
                "log": str(self.log.relative_to(out_dir)),
                "binary": str(self.binary) if self.binary else None,
                "code_sha256": self.code_sha256, "functions_sha256": self.functions_sha256,
                "size_bytes": self.size_bytes, "sizes": self.sizes,
                "libraries": self.libraries,
                "external_libraries": [lib.dump() for lib in self.external],
                "cpu_seconds": self.cpu_seconds, "lto": self.lto,
                "pgo": self.pgo.dump() if self.pgo else None,
                "identical_to": self.identical_to, "flags_verified": self.flags_verified,
                "detail": self.detail, "audit": self.audit.dump() if self.audit else None,
                "reused": self.reused,
                "package_tests": self.package_tests.dump() if self.package_tests else None,
                "dependencies": [d.dump() for d in self.dependencies] or None,
                "left_out": self.left_out.dump() if self.left_out else None}

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
    training: superbuild.Training | None = None    # what a profile-guided variant is trained on
    # the package's own test suite on each variant's build: what `run` and `build` ask for
    package_tests: bool = False


def source_tree(target: Target, opts: Options) -> Path:
    """The target's source: --source-dir, a shipped local folder, or the fetched tarball."""
    local = (fetch.use_source_dir(opts.source_dir) if opts.source_dir is not None
             else target.local_source())
    if local is not None:
        if target.spec.build.autoreconf and not (local / "configure").is_file():
            # autoreconf writes into the tree: only ever into the cache's own copy
            log.warning("%s: [build] autoreconf is run on a fetched source only, never in a "
                        "folder of yours; %s has no configure: run `autoreconf -fi` there",
                        target.path, local)
        return local
    return fetch.prepare(target.tarball(), offline=opts.offline, cache=opts.cache)


def build_all(target: Target, matrix: Matrix, opts: Options,
              on_built: superbuild.OnBuilt | None = None) -> list[VariantBuild]:
    """Build every variant of the matrix; never raises for a variant's own failure.

    What can refuse the start (the paths, the environment, the compilers, a profile-guided
    variant's needs, the wrappers) is decided before the first file of the build is written
    into the output folder, so that a refused start leaves the folder as it found it and the
    same --out is accepted once the cause is fixed."""
    cache = opts.cache or files.cache_dir()
    out = opts.out_dir.resolve()
    _refuse_start(out, cache)
    source = source_tree(target, opts)
    superbuild.refuse_uncarried(source, "source folder", "choose another --source-dir"
                                if opts.source_dir
                                else "move the target's source, or set FLAGSWEEP_CACHE")
    deps = fetch.dependencies(target, offline=opts.offline, cache=opts.cache)
    for d in deps:
        superbuild.refuse_uncarried(d.source, f"dependency {d.name}'s source folder",
                                    "move it, or set FLAGSWEEP_CACHE")
    # the dependencies' code is in the binary: another source for the caches
    sid = _source_id(target, source, opts)
    sid = files.key_sha256([sid, dependency.key(deps)]) if deps else sid
    keys = _keys(target, matrix.variants, sid, opts)
    hits = {} if opts.rebuild else {vid: hit for vid, k in keys.items()
                                    if (hit := build_cache.load(k, cache)) is not None}
    todo = [v for v in matrix.variants if v.id not in hits]
    cmake = target.spec.build.system == "cmake"
    manifest = superbuild.manifest(target, todo, out / "source" if cmake else source, out,
                                   cache, opts.jobs, opts.training, deps)
    own = _own_flags(target, todo, sid, cache, opts.rebuild)
    # The start is accepted: from here on the output folder holds this build.
    (out / "builds").mkdir(parents=True, exist_ok=True)
    reused = {v.id: _reuse(v, *hits[v.id], target, out) for v in matrix.variants if v.id in hits}
    for done, vid in enumerate(reused, 1):
        if on_built:
            on_built(vid, "reused", None, done, len(matrix.variants))
    if cmake:
        superbuild.linked(source, out)
    manifest.variants.update(_own_flags_entries(own, manifest, out))
    manifest.write(out / "manifest.json")
    # what the source holds before any build touches it: the code a compile may read as it is
    pristine = snapshots.pristine(source) if todo else frozenset()
    if todo:
        superbuild.write_plan(manifest, out)
        with superbuild.watching(out, [v.id for v in todo], on_built, len(reused),
                                 len(matrix.variants)):
            superbuild.run(out, opts.jobs)
    _own_flags_built(own, manifest, cache)
    # once per variant: a tune's batch may hold one set twice, and the audit reads (and then
    # removes) the snapshots its one build kept
    built: dict[str, VariantBuild] = {}
    for v in todo:
        if v.id not in built:
            built[v.id] = _collect(v, manifest, target, out, own[v.compiler][1], pristine)
    builds = [reused.get(v.id) or built[v.id] for v in matrix.variants]
    for b in builds:
        b.dependencies = dependency.records(deps)
    _group_identical(builds)
    # Asked for (a suite can take longer than the sweep: gzip's, zstd's, flac's), or named by
    # the target file, whose author chose that cost.
    if opts.package_tests or isinstance(target.spec.build.tests, list):
        _package_tests(builds, target, manifest)
    # after the package's own tests: a reused build carries their result and log
    for b in built.values():
        # unchecked for dropped project options (its compiler's own build failed): kept out of
        # the cache, so a later sweep checks it rather than reuse it as verified
        # A build-tree library stays out too: the cache keeps the binary alone, and a reused
        # binary would load whatever its run path finds, not this build's library.
        if (b.status == "ok" and b.flags_verified and not b.libraries
                and own[b.variant.compiler][1] is not None):
            build_cache.store(keys[b.variant.id], _record(b), b.binary,
                              {"build.log": b.log, "compile.jsonl": b.log.parent / "compile.jsonl",
                               package_tests.LOG: b.log.parent / package_tests.LOG}, cache)
    return builds


def _package_tests(builds: list[VariantBuild], target: Target, manifest: Manifest) -> None:
    """The package's own suite, once per distinct build made here: a layout copy and identical
    code are the build they copy, and a cached build has no tree to test in (it carries the
    result of the suite run on its binary when it was built, if one was)."""
    spec = target.spec.build
    for b in builds:
        if b.status != "ok" or b.reused or b.identical_to or b.variant.layout_of:
            continue
        vdir = b.log.parent
        make = (steps.make_variables(manifest, b.variant.id)
                if spec.system in ("autotools", "make") else [])
        argv = package_tests.command(vdir / "tree", spec.tests, make)
        # the build's LDFLAGS, where it had them in make's environment (steps.make_environment)
        env = manifest.ccache_env | (steps.make_environment(manifest, b.variant.id)
                                     if spec.system == "make" else {})
        done = package_tests.run(vdir / "tree", argv, vdir, spec.tests_timeout, env,
                                 steps.whole_build(manifest, b.variant.id))
        where = str(Path(done.log).relative_to(vdir.parent.parent)) if done.log else None
        b.package_tests = done.model_copy(update={"log": where})
        if done.status not in ("passed", "none"):
            log.warning("%s fails its own tests (%s, %s): see %s", b.variant.id, done.status,
                        " ".join(argv or []), done.log)
    # identical code has its representative's result, said so (checks.py does the same)
    by_id = {b.variant.id: b for b in builds}
    for b in builds:
        rep = by_id.get(b.identical_to) if b.identical_to else None
        if rep is not None and rep.package_tests is not None and b.package_tests is None:
            b.package_tests = rep.package_tests


def _refuse_start(out: Path, cache: Path) -> None:
    """The paths the build tools cannot take, a folder built into before, and what of the
    environment the build leaves out, before anything is written."""
    superbuild.refuse_uncarried(out, "output folder", "choose another --out")
    superbuild.refuse_uncarried(Path(sys.executable), "flagsweep's Python",
                                "install flagsweep elsewhere")
    superbuild.refuse_uncarried(shipped.IMPORT_ROOT, "flagsweep's package folder",
                                "install it elsewhere")
    superbuild.refuse_uncarried(cache, "cache folder", "set FLAGSWEEP_CACHE to another folder")
    superbuild.refuse_earlier_build(out)
    if ignored := environment.ignored():
        log.warning("the build ignores %s from the environment: a build's compiler, flags and "
                    "ccache settings are flagsweep's own, and of the environment it reads only "
                    "%s (docs/architecture.md, ccache)", ", ".join(ignored),
                    " and ".join(environment.PASSED))
    if unsafe := environment.search_path(os.environ.get("PATH", ""))[1]:
        log.warning("the build's PATH leaves out %s: a program found there would run in the "
                    "build as you, and others could put one there", "; ".join(unsafe))


def _source_id(target: Target, source: Path, opts: Options) -> str:
    fetched = target.tarball() if opts.source_dir is None else None
    sid = build_cache.source_id(fetched.identity if fetched else None, source)
    # a tarball unpacked otherwise (strip_components, Debian's patches, autoreconf) is another
    # tree: the project's own build, whose key holds no target file, must not be taken from it
    return ":".join([sid, *fetched.unpacking]) if fetched else sid


def _keys(target: Target, variants: list[Cell], sid: str, opts: Options) -> dict[str, str]:
    """Each variant's build-cache key."""
    flags = target.spec.build.project_flags
    trained = [f"+pgo:{opts.training.sha256}"] if opts.training else ["+pgo"]
    return {v.id: build_cache.key(sid, target.path,
                                  toolchain.describe(toolchain.resolve(v.compiler)),
                                  [*v.flags, *flags, *(trained if v.pgo else [])])
            for v in variants}


class Kept(BaseModel):
    """What of a verified build the cache keeps beside its binary and logs (cache.py adds when
    it was stored and the binary's sha256)."""
    model_config = ConfigDict(extra="forbid")

    seconds: float | None = None
    code_sha256: str | None = None
    functions_sha256: str | None = None
    size_bytes: int | None = None
    sizes: dict[str, int] | None = None
    cpu_seconds: float | None = None
    pgo: model.Pgo | None = None
    audit: model.AuditSummary | None = None
    package_tests: model.PackageTests | None = None   # the suite was run on this very binary
    left_out: model.LeftOut | None = None     # what its configure said it left out
    stored: float | None = None
    binary_sha256: str | None = None


# The names VariantBuild and Kept share: what a reused build takes from its entry.
RECORDED = ("seconds", "code_sha256", "functions_sha256", "size_bytes", "sizes", "cpu_seconds",
            "pgo", "audit", "package_tests", "left_out")


def _record(b: VariantBuild) -> dict:
    return Kept(**{name: getattr(b, name) for name in RECORDED}).model_dump(mode="json")


def _reuse(v: Cell, record: dict, entry: Path, target: Target, out: Path) -> VariantBuild:
    """A cached build laid out as if built here: the binary at its place in the tree, the logs
    beside it (the build log saying where it came from)."""
    kept = Kept.model_validate(record)
    vdir = out / "builds" / v.id
    binary = vdir / "tree" / target.spec.build.binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(entry / "binary", binary)
    for name in ("compile.jsonl", package_tests.LOG):
        if (entry / name).is_file():
            shutil.copy2(entry / name, vdir / name)
    told = (f"# reused from the build cache, {entry} (built {kept.seconds or 0:.1f} s "
            "then): every input of the build was the same; --rebuild builds it again\n")
    earlier = (entry / "build.log").read_text(errors="replace") if (entry / "build.log").is_file() else ""
    (vdir / "build.log").write_text(told + earlier)
    # only a binary without build-tree libraries is cached: what it loads from outside is read
    # here, where it runs
    return VariantBuild(variant=v, status="ok", log=vdir / "build.log", binary=binary,
                        flags_verified=True, reused=True,
                        external=_external(binary, vdir / "tree"),
                        **{name: getattr(kept, name) for name in RECORDED})


def _collect(v: Cell, manifest: Manifest, target: Target, out: Path,
             own: own_build.Reference | None = None,
             pristine: frozenset[str] = frozenset()) -> VariantBuild:
    vdir = out / "builds" / v.id
    result = VariantBuild(variant=v, status="failed", log=vdir / "build.log")
    status = Status.read(vdir)
    if status is not None:
        result.seconds, result.cpu_seconds = status.seconds, status.cpu_seconds
    if status is None or status.status != "ok":
        shutil.rmtree(vdir / steps.SNAPSHOTS, ignore_errors=True)
        result.detail = _failure_detail(status, vdir, manifest, v)
        return result
    binary = vdir / "tree" / target.spec.build.binary
    a = audit_mod.audit(vdir / "compile.jsonl", vdir / "tree",
                        expected=manifest.variants[v.id].flags,
                        tolerated=target.spec.build.tolerated_flags,
                        since=status.build_started, binary=binary,
                        source=manifest.source, pristine=pristine)
    # read by the audit alone: what it judged is in its result
    shutil.rmtree(vdir / steps.SNAPSHOTS, ignore_errors=True)
    dropped = _dropped(own, vdir, manifest, target, a)
    result.audit, result.flags_verified = a.summary(), a.verified
    result.left_out = features.found(manifest, v.id)
    result.status = "ok" if a.verified else "flags-mismatch"
    if v.pgo:
        _profile_used(result, manifest.variants[v.id])
    if not a.verified:
        _log_audit(result.log, a.every_problem)
        result.detail = audit_mod.explain(a, result.log)
        b = target.spec.build
        result.fixes = audit_mod.fixes(a, target.path, b.tolerated_flags)
        if a.link_missing and a.link_cwd is not None and (fix := steps.link_fix(
                "configure" if b.configure else b.system, a.link_missing, a.link_cwd, b.binary,
                target.path)):
            result.fixes.append(fix)
        if dropped:
            result.fixes += own_build.fixes(dropped, target.path, b.project_flags, b.dropped_flags)
        result.dropped = {d.option: d.why() for d in dropped}
        result.extra_flags, result.source_flags = a.extra, a.in_source
    _fingerprint(result, binary, vdir / "tree")
    return result


def _external(binary: Path, tree: Path,
              found: binaries.Libraries | None = None) -> list[model.SharedLibrary]:
    """The shared libraries the binary loads from outside its build tree."""
    found = found or binaries.loaded(binary, tree)
    return [model.SharedLibrary(name=name, path=str(path) if path else None,
                                runtime=binaries.is_runtime(name))
            for name, path in found.outside]


def _fingerprint(result: VariantBuild, binary: Path, tree: Path) -> None:
    """The code the variant runs: its binary and the shared libraries it loads from its own
    build tree (their code is built with the variant's flags too); the libraries from outside
    the tree are named, as their code is not the variant's."""
    found = binaries.loaded(binary, tree)
    result.libraries = [str(p) for p in found.inside]
    result.external = _external(binary, tree, found)
    result.binary = binary
    result.size_bytes = sum(p.stat().st_size for p in (binary, *found.inside))
    result.sizes = fingerprint.sizes(binary, found.inside)
    result.code_sha256 = fingerprint.code_hash(binary, found.inside)
    result.functions_sha256 = fingerprint.functions_hash(binary)


# ---- the project's own build (own_build.py) ------------------------------------------------

# Per compiler: the cache key of the project's own build, and what it compiled (None: not yet).
OwnBuilds = dict[str, tuple[str, own_build.Reference | None]]


def _own_flags(target: Target, todo: list[Cell], sid: str, cache: Path,
               rebuild: bool) -> OwnBuilds:
    """Per compiler of the variants to build: the cache key of the project's own build and
    its compile lines when the cache has them (None: built in this superbuild)."""
    b = target.spec.build
    config = {"system": b.system, "configure_args": b.configure_args, "make_args": b.make_args}
    if b.goal:      # built for its goal alone, like the variants (a key without it unchanged)
        config |= {"goal": b.goal, "goal_dir": b.goal_dir}
    out = {}
    for name in sorted({v.compiler for v in todo}):
        k = own_build.key(sid, config, toolchain.describe(toolchain.resolve(name)))
        out[name] = (k, None if rebuild else own_build.load(k, cache))
    return out


def _own_flags_entries(own: OwnBuilds, manifest: Manifest,
                       out: Path) -> dict[str, Order]:
    """The superbuild entries of the project's own builds the cache does not have: a variant
    of the compiler without flags of flagsweep's own, built beside the real ones."""
    jobs = next((e.jobs for e in manifest.variants.values()), 1)
    return {f"{own_build.ID_PREFIX}{superbuild.slug(name)}": Order(
                compiler=name, template=superbuild.slug(name), flags=[], own_flags=True,
                dir=out / "builds" / f"{own_build.ID_PREFIX}{superbuild.slug(name)}",
                jobs=jobs)
            for name, (_, known) in own.items() if known is None}


def _own_flags_built(own: OwnBuilds, manifest: Manifest,
                     cache: Path) -> None:
    """Read and cache the project's own builds that this superbuild ran; one that failed is
    said, and its variants go unchecked for dropped options."""
    for name, (k, known) in list(own.items()):
        if known is not None:
            continue
        vdir = manifest.variants[f"{own_build.ID_PREFIX}{superbuild.slug(name)}"].dir
        status = Status.read(vdir)
        if status is None or status.status != "ok":
            log.warning("the project's own build with %s (its own CFLAGS, none of flagsweep's) "
                        "did not succeed, so no variant is checked for project options it "
                        "drops: see %s", name, vdir / "build.log")
            continue
        compiles = own_build.compiles(vdir / "compile.jsonl", vdir / "tree", manifest.source)
        own[name] = (k, own_build.Reference(compiles=compiles))
        own_build.store(k, own[name][1], cache)


def _dropped(own: own_build.Reference | None, vdir: Path, manifest: Manifest, target: Target,
             a: audit_mod.Audit) -> list[own_build.Dropped]:
    """The project options the variant's build dropped, made the audit's first problem."""
    if own is None:
        return []
    mine = own_build.compiles(vdir / "compile.jsonl", vdir / "tree", manifest.source)
    found = own_build.dropped(own, mine, target.spec.build.dropped_flags)
    if found:
        why = own_build.problem(found, len(mine))
        a.every_problem.insert(0, why)
        if a.problems is not a.every_problem:     # the audit cut its list short
            a.problems.insert(0, why)
        a.verified = False
    return found


def _profile_used(result: VariantBuild, entry: Order) -> None:
    """A profile-guided build whose last stage says a profile was missing or did not match is
    not the build it claims to be: flags-mismatch, with the compiler's words."""
    spec = entry.pgo
    text = result.log.read_text(errors="replace")
    last = text[text.rfind("flagsweep: training run"):]
    problems, absent = pgo.mismatched(last), pgo.missing(last)
    compiles = (result.audit.compiles if result.audit else None) or 0
    profile = pgo.profile_sha256(spec.profile_dir)
    if not problems and (profile is None or absent >= compiles):
        problems = [f"no compile of the last stage found its profile ({absent} said so, "
                    f"{compiles} compiles)"]
    result.pgo = model.Pgo(training=" ".join(spec.train_argv), input=spec.input,
                           profile_sha256=profile, matched=not problems,
                           objects_without_profile=absent,
                           use_flags=[f for f in entry.flags if f.startswith("-fprofile")
                                      or f == "-Wmissing-profile"])
    if result.pgo.matched:
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


def foreign(builds: list[VariantBuild]) -> list[str]:
    """The libraries built with the program, then each shared library from outside the build
    trees that a measured binary loads, other than the C/C++ runtime, in one line: its code is
    in the run, and no flag touched it."""
    lines = binaries.foreign((b.binary.name, lib) for b in builds if b.binary
                             for lib in b.external)
    shadowed = {(b.binary.name, lib.name, lib.path) for b in builds if b.binary and b.dependencies
                for lib in dependency.shadowed(b.log.parent / "tree", b.external)}
    built = next((b.dependencies for b in builds if b.dependencies), [])
    return dependency.built_with(built) + lines + [f"{name} loads {lib} from {path} although the target builds a dependency "
                    "of that name into its tree: its link took the system's shared library; "
                    "build the dependency static (configure_args = [\"--disable-shared\"]) "
                    "(docs/targets.md, dependencies)" for name, lib, path in sorted(shadowed)]


def build_programs(builds: list[VariantBuild]) -> list[str]:
    """The programs the builds compiled and linked in one go and ran, not held to the flags
    (audit.build_programs), in one line: left out of the audit, never out of sight."""
    names = list(dict.fromkeys(n for b in builds if b.audit for n in b.audit.build_programs))
    if not names:
        return []
    return [f"{len(names)} build-time program{'s' if len(names) > 1 else ''} not held to the "
            f"variant's flags: {', '.join(names)} (compiled and linked in one go, the measured "
            "binary holds none of its code; docs/audit.md)"]


def left_out(builds: list[VariantBuild], build_depends: str = "") -> list[str]:
    """Each SIMD or assembly path the builds' configure left out, in one line."""
    return features.lines((b.left_out for b in builds), build_depends)


def _log_audit(log: Path, problems: list[str]) -> None:
    """Every audit problem, after the build's own output, where the summary points."""
    with log.open("a") as f:
        f.write(f"\n---- flag audit: {len(problems)} problems ----\n")
        f.writelines(p + "\n" for p in problems)


def _failure_detail(status: Status | None, vdir: Path, manifest: Manifest, v: Cell) -> str:
    """Why it failed and the last lines of the log that says so."""
    if status is None:  # never started: its configure tree failed, or the superbuild broke
        tmpl = manifest.templates.get(superbuild.slug(v.compiler))
        logfile = tmpl.log if tmpl else vdir.parent.parent / "superbuild.log"
        why = "configure failed" if tmpl else "the superbuild never ran this variant"
        return f"{why}; {logfile}:\n{_excerpt(logfile)}"
    return f"{status.why or 'failed'}; {vdir / 'build.log'}:\n{_excerpt(vdir / 'build.log')}"


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
