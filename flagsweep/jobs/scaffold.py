"""`flagsweep new`: a target file for a program flagsweep does not ship, written from what a
trial build learned.

A newcomer's time went on everything around the target file: finding the Debian version and the
orig tarball's sha256, learning that the project adds its own -fPIC (after a cold build), which
file the build makes, and an input size by guesswork. Here each is found, not guessed:

- the release: Debian's Sources index (debian.debian_releases) gives every version with its orig
  tarball's name and sha256, newest first; the tarball is fetched and verified like any target's;
- the build system: `configure` (autotools), `CMakeLists.txt` (cmake), a Makefile (make);
- the executable: a trial -O2 build through flagsweep's own builder and audit, then the ELF
  executables it left in the build tree, the one named like the package first;
- tolerated_flags: the code-generation flags the audit found on the project's compile lines that
  the variant did not ask for (never an -O level: that is what is measured), each with the
  count the trial saw; the build is repeated with them to show the file verifies;
- project_flags: the project's own -D/-U/-I/-include/-std options that the trial's flags
  dropped, found by comparing with the project's own build (build/own_build.py), each with
  where it came from;
- the input: a corpus sized by timing the run command at -O2 (about 2 s, quick about 0.3 s),
  again with `--size` once the user has written the real run command; or the user's own file
  (`--input`: a script, an image), copied next to the target file with its sha256, never sized;
- the run: the run command is run once on the input after the trial build, so a command that
  fails there (a script the interpreter cannot parse, a missing option) stops `new` with the
  program's own words instead of a file that only looks finished.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from flagsweep import caches, files, process
from flagsweep.compilation import debian, fetch, own_build, tarball, variants
from flagsweep.errors import FlagsweepError
from flagsweep.results.analysis import build_reason
from flagsweep.experiment import matrix, recipe, target
from flagsweep.experiment.source import DebianSource, Source
from flagsweep.workload import corpus, inputs

FULL_S, QUICK_S = 2.0, 0.3      # what a full and a quick run should take at -O2
MAX_MB = 512                    # a generated corpus larger than this costs more than it tells
TRIALS = 4     # builds at most: as written, the program's own make rule, its binary, tolerated
PLACEHOLDER_RUN = ["{binary}", "{input}"]
RUN_TIMEOUT = 120               # the [run] timeout `new` writes
# libtool builds a project's library shared by default, and each program linked with it as a
# wrapper script around .libs/PROGRAM, which loads the library at run time (an installed copy,
# the system's, or the build's through the wrapper): the program's own code is not what runs.
# Static, the program holds the library's code, built with the variant's flags.
STATIC = ["--disable-shared", "--enable-static"]


@dataclass
class Draft:
    """What the target file will say, with the why of each learned value."""

    name: str
    package: str
    release: debian.DebianRelease
    upstream: str
    urls: list[str]
    system: str
    binary: str
    configure_args: list[str] = field(default_factory=list)
    configure_note: str = ""
    make_args: list[str] = field(default_factory=list)
    make_note: str = ""
    source: Path | None = None      # the fetched tree, for reading its Makefile
    tolerated: dict[str, str] = field(default_factory=dict)   # flag -> what the trial saw
    kept: dict[str, str] = field(default_factory=dict)      # project option -> where it came from
    dropped: dict[str, str] = field(default_factory=dict)   # ... that project_flags cannot carry
    binary_note: str = ""
    build_note: str = ""
    build_errors: list[str] = field(default_factory=list)   # a failed trial build's log lines
    argv: list[str] = field(default_factory=lambda: list(PLACEHOLDER_RUN))
    run_given: bool = False     # the user's own command (--run), not the placeholder
    megabytes: float = 1.0
    quick_megabytes: float = 0.2
    size_note: str = "not sized yet"
    given: Path | None = None    # the user's input (--input) as given
    input_path: str = ""         # its copy, relative to the target file's folder
    input_sha256: str = ""
    run_note: list[str] = field(default_factory=list)   # why the trial run failed


def new(name: str, package: str, folder: Path, say: Callable[[str], None],
        version: str | None = None, url: str | None = None, jobs: int = 2,
        argv: list[str] | None = None, given: Path | None = None) -> Path:
    """Write folder/target.toml for Debian's source package; returns its path. The file is
    written even when a step fails, with that step's finding in a comment. argv: the run
    command, if the user knows it already (the input is then sized for it, and it is run once
    to prove it works). given: the user's input file, measured instead of a corpus."""
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
    if given is not None:
        _check_input(given, folder)
    tree = draft.source = fetch.prepare(_source(draft))
    draft.system, draft.configure_args, note = detect_system(tree)
    say(f"{package}: {note}")
    if draft.system == "autotools" and (why := libtool_used(tree)):
        say(f"{package}: {_static(draft, why)}")
    folder.mkdir(parents=True, exist_ok=True)
    if given is not None:
        _take_input(draft, given, folder, say)
    trial = folder / "trial"
    works = False
    try:
        built = _trial_builds(draft, path, trial, jobs, say)
        if built is not None:
            works = _prove(draft, folder, built, say)
        if works:
            _size(draft, path, built, say)
    finally:
        path.write_text(render(draft))
    if built is None:
        raise FlagsweepError(f"wrote {path}, but {draft.build_note}{_build_deps(draft)}"
                             + "".join(f"\n  {line}" for line in draft.build_errors))
    if not works:
        raise FlagsweepError(f"wrote {path}, but its run command does not work: "
                             + "\n".join(draft.run_note)
                             + f"\nFix [run] (or the input) in {path}; the trial build is kept "
                             f"in {trial}")
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

def _release(package: str, version: str | None) -> debian.DebianRelease:
    releases = [r for r in debian.debian_releases(package) if r.orig_sha256]
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
        _say_failure(b, say)
        if b.status == "ok":
            _drop_stale(d, b, say)
            d.build_note = (f"a trial -O2 build verified: {b.audit['compiles']} compile lines "
                            "carried exactly the variant's flags")
            return b
        tree = trial / str(attempt) / "builds" / b.variant.id / "tree"
        if b.status != "ok" and attempt < TRIALS and _libtool_configured(d, tree):
            continue
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
            d.make_note = (f"`make` of everything failed in the trial ({build_reason(b.detail)}); "
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
    d.build_errors = _error_lines(b)
    d.build_note = (f"the trial -O2 build is {b.status}, kept in {trial}: {said}. Fix this "
                    f"file, then check it with `flagsweep build {path.parent} --flags -O2`")
    if b.status != "failed":     # a failed one's lines were said with it
        say(f"{b.variant.id}: {b.status}: {b.detail}")
    return None


def _error_lines(b: variants.VariantBuild) -> list[str]:
    """The lines of a failed build's log that say why (the compiler's errors, else the log's
    last lines, as the build quoted them), when that is more than a binary not found."""
    if b.status != "failed" or "is missing from" in b.detail:
        return []
    return [line.rstrip() for line in b.detail.splitlines()[1:] if line.strip()]


def _say_failure(b: variants.VariantBuild, say: Callable[[str], None]) -> None:
    """A failed trial build with its reason and the log lines that say it: a status alone
    leaves the user to dig through NAME/trial/."""
    if b.status != "failed":
        return
    say(f"  {_first(b.detail)}")
    for line in _error_lines(b):
        say(f"    {line}")


def _drop_stale(d: Draft, b: variants.VariantBuild, say: Callable[[str], None]) -> None:
    """Leave out tolerated flags that no compile line (or source attribute) of the verified
    build carried: an earlier trial needed them (a shared library's -fPIC before a static
    build), this build does not, and a tolerance nothing needs only hides a flag later."""
    seen = set((b.audit or {}).get("tolerated_seen") or [])
    stale = [flag for flag in d.tolerated if flag not in seen]
    if not stale:
        return
    say(f"tolerated_flags: {' '.join(stale)} stale: no compile line of the verified trial "
        "build carried them; left out")
    for flag in stale:
        del d.tolerated[flag]


def libtool_used(tree: Path) -> str | None:
    """Where a source tree shows that it builds with libtool, or None."""
    for found in [*tree.glob("ltmain.sh"), *tree.glob("*/ltmain.sh")]:
        return f"{found.relative_to(tree).as_posix()} is libtool's"
    for name in ("configure.ac", "configure.in"):
        if (tree / name).is_file():
            text = (tree / name).read_text(errors="replace")
            if macro := re.search(r"\b(LT_INIT|AC_PROG_LIBTOOL|AM_PROG_LIBTOOL)\b", text):
                return f"{name} calls {macro.group(1)}"
    return None


def _static(d: Draft, why: str) -> str:
    """Configure a libtool project static (STATIC says why); what was done, in a line."""
    d.configure_args += [a for a in STATIC if a not in d.configure_args]
    d.configure_note = (f"libtool ({why}): built static, so the program holds the library's "
                        "code; shared, it would load the library (an installed copy, or the "
                        "system's) at run time")
    return d.configure_note


def _libtool_configured(d: Draft, tree: Path) -> bool:
    """A trial whose configure wrote a `libtool` script, where the source showed no sign of
    it: build static from now on. False when nothing changes."""
    if d.configure_note or d.system != "autotools" or not (tree / "libtool").is_file():
        return False
    _static(d, "configure wrote a libtool script")
    return True


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
            target.check_project_flags(own_build.as_words(option))
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
        words = [w for option in d.kept for w in own_build.as_words(option)]
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
        # libtool's .libs/ holds the programs its wrapper scripts run, linked to load the
        # project's shared library from elsewhere (STATIC).
        if ("CMakeFiles/" in rel or p.name.startswith("conftest") or ".so" in p.name
                or {".libs", "_libs"} & set(p.relative_to(tree).parts[:-1])
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


# --- the user's input and the trial run -----------------------------------------------------

TAKEN = {"target.toml", "trial"}     # names `new` writes in the folder itself
STDERR_LINES = 5                     # as many as a failed check run quotes (docs/targets.md)


def _check_input(given: Path, folder: Path) -> None:
    """--input as it will be copied, before any download."""
    files.check_given(given, *tarball.file_limit(), "--input")
    if given.name in TAKEN:
        raise FlagsweepError(f"--input {given}: {folder}/{given.name} is written by `new` "
                             "itself; rename the input")


def _take_input(d: Draft, given: Path, folder: Path, say: Callable[[str], None]) -> None:
    """Copy the user's input next to the target file and record its sha256: a `file` input,
    so a later edit of the original cannot change what a sweep measures. `new` runs as root:
    the copy follows no link, keeps the original's permissions and its holes, and is refused
    past the one-file limit (files.copy_given)."""
    copy = folder / given.name
    if copy.resolve() != given.resolve():
        files.copy_given(given, copy, *tarball.file_limit(), "--input")
    d.given, d.input_path, d.input_sha256 = given, given.name, files.sha256_file(copy)
    d.size_note = "measured whole: a given input is not sized, --quick uses it whole too"
    say(f"input: {copy} (sha256 {d.input_sha256}), copied from {given}; a given file is not "
        "sized, and --quick uses it whole")


def _trial_input(d: Draft, folder: Path) -> tuple[Path, str]:
    """The file the trial run reads, and how to name it."""
    if d.input_path:
        return folder / d.input_path, d.input_path
    return _corpus(1.0), "a generated 1 MB corpus"


def _prove(d: Draft, folder: Path, b: variants.VariantBuild,
           say: Callable[[str], None]) -> bool:
    """Run the user's run command once on the input with the trial -O2 binary: True when it
    works (or there is no command of the user's to prove); else the finding in d.run_note."""
    if not d.run_given:
        return True
    data, named = _trial_input(d, folder)
    out = folder / "trial" / "output"
    out.unlink(missing_ok=True)
    args = [a.format(binary=str(b.binary), input=str(data), output=str(out)) for a in d.argv]
    try:
        # process.run: a timeout ends the program's whole process group, not only the program
        done = process.run(args, timeout=RUN_TIMEOUT)
        failed, stderr = _failure(done.returncode), done.stderr
    except process.TimeoutExpired:
        failed, stderr = f"ran over {RUN_TIMEOUT} s", ""
    except OSError as e:
        failed, stderr = f"could not be started ({e.strerror})", ""
    if not failed and _writes_output(d.argv) and not out.is_file():
        # [check] reads the {output} file: a run that writes none cannot be checked.
        failed = "exited 0 but wrote no {output} file"
    if not failed:
        say(f"trial run: `{_shown(d.argv)}` on {named} exited 0")
        return True
    tail = [line.rstrip() for line in stderr.splitlines() if line.strip()][-STDERR_LINES:]
    d.run_note = [f"`{_shown(d.argv)}` on {named} {failed}"
                  + ("; the last lines of its stderr:" if tail else "; its stderr was empty")]
    d.run_note += [f"  {line[:300]}" for line in tail]
    if not d.input_path:
        d.size_note = "not sized: the run command failed in the trial, see [run]"
    say(f"trial run: {d.run_note[0]}")
    return False


def _failure(returncode: int) -> str:
    """How a run ended, when not well: an exit status or the signal that killed it."""
    if returncode > 0:
        return f"exited {returncode}"
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return ""


def _writes_output(argv: list[str]) -> bool:
    return any("{output}" in arg for arg in argv)


# --- sizing the input ------------------------------------------------------------------------

def _size(d: Draft, path: Path, b: variants.VariantBuild, say: Callable[[str], None]) -> None:
    if d.input_path:
        return      # the user's file is the workload as it is
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
    data = _corpus(megabytes)
    with tempfile.TemporaryDirectory(prefix="flagsweep-trial-") as scratch:
        return _best_of_two(argv, binary, data, Path(scratch) / "output", megabytes)


def _best_of_two(argv: list[str], binary: Path, data: Path, out: Path, megabytes: float) -> float:
    args = [a.format(binary=str(binary), input=str(data), output=str(out)) for a in argv]
    best = math.inf
    for _ in range(2):
        started = time.perf_counter()
        try:
            done = process.run(args, timeout=120, keep_stdout=False)
        except process.TimeoutExpired:
            raise FlagsweepError(f"{_shown(argv)} on {megabytes:g} MB ran over 120 s") from None
        took = time.perf_counter() - started
        if done.returncode != 0:
            why = done.stderr.strip().splitlines()[-1:] or [""]
            raise FlagsweepError(f"{_shown(argv)} exited {done.returncode} "
                                 f"({why[0][:200]})")
        best = min(best, took)
    return best


def _corpus(megabytes: float) -> Path:
    """A generated corpus of that size for trial runs, kept in the cache between them."""
    data = caches.TRIAL_RUNS.entry(f"corpus-{megabytes:g}.bin")
    if not data.exists():
        # whole or not at all: another `new` may be timing the same size at the same moment,
        # and a half-written corpus would size its input wrong
        caches.TRIAL_RUNS.write(data, corpus.corpus_bytes(round(megabytes * inputs.MB), 1))
    return data


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
    if d.configure_note:
        lines.append(f"# {d.configure_note}")
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
        lines += [f"#   {line}" for line in d.build_errors]
    lines += ["", "[inputs]", *_inputs_lines(d), "", "[run]"]
    lines += [f"# {line}" for line in _run_finding(d)]
    lines += [
        ("# The command to time (--run)." if d.run_given else "# EDIT: the command to time.")
        + " {binary} is the built program, {input} the input",
        *_run_sizing(d),
        f"argv = {_q(d.argv)}",
        "stdout = \"compared\"",
        f"timeout = {RUN_TIMEOUT}",
        "",
        "[check]",
        "# EDIT: how a variant's result is checked against the baseline's: exact (the same",
        "# bytes), roundtrip (roundtrip_argv gives the input back), or tolerance (numbers within",
        "# rel_tolerance). See docs/targets.md.",
        "method = \"exact\"",
        *_check_of(d),
        "",
    ]
    return "\n".join(lines)


def _inputs_lines(d: Draft) -> list[str]:
    if d.input_path:
        return [f"# Your input (--input {d.given}), copied here and",
                f"# {d.size_note}.",
                "# A changed file needs its new sha256 here: the input is part of the workload.",
                "kind = \"file\"",
                f"path = {_q(d.input_path)}",
                f"sha256 = {_q(d.input_sha256)}"]
    return ["kind = \"corpus\"          # mixed text and binary, generated from the seed",
            f"megabytes = {d.megabytes:g}  # ~{FULL_S:g} s at -O2 ({d.size_note})",
            f"quick_megabytes = {d.quick_megabytes:g}  # ~{QUICK_S:g} s",
            "seed = 1"]


def _run_sizing(d: Draft) -> list[str]:
    if d.input_path:
        return ["# file, {output} a file it may write."]
    return ["# file, {output} a file it may write. After changing it, size the input for it again:"
            if d.run_given else "# file, {output} a file it may write. Then size the input for it:",
            f"#   flagsweep new --size {d.name}"]


def _run_finding(d: Draft) -> list[str]:
    if not d.run_note:
        return []
    return ["FAILED in the trial: " + d.run_note[0], *d.run_note[1:]]


def _check_of(d: Draft) -> list[str]:
    """What the check reads follows the run command: the file it writes, else its stdout."""
    if _writes_output(d.argv):
        return ["of = \"output\"          # the run command writes {output}"]
    return ["of = \"stdout\""]
