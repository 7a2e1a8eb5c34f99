"""What the files a build leaves are, read from their bytes: an object, a shared library or an
archive; an archive's members; a shared library's soname; what an ELF binary needs at run time
and where it looks, and where the loader would find it (inside the build tree or not); a
libtool wrapper script's program."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from flagsweep import model


def dynamic(binary: Path) -> tuple[list[str], list[Path]]:
    """The shared libraries an ELF binary needs (DT_NEEDED) and the folders of its run path
    (DT_RUNPATH, else DT_RPATH, $ORIGIN read as its folder); nothing for a static binary or a
    file that is not ELF."""
    try:
        with open(binary, "rb") as f:
            section = ELFFile(f).get_section_by_name(".dynamic")
            tags = list(section.iter_tags()) if section is not None else []
    except (OSError, ELFError):
        return [], []
    needed = [t.needed for t in tags if t.entry.d_tag == "DT_NEEDED"]
    paths = ([t.runpath for t in tags if t.entry.d_tag == "DT_RUNPATH"]
             or [t.rpath for t in tags if t.entry.d_tag == "DT_RPATH"])
    origin = str(binary.parent)
    folders = [d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
               for p in paths for d in p.split(":") if d]
    return needed, [Path(d).resolve() for d in folders]


# Where the loader looks after a run path (ld.so(8): its cache holds these folders' libraries on
# Debian and Fedora). Read here, never by running ldconfig or ldd on a binary the results name.
SYSTEM_FOLDERS = tuple(Path(d) for d in (
    "/usr/local/lib", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib",
    "/usr/lib"))

# The C and C++ runtime and the compiler's own support libraries: every program loads some,
# no flag of a sweep is meant to change them, so they are listed but never warned about.
RUNTIME = ("ld-linux", "ld64.so", "libc.so", "libm.so", "libmvec.so", "libpthread.so",
           "libdl.so", "librt.so", "libutil.so", "libresolv.so", "libgcc_s.so", "libstdc++.so",
           "libc++.so", "libc++abi.so", "libunwind.so", "libatomic.so", "libgomp.so",
           "libomp.so", "libquadmath.so", "libgfortran.so", "libasan.so", "libubsan.so",
           "libtsan.so", "liblsan.so")


@dataclass
class Libraries:
    """The shared libraries a binary loads, found as the loader would: those inside its build
    tree (their code is the variant's, built with its flags) and those outside it, each by the
    name asked for and the file found (None: not found here)."""

    inside: list[Path] = field(default_factory=list)
    outside: list[tuple[str, Path | None]] = field(default_factory=list)


def is_runtime(name: str) -> bool:
    return name.startswith(RUNTIME)


def loaded(binary: Path, tree: Path) -> Libraries:
    """Every shared library the binary loads, its libraries' own needs followed, each looked
    for in its needer's run path and then the system's folders. Only ELF headers are read:
    nothing runs. A library is inside the tree when its real path is (a link out of the tree
    is not the variant's code)."""
    root, found = tree.resolve(), Libraries()
    todo, seen = [binary], set()
    while todo:
        needer = todo.pop(0)
        needed, runpath = dynamic(needer)
        for name in needed:
            if name in seen:
                continue
            seen.add(name)
            path = _find(name, runpath)
            real = path.resolve() if path is not None else None
            if real is not None and real.is_relative_to(root):
                found.inside.append(real)
            else:
                found.outside.append((name, path))
            if real is not None:
                todo.append(real)
    return found


def foreign(loads: Iterable[tuple[str, model.SharedLibrary]],
            shares: dict[str, float] | None = None) -> list[str]:
    """What each library from outside a build tree (the C/C++ runtime left out) means for a
    sweep, one line each, said once however many variants' binaries (by name) load it; with
    its share of the baseline's profiled run where `explain` measured one."""
    said = sorted({(binary, lib.name, lib.path or "") for binary, lib in loads
                   if not lib.runtime})
    return [f"{_shown(binary)} loads {_shown(name)} "
            f"{f'from {_shown(path)}' if path else '(not found on this machine)'}: its code is "
            "the system's, not built with the variant's flags; " + _share(name, shares)
            for binary, name, path in said]


def _share(name: str, shares: dict[str, float] | None) -> str:
    if shares and name in shares:
        return (f"at least {shares[name]:.1f}% of the baseline's profiled run is in it "
                "(flagsweep explain)")
    return "`flagsweep explain` profiles a run, its functions included"


def _shown(text: str) -> str:
    """A name read from a binary's bytes as one line of text (a target file's comment)."""
    return text if text.isprintable() else repr(text)


def _find(name: str, runpath: list[Path]) -> Path | None:
    """The file the loader would take for a DT_NEEDED name, as found; a name with a slash
    is a path (relative ones are the loader's cwd's, which is not known here: not found)."""
    if "/" in name:
        candidates = [Path(name)] if name.startswith("/") else []
    else:
        candidates = [folder / name for folder in (*runpath, *SYSTEM_FOLDERS)]
    for path in candidates:
        if file_kind(path) == "shared":
            return path
    return None


def soname(library: Path) -> str | None:
    """A shared library's DT_SONAME, the name a program linked with it asks the loader for."""
    try:
        with open(library, "rb") as f:
            section = ELFFile(f).get_section_by_name(".dynamic")
            for tag in section.iter_tags() if section is not None else []:
                if tag.entry.d_tag == "DT_SONAME":
                    return tag.soname
    except (OSError, ELFError):
        pass
    return None


def libtool_wrapper(path: Path) -> str | None:
    """The program a libtool wrapper script runs (".libs/demo"), or None for any other file.
    libtool writes one in place of each uninstalled program linked with a shared library."""
    try:
        with open(path, "rb") as f:
            head = f.read(512).decode("latin-1")
    except OSError:
        return None
    found = re.search(r"^# \S+ - temporary wrapper script for (\S+)$", head, re.M)
    return found.group(1) if found and head.startswith("#!") else None


def file_kind(path: Path) -> str:
    """'object', 'shared', 'archive', 'other' (a linker script, ...) or 'missing'."""
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError:
        return "other"
    if head.startswith((b"!<arch>\n", b"!<thin>\n")):
        return "archive"
    if head.startswith(b"\x7fELF") and len(head) == 18:
        e_type = int.from_bytes(head[16:18], "little" if head[5] == 1 else "big")
        return {1: "object", 3: "shared"}.get(e_type, "other")
    return "other"


def ar_members(path: Path) -> list[tuple[str, bytes | Path]]:
    """The members of a Unix (GNU/BSD) archive: name and bytes, or name and path in a thin
    archive. Symbol tables and the long-name table are left out."""
    data = path.read_bytes()
    thin = data.startswith(b"!<thin>\n")
    pos, longnames, members = 8, b"", []
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        raw = header[:16].decode("latin-1").rstrip()
        size = int(header[48:58].decode("latin-1").strip() or 0)
        pos += 60
        special = raw in ("/", "//", "/SYM64/", "__.SYMDEF", "__.SYMDEF SORTED")
        # Thin archives keep only the symbol and name tables inside; members stay outside.
        body_size = size if (special or not thin) else 0
        body = data[pos:pos + body_size]
        if raw == "//":
            longnames = body
        elif raw.startswith("#1/"):          # BSD: the name heads the body
            n = int(raw[3:])
            members.append((body[:n].decode("latin-1").rstrip("\0"), body[n:]))
        elif not special:
            if raw.startswith("/") and raw[1:].isdigit():   # GNU: an offset in the name table
                start = int(raw[1:])
                name = longnames[start:longnames.index(b"/\n", start)].decode("latin-1")
            else:
                name = raw.removesuffix("/")
            members.append((name, Path(name) if thin else body))
        pos += body_size + (body_size % 2)
    return members
