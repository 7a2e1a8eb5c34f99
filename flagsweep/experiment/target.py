"""Target files: `targets/<name>/target.toml` describes one real program.

A target says where its source comes from (upstream tarball + sha256, a Debian source package as
the offline fallback, or a local directory), how it builds (autotools, cmake, meson, make), which binary
is measured, how its input is generated, how it is run, and how its output is checked. The
format is documented in docs/targets.md; this module is its single source of truth.
"""

from __future__ import annotations

import re
import shlex
import string
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal, Union

from pydantic import Field, ValidationInfo, field_validator, model_validator

from flagsweep import shipped
from flagsweep.errors import ConfigError
from flagsweep.experiment import source
from flagsweep.experiment.flags import EVALUATED, check_flags
from flagsweep.experiment.strict import Strict, read_toml, validate

TARGETS_DIR = shipped.TARGETS
PLACEHOLDERS = {"binary", "input", "output"}
# A decoder is one fixed program for the whole sweep, never the variant under judgement: it gets
# the baseline's binary (or a program of its own), the product to decode and where to write.
DECODE_PLACEHOLDERS = {"baseline", "product", "output"}
# A name or version becomes part of a cache folder's name: one plain path component.
COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~-]*")


def check_component(value: str) -> str:
    if not COMPONENT.fullmatch(value):
        raise ValueError("expected letters, digits and '._+~-', starting with a letter or "
                         "digit (it names a folder in the cache)")
    return value


def check_relative(value: str) -> str:
    """A path that stays inside the folder it is relative to."""
    path = PurePosixPath(value)
    if not value or path.is_absolute() or ".." in path.parts or path == PurePosixPath("."):
        raise ValueError("expected a path inside the build tree, relative to it and "
                         "without '..'")
    return value


# A build goal (make's, or a CMake/Ninja target) names one file or rule: it is passed to make or
# cmake as one argv element, so a leading '-' would make it an option, and '=' a variable.
GOAL = re.compile(r"[A-Za-z0-9_.+][A-Za-z0-9_.+/-]*")


def check_goal(value: str) -> str:
    """goal and goal_dir: a name or path inside the build tree, never an option or a variable."""
    if not GOAL.fullmatch(value) or ".." in PurePosixPath(value).parts:
        raise ValueError(f"{value!r}: expected letters, digits and '_.+/-', not starting with "
                         "'-' or '/', without '..' (a make goal or CMake target inside the tree)")
    return value


class DebianSpec(Strict):
    package: str
    version: str

    # Both go on apt-get's command line: a leading '-' would make them an option.
    @field_validator("package")
    @classmethod
    def _package(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", v):
            raise ValueError("expected a Debian source package name ([a-z0-9][a-z0-9+.-]+)")
        return v

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not re.fullmatch(r"([0-9]+:)?[A-Za-z0-9][A-Za-z0-9.+~-]*", v):
            raise ValueError("expected a Debian version ([epoch:]upstream[-revision])")
        return v


class SourceSpec(Strict):
    """Either a tarball (urls + sha256, optionally a Debian fallback) or a local `path`."""

    urls: list[str] = []
    sha256: str | None = None
    debian: DebianSpec | None = None
    strip_components: int = 1
    path: str | None = None
    # Debian's patches (debian/patches/series) applied to the tarball, as Debian builds it: the
    # sha256 of the Debian part (debian.tar.*) that holds them. Absent: the tarball as it is.
    debian_patches: str | None = None

    _hex = field_validator("sha256", "debian_patches")(lambda cls, v: check_sha256(v))

    @model_validator(mode="after")
    def _one_kind(self) -> "SourceSpec":
        if self.path is not None:
            if self.urls or self.sha256 or self.debian:
                raise ValueError("a local 'path' source takes no urls, sha256 or debian")
        elif not self.sha256 or not (self.urls or self.debian):
            raise ValueError("expected 'sha256' and at least one of 'urls' or 'debian' (or a local 'path')")
        if self.debian_patches and not self.debian:
            raise ValueError("'debian_patches' needs 'debian': the Debian source package whose "
                             "Debian part holds the patches")
        return self


# The options that pick which source is compiled rather than how: macros, headers, the
# language standard. A variant's CFLAGS can drop the project's own (build/own_build.py).
DEFINE_OPTIONS = ("-D", "-U")
INCLUDE_OPTIONS = ("-I", "-include", "-imacros", "-iquote", "-isystem", "-idirafter")
PROJECT_OPTION = re.compile(r"-[DUI]\S.*|-std=\S+|-(include|imacros|iquote|isystem|idirafter) \S.*")


def check_project_flags(flags: list[str]) -> list[str]:
    """project_flags: a recipe's flag rule, except that include folders and files may be named.
    The target file is the project's build configuration, trusted as its Makefile is (which
    names them too); recipes are not, and refuse them."""
    rest, i = [], 0
    while i < len(flags):
        word = flags[i]
        taken = flags[i:i + 2] if word in INCLUDE_OPTIONS else [word]
        if word in INCLUDE_OPTIONS or word.startswith("-I"):
            if len(taken) < 2 and word in INCLUDE_OPTIONS:
                raise ValueError(f"flag {word!r} needs its folder or file as the next item")
            for text in taken:
                if EVALUATED.search(text):
                    raise ValueError(f"flag {text!r} contains {EVALUATED.search(text).group()!r}, "
                                     "which make, Ninja or the shell would evaluate; write it "
                                     "without '$', '`' or control characters")
        else:
            rest.append(word)
        i += len(taken)
    check_flags(shlex.join(rest))
    return flags


def check_dropped(options: list[str]) -> list[str]:
    for option in options:
        if not PROJECT_OPTION.fullmatch(option):
            raise ValueError(f"{option!r}: expected a project option as the audit names it: "
                             "\"-DNAME\", \"-DNAME=VALUE\", \"-UNAME\", \"-Idir\", "
                             "\"-include file\" (one string) or \"-std=...\"")
    return options


# The meson options flagsweep sets itself on every variant's `meson setup` (compilation/meson.py):
# a target's configure_args naming one would replace the variant's flags, or the build type that
# keeps meson's own -O and -g out.
MESON_OWN = ("buildtype", "optimization", "debug", "c_args", "cpp_args", "c_link_args",
             "cpp_link_args", "wrap_mode")
MESON_OPTION = re.compile(r"-D([A-Za-z0-9_][A-Za-z0-9_.:-]*)=(.*)", re.S)


def check_meson_setup(configure_args: list[str]) -> list[str]:
    """A meson target's configure_args: `meson setup` options, one argv element each,
    `-Dname=value`: never an option flagsweep sets itself, nor a word meson would read as the
    source or build folder."""
    for arg in configure_args:
        option = MESON_OPTION.fullmatch(arg)
        if option is None:
            raise ValueError(f"{arg!r}: a meson target's configure_args are `meson setup` "
                             "options, one string each: \"-Dname=value\"")
        if option.group(1) in MESON_OWN:
            raise ValueError(f"{arg!r}: flagsweep sets {option.group(1)} itself on every "
                             "variant (its flags are the only ones); leave it out")
    return configure_args


def check_ninja_targets(make_args: list[str]) -> list[str]:
    """A meson target's make_args: Ninja targets (a file or target of the build tree), never
    an option: `-t` runs Ninja's tools, `-C` and `-f` read another build file."""
    for arg in make_args:
        if not arg or arg.startswith("-"):
            raise ValueError(f"{arg!r}: a meson target's make_args are Ninja targets (e.g. "
                             "the binary's path in the build tree), never an option")
    return make_args


class BuildSpec(Strict):
    system: Literal["autotools", "cmake", "meson", "make"]
    binary: str
    # `autoreconf -fi` on the fetched source before anything is configured (autotools)
    autoreconf: bool = False
    # A hand-written configure script (discount's configure.sh), its path in the source tree:
    # run in a copy of the source, CC and CFLAGS in its environment (such scripts read no
    # arguments but their own, and may read their own files from the folder they run in).
    # Absent: Autoconf's configure, run out of tree with CC= and CFLAGS= arguments.
    configure: str | None = None
    configure_args: list[str] = []
    make_args: list[str] = []
    project_flags: list[str] = []
    tolerated_flags: list[str] = []
    # The project's own options that the variants are meant to build without.
    dropped_flags: list[str] = []
    # The package's own test command, run in each variant's tree; false: none; absent: detect.
    tests: list[str] | bool | None = None
    tests_timeout: Annotated[float, Field(gt=0)] = 600.0
    # The one goal that makes the binary (`cmake --build --target GOAL`, `make GOAL`, in a
    # recursive make tree `make -C GOAL_DIR GOAL`): the rest of the build is not built.
    goal: str | None = None
    goal_dir: str | None = None

    # The binary is looked up in the variant's build tree: it must be a file built there.
    _binary = field_validator("binary")(lambda cls, v: check_relative(v))
    # Project flags travel with the variant's flags, through make and CMake, as data.
    _flags = field_validator("project_flags")(lambda cls, v: check_project_flags(v))
    _dropped = field_validator("dropped_flags")(lambda cls, v: check_dropped(v))
    _goal = field_validator("goal", "goal_dir")(lambda cls, v: v if v is None else check_goal(v))
    _configure = field_validator("configure")(
        lambda cls, v: v if v is None else check_relative(v))

    @model_validator(mode="after")
    def _goal_dir(self) -> "BuildSpec":
        if self.goal_dir is not None and (self.goal is None or self.system == "cmake"):
            raise ValueError("goal_dir needs a goal, and a make build (cmake builds a target "
                             "from the top)")
        if self.configure is not None and self.system != "autotools":
            raise ValueError(f"configure names a configure script, which only system = "
                             f"\"autotools\" runs; system is {self.system!r}")
        return self

    @field_validator("configure_args", "make_args")
    @classmethod
    def _meson(cls, v: list[str], info: ValidationInfo) -> list[str]:
        # system is declared first, so it is validated (or missing) by now
        if info.data.get("system") != "meson":
            return v
        return (check_meson_setup if info.field_name == "configure_args"
                else check_ninja_targets)(v)

    @field_validator("tests")
    @classmethod
    def _tests(cls, v):
        # true is the default (what the build tree shows); an empty command would run nothing
        if v == []:
            raise ValueError("expected a command list such as [\"make\", \"check\"], or false "
                             "for none")
        return v


class DependencySpec(Strict):
    """A library built before the program from its own source, with each variant's flags,
    into a prefix inside the variant's build tree that the program is configured against
    (compilation/dependency.py)."""
    name: str
    version: str
    source: SourceSpec
    system: Literal["autotools", "cmake"]
    configure_args: list[str] = []
    make_args: list[str] = []
    # autotools: where the variant's flags are given. configure (CFLAGS=): a Makefile's
    # per-file additions stay (opus' -msse4.1); make (make CFLAGS=, configure probing with -O2):
    # what configure adds to CFLAGS goes (libogg puts its own -O2 before the given flags)
    flags_at: Literal["configure", "make"] = "configure"

    # Both name folders: the source's in the cache, the build's in the variant's tree.
    _name = field_validator("name", "version")(lambda cls, v: check_component(v))


class WavInput(Strict):
    kind: Literal["wav"]
    seconds: Annotated[float, Field(gt=0)]
    quick_seconds: Annotated[float, Field(gt=0)]
    seed: Annotated[int, Field(ge=0)] = 0


class CorpusInput(Strict):
    kind: Literal["corpus"]
    megabytes: Annotated[float, Field(gt=0)]
    quick_megabytes: Annotated[float, Field(gt=0)]
    seed: Annotated[int, Field(ge=0)] = 0


class FileInput(Strict):
    kind: Literal["file"]
    path: str
    sha256: str | None = None      # when given, the file must still have these bytes

    _hex = field_validator("sha256")(lambda cls, v: check_sha256(v))


InputSpec = Annotated[Union[WavInput, CorpusInput, FileInput], Field(discriminator="kind")]


class RunSpec(Strict):
    argv: Annotated[list[str], Field(min_length=1)]
    stdout: Literal["compared", "discarded"] = "discarded"
    timeout: Annotated[float, Field(gt=0)] = 300.0

    @field_validator("argv")
    @classmethod
    def _argv(cls, argv: list[str]) -> list[str]:
        check_placeholders(argv)
        if argv[0] != "{binary}":
            raise ValueError("argv[0] must be '{binary}' (the measured executable)")
        return argv


def check_placeholders(argv: list[str], allowed: set[str] = PLACEHOLDERS) -> list[str]:
    for arg in argv:
        for _, name, _, _ in string.Formatter().parse(arg):
            if name is not None and name not in allowed:
                raise ValueError(f"unknown placeholder {{{name}}} in {arg!r}; "
                                 f"expected one of {sorted(allowed)}")
    return argv


def check_sha256(value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ValueError("expected 64 lowercase hex digits")
    return value


# The quality check's defaults (docs/targets.md): float rounding moves a lossy encoder's SNR by
# hundredths of a dB; a tenth of a dB is still far below what a listener hears.
SNR_TOLERANCE_DB = 0.1
SIZE_REL_TOLERANCE = 0.01


class CheckSpec(Strict):
    method: Literal["exact", "sha256", "roundtrip", "tolerance", "quality"]
    of: Literal["stdout", "output"] = "stdout"
    sha256: str | None = None
    roundtrip_argv: list[str] | None = None
    rel_tolerance: Annotated[float, Field(ge=0)] | None = None
    decode_argv: Annotated[list[str], Field(min_length=1)] | None = None
    snr_tolerance_db: Annotated[float, Field(ge=0)] = SNR_TOLERANCE_DB
    size_rel_tolerance: Annotated[float, Field(ge=0)] = SIZE_REL_TOLERANCE

    _hex = field_validator("sha256")(lambda cls, v: check_sha256(v))
    _argv = field_validator("roundtrip_argv")(lambda cls, v: v and check_placeholders(v))
    _decode = field_validator("decode_argv")(
        lambda cls, v: v and check_placeholders(v, DECODE_PLACEHOLDERS))

    @model_validator(mode="after")
    def _needs(self) -> "CheckSpec":
        needed = {"sha256": "sha256", "roundtrip": "roundtrip_argv", "tolerance": "rel_tolerance",
                  "quality": "decode_argv"}
        key = needed.get(self.method)
        if key and getattr(self, key) is None:
            raise ValueError(f"check method '{self.method}' needs '{key}'")
        return self


class TargetFile(Strict):
    summary: str
    version: str
    name: str | None = None

    _version = field_validator("version")(lambda cls, v: check_component(v))
    suite: bool = True               # `flagsweep run --all` sweeps it
    source: SourceSpec
    build: BuildSpec
    # Libraries built before the program, in this order, each against the ones before it.
    dependency: list[DependencySpec] = []
    inputs: InputSpec
    run: RunSpec
    check: CheckSpec

    @model_validator(mode="after")
    def _quality_of_audio(self) -> "TargetFile":
        # The decoded product is compared with the input, so the input must be audio it can
        # be compared with: a generated WAV, or a given file (read as WAV when checked).
        if self.check.method == "quality" and self.inputs.kind == "corpus":
            raise ValueError("check method 'quality' compares the decoded product with the "
                             "input, which must be a WAV (inputs.kind 'wav' or 'file'), not "
                             "a corpus")
        return self

    @model_validator(mode="after")
    def _dependencies(self) -> "TargetFile":
        names = [d.name for d in self.dependency]
        if len(set(names)) < len(names):
            raise ValueError(f"dependency names must differ, got {names}")
        # A plain Makefile has no configure step to be pointed at the dependencies' prefix.
        if self.dependency and self.build.system == "make":
            raise ValueError("dependencies need a program built with 'autotools' or 'cmake', "
                             "whose configure step is pointed at their prefix; build.system is "
                             "'make'")
        # A hand-written configure takes no CPPFLAGS= or LDFLAGS= pointing at their prefix.
        if self.dependency and self.build.configure is not None:
            raise ValueError("dependencies need Autoconf's configure (or cmake), whose "
                             "arguments point it at their prefix; build.configure names a "
                             f"hand-written script, {self.build.configure!r}")
        return self


@dataclass(frozen=True)
class Target:
    """A loaded target: the validated file plus where it came from."""

    name: str
    path: Path            # the target.toml
    spec: TargetFile

    @property
    def folder(self) -> Path:
        return self.path.parent

    def tarball(self, dependency: DependencySpec | None = None) -> source.Source | None:
        """What to fetch for this target (or one of its dependencies), or None when it ships
        its own source folder."""
        d = dependency
        s = d.source if d else self.spec.source
        if s.path is not None:
            return None
        debian = source.DebianSource(s.debian.package, s.debian.version) if s.debian else None
        return source.Source(name=d.name if d else self.name,
                             version=d.version if d else self.spec.version, urls=tuple(s.urls),
                             sha256=s.sha256, debian=debian, strip_components=s.strip_components,
                             autoreconf=False if d else self.spec.build.autoreconf,
                             patches=s.debian_patches)

    def local_source(self, dependency: DependencySpec | None = None) -> Path | None:
        """The source directory of a target (or one of its dependencies) that ships its own
        source, else None."""
        s = dependency.source if dependency else self.spec.source
        if s.path is None:
            return None
        src = (self.folder / s.path).resolve()
        if not src.is_dir():
            key = (f"dependency {dependency.name!r} source.path" if dependency
                   else "source.path")
            raise ConfigError(f"{self.path}: key '{key}': {src} is not a directory")
        return src


def load(name_or_path: str) -> Target:
    """Load a target by path (a file or its folder) or by name: a shipped target
    (targets/<name>/target.toml), else the user's (shipped.user_dir()/targets/<name>)."""
    path = resolve(name_or_path)
    spec = validate(TargetFile, read_toml(path), path)
    name = spec.name or path.parent.name
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", name):
        raise ConfigError(f"{path}: key 'name': expected letters, digits, '._+-', got {name!r}")
    return Target(name=name, path=path, spec=spec)


def resolve(name_or_path: str) -> Path:
    candidate = Path(name_or_path)
    if candidate.is_dir():
        candidate = candidate / "target.toml"
    if candidate.is_file():
        return candidate.resolve()
    entries = shipped.targets(TARGETS_DIR)
    named = shipped.find(entries, name_or_path, "target") if "/" not in name_or_path else None
    if named is not None:
        return named
    known = ", ".join(e.name for e in entries if not e.shadowed) or "none"
    raise ConfigError(f"no target '{name_or_path}': not a target file or folder, and not a "
                      f"shipped target or one in {shipped.user_dir() / 'targets'} ({known})")


def available() -> list[Target]:
    """The shipped targets, by name."""
    return [load(str(p.parent)) for p in sorted(TARGETS_DIR.glob("*/target.toml"))]
