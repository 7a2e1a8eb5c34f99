"""Code fingerprints: two binaries with the same code are one measurement.

The hash covers what the loader maps and the CPU executes: every allocated ELF section except
notes (which hold the build-id), with its name, address and bytes, plus the entry point. Debug
info, symbol tables and .comment (compiler banners) are not allocated, so they do not count.
This is LNT's rule (hash with non-code sections stripped), done on the sections directly.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from flagsweep import files


def code_hash(binary: Path) -> str:
    """sha256 of the binary's code and data as loaded; a non-ELF file hashes whole."""
    try:
        return _elf_hash(binary)
    except ELFError:
        return files.sha256_file(binary)


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


def sizes(binary: Path) -> dict[str, int] | None:
    """The loaded image's size as `size` (Berkeley format) counts it: `text` the executable and
    read-only sections, `data` the writable ones with contents, `bss` the zero-filled ones. What
    a distribution's package and its users' memory pay for; the file's own size also carries
    debug info and symbols. None for a file that is not ELF."""
    out = {"text": 0, "data": 0, "bss": 0}
    try:
        with open(binary, "rb") as f:
            for section in ELFFile(f).iter_sections():
                flags = section["sh_flags"]
                if not flags & SH_FLAGS.SHF_ALLOC:
                    continue
                kind = ("bss" if section["sh_type"] == "SHT_NOBITS"
                        else "data" if flags & SH_FLAGS.SHF_WRITE else "text")
                out[kind] += section["sh_size"]
    except ELFError:
        return None
    return out


def functions_hash(binary: Path) -> str | None:
    """sha256 of the binary's functions by name and size, whatever their places: two layouts of
    one variant (flagsweep.build.layout) have the same, two builds of different code almost
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
