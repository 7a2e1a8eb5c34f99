"""What Debian's packaging of a source package tells `flagsweep new`, so that a campaign of
dozens runs through where a person would have typed a command: the build dependencies from
the Sources index's Build-Depends (installed as root, else named in the one line to run),
whether the package's own build runs autoreconf, and which executables its binary packages
ship (the program to measure is one of those)."""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path
from typing import Callable

from flagsweep.compilation import contents, dependencies, relations
from flagsweep.jobs.target_file import Draft


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


def autoreconf_reason(tree: Path, build_depends: str) -> str | None:
    """Why the package's own build would run autoreconf on this tree, or None: a
    configure.ac (or configure.in) without the configure it makes, or Debian's build running
    dh_autoreconf (dh-autoreconf, or debhelper-compat 10 and later, in Build-Depends) over
    automake's Makefile.am."""
    source = next((n for n in ("configure.ac", "configure.in") if (tree / n).is_file()), None)
    if source is None:
        return None
    if not (tree / "configure").is_file():
        return f"the source has {source} and no configure (a tag archive, as jq's)"
    if not (tree / "Makefile.am").is_file():
        return None
    names = {a.name: a for relation in relations.read(build_depends, _arch()).relations
             for a in relation}
    if "dh-autoreconf" in names:
        return "Debian's build runs dh_autoreconf (dh-autoreconf in Build-Depends)"
    compat = names.get("debhelper-compat")
    if compat and compat.op == "=" and re.fullmatch(r"\d+", compat.version) \
            and int(compat.version) >= 10:
        return (f"Debian's build runs dh_autoreconf (debhelper-compat {compat.version} in "
                "Build-Depends)")
    return None


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
