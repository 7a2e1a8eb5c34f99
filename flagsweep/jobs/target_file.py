"""The target file `flagsweep new` writes: the Draft of what it will say, with the why of each
learned value, and its text, commented, with what is left to the user marked EDIT."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from flagsweep.compilation import debian, own_build
from flagsweep.jobs.sizing import FULL_S, QUICK_S, Sizing


PLACEHOLDER_RUN = ["{binary}", "{input}"]
RUN_TIMEOUT = 120               # the [run] timeout `new` writes


@dataclass
class Draft:
    """What the target file will say, with the why of each learned value."""

    name: str
    package: str
    release: debian.DebianRelease
    upstream: str
    urls: list[str]
    system: str
    binary: str
    configure: str | None = None    # a hand-written configure script (project.hand_written)
    configure_args: list[str] = field(default_factory=list)
    configure_note: str = ""
    tracking_note: str = ""         # why dependency tracking stays on
    make_args: list[str] = field(default_factory=list)
    make_note: str = ""
    goal: str | None = None         # the one goal that makes the binary (jobs/goal.py)
    goal_dir: str | None = None
    goal_note: str = ""             # what building it alone gave, or why the whole is built
    left_out_note: str = ""         # a SIMD or assembly path configure left out
    source: Path | None = None      # the fetched tree, for reading its Makefile
    tolerated: dict[str, str] = field(default_factory=dict)   # flag -> what the trial saw
    kept: dict[str, str] = field(default_factory=dict)      # project option -> where it came from
    dropped: dict[str, str] = field(default_factory=dict)   # ... that project_flags cannot carry
    binary_note: str = ""
    binary_given: str = ""          # --binary as the user gave it: never swapped for another
    build_note: str = ""
    build_errors: list[str] = field(default_factory=list)   # a failed trial build's log lines
    argv: list[str] = field(default_factory=lambda: list(PLACEHOLDER_RUN))
    run_given: bool = False     # the user's own command (--run), not the placeholder
    megabytes: float = 1.0
    quick_megabytes: float = 0.2
    size_note: str = "not sized yet"
    sizing: Sizing | None = None     # the timed sizes, when the run command was timed
    given: Path | None = None    # the user's input (--input) as given
    input_path: str = ""         # its copy, relative to the target file's folder
    input_sha256: str = ""
    run_note: list[str] = field(default_factory=list)   # why the trial run failed
    check_method: str = "exact"     # "": two runs differ and nothing else fits (EDIT)
    check_note: str = ""            # what the two trial runs showed
    roundtrip_argv: list[str] = field(default_factory=list)
    # a library the trial binary loads from a Debian package: its name, source, release (or
    # None: the Sources index did not list that version), written as a commented [[dependency]]
    dependencies: list[tuple[str, debian.DebianSource, debian.DebianRelease | None]] = \
        field(default_factory=list)
    depends_note: list[str] = field(default_factory=list)   # the build dependencies, each line
    depends_command: list[str] = field(default_factory=list)   # the install still to be run
    strip_components: int = 1       # from the orig tarball's members (tarball.layout)
    strip_note: str = ""
    autoreconf: bool = False
    autoreconf_note: str = ""
    patches: str | None = None      # the Debian part's sha256, when its patches are applied
    patches_note: str = ""          # how many, or why not
    shipped: dict[str, str] | None = None   # program -> Debian's binary package; None: unknown
    shipped_note: str = ""          # whose file lists were read, or why none


def _project_lines(d: Draft) -> list[str]:
    lines = []
    if d.kept:
        lines.append("# The project's own options, which the variants' flags (`make CFLAGS=...`) "
                     "would drop,")
        lines.append("# found by building it once with its own flags and given back to every "
                     "variant:")
        lines += [f"#   {option}: {why}" for option, why in d.kept.items()]
        words = [w for option in d.kept for w in own_build.as_words(option)]
        lines.append(f"project_flags = {_q(words)}")
    if d.dropped:
        lines.append("# EDIT: the project's own options the variants build without (check that "
                     "the program is")
        lines.append("# still the one you mean to measure):")
        lines += [f"#   {option}: {why}" for option, why in d.dropped.items()]
        lines.append(f"dropped_flags = {_q(list(d.dropped))}")
    return lines


def writes_output(argv: list[str]) -> bool:
    return any("{output}" in arg for arg in argv)


def _q(value) -> str:
    """A TOML value (JSON's strings and lists are TOML's basic strings and arrays)."""
    return json.dumps(value)


def render(d: Draft) -> str:
    r = d.release
    lines = [
        f"# {d.name}: written by `flagsweep new {d.name} --debian {d.package}`. Every value below",
        "# was found, not guessed; what is left to you is marked EDIT.",
        f"summary = {_q(f'{d.package} {d.upstream} (EDIT: what the measured run does)')}",
        f"version = {_q(d.upstream)}",
        "",
        "[source]",
        f"# Debian's {r.orig} of {r.package} {r.version} (the newest here); orig tarballs keep the",
        "# upstream bytes. Other Debian versions with this sha256 are tried if this one goes.",
        f"urls = {_q(d.urls)}",
        f"sha256 = {_q(r.orig_sha256)}",
        f"debian = {{ package = {_q(r.package)}, version = {_q(r.version)} }}",
        *([f"# {d.strip_note}"] if d.strip_note else []),
        f"strip_components = {d.strip_components}",
        *_patches_lines(d),
        "",
        "[build]",
        *[f"# {line}" for line in d.depends_note],
        f"system = {_q(d.system)}",
    ]
    if d.autoreconf_note:
        lines.append(f"# {d.autoreconf_note}")
    if d.autoreconf:
        lines.append("autoreconf = true")
    if d.binary_note:
        lines.append(f"# {d.binary_note}")
    lines.append(f"binary = {_q(d.binary)}")
    if d.configure:
        lines += ["# a hand-written configure script, not Autoconf's: run in a copy of the "
                  "source,", "# CC and CFLAGS in its environment",
                  f"configure = {_q(d.configure)}"]
    lines += [f"# {note}" for note in (d.configure_note, d.tracking_note) if note]
    if d.configure_args:
        lines.append(f"configure_args = {_q(d.configure_args)}")
    if d.make_args:
        lines.append(f"# {d.make_note}")
        lines.append(f"make_args = {_q(d.make_args)}")
    if d.goal_note:
        lines.append(f"# {d.goal_note}")
    if d.goal:
        lines.append(f"goal = {_q(d.goal)}")
    if d.goal_dir:
        lines.append(f"goal_dir = {_q(d.goal_dir)}")
    lines += _project_lines(d)
    if d.tolerated:
        lines.append("# Code-generation flags the project adds itself, which the audit ignores "
                     "(remove one if")
        lines.append("# it is not the project's own, e.g. it came from your environment):")
        lines += [f"#   {flag}: {why}" for flag, why in d.tolerated.items()]
        lines.append(f"tolerated_flags = {_q(list(d.tolerated))}")
    if d.build_note:
        lines.append(f"# {d.build_note}")
        lines += [f"#   {line}" for line in d.build_errors]
    lines += _dependency_lines(d)
    if d.left_out_note:
        lines.append(f"# WARNING: {d.left_out_note}")
    lines += ["", "[inputs]", *_inputs_lines(d), "", "[run]"]
    lines += [f"# {line}" for line in _run_finding(d)]
    lines += [
        ("# The command to time (--run)." if d.run_given else "# EDIT: the command to time.")
        + " {binary} is the built program, {input} the input",
        *_run_sizing(d),
        f"argv = {_q(d.argv)}",
        "stdout = \"compared\"",
        f"timeout = {RUN_TIMEOUT}",
        "",
        "[check]",
        *_check_lines(d),
        *_check_of(d),
        "",
    ]
    return "\n".join(lines)


def _patches_lines(d: Draft) -> list[str]:
    """Debian's patches: how many are applied, the Debian part's sha256 that holds them."""
    lines = [f"# {d.patches_note}"] if d.patches_note else []
    if d.patches:
        lines += ["# (debian_patches: the sha256 of that Debian part; without the key, the "
                  "orig as upstream released it)",
                  f"debian_patches = {_q(d.patches)}"]
    return lines


def _dependency_lines(d: Draft) -> list[str]:
    """Each library from a Debian package as a commented [[dependency]]: uncommented, every
    variant builds it with its flags, static, into the binary (docs/targets.md)."""
    lines = []
    for library, src, release in d.dependencies:
        shown = library if library.isprintable() else repr(library)
        sha256 = release.orig_sha256 if release else "EDIT: its orig tarball's sha256"
        lines += ["", f"# {d.binary} loads {shown}, from Debian's source package {src.package} "
                  f"{src.version}: to measure",
                  "# that code too, uncomment this to build it with each variant's flags, "
                  "static (docs/targets.md,",
                  "# dependencies). EDIT: system is a guess; check the source's build.",
                  "# [[dependency]]", f"# name = {_q(src.package)}",
                  f"# version = {_q(src.upstream_version)}", '# system = "autotools"',
                  f"# source = {{ sha256 = {_q(sha256)}, debian = {{ package = "
                  f"{_q(src.package)}, version = {_q(src.version)} }} }}",
                  '# configure_args = ["--disable-shared"]']
    return lines


def _check_lines(d: Draft) -> list[str]:
    """The method, with what the trial runs showed and every choice the user may make."""
    lines = ["# EDIT: how a variant's result is checked against the baseline's: exact (the same",
             "# bytes), sha256 (bytes of a known sha256), roundtrip (roundtrip_argv gives the",
             "# input back), tolerance (numbers within rel_tolerance) or quality (a codec's",
             "# product decoded by decode_argv, its SNR against the input WAV). See",
             "# docs/targets.md."]
    if d.check_note:
        lines.append(f"# Chosen by the trial: {d.check_note}.")
    if not d.check_method:
        return [*lines, "# method = \"\"   # EDIT: exact, sha256, roundtrip, tolerance or quality"]
    lines.append(f"method = {_q(d.check_method)}")
    if d.roundtrip_argv:
        lines.append(f"roundtrip_argv = {_q(d.roundtrip_argv)}")
    if d.check_method == "quality":
        lines.append("# EDIT: decode_argv = [\"{baseline}\", ..., \"{product}\", \"{output}\"]  "
                     "# the decoder, writing a PCM WAV")
    return lines


def _inputs_lines(d: Draft) -> list[str]:
    if d.input_path:
        return [f"# Your input (--input {d.given}), copied here and",
                f"# {d.size_note}.",
                "# A changed file needs its new sha256 here: the input is part of the workload.",
                "kind = \"file\"",
                f"path = {_q(d.input_path)}",
                f"sha256 = {_q(d.input_sha256)}"]
    full, quick = ((d.sizing.full_comment(), d.sizing.quick_comment()) if d.sizing else
                   (f"~{FULL_S:g} s at -O2 ({d.size_note})", f"~{QUICK_S:g} s"))
    return ["kind = \"corpus\"          # mixed text and binary, generated from the seed",
            f"megabytes = {d.megabytes:g}  # {full}",
            f"quick_megabytes = {d.quick_megabytes:g}  # {quick}",
            "seed = 1"]


def _run_sizing(d: Draft) -> list[str]:
    if d.input_path:
        return ["# file, {output} a file it may write."]
    return ["# file, {output} a file it may write. After changing it, size the input for it again:"
            if d.run_given else "# file, {output} a file it may write. Then size the input for it:",
            f"#   flagsweep new --size {d.name}"]


def _run_finding(d: Draft) -> list[str]:
    if not d.run_note:
        return []
    return ["FAILED in the trial: " + d.run_note[0], *d.run_note[1:]]


def _check_of(d: Draft) -> list[str]:
    """What the check reads follows the run command: the file it writes, else its stdout."""
    if writes_output(d.argv):
        return ["of = \"output\"          # the run command writes {output}"]
    return ["of = \"stdout\""]
