"""Two builds of one function, side by side: what the compiler did differently.

The machine code of a function in the baseline and in a variant, from `objdump -d
--no-show-raw-insn --disassemble=SYMBOL` over every symbol that stands for it (its clones and
split parts too, symbols.canonical), with addresses dropped so that equal instructions line up,
and set in two columns.
"""

from __future__ import annotations

import itertools
import re
import shutil
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from flagsweep import process
from flagsweep.errors import FlagsweepError
from flagsweep.explain.symbols import canonical

_ADDRESS = re.compile(r"^\s*[0-9a-f]+:\s*")


def symbols_of(binary: Path, function: str) -> list[str]:
    """The binary's function symbols that stand for `function`, in address order."""
    try:
        with open(binary, "rb") as f:
            found = []
            for section in ELFFile(f).iter_sections():
                if isinstance(section, SymbolTableSection) and section.name == ".symtab":
                    found += [(s["st_value"], s.name) for s in section.iter_symbols()
                              if s["st_info"]["type"] == "STT_FUNC" and s.name
                              and canonical(s.name) == function]
    except (OSError, ELFError) as e:
        raise FlagsweepError(f"{binary}: cannot read its symbol table ({e})") from e
    return [name for _, name in sorted(set(found))]


def listing(binary: Path, function: str) -> list[str]:
    """The function's instructions in this binary, one per line, without addresses; each
    symbol of it headed by its name. Empty when the binary has no such function (inlined)."""
    objdump = shutil.which("objdump")
    if objdump is None:
        raise FlagsweepError("objdump is not installed (binutils has it)")
    lines: list[str] = []
    for sym in symbols_of(binary, function):
        out = process.run([objdump, "-d", "--no-show-raw-insn", f"--disassemble={sym}",
                           str(binary)])
        if not out.ok:
            raise FlagsweepError(f"objdump of {sym} in {binary} failed: {out.tail(2)}")
        lines.append(f"<{sym}>:")
        lines += [_ADDRESS.sub("", line).replace("\t", " ").rstrip()
                  for line in out.stdout.splitlines() if _ADDRESS.match(line)]
    return lines


def side_by_side(left: list[str], right: list[str], titles: tuple[str, str],
                 width: int = 60) -> list[str]:
    """Two listings in columns of `width` characters, headed by their titles."""
    def cell(text: str) -> str:
        return (text if len(text) <= width else text[:width - 1] + "~").ljust(width)

    rows = [f"{cell(titles[0])} | {titles[1]}", f"{'-' * width}-+-{'-' * width}"]
    for a, b in itertools.zip_longest(left or ["(not in this binary: inlined or removed)"],
                                      right or ["(not in this binary: inlined or removed)"],
                                      fillvalue=""):
        rows.append(f"{cell(a)} | {b}")
    return rows
