"""Function names across binaries: one name per source function, whatever the compiler made of it.

gcc clones a function it specialises (`foo.constprop.0`, `foo.isra.0`), splits off its cold or
partially inlined part (`foo.cold`, `foo.part.0`) and, under LTO, renames local symbols
(`foo.lto_priv.0`); clang's ThinLTO promotes locals as `foo.llvm.<hash>`. A profile of -O2 may
charge `foo.constprop.0` where -O0 charges `foo`: both are `foo`, and all of one binary's pieces
of `foo` are summed under it. Glibc's versioned names (`memcpy@@GLIBC_2.14`) lose the version.
"""

from __future__ import annotations

import re
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from flagsweep.errors import FlagsweepError

# gcc's clone and split suffixes (ipa-cp, ipa-sra, ipa-split, hot/cold splitting, LTO privatised
# locals, function versioning) and clang's ThinLTO promotion, each with optional numbers; they can
# stack (`foo.isra.0.cold`, `foo.constprop.0.isra.0`).
_SUFFIX = re.compile(r"(?:\.(?:constprop|isra|part|cold|lto_priv|clone|localalias|llvm|"
                     r"specialized|resolver)(?:\.\d+)*)+$")
# The same clones in a demangled C++ name: `foo(int) [clone .constprop.0]`.
_CLONE = re.compile(r"(?: \[clone [^\]]+\])+$")
_VERSION = re.compile(r"@@?[A-Za-z0-9_.]+$")


def canonical(name: str) -> str:
    """The source function a symbol stands for: `foo.constprop.0` -> `foo`."""
    name = _VERSION.sub("", name.strip())
    name = _CLONE.sub("", name)
    return _SUFFIX.sub("", name) or name


def function_sizes(binary: Path) -> dict[str, int]:
    """Bytes of machine code per canonical function in the binary's symbol table (clones and
    split parts summed). Empty for a stripped binary: sizes are then unknown, not zero."""
    try:
        with open(binary, "rb") as f:
            elf = ELFFile(f)
            sizes: dict[str, int] = {}
            for section in elf.iter_sections():
                if not isinstance(section, SymbolTableSection) or section.name != ".symtab":
                    continue
                for sym in section.iter_symbols():
                    if sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"] and sym.name:
                        key = canonical(sym.name)
                        sizes[key] = sizes.get(key, 0) + sym["st_size"]
            return sizes
    except (OSError, ELFError) as e:
        raise FlagsweepError(f"{binary}: cannot read its symbol table ({e}); expected an ELF "
                             "executable") from e


def exported_functions(library: Path) -> set[str]:
    """The canonical names of the functions a shared library defines in its dynamic symbol
    table, which a distribution's stripped library still has; empty when it cannot be read."""
    try:
        with open(library, "rb") as f:
            dynsym = ELFFile(f).get_section_by_name(".dynsym")
            if not isinstance(dynsym, SymbolTableSection):
                return set()
            return {canonical(sym.name) for sym in dynsym.iter_symbols()
                    if sym["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC") and sym.name
                    and sym["st_shndx"] != "SHN_UNDEF"}
    except (OSError, ELFError):
        return set()
