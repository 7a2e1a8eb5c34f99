"""What a build's configure or cmake said about its optional SIMD and assembly code.

A project with hand-written SIMD in assembly builds it only when the assembler is there:
libjpeg-turbo 2.1.5's cmake, without nasm, warns `SIMD extensions disabled: could not find NASM
compiler` (configured with WITH_SIMD off, `SIMD extensions: None (WITH_SIMD = 0)`) and builds
the plain C codec, and a sweep of it answers about code no distribution ships (Debian builds
it with nasm). Nothing failed, so nothing said so. The configure output is kept
(autotools: the configure log, also kept in the cached configure tree; cmake: the variant's
build log up to its build command), and the lines that say such a path was left out are read
from it here: a line naming SIMD, assembly or an assembler that says no, none, disabled, off,
0, not found or failed.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
from collections.abc import Iterable

from flagsweep import model
from flagsweep.compilation import relations
from flagsweep.compilation.manifest import Manifest
from flagsweep.host import environment

# What an optional SIMD or assembly path is called in configure's and cmake's words (cmake's
# `ASM_NASM` names nasm too: an underscore does not end the word here). Not "assembler": gzip's
# `checking for an assembler syntax supported by this package... no` and xz's `assembler
# optimizations` are about the toolchain or another architecture's code, on every x86-64 build.
TOPIC = re.compile(r"(?<![a-z0-9])(simd|nasm|yasm|asm|assembly)(?![a-z0-9])", re.I)
# ... and what says it is left out: autoconf's `checking for nasm... no`, a summary's
# `SIMD extensions: None`, `WITH_SIMD = 0`, `--disable-asm`, `Failed to enable NASM`.
LEFT_OUT = re.compile(r"\.\.\.\s*(\(cached\)\s*)?(no|none|disabled)\b|"
                      r"\b(none|disabled?|disabling|off|not ?found|not available|missing|"
                      r"failed|could not|cannot|unable)\b|=\s*(0|off|no)\b|--disable-", re.I)
# ... unless it says what was found: `checking for nasm... /usr/bin/nasm`, `... yes`.
FOUND = re.compile(r"\.\.\.\s*(\(cached\)\s*)?(yes|/\S+)", re.I)
# ... nor a probe of the assembler's syntax, which says nothing of code left out: nettle's
# `checking if .align assembly directive is logarithmic... no`, on a build with its assembly.
SYNTAX = re.compile(r"\bdirective\b", re.I)
ASSEMBLERS = ("nasm", "yasm")
LINES = 4                       # kept of what was said: the summary and the warning before it


def said(text: str) -> list[str]:
    """The configure or cmake output's lines that say a SIMD or assembly path is left out,
    each once, as printed (cmake's `-- ` taken off). A probe for one assembler that found none
    does not count when another was found (`checking for nasm... no`, then `yasm... yes`)."""
    present, lines = set(), []
    for raw in _messages(text):
        # configure's output is the project's text: kept printable, as a target file's comment
        # (TOML refuses control characters there) and a page show it
        line = "".join(c if c.isprintable() else "?"
                       for c in raw.strip().removeprefix("-- ").strip()[:300])
        if not TOPIC.search(line) or SYNTAX.search(line):
            continue
        if FOUND.search(line):
            present |= _assemblers(line)
        elif LEFT_OUT.search(line) and line not in lines:
            lines.append(line)
    if present:
        lines = [line for line in lines
                 if not (line.lower().startswith("checking") and _assemblers(line))]
    return lines[:LINES]


def _messages(text: str) -> list[str]:
    """The output's lines, with each message of a `CMake Warning at ...:` block as one line:
    cmake wraps it (`SIMD extensions disabled: could not find NASM compiler.  Performance will`
    / `suffer.`), indented under its header, up to the `Call Stack` or a blank line."""
    out: list[str] = []
    block = joining = False
    for line in text.splitlines():
        if re.match(r"CMake (Warning|Error)\b", line):
            block, joining = True, False
            out.append(line)
        elif block and line.startswith("  ") and line.strip():
            if joining:
                out[-1] += " " + line.strip()
            else:
                out.append(line)
            joining = True
        else:
            block = False
            out.append(line)
    return out


def _assemblers(line: str) -> set[str]:
    return {a for a in ASSEMBLERS if re.search(rf"(?<![a-z0-9]){a}(?![a-z0-9])", line, re.I)}


def configured(m: Manifest, vid: str) -> str:
    """What the variant's configure printed: autotools' configure log (its compiler's, shared
    by its variants), cmake's configure in the variant's build log, before its build command;
    "" for a plain Makefile, which has no configure."""
    try:
        if m.system == "autotools":
            return m.templates[m.variants[vid].template].log.read_text(errors="replace")
        if m.system == "cmake":
            text = (m.variants[vid].dir / "build.log").read_text(errors="replace")
            return text.split("\n$ cmake --build ", 1)[0]
    except (OSError, KeyError):
        pass
    return ""


def found(m: Manifest, vid: str) -> model.LeftOut | None:
    """What the variant's configure left out, its assemblers looked for on the build's PATH.
    None when the target's own configure_args decide it (lame's `--disable-nasm`): a choice
    the target file made is no surprise to warn of."""
    if any(TOPIC.search(arg) for arg in m.configure_args):
        return None
    return left_out(configured(m, vid), environment.clean().get("PATH", os.defpath))


def left_out(text: str, path: str | None = None) -> model.LeftOut | None:
    """What the configure output says the build left out, with the assemblers it names that
    the build's PATH lacks (path: that PATH; None: this process's); None: nothing left out."""
    lines = said(text)
    if not lines:
        return None
    named = sorted(set().union(*(_assemblers(line) for line in lines)))
    return model.LeftOut(kind="SIMD" if any(re.search(r"\bsimd\b", line, re.I)
                                            for line in lines) else "assembly",
                         said=lines,
                         missing=[a for a in named if shutil.which(a, path=path) is None])


def sentence(left: model.LeftOut, build_depends: str = "") -> str:
    """One line for the terminal, the page and a target file's comment. build_depends: the
    Debian package's Build-Depends, to say that Debian's own build has the assembler here."""
    missing = " and ".join(left.missing)
    debian = [a for a in left.missing if depends_here(build_depends, a)]
    return (f"built without {left.kind}: "
            + (f"{missing} missing" if left.missing else "configure left it out")
            + (f"; Debian builds it with {' and '.join(debian)}" if debian else "")
            + (f" (install {missing}, then build again)" if left.missing else "")
            + "; configure said " + "; ".join(f"`{line}`" for line in left.said))


# dpkg's name for this machine's architecture, as a Build-Depends restriction writes it
ARCH = {"x86_64": "amd64", "aarch64": "arm64", "i686": "i386"}.get(platform.machine(),
                                                                    platform.machine())


def depends_here(build_depends: str, name: str) -> bool:
    """Whether Build-Depends names the package for this architecture: `nasm`, `nasm [amd64
    i386]`, `nasm [any-amd64]`, not `nasm [i386]` nor `nasm [!amd64]` (relations.read, Debian
    Policy 7.1)."""
    return any(alt.name == name for relation in relations.read(build_depends, ARCH).relations
               for alt in relation)


def lines(builds: Iterable[model.LeftOut | None], build_depends: str = "") -> list[str]:
    """Each thing left out, said once however many variants' builds left it out."""
    return list(dict.fromkeys(sentence(b, build_depends) for b in builds if b is not None))
