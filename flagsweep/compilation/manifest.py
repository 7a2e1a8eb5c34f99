"""What flagsweep and its step driver (steps.py) hand each other through the output folder:
manifest.json, which superbuild.py writes once for every step the superbuild runs, and each
variant's status.json, which the step driver writes back as its build goes on.

Both are closed records: a key the step driver does not declare is an error where the file is
read, not a value carried along unread. They are the build stage's own files, not part of
results.json (flagsweep/model/), and keep the key names they had as dicts. Plain dataclasses, not
pydantic models: CMake starts the step driver twice a variant, and importing pydantic would cost
each start more than the step's own bookkeeping.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

SYSTEMS = ("autotools", "cmake", "meson", "make")
STATES = ("running", "ok", "failed")


class ManifestError(ValueError):
    """manifest.json or status.json holds what its record does not declare."""


def _record(cls, data: object, where: str, **nested):
    """cls from a JSON object: exactly its fields (a missing one without a default, or one it
    does not declare, is refused, naming it), with the nested records built by `nested`."""
    if not isinstance(data, dict):
        raise ManifestError(f"{where}: expected an object, got {type(data).__name__}")
    names = {f.name for f in fields(cls)}
    if unknown := sorted(set(data) - names):
        raise ManifestError(f"{where}: key(s) {', '.join(unknown)} not declared")
    values = {k: (nested[k](v) if k in nested and v is not None else v) for k, v in data.items()}
    try:
        return cls(**values)
    except TypeError as e:          # a required key missing
        raise ManifestError(f"{where}: {e}") from None


def _json(value):
    """json.dumps' default: a Path as its text."""
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


@dataclass
class Tools:
    """A compiler as the build calls it: its recording wrappers (wrapper.py) and its version."""
    cc: str
    version: str
    cxx: str | None = None          # none: the compiler has no C++ driver

    def key(self) -> dict:
        """The keys this compiler's configure trees are cached under: cc, cxx if any, version."""
        return {"cc": self.cc, **({"cxx": self.cxx} if self.cxx else {}), "version": self.version}


@dataclass
class Template:
    """An autotools compiler's configure tree, cached and copied into each of its variants."""
    compiler: str
    dir: Path
    log: Path

    def __post_init__(self) -> None:
        self.dir, self.log = Path(self.dir), Path(self.log)


@dataclass
class Profiling:
    """A profile-guided variant's first two stages: the instrumented flags and the training
    run, then the merge of a clang's raw profiles (pgo.py)."""
    profile_dir: Path
    instrumented: list[str]
    train_argv: list[str]
    timeout: float
    input: str                      # what the training input is, as the user reads it
    profdata: str | None = None     # clang's llvm-profdata; gcc merges nothing

    def __post_init__(self) -> None:
        self.profile_dir = Path(self.profile_dir)


@dataclass
class Order:
    """The step driver's view of one variant: what to build, with which flags, where."""
    compiler: str
    template: str                   # the compiler's key in Manifest.templates (superbuild.slug)
    flags: list[str]
    dir: Path
    jobs: int
    ldflags: list[str] = field(default_factory=list)   # the flags the link acts on (make's line)
    own_flags: bool = False         # the project's own build (own_build.py): no flags of ours
    pgo: Profiling | None = None

    def __post_init__(self) -> None:
        self.dir = Path(self.dir)


@dataclass
class Dependency:
    """A library built before the program, in each variant's tree (dependency.py)."""
    name: str
    version: str
    system: str                     # autotools or cmake
    source: Path
    source_id: str                  # the tarball's sha256, or "tree:" + a local folder's hash
    configure_args: list[str] = field(default_factory=list)
    make_args: list[str] = field(default_factory=list)
    flags_at: str = "configure"     # autotools: configure's CFLAGS, or make's (replacing)

    def __post_init__(self) -> None:
        self.source = Path(self.source)


@dataclass
class Manifest:
    """Every variant of one superbuild, and what their steps share."""
    system: str                     # one of SYSTEMS
    source: Path
    binary: str
    configure_args: list[str]
    make_args: list[str]
    ccache_env: dict[str, str]
    compilers: dict[str, Tools]
    templates: dict[str, Template]  # autotools only, keyed by superbuild.slug of the compiler
    variants: dict[str, Order]
    dependencies: list[Dependency] = field(default_factory=list)   # built first, in order
    goal: str | None = None         # the one goal that makes the binary (target.py's BuildSpec)
    goal_dir: str | None = None     # a recursive make tree's folder that has the goal
    configure: str | None = None    # a hand-written configure script (target.py's BuildSpec)

    def __post_init__(self) -> None:
        if self.system not in SYSTEMS:
            raise ManifestError(f"system {self.system!r} is not one of {', '.join(SYSTEMS)}")
        self.source = Path(self.source)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1, default=_json))

    @classmethod
    def read(cls, path: Path) -> Manifest:
        def each(kind, key):
            return lambda d: {k: _record(kind, v, f"{path}: {key}.{k}", **(
                {"pgo": lambda p: _record(Profiling, p, f"{path}: {key}.{k}.pgo")}
                if kind is Order else {})) for k, v in d.items()}
        return _record(cls, json.loads(path.read_text()), str(path),
                       compilers=each(Tools, "compilers"), templates=each(Template, "templates"),
                       variants=each(Order, "variants"),
                       dependencies=lambda ds: [_record(Dependency, d, f"{path}: dependencies")
                                                for d in ds])


@dataclass
class Status:
    """Where a variant's build is (status.json), rewritten whole at each of its steps."""
    status: str                     # one of STATES
    stage: str                      # configure, build, pgo-..., done
    started: float
    build_started: float | None = None   # when the audited compiles began
    seconds: float | None = None
    cpu_seconds: float | None = None
    why: str | None = None          # a failure's reason

    def __post_init__(self) -> None:
        if self.status not in STATES:
            raise ManifestError(f"status {self.status!r} is not one of {', '.join(STATES)}")

    def text(self) -> str:
        """As the file holds it: the keys this status has, no nulls."""
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None})

    @classmethod
    def parse(cls, text: str, where: str) -> Status:
        return _record(cls, json.loads(text), where)

    @classmethod
    def read(cls, vdir: Path) -> Status | None:
        """The variant's status, or None when its build never started (or left no whole file)."""
        path = vdir / "status.json"
        try:
            return cls.parse(path.read_text(), str(path))
        except (FileNotFoundError, ValueError):     # json's and ManifestError are ValueErrors
            return None
