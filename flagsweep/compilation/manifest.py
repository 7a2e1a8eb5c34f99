"""What flagsweep and its step driver (steps.py) hand each other through the output folder:
manifest.json, which superbuild.py writes once for every step the superbuild runs, and each
variant's status.json, which the step driver writes back as its build goes on.

Both are closed records: a key the step driver does not declare is an error where the file is
written or read, not a value carried along unread. They are the build stage's own files, not
part of results.json (flagsweep/model/), and keep the key names they had as dicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict


class Tools(BaseModel):
    """A compiler as the build calls it: its recording wrappers (wrapper.py) and its version."""
    model_config = ConfigDict(extra="forbid")

    cc: str
    cxx: str | None = None          # none: the compiler has no C++ driver
    version: str


class Template(BaseModel):
    """An autotools compiler's configure tree, cached and copied into each of its variants."""
    model_config = ConfigDict(extra="forbid")

    compiler: str
    dir: Path
    log: Path


class Profiling(BaseModel):
    """A profile-guided variant's first two stages: the instrumented flags and the training
    run, then the merge of a clang's raw profiles (pgo.py)."""
    model_config = ConfigDict(extra="forbid")

    profile_dir: Path
    instrumented: list[str]
    train_argv: list[str]
    timeout: float
    input: str                      # what the training input is, as the user reads it
    profdata: str | None = None     # clang's llvm-profdata; gcc merges nothing


class Order(BaseModel):
    """The step driver's view of one variant: what to build, with which flags, where."""
    model_config = ConfigDict(extra="forbid")

    compiler: str
    template: str                   # the compiler's key in Manifest.templates (superbuild.slug)
    flags: list[str]
    dir: Path
    jobs: int
    ldflags: list[str] = []         # the flags the link acts on, for make's command line
    own_flags: bool = False         # the project's own build (own_build.py): no flags of ours
    pgo: Profiling | None = None


class Manifest(BaseModel):
    """Every variant of one superbuild, and what their steps share."""
    model_config = ConfigDict(extra="forbid")

    system: Literal["autotools", "cmake", "make"]
    source: Path
    binary: str
    configure_args: list[str]
    make_args: list[str]
    ccache_env: dict[str, str]
    compilers: dict[str, Tools]
    templates: dict[str, Template]  # autotools only, keyed by superbuild.slug of the compiler
    variants: dict[str, Order]

    def write(self, path: Path) -> None:
        path.write_text(self.model_dump_json(indent=1))

    @classmethod
    def read(cls, path: Path) -> Manifest:
        return cls.model_validate_json(path.read_text())


class Status(BaseModel):
    """Where a variant's build is (status.json), rewritten whole at each of its steps."""
    model_config = ConfigDict(extra="forbid")

    status: Literal["running", "ok", "failed"]
    stage: str                      # configure, build, pgo-..., done
    started: float
    build_started: float | None = None   # when the audited compiles began
    seconds: float | None = None
    cpu_seconds: float | None = None
    why: str | None = None          # a failure's reason

    def text(self) -> str:
        """As the file holds it: the keys this status has, no nulls."""
        return self.model_dump_json(exclude_none=True)

    @classmethod
    def read(cls, vdir: Path) -> Status | None:
        """The variant's status, or None when its build never started (or left no whole file)."""
        try:
            return cls.model_validate_json((vdir / "status.json").read_text())
        except (FileNotFoundError, ValueError):
            return None
