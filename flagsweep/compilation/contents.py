"""The executables Debian ships from a source package: its binary packages (the Sources index's
Package-List, else Binary) downloaded with the system's `apt-get download` into a scratch
folder in flagsweep's cache, and their file lists read with `dpkg-deb -c`. Each is asked for at
the source's own version (a binary package built from a source carries its version, save a
rebuild's `+bN`), and only when the archive no longer has that one at the version apt would
install, said as such: a later release may ship other programs. Nothing of a .deb
is run, unpacked or installed; the scratch folder goes when the lists are read.

A package of documentation, headers or debug symbols ships no program, and one built for all
architectures no ELF executable: neither is downloaded.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from flagsweep import process
from flagsweep.caches import DOWNLOADS
from flagsweep.compilation.relations import NAME
from flagsweep.host import environment

log = logging.getLogger("flagsweep.compilation.contents")

FOLDERS = ("usr/bin", "usr/sbin", "bin", "sbin", "usr/games")
NO_PROGRAMS = ("-dev", "-doc", "-dbg", "-dbgsym", "-data", "-udeb")
MOST = 8                    # binary packages read at most (libjpeg-turbo has seven)
TIMEOUT = 300


@dataclass
class Shipped:
    """Executable name -> the binary package that ships it; `read` the packages whose lists
    were read, `missed` each package that could not be, with why."""

    programs: dict[str, str] = field(default_factory=dict)
    read: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    # the packages read at apt's candidate version, the source's own being gone
    other_version: list[str] = field(default_factory=list)


def packages(package_list: str, binary: str) -> list[str]:
    """The binary packages that may ship a program, in the index's order."""
    names = []
    for line in package_list.splitlines():
        words = line.split()
        # name type section priority [key=value ...]: a .deb built per architecture
        if len(words) >= 4 and words[1] == "deb" and "arch=all" not in words[4:]:
            names.append(words[0])
    if not package_list.strip():
        names = binary.replace(",", " ").split()
    return [n for n in dict.fromkeys(names)
            if NAME.fullmatch(n) and not n.endswith(NO_PROGRAMS)][:MOST]


def programs(listing: str) -> list[str]:
    """The program names a `dpkg-deb -c` listing puts in a bin folder (a link's name too)."""
    found = []
    for line in listing.splitlines():
        words = line.split(None, 5)
        if len(words) < 6 or words[0][:1] not in "-l":
            continue
        path = words[5].split(" -> ", 1)[0]
        p = PurePosixPath(path.removeprefix("./"))
        # a name the .deb gives (untrusted) goes into the target file's comments: printable
        if p.parent.as_posix() in FOLDERS and (words[0][0] == "l" or "x" in words[0]) \
                and p.name.isprintable():
            found.append(p.name)
    return found


def shipped(names: list[str], version: str | None = None, cache: Path | None = None,
            run: Callable[..., process.Result] = process.run) -> Shipped:
    """Download each binary package (at the source's version when given) into a scratch
    folder and read its file list."""
    s = Shipped()
    downloads = DOWNLOADS.folder(cache)
    downloads.mkdir(parents=True, exist_ok=True)
    # As root apt downloads as _apt, which cannot write into a folder under /root.
    sandbox = ["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else []
    with tempfile.TemporaryDirectory(dir=downloads, prefix=".debs-") as scratch:
        for name in names:
            got = _download(run, sandbox, name, version, Path(scratch))
            debs = sorted(Path(scratch).glob(f"{name}_*.deb"))
            if not got.ok or not debs:
                s.missed.append(f"{name}: apt-get download failed ({_last(got)})")
                continue
            if version and got.argv[-1] == name:
                s.other_version.append(name)
            listing = _run(run, ["dpkg-deb", "-c", str(debs[0])], Path(scratch))
            if not listing.ok:
                s.missed.append(f"{name}: dpkg-deb -c failed ({_last(listing)})")
                continue
            s.read.append(name)
            for program in programs(listing.stdout):
                s.programs.setdefault(program, name)
    return s


def _download(run: Callable[..., process.Result], sandbox: list[str], name: str,
              version: str | None, scratch: Path) -> process.Result:
    """`apt-get download NAME=VERSION`, else NAME at apt's candidate version."""
    if version:
        got = _run(run, ["apt-get", *sandbox, "download", f"{name}={version}"], scratch)
        if got.ok:
            return got
    return _run(run, ["apt-get", *sandbox, "download", name], scratch)


def _run(run: Callable[..., process.Result], argv: list[str], cwd: Path) -> process.Result:
    try:
        return run(argv, cwd=cwd, env=environment.apt(), timeout=TIMEOUT)
    except (FileNotFoundError, process.TimeoutExpired) as e:
        return process.Result(argv, 127, "", f"{argv[0]}: {e}")


def _last(r: process.Result) -> str:
    return (r.tail(1) or f"exit {r.returncode}").strip()
