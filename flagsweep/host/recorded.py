"""A recorded host: a folder that stands for the CPU flagsweep runs on.

`FLAGSWEEP_HOST=<folder>` makes the host layer read the CPU from a recording instead of the live
machine, so decisions about CPUs (which -march values run, what -march=native means) can be made,
and tested, for a machine that is not this one. The folder holds what the live questions would
have answered there (tests/fixtures/hosts/README.md): cpuinfo.txt, gcc's
`-march=native -Q --help=target`, the driver's expansion of -march=native (`-###`) and the
compilers' predefined macros under -march=native. Nothing is ever run on a recorded CPU, so no
probe binary answers for it.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from flagsweep.errors import ConfigError

VARIABLE = "FLAGSWEEP_HOST"
_FILES = ("cpuinfo.txt", "gcc-march-native-help-target.txt", "gcc-march-native-driver.txt",
          "gcc-march-native-macros.txt", "clang-march-native-macros.txt")


@dataclass(frozen=True)
class Recording:
    folder: Path

    def text(self, name: str) -> str:
        return (self.folder / name).read_text(errors="replace")

    def gcc_native_options(self) -> tuple[str, ...]:
        """The target options gcc's driver passed to cc1 for -march=native there (-march=znver3
        -mavx2 ... -mno-avx512f ...): asking the local gcc about them answers as that host's gcc."""
        cc1 = next(line for line in self.text("gcc-march-native-driver.txt").splitlines()
                   if "/cc1 " in line or line.strip().startswith("cc1 "))
        return tuple(word for word in shlex.split(cc1)
                     if word.startswith("-m") and not word.startswith("-mtune="))

    def native_macros(self, compiler_kind: str) -> str:
        return self.text(f"{compiler_kind}-march-native-macros.txt")


def active() -> Recording | None:
    """The recording $FLAGSWEEP_HOST names, or None for the live machine."""
    value = os.environ.get(VARIABLE, "")
    if not value:
        return None
    folder = Path(value)
    lacking = [name for name in _FILES if not (folder / name).is_file()]
    if lacking:
        raise ConfigError(f"{VARIABLE}={value}: expected a recorded host folder with "
                          f"{', '.join(_FILES)}; missing {', '.join(lacking)}")
    return Recording(folder)


def march_value(help_target: str) -> str | None:
    """The -march value in gcc's `-Q --help=target` listing."""
    found = re.search(r"^\s*-march=\s+(\S+)\s*$", help_target, re.MULTILINE)
    return found.group(1) if found else None
