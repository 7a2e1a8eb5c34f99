"""Where the measured binary came from: followed from the recorded link that wrote it through
every object, archive and library of the tree it links, back to the recorded compiles, by the
bytes each command left."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

from flagsweep import files
from flagsweep.compilation import binaries, cmdline
from flagsweep.compilation.records import Command, norm, outputs, short


# What the audit says of a binary whose code is in the project's own shared library, loaded at
# run time from elsewhere (`new` reads it to configure static: jobs/project.own_library_loaded).
LOADED_ELSEWHERE = "loaded at run time from where the loader finds it"


def link_flags(flags: list[str]) -> list[str]:
    """The variant's flags that the link acts on (the linker's own options, the linker chosen,
    link-time optimisation, which is done at the link or not at all): they must be on the link
    that writes the measured binary, as code-generation flags must be on every compile."""
    return [f for f in flags if f.startswith(("-Wl,", "-fuse-ld=", "-flto"))]


def on_link(flag: str, argv: list[str]) -> bool:
    """Whether a link command carries the flag: as written, or for a linker option its words
    in the same order among the linker's arguments. libtool passes `-Wl,-z,relro` on as
    `-Wl,-z -Wl,relro`, which the linker reads alike."""
    if flag in argv:
        return True
    if not flag.startswith("-Wl,"):
        return False
    want, have = flag[4:].split(","), _linker_words(argv)
    return any(have[i:i + len(want)] == want for i in range(len(have) - len(want) + 1))


def _linker_words(argv: list[str]) -> list[str]:
    """What the compiler driver hands the linker of its -Wl, and -Xlinker options, in order."""
    out: list[str] = []
    for i, word in enumerate(argv):
        if word.startswith("-Wl,"):
            out += word[4:].split(",")
        elif word == "-Xlinker" and i + 1 < len(argv):
            out.append(argv[i + 1])
    return out


class Trace:
    """Follows the measured binary through the links that made it to the compiles behind them."""

    def __init__(self, commands: list[Command], roots: list[Path], tree: Path,
                 link_flags: list[str] | None = None):
        self.roots, self.tree, self.link_flags = roots, tree, link_flags or []
        self.writers: dict[Path, Command] = {}    # file -> the last recorded command writing it
        for cmd in commands:
            if cmd.kind != "other":
                for out in outputs(cmd):
                    self.writers[out] = cmd
        self.problems: list[str] = []
        self._followed: set[int] = set()
        self.used: set[int] = set()     # ids of the commands the binary was made from
        self.link_missing: list[str] = []
        self.link_cwd: Path | None = None
        self.shared: dict[Path, Command | None] = {}   # libraries of the tree it was linked with

    def binary(self, binary: Path) -> list[str]:
        path = norm(binary.resolve())
        cmd = self.writers.get(path)
        if cmd is None:   # a Makefile may link elsewhere and copy the result into place
            path, cmd = self._copy_of(path)
        if cmd is None and (wrapped := binaries.libtool_wrapper(path)) is not None:
            return [f"{self._name(path)} is libtool's wrapper script for "
                    f"{self._name(norm(path.parent / wrapped))}, whose code "
                    "is in the project's shared library, loaded at run time: configure with "
                    "--disable-shared (and measure the program itself, never one in .libs/)"]
        if cmd is None:
            return [f"the measured binary {self._name(path)} was not linked by the audited "
                    "compiler (a hard-coded compiler, or a prebuilt or stale file?)"]
        self._unchanged(path, cmd)
        self.used.add(id(cmd))
        missing = [f for f in self.link_flags if not on_link(f, cmd.argv)]
        if missing:
            self.link_missing, self.link_cwd = missing, cmd.cwd
            self.problems.append(f"the link that wrote {self._name(path)} lacks the variant's "
                                 f"link flags {' '.join(missing)} (a build that drops LDFLAGS, "
                                 f"or links without CFLAGS): {short(cmd.argv, cmd.cwd)}")
        self._follow(cmd)
        self._shared_code(path)
        return self.problems

    def _shared_code(self, binary: Path) -> None:
        """A program linked with the project's shared library holds none of its code: the
        loader finds the library at run time, in the build tree only through the program's run
        path, else wherever it looks (an installed copy, the system's). libtool's programs in
        .libs/ have no run path into the tree (its wrapper script sets one), so they measure
        another copy's code, or fail to start."""
        needed, runpath = binaries.dynamic(binary)
        built = self._libraries()
        for name in needed:
            if name not in built:
                continue
            lib, cmd = built[name]
            if lib.resolve().parent not in runpath:
                self.problems.append(
                    f"{self._name(binary)}'s code is in {name} ({self._name(lib)}), "
                    f"{LOADED_ELSEWHERE} (the binary's run path: "
                    f"{' '.join(map(str, runpath)) or 'none'}), not from this build: configure "
                    "with --disable-shared (CMake: -DBUILD_SHARED_LIBS=OFF)")
            elif cmd is None:
                self.problems.append(f"{self._name(binary)} loads {self._name(lib)}, which "
                                     "no recorded command of this build linked (a prebuilt or "
                                     "stale file, or a hard-coded compiler)")
            else:
                self.used.add(id(cmd))
                self._follow(cmd)

    def _libraries(self) -> dict[str, tuple[Path, Command | None]]:
        """soname -> (file, the recorded link that wrote it) of every shared library the
        binary was linked with in the tree, and of every one this build linked (a program
        linked with an installed copy of the project's library still runs that copy)."""
        found = {norm(p): cmd for p, cmd in self.writers.items()
                 if cmd.kind == "link" and binaries.file_kind(p) == "shared"}
        found.update(self.shared)
        return {(binaries.soname(p) or p.resolve().name): (p, cmd) for p, cmd in found.items()}

    def _copy_of(self, binary: Path) -> tuple[Path, Command | None]:
        """The recorded output with the binary's very bytes (as its command left them), if
        there is one."""
        if _stat(binary) is None:
            return binary, None
        digest = files.sha256_file(binary)
        for path, cmd in self.writers.items():
            if cmd.kind != "other" and path != binary and cmd.written(path) == digest:
                return path, cmd
        return binary, None

    def _follow(self, link: Command) -> None:
        """Every input of a recorded link (or compile-and-link) must come from this build."""
        if id(link) in self._followed:
            return
        self._followed.add(id(link))
        for path, named in _link_inputs(link):
            self._input(path, named, link)

    def _input(self, path: Path, named: str, link: Command) -> None:
        inside = any(path.is_relative_to(r) for r in self.roots)
        if inside and binaries.file_kind(path) == "shared":
            # libtool links libdemo.so, a symbolic link to the file its link wrote
            self.shared[path] = self.writers.get(path) or self.writers.get(norm(path.resolve()))
            return
        cmd = self.writers.get(path)
        if cmd is not None:
            self._unchanged(path, cmd)
            self.used.add(id(cmd))
            if cmd.kind == "link":  # a library or a partial link built here: follow it too
                self._follow(cmd)
            return
        what = binaries.file_kind(path)
        if what == "archive" and inside:
            self._archive(path, link)
        elif what in ("archive", "shared") and not inside:
            return  # a library the program depends on, not the program's own code
        elif what == "missing":
            self.problems.append(f"link input {self._name(path)} was made by no recorded "
                                 f"command and no longer exists: {short(link.argv, link.cwd)}")
        elif inside or what == "object":
            self.problems.append(f"link input {self._name(path)} was not compiled in this build "
                                 f"(a prebuilt or stale file, or a hard-coded compiler): "
                                 f"{short(link.argv, link.cwd)}")

    def _archive(self, path: Path, link: Command) -> None:
        """An archive built in the tree: each member must be an object compiled here."""
        compiled = self._compiled_objects
        for name, data in binaries.ar_members(path):
            if isinstance(data, Path):   # a thin archive names its members' files
                self._input(norm(path.parent / data), name, link)
            elif (cmd := compiled.get(files.sha256_bytes(data))) is not None:
                self.used.add(id(cmd))
            else:
                self.problems.append(f"archive {self._name(path)} holds {name}, which no "
                                     "recorded compile of this build produced (a hard-coded "
                                     "compiler, or a prebuilt or stale object?)")

    @cached_property
    def _compiled_objects(self) -> dict[str, Command]:
        """sha256 of every object file a recorded compile left (as it left it) -> that compile."""
        return {sha: cmd for path, cmd in self.writers.items()
                if cmd.kind == "compile" and (sha := cmd.written(path)) is not None}

    def _unchanged(self, path: Path, cmd: Command) -> None:
        """The file still has the bytes its recorded command left (nothing rewrote it since,
        whatever its mtime says)."""
        if not path.is_file():
            return   # removed after use (make deletes intermediate objects): it was the recorded one
        if files.sha256_file(path) != cmd.written(path):
            self.problems.append(f"{self._name(path)} changed after the recorded command that "
                                 "wrote it (rewritten by a command the audit did not see: a "
                                 f"hard-coded compiler, strip, a copy?): {short(cmd.argv, cmd.cwd)}")

    def _name(self, path: Path) -> str:
        return str(path.relative_to(self.tree)) if path.is_relative_to(self.tree) else str(path)


def _link_inputs(cmd: Command) -> list[tuple[Path, str]]:
    """(path, how it was named) for each file a link reads: positional arguments, -l libraries
    found in its -L folders, and files handed to the linker through -Wl, or -Xlinker."""
    inputs: list[tuple[Path, str]] = []
    libdirs, libs, linker_words = [], [], []
    for word in cmdline.split(cmd.argv):
        arg = word.text
        if not word.option:
            if word.language is None:    # a source is compiled by this very command, checked
                inputs.append((cmd.path(arg), arg))
        elif word.values:
            {"-L": libdirs, "-l": libs, "-Xlinker": linker_words}.get(arg, []).extend(word.values)
        elif arg.startswith("-L"):
            libdirs.append(arg[2:])
        elif arg.startswith("-l"):
            libs.append(arg[2:])
        elif arg.startswith("-Wl,"):
            linker_words += arg[4:].split(",")
    for word in linker_words:
        path = cmd.path(word)
        if not word.startswith("-") and binaries.file_kind(path) in ("object", "archive", "shared"):
            inputs.append((path, word))
    for lib in libs:
        names = [lib[1:]] if lib.startswith(":") else [f"lib{lib}.so", f"lib{lib}.a"]
        found = next((cmd.path(d) / n for d in libdirs for n in names
                      if (cmd.path(d) / n).is_file()), None)
        if found is not None:
            inputs.append((norm(found), "-l"))
    return inputs


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None
