"""`flagsweep new`: a target file for a program flagsweep does not ship, written from what a
trial build learned.

A newcomer's time went on everything around the target file: finding the Debian version and the
orig tarball's sha256, learning that the project adds its own -fPIC (after a cold build), which
file the build makes, and an input size by guesswork. Here each is found, not guessed:

- the release: Debian's Sources index (debian.debian_releases) gives every version with its orig
  tarball's name and sha256, newest first; the tarball is fetched and verified like any target's;
- the build dependencies: the stanza's Build-Depends, the missing ones installed as root (else
  the one `apt-get install` line to run), so a campaign does not stop where a person would
  have typed a command (packaging.py; --no-build-deps leaves them);
- the unpacking: strip_components from the orig tarball's members (1 where they all sit in
  one folder, else 0), said in a comment;
- Debian's patches: where the Debian part has a debian/patches/series, applied as Debian
  builds the package (packaging.debian_patches, compilation/patches.py);
- the build system: `configure` (autotools), `CMakeLists.txt` (cmake), `meson.build` (meson), a
  Makefile (make);
  autoreconf first where the tree needs it (a tag archive without configure; Debian's patches
  to configure.ac, Makefile.am or an .m4 file), never only because dh_autoreconf would;
- the executable: a trial -O2 build through flagsweep's own builder and audit, then the ELF
  executables it left in the build tree, of those Debian's binary packages ship the one named
  like the package first (--binary names it; --force redoes a `new` whose folder has a target
  file);
- the goal: that executable alone built on a trial (goal.py), so a variant does not build
  the fifteen programs nobody measures; the whole build when alone does not work;
- what configure left out: a SIMD or assembly path (nasm missing) said in a warning and the
  file (compilation/features.py);
- tolerated_flags: the code-generation flags the audit found on the project's compile lines that
  the variant did not ask for (never an -O level: that is what is measured), each with the
  count the trial saw; the build is repeated with them to show the file verifies;
- project_flags: the project's own -D/-U/-I/-include/-std options that the trial's flags
  dropped, found by comparing with the project's own build (build/own_build.py), each with
  where it came from;
- the input: a corpus sized by the run command's CPU time at -O2 (about 2 s, quick about
  0.3 s, or said to be out of reach),
  again with `--size` once the user has written the real run command; or the user's own file
  (`--input`: a script, an image), copied next to the target file with its sha256, never sized;
- the run: the run command is run once on the input after the trial build, so a command that
  fails there (a script the interpreter cannot parse, a missing option) stops `new` with the
  program's own words instead of a file that only looks finished;
- the check: the run command run twice more, its products compared (check_choice.py).

The parts: project.py reads the source tree (the build system, libtool, the executables),
trial.py runs the trial builds and the trial run, sizing.py times the input, check_choice.py
chooses the check, target_file.py holds the Draft and writes the file.
"""

from __future__ import annotations

import re
import shlex
import shutil
import tomllib
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from flagsweep import files
from flagsweep.compilation import debian, fetch, patches, tarball, variants
from flagsweep.errors import FetchError, FlagsweepError
from flagsweep.experiment import target
from flagsweep.experiment.source import DebianSource, Source
from flagsweep.jobs import packaging
from flagsweep.jobs.goal import alone
from flagsweep.jobs.project import detect_system, hand_written, libtool_used, static
from flagsweep.jobs.sizing import set_line, size_input
from flagsweep.jobs.target_file import PLACEHOLDER_RUN, Draft, render
from flagsweep.jobs.trial import o2_build, prove, trial_builds


# A target's name, and the grammar Debian's package names fit in too (never an option's dash)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def new(name: str, package: str, folder: Path, say: Callable[[str], None],
        version: str | None = None, url: str | None = None, jobs: int = 2,
        argv: list[str] | None = None, given: Path | None = None, binary: str | None = None,
        force: bool = False, build_deps: bool = True, patched: bool = True) -> Path:
    """Write folder/target.toml for Debian's source package; returns its path. The file is
    written even when a step fails, with that step's finding in a comment. argv: the run
    command, if the user knows it already (the input is then sized for it, and it is run once
    to prove it works). given: the user's input file, measured instead of a corpus. binary:
    the executable to measure (else, of those the trial build made, one Debian's binary
    packages ship, named like the package first, or the largest). force: redo a `new` whose
    folder holds a target file already. build_deps: install the package's Build-Depends that
    are missing (as root; else name the command). patched: Debian's patches applied, where
    its Debian part has a series (else the orig as upstream released it)."""
    path = folder / "target.toml"
    if path.exists() and not force:
        raise FlagsweepError(f"{path} exists: edit it, size its input with `flagsweep new --size "
                             f"{folder}`, or start again with --force")
    if not NAME.fullmatch(name):
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
    if binary:
        _check_binary(binary)
        draft.binary = draft.binary_given = binary
    if argv:
        _check_run(argv)
    if given is not None:
        _check_input(given, folder)
    if force:
        _clear(folder, given, say)
    if build_deps:
        packaging.build_dependencies(draft, say)
    else:
        draft.depends_note = ["Build-Depends not looked at (--no-build-deps)"]
    _unpacking(draft, say)
    applied = packaging.debian_patches(draft, say) if patched else []
    if not patched:
        draft.patches_note = "Debian's patches not applied (--no-patches): the orig as released"
    tree = draft.source = _regenerated(draft, fetch.prepare(_source(draft)), applied, say)
    draft.system, draft.configure_args, note = detect_system(tree)
    draft.configure = hand_written(tree) if draft.system == "autotools" else None
    say(f"{package}: {note}")
    if draft.system == "autotools" and (why := libtool_used(tree)):
        say(f"{package}: {static(draft, why)}")
    folder.mkdir(parents=True, exist_ok=True)
    if given is not None:
        _take_input(draft, given, folder, say)
    trial = folder / "trial"
    works = False
    try:
        built = trial_builds(draft, path, trial, jobs, say)
        if built is not None:
            built = alone(draft, path, trial, jobs, built, say)
            works = prove(draft, folder, built, say)
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
    if d.binary_given and not d.build_errors:
        return ""       # the build went through; the executable named is not among its own
    if d.depends_command:
        return (f". Debian's build dependencies of {d.release.package} are not all installed: "
                f"as root, `{shlex.join(d.depends_command)}`")
    if d.depends_note:           # what was met, or could not be, or was not looked at
        return f". {'; '.join(d.depends_note)}"
    return ""


def _unpacking(d: Draft, say: Callable[[str], None]) -> None:
    """The strip_components that unpacks the orig tarball whole, from its members: most hold
    one top folder, but some (ssdeep's) hold their files at the top, which a strip of 1 would
    drop."""
    fits = tarball.layout(fetch.fetch(_source(d)))
    d.strip_components = fits.strip_components
    d.strip_note = (f"{d.release.orig}: {fits.said()}, so strip_components = "
                    f"{fits.strip_components} unpacks it "
                    f"{'without that folder' if fits.one_folder else 'as it is'}")
    say(f"{d.package}: {d.strip_note}")


def _regenerated(d: Draft, tree: Path, applied: list[patches.Patch],
                 say: Callable[[str], None]) -> Path:
    """The tree autoreconf'd where it needs it (packaging.autoreconf_reason: a tree without
    configure cannot be built otherwise; one with it keeps it if autoreconf fails here)."""
    why = packaging.autoreconf_reason(tree, applied)
    if why is None:
        return tree
    say(f"{d.package}: autoreconf -fi: {why}")
    d.autoreconf = True
    try:
        regenerated = fetch.prepare(_source(d))
    except FetchError as e:
        if not (tree / "configure").is_file():
            raise
        d.autoreconf = False
        lines = str(e).splitlines()
        d.autoreconf_note = (f"not autoreconf'd, though {why}: autoreconf -fi failed here "
                             f"({lines[-1].strip() if lines else e}), so the source's own "
                             "configure is used")
        say(f"{d.package}: {d.autoreconf_note}")
        return tree
    d.autoreconf_note = f"autoreconf -fi on the fetched source, as {why}"
    return regenerated


def resize(name_or_path: str, say: Callable[[str], None], jobs: int = 2) -> Path:
    """Size an existing target's input by timing its own run command at -O2 (after the user
    wrote it), and rewrite the sizes in the file."""
    t = target.load(name_or_path)
    if not isinstance(t.spec.inputs, target.CorpusInput):
        raise FlagsweepError(f"{t.path}: --size sizes a corpus input (inputs.kind = \"corpus\"); "
                             f"this one is {t.spec.inputs.kind!r}")
    trial = t.path.parent / "trial"
    shutil.rmtree(trial, ignore_errors=True)
    b = o2_build(t, trial, jobs)
    if b.status != "ok":
        raise FlagsweepError(f"the -O2 build of {t.path} is {b.status}: {b.detail}")
    sized = size_input(t.spec.run.argv, b.binary, say)
    text = t.path.read_text()
    text = set_line(text, "megabytes", f"{sized.megabytes:g}", sized.full_comment())
    text = set_line(text, "quick_megabytes", f"{sized.quick_megabytes:g}", sized.quick_comment())
    files.write_atomic(t.path, text)
    shutil.rmtree(trial, ignore_errors=True)
    return t.path


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
                  debian=DebianSource(d.release.package, d.release.version),
                  strip_components=d.strip_components, autoreconf=d.autoreconf,
                  patches=d.patches)


TAKEN = {"target.toml", "trial"}     # names `new` writes in the folder itself


def _check_binary(binary: str) -> None:
    """--binary as [build] binary will carry it: a path inside the build tree."""
    if binary.startswith("/") or ".." in binary.split("/") or not binary.strip("/"):
        raise FlagsweepError(f"--binary {binary!r}: expected an executable's name or its path "
                             "inside the build tree (no leading /, no ..)")


def _clear(folder: Path, given: Path | None, say: Callable[[str], None]) -> None:
    """--force: remove what an earlier `new` wrote in folder (the target file, its trial
    builds, the input it copied), so nothing of that attempt is read again. Nothing else in
    the folder is touched, and the user's own --input never, even where it was copied to."""
    old = folder / "target.toml"
    written = [old, folder / "trial"]
    if old.is_file():
        try:
            copied = tomllib.loads(old.read_text()).get("inputs", {}).get("path")
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
            copied = None   # a file the user broke: its input, if any, stays
        # a name in the folder itself, as `new` writes it: a path elsewhere is not ours
        if isinstance(copied, str) and copied == Path(copied).name and copied not in TAKEN \
                and copied not in (".", "..") and not (folder / copied).is_dir():
            written.append(folder / copied)
    for p in written:
        if given is not None and p.exists() and p.resolve() == given.resolve():
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()
        else:
            continue
        say(f"--force: removed {p}")


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


def _size(d: Draft, path: Path, b: variants.VariantBuild, say: Callable[[str], None]) -> None:
    if d.input_path:
        return      # the user's file is the workload as it is
    if not d.run_given:
        # Timing a guess at the command would size the input for a run nobody measures.
        d.size_note = f"not sized: write [run], then `flagsweep new --size {path.parent}`"
        return
    try:
        d.sizing = size_input(d.argv, b.binary, say)
        d.megabytes, d.quick_megabytes = d.sizing.megabytes, d.sizing.quick_megabytes
    except FlagsweepError as e:
        d.size_note = f"not sized: {e}; after editing [run], `flagsweep new --size {path.parent}`"
