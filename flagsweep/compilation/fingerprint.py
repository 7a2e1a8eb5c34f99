"""Code fingerprints: two binaries with the same code are one measurement.

The hash covers what the loader maps and the CPU executes: every allocated ELF section except
notes (which hold the build-id), with its name, address and bytes, plus the entry point. Debug
info, symbol tables and .comment (compiler banners) are not allocated, so they do not count.
This is LNT's rule (hash with non-code sections stripped), done on the sections directly.

A binary that loads shared libraries from its own build tree runs their code too: the hash and
the sizes fold those in (compilation.binaries.loaded finds them), by file name, so a flag that
changes only the library's code makes a different variant. Libraries from outside the tree
(libc, a distribution's codec) are not the variant's code and are left out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from flagsweep import files
from flagsweep.compilation import binaries


def code_hash(binary: Path, libraries: Sequence[Path] = ()) -> str:
    """sha256 of the binary's code and data as loaded, with its build tree's shared libraries
    (none: the binary's own hash, as recorded before libraries were counted); a non-ELF file
    hashes whole."""
    own = _file_hash(binary)
    if not libraries:
        return own
    parts = [own, *sorted(f"{lib.name}:{_library_hash(lib)}" for lib in libraries)]
    return files.sha256_bytes("|".join(parts).encode())


def _file_hash(path: Path) -> str:
    try:
        return _elf_hash(path)
    except ELFError:
        return files.sha256_file(path)


def _library_hash(library: Path) -> str:
    """A recorded library that is no longer a shared object (a results folder's path to any
    other file) has no code hash: its mark makes the whole hash differ."""
    if binaries.file_kind(library) != "shared":
        return "not-a-shared-library"
    return _elf_hash(library)


def _elf_hash(binary: Path) -> str:
    digest = hashlib.sha256()
    with open(binary, "rb") as f:
        elf = ELFFile(f)
        digest.update(f"{elf['e_machine']}:{elf['e_entry']}".encode())
        for section in elf.iter_sections():
            if not section["sh_flags"] & SH_FLAGS.SHF_ALLOC or section["sh_type"] == "SHT_NOTE":
                continue
            digest.update(f"|{section.name}:{section['sh_addr']}:{section['sh_size']}:".encode())
            if section["sh_type"] != "SHT_NOBITS":
                digest.update(section.data())
    return digest.hexdigest()


@dataclass(frozen=True)
class Changed:
    """A binary whose code is no longer what its build recorded."""

    binary: Path
    recorded: str | None     # None: its build recorded no hash, so its code cannot be checked
    now: str | None          # None: the file is missing or cannot be read
    state: str               # "now has code sha256 ...", "is missing", "cannot be read (...)"
    kind: str = "code sha256"

    def text(self) -> str:
        if not self.recorded:
            return f"its binary {self.binary} {self.state}"
        return (f"its binary {self.binary} {self.state}, but its build recorded {self.kind} "
                f"{self.recorded[:16]}...")

    def to_json(self) -> dict:
        return {"binary": str(self.binary), "recorded_sha256": self.recorded,
                "now_sha256": self.now, "why": self.text()}


def recheck(build: dict, binary: Path) -> Changed | None:
    """The binary against its build's record (a results.json `build`): None when its code is
    the recorded one. Everything a sweep or a profile says of a variant is said of that code,
    and the binary is an ordinary file its own workload (or anyone) can replace. A reference
    arm records the whole file's sha256 (it was copied, not built). A record without a hash
    (a row or a results.json with the key removed) cannot be checked, so it is never taken as
    the recorded code: it is Changed too, and nothing runs the binary."""
    whole = build.get("reference_sha256")
    recorded, kind = (whole, "sha256") if whole else (build.get("code_sha256"), "code sha256")
    if not recorded:
        return Changed(binary, None, None, f"has no recorded {kind} to check its code against")
    libraries = [Path(p) for p in build.get("libraries") or []]
    try:
        now = files.sha256_file(binary) if whole else code_hash(binary, libraries)
        state = f"now has {kind} {now[:16]}..."
        if (elsewhere := _not_loaded(binary, libraries)) is not None:
            now, state = None, f"no longer loads its recorded library {elsewhere}"
    except FileNotFoundError:
        now, state = None, "is missing"
    except OSError as e:
        now, state = None, f"cannot be read ({e.strerror})"
    return None if now == recorded else Changed(binary, recorded, now, state, kind)


def _not_loaded(binary: Path, libraries: list[Path]) -> Path | None:
    """The first recorded library the loader would not take for the binary now (another file
    put earlier in its run path, a record naming a copy): the hash of a file it does not load
    says nothing of what it runs."""
    if not libraries:
        return None
    loads = set(binaries.loaded(binary, Path("/")).inside)
    return next((p for p in libraries if p.resolve() not in loads), None)


def sizes(binary: Path, libraries: Sequence[Path] = ()) -> dict[str, int] | None:
    """The loaded image's size as `size` (Berkeley format) counts it, summed over the binary
    and its build tree's shared libraries: `text` the executable and read-only sections, `data`
    the writable ones with contents, `bss` the zero-filled ones. What a distribution's package
    and its users' memory pay for; the file's own size also carries debug info and symbols.
    None for a file that is not ELF."""
    out = {"text": 0, "data": 0, "bss": 0}
    try:
        for path in (binary, *libraries):
            _add_sizes(path, out)
    except ELFError:
        return None
    return out


def _add_sizes(path: Path, out: dict[str, int]) -> None:
    with open(path, "rb") as f:
        for section in ELFFile(f).iter_sections():
            flags = section["sh_flags"]
            if not flags & SH_FLAGS.SHF_ALLOC:
                continue
            kind = ("bss" if section["sh_type"] == "SHT_NOBITS"
                    else "data" if flags & SH_FLAGS.SHF_WRITE else "text")
            out[kind] += section["sh_size"]


def functions_hash(binary: Path) -> str | None:
    """sha256 of the binary's functions by name and size, whatever their places: two layouts of
    one variant (flagsweep.compilation.layout) have the same, two builds of different code almost
    never. None without a symbol table (a stripped binary) or for a file that is not ELF."""
    try:
        with open(binary, "rb") as f:
            symtab = ELFFile(f).get_section_by_name(".symtab")
            if symtab is None:
                return None
            functions = sorted(f"{sym.name}:{sym['st_size']}" for sym in symtab.iter_symbols()
                               if sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"])
    except ELFError:
        return None
    return files.sha256_bytes("\n".join(functions).encode())


def group(hashes: dict[str, str]) -> dict[str, str | None]:
    """variant id -> the id of the first earlier variant with the same code (or None).

    `hashes` is in variant order (baseline first), so the baseline represents its group.
    """
    first: dict[str, str] = {}
    out: dict[str, str | None] = {}
    for vid, h in hashes.items():
        out[vid] = first.get(h)
        first.setdefault(h, vid)
    return out
