"""The CMake superbuild that builds a matrix's variants: the manifest the step driver reads and
the plan CMake reads, the recording compiler wrappers and the cached configure trees they name,
the paths and folders it refuses, and CMake run over it with Ninja (`-k 0`, so one broken
variant never stops the rest), watched for each variant's end."""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from flagsweep import files, process, shipped
from flagsweep.caches import CONFIGURED, WRAPPERS
from flagsweep.compilation import dependency, pgo, provenance, wrapper
from flagsweep.compilation.manifest import (Dependency, Manifest, Order, Profiling, Status,
                                            Template, Tools)
from flagsweep.errors import BuildError
from flagsweep.experiment.matrix import Cell
from flagsweep.experiment.target import Target
from flagsweep.host import environment, toolchain

log = logging.getLogger("flagsweep.compilation.superbuild")

# Bump when the step driver changes how a configure tree is made: cached trees are then redone
# (2: configure runs in a written environment; a tree configured under a CONFIG_SITE is not
# reused).
TEMPLATE_FORMAT = 2


@dataclass(frozen=True)
class Training:
    """A profile-guided build's training input: not the measured one (pgo.py)."""
    path: Path
    sha256: str
    description: str


# Told of each variant whose build ended: (variant id, "ok" or "failed", seconds, done, total).
OnBuilt = Callable[[str, str, "float | None", int, int], None]


# What a build leaves in its output folder; any of them means the folder was built into before.
BUILD_OUTPUTS = ("manifest.json", "plan.cmake", "superbuild", "superbuild.log", "builds",
                 "builds.json", "source")
# The record a run's (or a tune's) folder holds from its start, naming its id: what shows a
# folder a store row names is that run's (results.stored).
RECORD = "flagsweep.json"
# What a run adds to it (scratch: the check and timing outputs; explain: the profiles).
RUN_OUTPUTS = ("results.json", "samples.csv", "index.html", "summary.md", "junit.xml", "scratch",
               "explain", RECORD)


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


def linked(source: Path, out: Path) -> Path:
    """The source tree as CMake should see it: through out/source, a link to it.

    CMake names every source file by its absolute path, and ccache hashes the command line, so
    the same code in the cache's tree and in a --source-dir copy missed the cache (64 s instead
    of 3.8 s). Seen through a link in the run's folder, every source tree has one place relative
    to the build trees, and CCACHE_BASEDIR (the run's folder) makes those paths relative: the
    same source is the same cache entry wherever it lives."""
    link = out / "source"
    link.symlink_to(source, target_is_directory=True)
    return link


def manifest(target: Target, variants: list[Cell], source: Path, out: Path, cache: Path,
             jobs: int, training: Training | None = None,
             dependencies: list[Dependency] | None = None) -> Manifest:
    b = target.spec.build
    names = sorted({v.compiler for v in variants})
    compilers = {n: _wrappers(toolchain.resolve(n), cache) for n in names}
    per_variant_jobs = max(1, jobs // max(1, min(jobs, len(variants))))
    templates = {}
    if b.system == "autotools":  # keyed by a CMake-safe name: a compiler may be a path
        templates = {slug(n): _template(target, source, n, compilers[n], cache, out,
                                        dependencies or [])
                     for n in names}
    return Manifest(
        system=b.system, source=source, binary=b.binary,
        configure_args=b.configure_args, make_args=b.make_args, goal=b.goal,
        goal_dir=b.goal_dir, configure=b.configure, ccache_env=environment.ccache(cache, out), compilers=compilers,
        templates=templates,
        variants={v.id: _entry(target, v, out, per_variant_jobs, training)
                  for v in variants},
        dependencies=dependencies or [],
    )


def _entry(target: Target, v: Cell, out: Path, jobs: int, training: Training | None) -> Order:
    """The step driver's view of one variant; a profile-guided one also gets its stages'
    flags and training command, and is audited on its final flags (pgo.py)."""
    vdir = out / "builds" / v.id
    flags = [*v.flags, *target.spec.build.project_flags]
    entry = Order(compiler=v.compiler, template=slug(v.compiler), flags=flags, dir=vdir,
                  jobs=jobs, ldflags=provenance.link_flags(flags))
    if not v.pgo:
        return entry
    if training is None:
        raise BuildError(f"{v.id} is profile-guided and needs a training input; this command "
                         "builds without one (use `flagsweep build` or `flagsweep run`)")
    family = toolchain.resolve(v.compiler).family
    profiles = vdir / pgo.PROFILE_DIR
    values = {"binary": str(vdir / "tree" / target.spec.build.binary),
              "input": str(training.path), "output": str(vdir / "training.product")}
    entry.flags = [*flags, *pgo.use(family, profiles)]
    entry.pgo = Profiling(profile_dir=profiles,
                          instrumented=[*flags, *pgo.generate(family, profiles)],
                          train_argv=[a.format(**values) for a in target.spec.run.argv],
                          timeout=target.spec.run.timeout, input=training.description,
                          profdata=_profdata(v.compiler) if family == "clang" else None)
    return entry


def _profdata(compiler: str) -> str:
    """llvm-profdata of the clang's own LLVM version (a profile's format follows LLVM's)."""
    major = toolchain.resolve(compiler).version.split(".")[0]
    for name in (f"llvm-profdata-{major}", "llvm-profdata"):
        if found := shutil.which(name):
            return found
    raise BuildError(f"clang PGO merges raw profiles with llvm-profdata-{major}, which is not "
                     "installed here (Debian's llvm package has it)")


def _wrappers(compiler: toolchain.Toolchain, cache: Path) -> Tools:
    where = WRAPPERS.entry(slug(compiler.name), cache)
    cc = str(wrapper.install(compiler.cc, where / "cc", compiler.cc, wrapper.ccache()))
    if not compiler.cxx:
        return Tools(cc=cc, version=compiler.version)
    cxx = str(wrapper.install(compiler.cxx, where / "cxx", compiler.cc, wrapper.ccache()))
    return Tools(cc=cc, cxx=cxx, version=compiler.version)


def _template(target: Target, source: Path, name: str, tools: Tools, cache: Path,
              out: Path, dependencies: list[Dependency]) -> Template:
    """Where the compiler's configure tree is cached: keyed by everything configure sees."""
    # the tools without an unset cxx: the key the trees configured so far are cached under
    script = target.spec.build.configure or "configure"
    key_parts = [TEMPLATE_FORMAT, str(source), target.spec.build.configure_args,
                 tools.key(),
                 (source / script).stat().st_mtime_ns if (source / script).exists() else 0,
                 environment.keyed()]
    if target.spec.build.configure:     # hand-written, run in a copy (Autoconf's: keys so far)
        key_parts.append(script)
    if dependencies:     # configured against them: another tree (none: the keys so far)
        key_parts.append(dependency.key(dependencies))
    key = files.key_sha256(key_parts)[:16]
    folder = f"{target.name}-{slug(name)}-{key}"
    return Template(compiler=name, dir=CONFIGURED.entry(folder, cache),
                    log=out / "builds" / f"configure-{slug(name)}.log")


def slug(name: str) -> str:
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


def write_plan(manifest: Manifest, out: Path) -> None:
    def define(name: str, *values: str) -> str:
        return f"set({name} {' '.join(cmake_text(str(v)) for v in values)})"

    lines = [define("FLAGSWEEP_MANIFEST", out / "manifest.json"),
             define("FLAGSWEEP_PYTHON", sys.executable),
             define("FLAGSWEEP_PYTHONPATH", shipped.IMPORT_ROOT),
             define("FLAGSWEEP_SOURCE", manifest.source),
             define("FLAGSWEEP_BUILDS", out / "builds"),
             define("FLAGSWEEP_TEMPLATES", *manifest.templates),
             define("FLAGSWEEP_VARIANTS", *manifest.variants)]
    lines += [define(f"FLAGSWEEP_COMPILER_{vid}", v.template)
              for vid, v in manifest.variants.items()]
    (out / "plan.cmake").write_text("\n".join(lines) + "\n")


def run(out: Path, jobs: int) -> None:
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
def watching(out: Path, ids: list[str], on_built: OnBuilt | None, before: int = 0,
             total: int | None = None) -> Iterator[None]:
    """Calls on_built as each variant's status.json says its build ended: the superbuild builds
    every variant in one CMake run, so without this a long build is silent until its end."""
    if on_built is None:
        yield
        return
    said: set[str] = set()

    def poll(final: bool) -> None:
        for vid in ids:
            status = Status.read(out / "builds" / vid)
            state = status.status if status else None
            ended = state in ("ok", "failed")
            if vid not in said and (ended or final):
                said.add(vid)
                on_built(vid, state if ended else "failed", status.seconds if status else None,
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
