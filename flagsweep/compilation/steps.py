"""The step driver: how one variant of an autotools, CMake, meson or plain-make project is built.

The superbuild (CMakeLists.txt) calls `python -m flagsweep.compilation.steps MANIFEST STEP NAME`:

  template COMPILER   autotools only: run ./configure once per compiler into a cached tree
                      (a hand-written script, the target's `configure`: in a copy of the source)
  prepare  VARIANT    give the variant its own build tree (copy of the template, cmake configure,
                      or meson setup)
  build    VARIANT    compile with exactly the variant's flags, every compile through the wrapper
                      (a profile-guided variant first builds instrumented, trains, cleans: pgo.py)

Flags are injected one way per build system and nothing else is allowed to add optimisation
flags on top (the audit checks it):
  - autotools: configure runs with neutral CFLAGS; the variant's flags replace CFLAGS at make
    time (`make CFLAGS=...`), which is what defeats configure scripts that add their own -O3;
  - cmake: CMAKE_C_FLAGS with the build type empty and every CMAKE_<LANG>_FLAGS_<CONFIG> blanked,
    because CMake appends those after the user's flags;
  - meson: c_args and c_link_args (and the cpp pair) with the build type plain (meson.py);
  - make: CC, CXX, CFLAGS and CXXFLAGS on the make command line, which overrides hard-coded ones,
    and LDFLAGS too when the variant has link flags (a Makefile may link without CFLAGS). GNU
    make's precedence decides where LDFLAGS goes (manual, "Overriding Variables", "Variables
    from the Environment", "Target-specific Variable Values"): a command-line variable
    overrides every assignment in the Makefile, a target-specific `lib.so: LDFLAGS += -shared`
    too (xxhash's, lz4's and zstd's libraries then link without -shared, as programs), while a
    variable from the environment is appended to by `+=` and replaced by `=`. So LDFLAGS goes
    in the environment, as Debian hands it, when a makefile of the tree appends to LDFLAGS for
    a target or pattern (`target_append`), and on the command line otherwise, which reaches a
    Makefile that sets `LDFLAGS =` itself (bzip2's);
  - autotools and make: FLAGSWEEP_LDFLAGS, the variant's link flags alone, for a target's
    make_args to hand to the variable its link rule reads (link_fix says which).
The project's own build (an `own_flags` entry, own_build.py) is the same without any of those
flags: make without CFLAGS/CXXFLAGS/LDFLAGS, CMake and meson with the project's own build type
and flags.

Each step writes the variant's status.json and appends to its build.log; a failure exits 1 so
Ninja skips the variant's later steps, while `-k 0` keeps every other variant going.
"""

from __future__ import annotations

import os
import re
import resource
import shlex
import shutil
import sys
import time
from pathlib import Path

from flagsweep import process
from flagsweep.caches import CONFIGURED
from flagsweep.compilation import dependency, meson
from flagsweep.compilation.manifest import Manifest, Order, Profiling, Status, Tools
from flagsweep.host import environment
from flagsweep.files import copy_sparse, write_atomic

# Configure probes run with these flags; the variants' own flags replace them at make time.
CONFIGURE_CFLAGS = dependency.CONFIGURE_CFLAGS
CMAKE_CONFIGS = ("DEBUG", "RELEASE", "RELWITHDEBINFO", "MINSIZEREL")
ORIGIN_FILE = ".flagsweep-origin"
# configure's own output, kept in the cached tree: what it said it left out (features.py) must
# still be read when a later sweep reuses the tree without running configure
OUTPUT_FILE = ".flagsweep-configure.log"


def main(argv: list[str]) -> int:
    manifest_path, step, name = argv
    manifest = Manifest.read(Path(manifest_path))
    steps = {"template": template, "prepare": prepare, "build": build}
    return steps[step](manifest, name)


# ---- template: flag-independent configure work, once per compiler --------------------------

def template(m: Manifest, name: str) -> int:
    t = m.templates[name]
    dest, log = t.dir, t.log
    if CONFIGURED.usable(dest, lambda tree: (tree / ORIGIN_FILE).exists()):
        said = dest / OUTPUT_FILE
        log.write_text(f"configure tree reused from the cache: {dest}\n"
                       + (said.read_text(errors="replace") if said.is_file() else ""))
        return 0
    root = dest.parent.parent
    tools = m.compilers[t.compiler]
    compilers = [f"CC={tools.cc}", f"CFLAGS={CONFIGURE_CFLAGS}"]
    if tools.cxx:
        compilers += [f"CXX={tools.cxx}", f"CXXFLAGS={CONFIGURE_CFLAGS}"]
    argv = [str(m.source / "configure"), *compilers]
    with CONFIGURED.draft(root, folder=True) as work:
        env = _env(m, work / "configure.jsonl")
        if m.configure:     # hand-written: in a copy of the source, the compilers in its env
            _copy_tree(m.source, work, log)
            script = work / m.configure
            if not script.is_file() or not os.access(script, os.X_OK):
                log.open("a").write(f"\nflagsweep: build.configure {m.configure!r}: expected "
                                    f"an executable script in the source {m.source}\n")
                return 1
            argv = [f"./{m.configure}"]
            env |= dict(a.split("=", 1) for a in compilers)
        if m.dependencies:      # configured against them built with the neutral flags
            jobs = max((v.jobs for v in m.variants.values()), default=1)
            if why := _dependencies(m, tools, work, jobs, [CONFIGURE_CFLAGS], (env, env), log):
                log.open("a").write(f"\nflagsweep: {why}\n")
                return 1
            dependency.drop_builds(work)
            argv += dependency.configure_args("autotools", work)
            env = dependency.environment(work, env)
        result = process.run(argv + m.configure_args, cwd=work, log_file=log, env=env)
        if not result.ok:
            log.open("a").write(f"\nflagsweep: configure failed (exit {result.returncode})\n")
            return 1
        (work / ORIGIN_FILE).write_text(str(work))
        shutil.copyfile(log, work / OUTPUT_FILE)
        # Of two sweeps configuring the same tree at once, the first one's stays.
        CONFIGURED.publish(work, dest, root)
    return 0


# ---- prepare: the variant's own build tree ---------------------------------------------------

def prepare(m: Manifest, vid: str) -> int:
    v = m.variants[vid]
    vdir, tree = v.dir, v.dir / "tree"
    started = time.time()
    _status(vdir, Status(status="running", stage="configure", started=started))
    if m.system == "autotools":
        tmpl = m.templates[v.template]
        if not (tmpl.dir / ORIGIN_FILE).exists():
            return _fail(vdir, "configure", started, f"configure tree {tmpl.dir} missing: "
                         f"see {tmpl.log}")
        _copy_tree(tmpl.dir, tree, vdir / "build.log")
        relocate(tree, (tmpl.dir / ORIGIN_FILE).read_text(), str(tree))
    elif m.system == "make":
        _copy_tree(m.source, tree, vdir / "build.log")
    elif m.system == "meson":
        if (failed := _meson_setup(m, v, tree, started)):
            return failed
    else:
        # CMake fixes the flags at configure: a profile-guided variant starts instrumented
        flags = v.pgo.instrumented if v.pgo else None
        env = _env(m, vdir / "configure.jsonl")
        if m.dependencies:      # its configure looks for them; built again, audited, at build
            mine = None if v.own_flags else (flags or v.flags)
            if why := _dependencies(m, m.compilers[v.compiler], tree, v.jobs, mine, (env, env),
                                    vdir / "build.log"):
                return _fail(vdir, "configure", started, why)
            env = dependency.environment(tree, env)
        result = process.run(_cmake_configure(m, v, tree, flags), log_file=vdir / "build.log",
                             env=env)
        if not result.ok:
            return _fail(vdir, "configure", started, f"cmake configure exited {result.returncode}")
    _status(vdir, Status(status="running", stage="build", started=started,
                         cpu_seconds=_children_cpu()))
    return 0


def _meson_setup(m: Manifest, v: Order, tree: Path, started: float) -> int:
    """meson setup of the variant's tree: 0, or the step's failure. Like CMake, meson fixes
    the flags at setup: a profile-guided variant starts instrumented."""
    vdir = v.dir
    env = _env(m, vdir / "configure.jsonl") | meson.compilers(m, v)
    argv = meson.setup(m, v, tree, v.pgo.instrumented if v.pgo else None)
    result = process.run(argv, log_file=vdir / "build.log", env=env)
    if not result.ok:
        return _fail(vdir, "configure", started, f"meson setup exited {result.returncode}")
    return 0


def _copy_tree(source: Path, tree: Path, log: Path) -> None:
    """The variant's own copy of a tree, its sparse files copied sparsely (each named in the
    build log): copied byte by byte, a 10 GB sparse file in a 621-byte tarball became 10 GB of
    real data in every variant's tree."""
    sparse: list[str] = []

    def copy(src: str, dst: str) -> str:
        if copy_sparse(Path(src), Path(dst)):
            sparse.append(src)
            return dst
        return shutil.copy2(src, dst)

    shutil.copytree(source, tree, symlinks=True, dirs_exist_ok=True, copy_function=copy)
    if sparse:
        with open(log, "a") as f:
            f.writelines(f"flagsweep: {p} is a sparse file; copied sparsely (its holes stay "
                         "holes)\n" for p in sparse)


def _children_cpu() -> float:
    """CPU seconds (user + system) of this step's finished children and everything they waited
    for: configure, make, every compile and link of the variant (ccache hits cost little here,
    as they do in a distribution's rebuild)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(r.ru_utime + r.ru_stime, 3)


def _cmake_configure(m: Manifest, v: Order, tree: Path, flags_list: list[str] | None = None
                     ) -> list[str]:
    tools = m.compilers[v.compiler]
    argv = ["cmake", "-S", str(m.source), "-B", str(tree), "-G", "Ninja", "--no-warn-unused-cli",
            f"-DCMAKE_C_COMPILER={tools.cc}"]
    if tools.cxx:
        argv.append(f"-DCMAKE_CXX_COMPILER={tools.cxx}")
    if m.dependencies:
        argv += dependency.configure_args("cmake", tree)
    if v.own_flags:     # the project's own build: its build type and flags as it sets them
        return argv + m.configure_args
    return argv + _cmake_flags(tools, v.flags if flags_list is None else flags_list) + \
        m.configure_args


def _cmake_flags(tools: Tools, flags_list: list[str]) -> list[str]:
    """The CMake options that make flags_list the whole of every compile's flags."""
    flags = shlex.join(flags_list)
    argv = ["-DCMAKE_BUILD_TYPE=", f"-DCMAKE_C_FLAGS={flags}"]
    if tools.cxx:
        argv.append(f"-DCMAKE_CXX_FLAGS={flags}")
    for lang in ("C", "CXX"):
        argv += [f"-DCMAKE_{lang}_FLAGS_{config}=" for config in CMAKE_CONFIGS]
    return argv


def relocate(tree: Path, old: str, new: str) -> None:
    """Rewrite a copied configure tree's absolute paths to its new place, keeping mtimes.

    config.status bakes the configure directory into Makefiles, libtool and config files; the
    mtimes must survive or make would re-run config.status in every copy.
    """
    old_b, new_b = old.encode(), new.encode()
    for path in tree.rglob("*"):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 8 << 20:
            continue
        data = path.read_bytes()
        if old_b not in data or b"\0" in data[:8192]:
            continue
        st = path.stat()
        path.write_bytes(data.replace(old_b, new_b))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


# ---- build: compile with exactly the variant's flags -------------------------------------------

def build(m: Manifest, vid: str) -> int:
    v = m.variants[vid]
    vdir, tree = v.dir, v.dir / "tree"
    prepared = Status.parse((vdir / "status.json").read_text(), str(vdir / "status.json"))
    started = prepared.started
    if v.pgo and (failed := _trained(m, v, v.pgo, vdir, tree, started)):
        return failed
    build_started = time.time()      # the audit checks the compiles from here on
    # the project's own build is not audited: its compiles need no snapshot
    env = _env(m, vdir / "compile.jsonl", None if v.own_flags else _snapshots(vdir))
    if m.dependencies and (why := _dependencies(
            m, m.compilers[v.compiler], tree, v.jobs, None if v.own_flags else v.flags,
            (_env(m, vdir / "configure.jsonl"), env), vdir / "build.log")):
        return _fail(vdir, "dependency", started, why)
    if v.own_flags and m.system == "make":
        env["PATH"] = f"{_shims(m, v, vdir)}{os.pathsep}{env.get('PATH', os.defpath)}"
    result = process.run(_build_argv(m, v, tree), cwd=tree, log_file=vdir / "build.log",
                         env=env | _make_environment(m, v, tree))
    if not result.ok:
        return _fail(vdir, "build", started, f"build exited {result.returncode}")
    binary = tree / m.binary
    if not binary.is_file() and not v.own_flags:   # its compile lines are all it gives
        return _fail(vdir, "build", started, f"the build succeeded but {m.binary} is missing "
                     f"from {tree} (check build.binary in the target file)")
    if binary.is_file() and not binary.resolve().is_relative_to(tree.resolve()):
        return _fail(vdir, "build", started, f"{m.binary} in {tree} is a link to "
                     f"{binary.resolve()}, outside the build tree: the measured program must be "
                     "the one built there")
    _status(vdir, Status(status="ok", stage="done", started=started,
                         build_started=build_started, seconds=round(time.time() - started, 3),
                         cpu_seconds=round((prepared.cpu_seconds or 0) + _children_cpu(), 3)))
    return 0


def _dependencies(m: Manifest, tools: Tools, tree: Path, jobs: int, flags: list[str] | None,
                  envs: tuple[dict[str, str], dict[str, str]], log: Path) -> str | None:
    """The target's dependencies built into the tree's prefix (dependency.py); flags None:
    the project's own build."""
    return dependency.build(m.dependencies, tools, tree, jobs, flags, envs, log,
                            _cmake_flags(tools, flags) if flags is not None else [])


# The names a Makefile calls its compilers by (`CC= gcc -std=gnu99`).
SHIM_NAMES = {"cc": ("cc", "gcc", "clang", "c99"), "cxx": ("c++", "g++", "clang++")}


def _shims(m: Manifest, v: Order, vdir: Path) -> Path:
    """A folder of links named like the usual compilers, each to the variant compiler's
    wrapper, first on PATH for the project's own make build. It cannot be given CC= as the
    variants are: a Makefile's CC may hold options of its own (Lua's `CC= gcc -std=gnu99`),
    which CC= on make's command line replaces, and the project's own lines must keep them.
    A Makefile naming its compiler by an absolute path is not seen this way."""
    tools, folder = m.compilers[v.compiler], vdir / "shims"
    folder.mkdir(parents=True, exist_ok=True)
    for kind, names in SHIM_NAMES.items():
        program = getattr(tools, kind)
        if not program:
            continue
        for name in names:
            link = folder / name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(program)
    return folder


def _trained(m: Manifest, v: Order, p: Profiling, vdir: Path, tree: Path,
             started: float) -> int:
    """Stages 1 and 2 of a profile-guided build, then the clean before stage 3 (pgo.py): 0 when
    the profile is ready, else the step's failure."""
    log = vdir / "build.log"
    # compiled from snapshots too: clang names a static function's profile after the file
    # compiled, so both stages must compile the same names
    env = _env(m, vdir / "instrumented.jsonl", _snapshots(vdir)) | _make_environment(m, v, tree)
    p.profile_dir.mkdir(parents=True, exist_ok=True)
    if not process.run(_build_argv(m, v, tree, p.instrumented), cwd=tree, log_file=log,
                       env=env).ok:
        return _fail(vdir, "pgo-instrumented", started, "the instrumented build failed")
    trained = process.run(p.train_argv, cwd=vdir, log_file=vdir / "training.out",
                          timeout=p.timeout, env=environment.clean())
    log.open("a").write(f"flagsweep: training run {shlex.join(p.train_argv)}: exit "
                        f"{trained.returncode} (its output: training.out)\n")
    if not trained.ok:
        return _fail(vdir, "pgo-training", started, f"the training run exited "
                     f"{trained.returncode} (see training.out)")
    if p.profdata:
        raws = sorted(str(f) for f in p.profile_dir.glob("*.profraw"))
        merged = process.run([p.profdata, "merge", "-o",
                              str(p.profile_dir / "merged.profdata"), *raws], log_file=log)
        if not raws or not merged.ok:
            return _fail(vdir, "pgo-merge", started, "llvm-profdata merge failed or the "
                         "training wrote no raw profile")
    # CMake: configured again with the final flags, which rebuilds every object; meson: set up
    # afresh with them (meson.py); make: clean
    clean = (_cmake_configure(m, v, tree) if m.system == "cmake"
             else meson.setup(m, v, tree, wipe=True) if m.system == "meson"
             else ["make", "clean", *_make_options(m.make_args)])
    if m.system == "meson":
        env = env | meson.compilers(m, v)
    if not process.run(clean, cwd=tree, log_file=log, env=env).ok:
        return _fail(vdir, "pgo-clean", started, "cleaning the instrumented objects failed")
    return 0


# make's options that take the next word as their value
MAKE_VALUED = ("-C", "-f", "-I", "-o", "-W", "--directory", "--file", "--include-dir")


def _make_options(make_args: list[str]) -> list[str]:
    """A project's make options and variables without its targets: `make clean bzip2` would
    clean and then build again, with the Makefile's own flags."""
    out, take = [], False
    for word in make_args:
        if take or word.startswith("-") or "=" in word:
            out.append(word)
            take = word in MAKE_VALUED
    return out


def _build_argv(m: Manifest, v: Order, tree: Path, flags_list: list[str] | None = None,
                whole: bool = False) -> list[str]:
    """The variant's build command: of the target's goal alone (the one binary measured), or
    with whole, of everything the build makes (what a package's own tests may need)."""
    flags = shlex.join(v.flags if flags_list is None else flags_list)
    jobs = f"-j{v.jobs}"
    goal = None if whole else m.goal
    if m.system == "cmake":
        return ["cmake", "--build", str(tree), jobs, *(["--target", goal] if goal else []),
                *m.make_args]
    if m.system == "meson":
        return meson.build(v, tree, m.make_args)
    # The project's own build (own_build.py) leaves CFLAGS and LDFLAGS to the Makefile or
    # configure; FLAGSWEEP_LDFLAGS is still set (empty), as make_args may name it.
    own = v.own_flags
    ldflags = "" if own else shlex.join(v.ldflags)
    mine = [] if own else [f"CFLAGS={flags}", f"CXXFLAGS={flags}"]
    # a recursive tree's goal is its folder's own Makefile's: make -C DIR GOAL
    folder = ["-C", m.goal_dir] if goal and m.goal_dir else []
    argv = ["make", *folder, jobs, *mine, f"{LINK_VARIABLE}={ldflags}"]
    if m.system == "make" and not own:
        tools = m.compilers[v.compiler]
        argv += [f"CC={tools.cc}"] + ([f"CXX={tools.cxx}"] if tools.cxx else [])
        if ldflags and not _make_environment(m, v, tree):
            # A Makefile may link with `$(CC) -o prog $(OBJS) $(LDFLAGS)`, without CFLAGS: the
            # variant's link flags (a layout's shuffle, -flto) must reach that link too.
            argv.append(f"LDFLAGS={ldflags}")
    elif m.configure and not own:
        # A hand-written configure's Makefile may link with LDFLAGS alone, where it put its
        # own probe flags (discount's: a copy of configure's CFLAGS, -O2): the variant's link
        # flags replace them, even none. CC stays configure's: it may carry options (discount
        # adds -Wno-implicit-int to it).
        argv.append(f"LDFLAGS={ldflags}")
    return argv + m.make_args + ([goal] if goal else [])


def _make_environment(m: Manifest, v: Order, tree: Path) -> dict[str, str]:
    """LDFLAGS for make's environment rather than its command line: a make variant's link
    flags, where a makefile of the tree appends to LDFLAGS for one target (the module's
    docstring says why); else nothing."""
    if m.system != "make" or v.own_flags or not v.ldflags or target_append(tree) is None:
        return {}
    return {"LDFLAGS": shlex.join(v.ldflags)}


def make_environment(m: Manifest, vid: str) -> dict[str, str]:
    """What the variant's make command has in its environment beyond a build's own (LDFLAGS,
    where a makefile appends to it per target): `make check` needs it, as make_variables."""
    v = m.variants[vid]
    return _make_environment(m, v, v.dir / "tree")


# A target- or pattern-specific append to LDFLAGS (`$(LIBXXH): LDFLAGS += -shared`): the
# targets before one colon (not `:=` or `::=`), then make's modifiers, then the append.
TARGET_APPEND = re.compile(r"^[^\t#=:][^#=:]*:(?![=:])[ \t]*"
                           r"(?:(?:override|private|export)[ \t]+)*LDFLAGS[ \t]*\+=",
                           re.MULTILINE)
MAKEFILE_SUFFIXES = (".mk", ".make")
MAKEFILE_BYTES = 1 << 20     # a makefile's head: a generated one can be huge


def target_append(tree: Path) -> str | None:
    """The first makefile line of the tree ("lib/Makefile:142") that appends to LDFLAGS for a
    target or pattern, or None. Every makefile counts, not only the top one: a recursive make
    (lz4's lib/, zstd's programs/) reads its folder's own, and the environment reaches it."""
    for folder, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name not in MAKEFILES and not name.endswith(MAKEFILE_SUFFIXES):
                continue
            path = Path(folder) / name
            if not path.is_file():      # a FIFO or a device would never end a read
                continue
            try:
                with path.open("rb") as f:
                    text = f.read(MAKEFILE_BYTES).decode(errors="replace")
            except OSError:
                continue
            if found := TARGET_APPEND.search(text):
                line = text.count("\n", 0, found.start()) + 1
                return f"{path.relative_to(tree).as_posix()}:{line}"
    return None


def make_variables(m: Manifest, vid: str) -> list[str]:
    """The variable assignments of the variant's make command (its flags, compilers, link
    flags): `make check` given them compiles a test program as the build compiled the rest, and
    sees the objects the build made as up to date."""
    v = m.variants[vid]
    return [a for a in _build_argv(m, v, v.dir / "tree")[1:] if "=" in a and not a.startswith("-")]


def whole_build(m: Manifest, vid: str) -> list[str] | None:
    """A CMake variant built for its goal alone: the command that builds the rest, as the
    variant was built, for ctest's test programs (make's `check` builds them itself); None
    when there is no rest."""
    v = m.variants[vid]
    return _build_argv(m, v, v.dir / "tree", whole=True) if m.goal and m.system == "cmake" \
        else None


# The variant's link flags alone, always set on make's command line (empty when it has none),
# for a target's make_args to hand to the variable a Makefile's link rule reads
# (make_args = ["LIBS=$(FLAGSWEEP_LDFLAGS) -lm"]); never from the environment.
LINK_VARIABLE = "FLAGSWEEP_LDFLAGS"
# The variables flagsweep sets on make's command line that a link may read the link flags from.
# "configure": autotools with a hand-written configure script (the target's `configure`).
LINK_CARRIERS = {"make": ("CFLAGS", "CXXFLAGS", "LDFLAGS"), "autotools": ("CFLAGS", "CXXFLAGS"),
                 "configure": ("CFLAGS", "CXXFLAGS", "LDFLAGS")}
MAKEFILES = ("GNUmakefile", "makefile", "Makefile")


def link_fix(system: str, missing: list[str], folder: Path, binary: str,
             target_file: Path) -> str | None:
    """What to set when the link that wrote the binary lacks the variant's link flags: the
    make variable its rule reads, if the Makefile in the link's folder shows it."""
    if system not in LINK_CARRIERS:
        return None
    carriers = ", ".join(LINK_CARRIERS[system])
    rule = link_rule(folder, Path(binary).name)
    where, names = rule if rule else (None, [])
    variable = names[-1] if names else "LINKFLAGS"
    reads = (f" (its rule, {where}, reads {' '.join(f'$({n})' for n in names)})" if names
             else f" ({where})" if where else "")
    return (f"the link that writes {binary} reads none of {carriers}, where flagsweep passes "
            f"the variant's link flags ({' '.join(missing)}){reads}: give them to the variable "
            f"it reads link options from, in {target_file} under [build]: make_args = "
            f'["{variable}=$({LINK_VARIABLE})"] (keep what {variable} held after it, e.g. -lm)')


def link_rule(folder: Path, name: str) -> tuple[str, list[str]] | None:
    """The rule of the Makefile in folder whose targets name `name`: "Makefile:LINE" and the
    variables its recipe reads other than the ones flagsweep sets."""
    ours = {"CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "CPPFLAGS", LINK_VARIABLE}
    for file in (folder / f for f in MAKEFILES):
        if not file.is_file():
            continue
        lines = file.read_text(errors="replace").splitlines()
        for i, line in enumerate(lines):
            head = re.match(r"^([^\t#:=][^:=]*):(?!=)", line)
            if not head or name not in head.group(1).split():
                continue
            recipe = []
            for body in lines[i + 1:]:
                if not body.startswith("\t"):
                    break
                recipe.append(body)
            names = re.findall(r"\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]", "\n".join(recipe))
            return f"{file.name}:{i + 1}", [n for n in dict.fromkeys(names) if n not in ours]
        return None
    return None


def _env(m: Manifest, compile_log: Path, snapshots: Path | None = None) -> dict[str, str]:
    return environment.build(m.ccache_env, compile_log, snapshots)


# Where the wrapper keeps what a variant's compiles compiled (wrapper.c), for its audit.
SNAPSHOTS = "compiled"


def _snapshots(vdir: Path) -> Path:
    folder = vdir / SNAPSHOTS
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _status(vdir: Path, status: Status) -> None:
    vdir.mkdir(parents=True, exist_ok=True)
    write_atomic(vdir / "status.json", status.text())


def _fail(vdir: Path, stage: str, started: float, why: str) -> int:
    _status(vdir, Status(status="failed", stage=stage, started=started, why=why,
                         seconds=round(time.time() - started, 3)))
    print(f"flagsweep: {vdir.name}: {why}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
