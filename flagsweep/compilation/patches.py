"""Debian's patches, applied to an unpacked orig tarball as dpkg-source applies a 3.0 (quilt)
package's: debian/patches/series in order, each with `patch -p1` (or the series line's own
-pN), fuzz 0, never a backup or a reject file.

The Debian part and its series are data from a mirror, not the project's build system: a series
line names a file inside debian/patches, and a patch names files inside the tree. A patch file
naming an absolute path or a `..` component, or making a symbolic link (git's mode 120000,
through which a later hunk could write anywhere), is refused before `patch` runs on any of
them; /dev/null (a file created or deleted) is the one absolute name a patch may carry.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from dataclasses import dataclass
from typing import Iterator
from pathlib import Path

from flagsweep import process
from flagsweep.compilation.tarball import extract
from flagsweep.errors import FetchError
from flagsweep.host import environment

PATCH_TIMEOUT = 120     # seconds for one patch: a source patch applies in well under one
SERIES = "debian/patches/series"
# A series line: the patch's name, then at most the one option dpkg-source takes, -pN.
_LINE = re.compile(r"(\S+)(?:\s+-p([0-9]))?")
_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
# The header lines that name a file, and the words after each.
_NAMING = ("--- ", "+++ ", "*** ", "Index: ", "rename from ", "rename to ", "copy from ",
           "copy to ")
_SYMLINK = re.compile(r"(new file mode|new mode|old mode|deleted file mode) 120000")


@dataclass(frozen=True)
class Patch:
    """One series entry: its name, its -p level and the tree files it changes."""

    name: str
    strip: int
    changes: tuple[str, ...]


def series(part: Path, package: str) -> list[Patch]:
    """The patches of the Debian part (a debian.tar.*), in series order, each checked; [] when
    it has no debian/patches/series. FetchError naming the package and the patch for a line,
    a file or a name the rules above refuse."""
    with _unpacked(part) as root:
        return _read(root, package)


def apply(part: Path, tree: Path, package: str) -> list[Patch]:
    """The Debian part's patches, every one checked first, then applied to tree in order;
    FetchError naming the package, the patch and patch's own words for the first that does
    not apply."""
    with _unpacked(part) as root:
        patches = _read(root, package)
        for p in patches:
            _apply_one(root / "debian" / "patches" / p.name, p, tree, package)
        return patches


@contextlib.contextmanager
def _unpacked(part: Path) -> Iterator[Path]:
    """The Debian part unpacked (safely, within the unpack limits) into a scratch folder."""
    with tempfile.TemporaryDirectory(dir=part.parent, prefix=".debian-") as scratch:
        yield extract(part, Path(scratch) / "part", strip_components=0)


def _read(root: Path, package: str) -> list[Patch]:
    listed = root / SERIES
    if listed.is_symlink() or not listed.is_file():
        return []
    return [_entry(root / "debian" / "patches", line, package)
            for line in _lines(listed.read_text(errors="replace"))]


def _apply_one(path: Path, p: Patch, tree: Path, package: str) -> None:
    argv = ["patch", "-t", "-F", "0", "-N", f"-p{p.strip}", "-u", "-E",
            "--no-backup-if-mismatch", "--reject-file=-", "-d", str(tree), "-i", str(path)]
    try:
        done = process.run(argv, env=environment.clean(), timeout=PATCH_TIMEOUT)
    except FileNotFoundError:
        raise FetchError(f"{package}: Debian's patches need patch, which is not installed: "
                         "apt-get install patch (as root)") from None
    except process.TimeoutExpired:
        raise FetchError(f"{package}: Debian's patch {p.name} ran over {PATCH_TIMEOUT} s") \
            from None
    if not done.ok:
        # patch writes what failed on stdout; one line, its words kept
        said = " | ".join(line.strip() for line in (done.stdout + done.stderr).splitlines()
                          if line.strip())
        raise FetchError(f"{package}: Debian's patch {p.name} does not apply to the orig "
                         f"(patch -p{p.strip} exit {done.returncode}): {said[-600:]}")


def changed(patches: list[Patch], names: tuple[str, ...]) -> dict[str, str]:
    """The tree files among names (file names, or suffixes such as ".m4") the patches change,
    each with the first patch that does."""
    found: dict[str, str] = {}
    for p in patches:
        for path in p.changes:
            base = path.rsplit("/", 1)[-1]
            if base in names or base.endswith(tuple(n for n in names if n.startswith("."))):
                found.setdefault(path, p.name)
    return found


def _lines(text: str) -> list[str]:
    """The series' entries: comments and blank lines left out, as quilt reads it."""
    return [line.split("#", 1)[0].strip() for line in text.splitlines()
            if line.split("#", 1)[0].strip()]


def _entry(folder: Path, line: str, package: str) -> Patch:
    shown = line if line.isprintable() else repr(line)
    entry = _LINE.fullmatch(line)
    if entry is None:
        raise FetchError(f"{package}: {SERIES} line {shown!r}: expected a patch's name and at "
                         "most -pN")
    name, strip = entry.group(1), int(entry.group(2) or 1)
    if name.startswith("/") or ".." in name.split("/"):
        raise FetchError(f"{package}: {SERIES} names {shown!r}: expected a file inside "
                         "debian/patches (no leading /, no ..)")
    path = folder / name
    if path.is_symlink() or not path.is_file():
        raise FetchError(f"{package}: {SERIES} names {shown!r}, which is not a file in "
                         "debian/patches")
    # latin-1: every byte one character, so any patch's headers can be read
    return Patch(name, strip, _names(path.read_bytes().decode("latin-1"), name, strip, package))


def _names(text: str, patch: str, strip: int, package: str) -> tuple[str, ...]:
    """The files a patch changes (its +++ names, -p stripped), every name in its headers
    checked; the lines inside a unified hunk are content, never read as a header."""
    changes: list[str] = []
    old = new = 0               # lines left in the current hunk
    for line in text.split("\n"):        # never splitlines: \x85 is a latin-1 character
        if old > 0 or new > 0:
            old -= line[:1] in (" ", "-", "")
            new -= line[:1] in (" ", "+", "")
            continue
        if hunk := _HUNK.match(line):
            old, new = int(hunk.group(1) or 1), int(hunk.group(2) or 1)
            continue
        if _SYMLINK.match(line):
            raise FetchError(f"{package}: Debian's patch {patch} makes a symbolic link "
                             f"({line.strip()}): refused, a link could lead outside the tree")
        for name in _named(line):
            if name != "/dev/null" and (name.startswith("/") or ".." in name.split("/")):
                raise FetchError(f"{package}: Debian's patch {patch} names {name!r}: refused, "
                                 "a patch may change files inside the tree only (no absolute "
                                 "path, no ..)")
            if line.startswith("+++ ") and name != "/dev/null":
                changes.append("/".join(name.split("/")[strip:]))
    return tuple(changes)


def _named(line: str) -> list[str]:
    """The file names a header line carries (none for any other line)."""
    if line.startswith("diff --git "):
        return [w.strip('"') for w in line[len("diff --git "):].split()]
    for head in _NAMING:
        if line.startswith(head):
            return [line[len(head):].split("\t", 1)[0].strip().strip('"')]
    return []
