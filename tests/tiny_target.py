"""The bundled tiny program as a target file of a test's own: size, repeats, timeout and build
extras chosen per test (a short timeout for a hanging variant, a bigger input for timing)."""

from __future__ import annotations

import shutil
from pathlib import Path

TINY_SRC = Path(__file__).parent.parent / "targets" / "tiny" / "src"


def write_tiny_target(folder: Path, *, name: str = "tiny", version: str = "1.0", megabytes: float = 1,
                      quick_megabytes: float = 0.5, repeats: int = 2, timeout: float = 3,
                      build_extra: str = "", source: Path = TINY_SRC) -> Path:
    """A target file for the bundled tiny program (or a changed copy of its source), sized and
    timed for one test."""
    folder.mkdir(parents=True)
    (folder / "target.toml").write_text(f'''
summary = "tiny, sized for a test"
version = "{version}"
name = "{name}"
[source]
path = "{source}"
[build]
system = "cmake"
binary = "tiny"
{build_extra}
[inputs]
kind = "corpus"
megabytes = {megabytes}
quick_megabytes = {quick_megabytes}
seed = 7
[run]
argv = ["{{binary}}", "{{input}}", "{repeats}"]
stdout = "compared"
timeout = {timeout}
[check]
method = "tolerance"
rel_tolerance = 1e-5
''')
    return folder


# A numerical program may refuse to be built without both errno and infinities (some libm-like
# code does, by #error): each flag alone builds, the two together fail, in the real compiler.
REFUSES_BOTH = ("-ffinite-math-only", "-fno-math-errno")


def tiny_refusing_both(folder: Path) -> Path:
    """A copy of tiny's source whose build fails only with both of REFUSES_BOTH."""
    shutil.copytree(TINY_SRC, folder)
    kernel = folder / "kernel.c"
    kernel.write_text("#if __FINITE_MATH_ONLY__ && defined(__NO_MATH_ERRNO__)\n"
                      "#error \"tiny needs errno or infinities\"\n#endif\n" + kernel.read_text())
    return folder
