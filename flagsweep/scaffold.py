"""`flagsweep new`: a target file for a program flagsweep does not ship, written from what a
trial build learned.

A newcomer's time went on everything around the target file: finding the Debian version and the
orig tarball's sha256, learning that the project adds its own -fPIC (after a cold build), which
file the build makes, and an input size by guesswork. Here each is found, not guessed:

- the release: Debian's Sources index (fetch.debian_releases) gives every version with its orig
  tarball's name and sha256, newest first; the tarball is fetched and verified like any target's;
- the build system: `configure` (autotools), `CMakeLists.txt` (cmake), a Makefile (make);
- the executable: a trial -O2 build through flagsweep's own builder and audit, then the ELF
  executables it left in the build tree, the one named like the package first;
- tolerated_flags: the code-generation flags the audit found on the project's compile lines that
  the variant did not ask for (never an -O level: that is what is measured), each with the
  count the trial saw; the build is repeated with them to show the file verifies;
- project_flags: the project's own -D/-U/-I/-include/-std options that the trial's flags
  dropped, found by comparing with the project's own build (build/reference.py), each with
  where it came from;
- the input: a corpus sized by timing the run command at -O2 (about 2 s, quick about 0.3 s),
  again with `--size` once the user has written the real run command.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from flagsweep import files
from flagsweep.build import fetch, reference, variants
from flagsweep.errors import FlagsweepError
from flagsweep.results.analysis import build_reason
from flagsweep.spec import matrix, recipe, target
from flagsweep.spec.source import DebianSource, Source
from flagsweep.workload import inputs

FULL_S, QUICK_S = 2.0, 0.3      # what a full and a quick run should take at -O2
MAX_MB = 512                    # a generated corpus larger than this costs more than it tells
TRIALS = 4     # builds at most: as written, the program's own make rule, its binary, tolerated
PLACEHOLDER_RUN = ["{binary}", "{input}"]


@dataclass
class Draft:
    """What the target file will say, with the why of each learned value."""

    name: str
    package: str
    release: fetch.DebianRelease
    upstream: str
    urls: list[str]
    system: str
    binary: str
    configure_args: list[str] = field(default_factory=list)
    make_args: list[str] = field(default_factory=list)
    make_note: str = ""
    source: Path | None = None      # the fetched tree, for reading its Makefile
    tolerated: dict[str, str] = field(default_factory=dict)   # flag -> what the trial saw
    kept: dict[str, str] = field(default_factory=dict)      # project option -> where it came from
    dropped: dict[str, str] = field(default_factory=dict)   # ... that project_flags cannot carry
    binary_note: str = ""
    build_note: str = ""
    argv: list[str] = field(default_factory=lambda: list(PLACEHOLDER_RUN))
    run_given: bool = False     # the user's own command (--run), not the placeholder
    megabytes: float = 1.0
    quick_megabytes: float = 0.2
    size_note: str = "not sized yet"


def new(name: str, package: str, folder: Path, say: Callable[[str], None],
        version: str | None = None, url: str | None = None, jobs: int = 2,
        argv: list[str] | None = None) -> Path:
    """Write folder/target.toml for Debian's source package; returns its path. The file is
    written even when a step fails, with that step's finding in a comment. argv: the run
    command, if the user knows it already (the input is then sized for it)."""
    path = folder / "target.toml"
    if path.exists():
        raise FlagsweepError(f"{path} exists: edit it, size its input with `flagsweep new --size "
                             f"{folder}`, or remove it to start again")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", name):
        raise FlagsweepError(f"target name {name!r}: expected letters, digits, '._+-'")
    release = _release(package, version)
    if release.package != package:
        say(f"{package}: built from the Debian source package {release.package}")
    say(f"{release.package}: Debian {release.version}, {release.orig} "
        f"(sha256 {release.orig_sha256})")
    upstream = DebianSource(release.package, release.version).upstream_version
    draft = Draft(name=name, package=package, release=release, upstream=upstream,
                  urls=[url] if url else [], system="", binary=package,
                  argv=argv or list(PLACEHOLDER_RUN), run_given=argv is not None)
    if argv:
        _check_run(argv)
    tree = draft.source = fetch.prepare(_source(draft))
    draft.system, draft.configure_args, note = detect_system(tree)
    say(f"{package}: {note}")
    folder.mkdir(parents=True, exist_ok=True)
    trial = folder / "trial"
    try:
        built = _trial_builds(draft, path, trial, jobs, say)
        if built is not None:
            _size(draft, path, built, say)
    finally:
        path.write_text(render(draft))
    if built is None:
        raise FlagsweepError(f"wrote {path}, but {draft.build_note}{_build_deps(draft)}")
    shutil.rmtree(trial, ignore_errors=True)
    return path


def _build_deps(d: Draft) -> str:
    """A failed configure or compile is most often a missing library: Debian knows which."""
    return (f". If a header or library is missing, Debian's build dependencies of the package "
            f"are `apt-get build-dep {d.release.package}` (as root)")


def resize(name_or_path: str, say: Callable[[str], None], jobs: int = 2) -> Path:
    """Size an existing target's input by timing its own run command at -O2 (after the user
    wrote it), and rewrite the sizes in the file."""
    t = target.load(name_or_path)
    if not isinstance(t.spec.inputs, target.CorpusInput):
        raise FlagsweepError(f"{t.path}: --size sizes a corpus input (inputs.kind = \"corpus\"); "
                             f"this one is {t.spec.inputs.kind!r}")
    trial = t.path.parent / "trial"
    shutil.rmtree(trial, ignore_errors=True)
    b = _build(t, trial, jobs)
    if b.status != "ok":
        raise FlagsweepError(f"the -O2 build of {t.path} is {b.status}: {b.detail}")
    mb, quick, note = size_input(t.spec.run.argv, b.binary, say)
    text = t.path.read_text()
    text = _set_line(text, "megabytes", f"{mb:g}", f"~{FULL_S:g} s at -O2 ({note})")
    text = _set_line(text, "quick_megabytes", f"{quick:g}", f"~{QUICK_S:g} s")
    files.write_atomic(t.path, text)
    shutil.rmtree(trial, ignore_errors=True)
    return t.path


# --- the release -----------------------------------------------------------------------------

def _release(package: str, version: str | None) -> fetch.DebianRelease:
    releases = [r for r in fetch.debian_releases(package) if r.orig_sha256]
    if not releases:
        raise FlagsweepError(f"Debian source package {package!r}: not in the Sources index of "
                             "this machine's Debian mirrors, or a native package without an "
                             "orig tarball (expected a source package name, as `apt-cache "
                             "showsrc NAME` knows it)")
    if version is None:
        return releases[0]
    for r in releases:
        if r.version == version:
            return r
    raise FlagsweepError(f"--version {version}: {package} has "
                         f"{', '.join(r.version for r in releases)} here")


def _check_run(argv: list[str]) -> None:
    """--run as [run] argv would be checked, before any download."""
    try:
        target.RunSpec(argv=argv)
    except ValidationError as e:
        raise FlagsweepError(f"--run {' '.join(argv)!r}: {e.errors()[0]['msg']}") from None


def _source(d: Draft) -> Source:
    return Source(name=d.name, version=d.upstream, urls=tuple(d.urls),
                  sha256=d.release.orig_sha256,
                  debian=DebianSource(d.release.package, d.release.version))


def detect_system(tree: Path) -> tuple[str, list[str], str]:
    """The build system flagsweep should drive, default configure arguments, and why."""
    configure = tree / "configure"
    # Some projects ship a `configure` that only wraps CMake (brotli): Autoconf signs its own.
    if configure.is_file() and b"Generated by GNU Autoconf" in configure.read_bytes()[:4096]:
        return "autotools", ["--disable-dependency-tracking"], \
            "autotools (a configure script generated by Autoconf)"
    if (tree / "CMakeLists.txt").is_file():
        return "cmake", [], "cmake (CMakeLists.txt at the top)"
    for name in ("GNUmakefile", "makefile", "Makefile"):
        if (tree / name).is_file():
            return "make", [], f"make (a {name}, no Autoconf configure, no CMakeLists.txt)"
    if configure.is_file():
        return "autotools", [], "autotools (a configure script not made by Autoconf)"
    raise FlagsweepError(f"{tree}: no configure script, CMakeLists.txt or Makefile at the top; "
                         "flagsweep builds autotools, CMake and make projects")


# --- trial builds ----------------------------------------------------------------------------

def _trial_builds(d: Draft, path: Path, trial: Path, jobs: int,
                  say: Callable[[str], None]) -> variants.VariantBuild | None:
    """Build at -O2 until the file verifies: with the executable found, then with the
    project's own flags tolerated. The verified build, or None (the why in d.build_note)."""
    for attempt in range(1, TRIALS + 1):
        path.write_text(render(d))
        b = _build(target.load(str(path)), trial / str(attempt), jobs)
        say(f"trial build {attempt} at -O2: {b.status}")
        if b.status == "ok":
            d.build_note = (f"a trial -O2 build verified: {b.audit['compiles']} compile lines "
                            "carried exactly the variant's flags")
            return b
        tree = trial / str(attempt) / "builds" / b.variant.id / "tree"
        if b.status == "failed" and "is missing from" in b.detail and attempt < TRIALS:
            found = executables(tree)
            if not found:
                break
            d.binary = _pick(found, [d.package, d.release.package, d.name], tree)
            d.binary_note = (f"the trial build made {len(found)} executable(s): "
                             f"{', '.join(p.relative_to(tree).as_posix() for p in found[:6])}"
                             f"{' ...' if len(found) > 6 else ''}; this one was picked")
            continue
        goal = _make_goal(d) if b.status == "failed" and attempt < TRIALS else None
        if goal:
            # zstd's full `make` links a shared library that needs the -fPIC its CFLAGS gave,
            # and the variant's CFLAGS replace; the program alone needs no library.
            d.make_args = [goal]
            d.make_note = (f"`make` of everything failed in the trial ({build_reason(vars(b))}); "
                           f"the Makefile has a rule for {goal}, so only it is built")
            continue
        if b.status == "flags-mismatch" and (_tolerable(b) or b.dropped) and attempt < TRIALS:
            _keep_project_options(d, b)
            compiles = b.audit["compiles"]
            for flag in _tolerable(b):
                d.tolerated[flag] = (
                    f"the project's build adds it on {b.extra_flags[flag]} of {compiles} "
                    "compile lines of the trial -O2 build" if flag in b.extra_flags else
                    f"the project's source sets it in {b.source_flags[flag]} optimize "
                    "attribute(s) or pragma(s) (see the trial's build log)")
            continue
        break
    said = _first(b.detail)
    d.build_note = (f"the trial -O2 build is {b.status}, kept in {trial}: {said}. Fix this "
                    f"file, then check it with `flagsweep build {path.parent} --flags -O2`")
    say(f"{b.variant.id}: {b.status}: {b.detail}")
    return None


def _first(detail: str) -> str:
    return detail.splitlines()[0].rstrip(":") if detail else "no detail"


def _make_goal(d: Draft) -> str | None:
    """A make project's rule named like its program, when everything was being built."""
    if d.system != "make" or d.make_args or d.source is None:
        return None
    for file in ("GNUmakefile", "makefile", "Makefile"):
        if (d.source / file).is_file():
            text = (d.source / file).read_text(errors="replace")
            for name in dict.fromkeys([d.package, d.release.package, d.name]):
                # A rule naming it among its targets ("zstd zstd-release:"), not "x := y".
                word = r"[^\s:#=]+"
                if re.search(rf"^(?:{word}[ \t]+)*{re.escape(name)}(?:[ \t]+{word})*[ \t]*:(?!=)",
                             text, re.M):
                    return name
            return None
    return None


def _build(t: target.Target, out: Path, jobs: int) -> variants.VariantBuild:
    m = matrix.expand(recipe.from_flags(["-O2"], ["gcc"]))
    (b,) = variants.build_all(t, m, variants.Options(out_dir=out, jobs=jobs))
    return b


def _keep_project_options(d: Draft, b: variants.VariantBuild) -> None:
    """The project's own -D/-U/-I/-include/-std options that the trial's flags dropped (the
    builder compares its compile lines with the project's own build's): kept in project_flags,
    or, when project_flags cannot carry one, listed as meant to be dropped, saying why."""
    for option, why in b.dropped.items():
        try:
            if "<tree>" in option or "<source>" in option:
                raise ValueError("it names a folder of the build by its absolute path")
            target.check_project_flags(reference.as_words(option))
            d.kept[option] = why
        except ValueError as e:
            d.dropped[option] = f"{why}; project_flags cannot carry it: {e}"


def _project_lines(d: Draft) -> list[str]:
    lines = []
    if d.kept:
        lines.append("# The project's own options, which the variants' flags (`make CFLAGS=...`) "
                     "would drop,")
        lines.append("# found by building it once with its own flags and given back to every "
                     "variant:")
        lines += [f"#   {option}: {why}" for option, why in d.kept.items()]
        words = [w for option in d.kept for w in reference.as_words(option)]
        lines.append(f"project_flags = {_q(words)}")
    if d.dropped:
        lines.append("# EDIT: the project's own options the variants build without (check that "
                     "the program is")
        lines.append("# still the one you mean to measure):")
        lines += [f"#   {option}: {why}" for option, why in d.dropped.items()]
        lines.append(f"dropped_flags = {_q(list(d.dropped))}")
    return lines


def _tolerable(b: variants.VariantBuild) -> list[str]:
    """The flags the audit counted as extra that a target may tolerate: not -O levels."""
    return [f for f in dict.fromkeys([*b.extra_flags, *b.source_flags]) if not f.startswith("-O")]


def executables(tree: Path) -> list[Path]:
    """ELF executables a build left in its tree (not shared libraries, not CMake's or
    configure's probes), largest first."""
    found = []
    for p in tree.rglob("*"):
        rel = p.relative_to(tree).as_posix()
        if ("CMakeFiles/" in rel or p.name.startswith("conftest") or ".so" in p.name
                or p.is_symlink() or not p.is_file() or not os.access(p, os.X_OK)):
            continue
        with open(p, "rb") as f:
            head = f.read(18)
        # ELF, and e_type executable (2) or position-independent executable (3, as .so are).
        if head[:4] == b"\x7fELF" and int.from_bytes(head[16:18], "little") in (2, 3):
            found.append(p)
    return sorted(found, key=lambda p: -p.stat().st_size)


def _pick(found: list[Path], names: list[str], tree: Path) -> str:
    """The executable named like the package (or the target), else the largest."""
    for name in names:
        for p in found:
            if p.name == name:
                return p.relative_to(tree).as_posix()
    return found[0].relative_to(tree).as_posix()


# --- sizing the input ------------------------------------------------------------------------

def _size(d: Draft, path: Path, b: variants.VariantBuild, say: Callable[[str], None]) -> None:
    if not d.run_given:
        # Timing a guess at the command would size the input for a run nobody measures.
        d.size_note = f"not sized: write [run], then `flagsweep new --size {path.parent}`"
        return
    try:
        d.megabytes, d.quick_megabytes, d.size_note = size_input(d.argv, b.binary, say)
    except FlagsweepError as e:
        d.size_note = f"not sized: {e}; after editing [run], `flagsweep new --size {path.parent}`"


def size_input(argv: list[str], binary: Path, say: Callable[[str], None]) -> tuple[float, float, str]:
    """Corpus megabytes for a FULL_S and a QUICK_S run of argv at -O2.

    Time is not proportional to size (start-up, caches, and programs like zopfli that are not
    linear at all), so each size is found by the secant method on timed runs: a line through
    the two timings nearest the goal, the size it gives timed in turn, until a run lands within
    15% of the goal (at most four runs per size)."""
    mb, seconds = 1.0, _timed(argv, binary, 1.0)
    points = [(mb, seconds)]
    while seconds < 0.1 and mb < MAX_MB:
        mb = min(mb * 8, MAX_MB)
        seconds = _timed(argv, binary, mb)
        points.append((mb, seconds))
    if seconds < 0.01:
        raise FlagsweepError(f"{_shown(argv)} on {mb:g} MB took {seconds:.3f} s: too fast to "
                             "size (does the run command read {input}?)")
    quick, quick_s = _secant(QUICK_S, points, argv, binary)
    full, full_s = _secant(FULL_S, points, argv, binary)
    say(f"input: {quick:g} MB took {quick_s:.2f} s and {full:g} MB {full_s:.2f} s at -O2")
    note = f"timed at -O2: {full:g} MB took {full_s:.2f} s, {quick:g} MB {quick_s:.2f} s"
    if full == MAX_MB and full_s < FULL_S * 0.85:
        note += f"; capped at {MAX_MB} MB: the command is too fast to fill {FULL_S:g} s"
    return full, quick, note


def _secant(goal: float, points: list[tuple[float, float]], argv: list[str],
            binary: Path) -> tuple[float, float]:
    """The size whose run takes about goal seconds, and its time; points gains each timing."""
    best = min(points, key=lambda p: abs(p[1] - goal))
    for _ in range(4):
        if abs(best[1] - goal) <= 0.15 * goal:
            break
        (m1, t1), (m2, t2) = sorted(points, key=lambda p: abs(p[1] - goal))[:2] \
            if len(points) > 1 else (points[0], (0.0, 0.0))
        slope = (t1 - t2) / (m1 - m2) if m1 != m2 and t1 != t2 else t1 / m1
        mb = m1 + (goal - t1) / slope if slope > 0 else m1 * goal / t1
        mb = min(max(_round(mb), 0.01), MAX_MB)
        if any(m == mb for m, _ in points):
            break
        points.append((mb, _timed(argv, binary, mb)))
        best = min(points, key=lambda p: abs(p[1] - goal))
    return best


def _timed(argv: list[str], binary: Path, megabytes: float) -> float:
    """Seconds of the best of two runs on a corpus of that size; FlagsweepError when the run
    fails."""
    work = files.cache_dir() / "trial-runs"
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"corpus-{megabytes:g}.bin"
    if not data.exists():
        data.write_bytes(inputs.corpus_bytes(round(megabytes * inputs.MB), 1))
    out = work / "output"
    args = [a.format(binary=str(binary), input=str(data), output=str(out)) for a in argv]
    best = math.inf
    for _ in range(2):
        started = time.perf_counter()
        try:
            done = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=120)
        except subprocess.TimeoutExpired:
            raise FlagsweepError(f"{_shown(argv)} on {megabytes:g} MB ran over 120 s") from None
        took = time.perf_counter() - started
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise FlagsweepError(f"{_shown(argv)} exited {done.returncode} "
                                 f"({why[0][:200]})")
        best = min(best, took)
    return best


def _round(mb: float) -> float:
    """Two significant digits: a size a person would write."""
    return float(f"{mb:.2g}")


def _shown(argv: list[str]) -> str:
    return " ".join(argv)


def _set_line(text: str, key: str, value: str, comment: str) -> str:
    pattern = re.compile(rf"^{key}\s*=.*$", re.M)
    if not pattern.search(text):
        raise FlagsweepError(f"no '{key} =' line in the [inputs] table to rewrite")
    return pattern.sub(f"{key} = {value}  # {comment}", text, count=1)


# --- the file --------------------------------------------------------------------------------

def _q(value) -> str:
    """A TOML value (JSON's strings and lists are TOML's basic strings and arrays)."""
    return json.dumps(value)


def render(d: Draft) -> str:
    r = d.release
    lines = [
        f"# {d.name}: written by `flagsweep new {d.name} --debian {d.package}`. Every value below",
        "# was found, not guessed; what is left to you is marked EDIT.",
        f"summary = {_q(f'{d.package} {d.upstream} (EDIT: what the measured run does)')}",
        f"version = {_q(d.upstream)}",
        "",
        "[source]",
        f"# Debian's {r.orig} of {r.package} {r.version} (the newest here); orig tarballs keep the",
        "# upstream bytes. Other Debian versions with this sha256 are tried if this one goes.",
        f"urls = {_q(d.urls)}",
        f"sha256 = {_q(r.orig_sha256)}",
        f"debian = {{ package = {_q(r.package)}, version = {_q(r.version)} }}",
        "",
        "[build]",
        f"system = {_q(d.system)}",
    ]
    if d.binary_note:
        lines.append(f"# {d.binary_note}")
    lines.append(f"binary = {_q(d.binary)}")
    if d.configure_args:
        lines.append(f"configure_args = {_q(d.configure_args)}")
    if d.make_args:
        lines.append(f"# {d.make_note}")
        lines.append(f"make_args = {_q(d.make_args)}")
    lines += _project_lines(d)
    if d.tolerated:
        lines.append("# Code-generation flags the project adds itself, which the audit ignores "
                     "(remove one if")
        lines.append("# it is not the project's own, e.g. it came from your environment):")
        lines += [f"#   {flag}: {why}" for flag, why in d.tolerated.items()]
        lines.append(f"tolerated_flags = {_q(list(d.tolerated))}")
    if d.build_note:
        lines.append(f"# {d.build_note}")
    lines += [
        "",
        "[inputs]",
        "kind = \"corpus\"          # mixed text and binary, generated from the seed",
        f"megabytes = {d.megabytes:g}  # ~{FULL_S:g} s at -O2 ({d.size_note})",
        f"quick_megabytes = {d.quick_megabytes:g}  # ~{QUICK_S:g} s",
        "seed = 1",
        "",
        "[run]",
        ("# The command to time (--run)." if d.run_given else "# EDIT: the command to time.")
        + " {binary} is the built program, {input} the input",
        "# file, {output} a file it may write. After changing it, size the input for it again:"
        if d.run_given else "# file, {output} a file it may write. Then size the input for it:",
        f"#   flagsweep new --size {d.name}",
        f"argv = {_q(d.argv)}",
        "stdout = \"compared\"",
        "timeout = 120",
        "",
        "[check]",
        "# EDIT: how a variant's result is checked against the baseline's: exact (the same",
        "# bytes), roundtrip (roundtrip_argv gives the input back), or tolerance (numbers within",
        "# rel_tolerance). See docs/targets.md.",
        "method = \"exact\"",
        "of = \"stdout\"",
        "",
    ]
    return "\n".join(lines)
