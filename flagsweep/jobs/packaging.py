"""What Debian's packaging of a source package tells `flagsweep new`, so that a campaign of
dozens runs through where a person would have typed a command: the build dependencies from
the Sources index's Build-Depends (installed as root, else named in the one line to run),
Debian's patches (its Debian part's debian/patches/series, applied as Debian builds it),
whether autoreconf is needed, and which executables its binary packages ship (the program to
measure is one of those)."""

from __future__ import annotations

import functools
import shlex
from pathlib import Path
from typing import Callable

from flagsweep.compilation import contents, dependencies, fetch, patches, relations
from flagsweep.errors import FetchError
from flagsweep.experiment.source import DebianSource, Source
from flagsweep.jobs.target_file import Draft

# What configure and the Makefile.in files are made from: a patch to one needs autoreconf
# before it does anything (an .m4 file feeds aclocal.m4, then configure).
AUTOTOOLS_INPUTS = ("configure.ac", "configure.in", "Makefile.am", ".m4")


@functools.lru_cache(maxsize=1)
def _arch() -> str:
    return dependencies.arch()


def build_dependencies(d: Draft, say: Callable[[str], None],
                       lookup: dependencies.Lookup | None = None) -> None:
    """Each relation of the release's Build-Depends met here, or installed (as root), or named
    in d.depends_command; what was done goes into d.depends_note and is said."""
    r = d.release
    if not r.build_depends.strip():
        return
    field = relations.read(r.build_depends, _arch())
    needs = dependencies.needs(field, lookup or dependencies.Apt(field))
    if needs.unavailable and lookup is None and dependencies.root() and dependencies.update():
        needs = dependencies.needs(field, dependencies.Apt(field))   # with fresh lists
    head = (f"Build-Depends of {r.package} {r.version}: {len(field.relations)} relation(s) "
            f"here, {len(needs.met)} met")
    d.depends_note = [head]
    say(f"build dependencies: {head[len('Build-Depends of '):]}")
    for what, items in (("no package here meets", needs.unavailable),
                        ("not read", needs.unread)):
        if items:
            d.depends_note.append(f"{what}: {'; '.join(items)}")
            say(f"build dependencies: {what}: {'; '.join(items)}")
    if not needs.install:
        return
    line = shlex.join(needs.command())
    if not dependencies.root():
        d.depends_command = needs.command()
        d.depends_note.append(f"not installed (not root): {line}")
        say(f"build dependencies: not root, so not installed; as root run: {line} "
            "(going on: the build may still work)")
    elif dependencies.install(needs, say):
        d.depends_note.append(f"installed by `flagsweep new`: {' '.join(needs.install)}")
        say(f"build dependencies: installed {' '.join(needs.install)}")
    else:
        d.depends_command = needs.command()
        d.depends_note.append(f"not installed (apt-get failed): {line}")


def debian_patches(d: Draft, say: Callable[[str], None]) -> list[patches.Patch]:
    """Debian's patches, where the release's Debian part has a debian/patches/series: d.patches
    set to the part's sha256 (the target's debian_patches) and the note written; [] without
    one. A Debian part that cannot be had leaves the source unpatched, said; one whose series
    or patches are refused (a path outside the tree) stops `new`: FetchError."""
    r = d.release
    if not r.debian_sha256:
        return []           # a 1.0 package's diff, or none: no series to apply
    source = Source(name=d.name, version=d.upstream, urls=(), sha256=r.orig_sha256,
                    debian=DebianSource(r.package, r.version), patches=r.debian_sha256)
    try:
        part = fetch.debian_part(source)
    except FetchError as e:
        d.patches_note = f"not patched: {e}"
        say(f"{d.package}: Debian's patches: {d.patches_note}")
        return []
    listed = patches.series(part, r.package)
    if listed:
        d.patches = r.debian_sha256
        names = _listed([p.name for p in listed], 4)
        d.patches_note = (f"Debian's {len(listed)} patch(es), debian/patches/series of "
                          f"{r.debian_part}, applied as Debian builds it: {names}")
        say(f"{d.package}: {d.patches_note}")
    return listed


def autoreconf_reason(tree: Path, applied: list[patches.Patch]) -> str | None:
    """Why autoreconf is needed on this tree, as a user would decide it, or None: a
    configure.ac (or configure.in) without the configure it makes (a tag archive), or Debian's
    patches changing what configure and the Makefiles are made from. A configure the release
    ships is otherwise kept: it was made with the macros its authors had (indent's
    AX_CC_FOR_BUILD, which this machine's autoreconf may lack), whatever dh_autoreconf does."""
    source = next((n for n in ("configure.ac", "configure.in") if (tree / n).is_file()), None)
    if source is None:
        return None
    if not (tree / "configure").is_file():
        return f"the source has {source} and no configure (a tag archive, as jq's)"
    changed = patches.changed(applied, AUTOTOOLS_INPUTS)
    if not changed:
        return None
    (path, patch), more = next(iter(changed.items())), len(changed) - 1
    return (f"Debian's patch {patch} changes {path}"
            + (f" and {more} more of configure's inputs" if more else "")
            + ", so configure is made again")


def shipped_programs(d: Draft, say: Callable[[str], None],
                     read: Callable[[list[str], str], contents.Shipped] = contents.shipped
                     ) -> None:
    """The executables Debian's binary packages of the release ship, into d.shipped (None
    when no file list could be read, the why in d.shipped_note)."""
    r = d.release
    names = contents.packages(r.package_list, r.binary)
    if not names:
        d.shipped_note = "the Sources index names no binary package that may ship a program"
        return
    s = read(names, r.version)
    if not s.read:
        d.shipped_note = ("Debian's file lists could not be read: "
                          + "; ".join(s.missed or ["no package"]))
        say(f"executable: {d.shipped_note}")
        return
    d.shipped = s.programs
    d.shipped_note = (f"Debian's {', '.join(s.read)} ship {len(s.programs)} program(s): "
                      f"{_listed(list(s.programs))}"
                      + (f" ({', '.join(s.other_version)} read at apt's version, not "
                         f"{r.version}: gone from the archive)" if s.other_version else ""))
    say(f"executable: {d.shipped_note}")


def _listed(names: list[str], most: int = 12) -> str:
    return ", ".join(names[:most]) + (" ..." if len(names) > most else "") if names else "none"
