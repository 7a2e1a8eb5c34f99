"""The matrix: a recipe's axes crossed with its compilers, minus what this CPU cannot run.

Every variant gets a canonical, filename-safe id derived from its compiler and flags alone, so
the same flags give the same id in any recipe and any sweep (history and merging rely on it).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from flagsweep import files
from flagsweep.errors import ConfigError
from flagsweep.host import cpu, distro, toolchain
from flagsweep.experiment import flags
from flagsweep.experiment.flags import split_flags
from flagsweep.experiment.recipe import FLAGS_RECIPE, AxisLevel, Recipe

ID_MAX = 80


@dataclass(frozen=True)
class Cell:
    id: str
    compiler: str
    flags: tuple[str, ...]
    factors: dict[str, str] = field(hash=False, compare=False)
    # A layout replicate (run --layouts): the variant it is a build of, and its layout seed.
    # Its flags are that variant's plus the layout's (flagsweep.compilation.layout).
    layout_of: str | None = None
    layout: int = 0
    # Profile-guided: built with instrumentation, trained, built again with the profile
    # (flagsweep.compilation.pgo); its id ends in "-pgo".
    pgo: bool = False


@dataclass(frozen=True)
class SkippedCell:
    variant: Cell
    reason: str

    @property
    def line(self) -> str:
        """How `build` and `run` say it: the variant and why it is not built."""
        return f"skipped {self.variant.id}: {self.reason}"


@dataclass(frozen=True)
class Matrix:
    variants: list[Cell]        # baseline first, then in recipe order
    baseline: Cell
    skipped: list[SkippedCell]
    design: str                    # "full-factorial", "explicit" or "factorial+explicit"
    base: distro.Base | None = None  # a distribution's flags every variant starts from


def variant_id(compiler: str, flags: tuple[str, ...]) -> str:
    """gcc + (-O2, -march=x86-64-v3) -> 'gcc-O2-march-x86-64-v3'.

    Readable for the flags people sweep: leading dashes dropped, '=' written '-'. When other
    characters had to be replaced (spaces, quotes, '/', ...) or the id is long, it ends in a hash
    of the exact flags, so those never share an id. The one spelling left ambiguous is '=' against
    '-' ("-fa=b" and "-fa-b"); one of such a pair is always a flag the compiler rejects, and the
    store keeps the exact flags beside the id.
    """
    parts = [compiler, *(f.lstrip("-").replace("=", "-") for f in flags)]
    safe = [re.sub(r"[^A-Za-z0-9._+-]", "_", p) for p in parts]
    vid = "-".join(safe) if flags else f"{safe[0]}-default"
    if safe != parts or len(vid) > ID_MAX:
        digest = files.sha256_bytes("\0".join((compiler, *flags)).encode())[:10]
        vid = f"{vid[:ID_MAX - 11]}-{digest}"
    return vid


def expand(recipe: Recipe, compilers: list[str] | None = None, filter_cpu: bool = True) -> Matrix:
    """All variants of a recipe, the baseline identified, un-runnable -march values skipped
    (for the CPU this runs on: a fleet expands each CPU's matrix on a worker with that CPU)."""
    given, compilers = bool(compilers), compilers or recipe.spec.compilers
    if recipe.spec.design == "plackett-burman":
        return _screening(recipe, compilers, given, filter_cpu)
    base = distro.read(recipe.spec.distro) if recipe.spec.distro else None
    candidates = _compiler_factor(_factorial(recipe, compilers) + _included(recipe, compilers),
                                  compilers)
    if base:
        candidates = [_on(base, v) for v in candidates]
    kept = [v for v in candidates if not _excluded(v, recipe.spec.exclude)]
    kept = _dedupe(kept, recipe)
    _check_flags(recipe, kept, base)
    skipped = _unrunnable(kept, _named(recipe, compilers, given)) if filter_cpu else []
    runnable = [v for v in kept if v not in {s.variant for s in skipped}]
    baseline = _baseline(recipe, runnable, skipped, compilers)
    ordered = [baseline] + [v for v in runnable if v is not baseline]
    return Matrix(ordered, baseline, skipped, _design(recipe), base)


def _on(base: distro.Base, v: Cell) -> Cell:
    """A variant as a change to a distribution's flags: the base first, the variant's own after
    (the compiler takes the last of -O levels and -march values, as a package's own flags
    override its distribution's). Its id names the distribution and the change, and ends in a
    hash of the exact flags, which differ from one dpkg version to another."""
    flags = base.flags + v.flags
    change = variant_id(v.compiler, v.flags).removeprefix(v.compiler).removesuffix("-default")
    change += "-pgo" if v.pgo else ""
    digest = files.sha256_bytes("\0".join((v.compiler, *flags, *["+pgo"] * v.pgo)).encode())[:10]
    vid = f"{v.compiler}-{base.name}{change}"[:ID_MAX - 11] + f"-{digest}"
    return Cell(vid, v.compiler, flags, v.factors, pgo=v.pgo)


def _screening(recipe: Recipe, compilers: list[str], given: bool, filter_cpu: bool) -> Matrix:
    """One variant per Plackett-Burman row (base + the flags switched on), factors flag: on|off;
    the baseline is the all-off row (the base alone), added when the design has none."""
    from flagsweep.experiment.design import plackett_burman_rows

    spec = recipe.spec
    base = split_flags(spec.base or "")
    rows = plackett_burman_rows(spec.screen)
    if not any(not any(row) for row in rows):
        rows.append([False] * len(spec.screen))
    variants = []
    for compiler in compilers:
        for row in rows:
            flags = base + tuple(f for f, on in zip(spec.screen, row) if on)
            factors = {f: "on" if on else "off" for f, on in zip(spec.screen, row)}
            variants.append(Cell(variant_id(compiler, flags), compiler, flags, factors))
    if len(compilers) > 2:
        raise ConfigError(f"{recipe.path}: a plackett-burman screen takes one or two compilers "
                          f"(the compiler is one more two-level column), got {', '.join(compilers)}")
    variants = _dedupe(_compiler_factor(variants, compilers), recipe)
    _check_flags(recipe, variants, None)
    skipped = _unrunnable(variants, _named(recipe, compilers, given)) if filter_cpu else []
    runnable = [v for v in variants if v not in {s.variant for s in skipped}]
    baseline = next((v for v in runnable if v.flags == base and v.compiler == compilers[0]), None)
    if baseline is None:
        raise ConfigError(f"{recipe.path}: key 'base': the base flags cannot run on this CPU")
    return Matrix([baseline] + [v for v in runnable if v is not baseline], baseline, skipped,
                  "plackett-burman")


def _compiler_factor(variants: list[Cell], compilers: list[str]) -> list[Cell]:
    """With two or more compilers the compiler is a factor like any axis: gcc -O3 and clang -O3
    share the level -O3 but are not replicates of one cell, and the effects table then reports
    the compiler's own effect beside the flags'."""
    if len(set(compilers)) < 2:
        return variants
    return [Cell(v.id, v.compiler, v.flags, {**v.factors, "compiler": v.compiler}, pgo=v.pgo)
            for v in variants]


def _factorial(recipe: Recipe, compilers: list[str]) -> list[Cell]:
    axes = recipe.axes()
    if not axes:
        return []
    names = list(axes)
    out = []
    for compiler in compilers:
        for combo in itertools.product(*(axes[n] for n in names)):
            out.append(_variant(compiler, dict(zip(names, combo))))
    return out


def _variant(compiler: str, levels: dict[str, AxisLevel]) -> Cell:
    flags = tuple(f for level in levels.values() for f in level.flags)
    factors = {axis: level.label for axis, level in levels.items()}
    pgo = any(level.pgo for level in levels.values())
    return Cell(variant_id(compiler, flags) + ("-pgo" if pgo else ""), compiler, flags,
                   factors, pgo=pgo)


def _included(recipe: Recipe, compilers: list[str]) -> list[Cell]:
    out = []
    for inc in recipe.spec.include:
        for compiler in ([inc.compiler] if inc.compiler else compilers):
            if compiler not in compilers:
                continue
            level = AxisLevel("", split_flags(inc.flags))
            out.append(Cell(variant_id(compiler, level.flags), compiler, level.flags,
                               dict(inc.factors)))
    return out


def _excluded(variant: Cell, rules: list[dict[str, str]]) -> bool:
    def matches(rule: dict[str, str]) -> bool:
        return all((variant.compiler if key == "compiler" else variant.factors.get(key)) == value
                   for key, value in rule.items())
    return any(matches(rule) for rule in rules)


def _dedupe(variants: list[Cell], recipe: Recipe) -> list[Cell]:
    """Two rows with the same compiler and flags are one build, answering to both rows' factors."""
    seen: dict[str, Cell] = {}
    for v in variants:
        other = seen.get(v.id)
        if other is None:
            seen[v.id] = v
        elif other.flags != v.flags:
            raise ConfigError(f"{recipe.path}: variants {other.flags} and {v.flags} map to the "
                              f"same id '{v.id}'; change one flag spelling")
        else:
            merged = {**v.factors, **other.factors}
            seen[v.id] = Cell(other.id, other.compiler, other.flags, merged, pgo=other.pgo)
    return list(seen.values())


def _check_flags(recipe: Recipe, variants: list[Cell], base: distro.Base | None) -> None:
    """Every variant's flags pass the flag rule (spec.flags) before any compiler sees them.
    The recipe's keys were checked as it loaded; this catches what only a variant holds (a
    distribution's flags, levels that pass the length limit together) and a recipe that did
    not come through a file (a fleet worker's)."""
    if base:
        try:
            flags.check_words(base.flags)
        except ValueError as e:
            raise ConfigError(f"{recipe.path}: key 'distro' ({base.source}): {e}") from None
    for v in variants:
        try:
            flags.check_words(v.flags)
        except ValueError as e:
            raise ConfigError(f"{recipe.path}: variant {v.id}: {e}") from None


def _named(recipe: Recipe, compilers: list[str], given: bool) -> dict[str, str]:
    """Each compiler with where it was named: `--compiler` or the recipe's key."""
    if given or recipe.name == FLAGS_RECIPE:
        return {c: f"--compiler {c}" for c in compilers}
    return {c: f"{recipe.path}: key 'compilers[{i}]'" for i, c in enumerate(compilers)}


def _unrunnable(variants: list[Cell], compilers: dict[str, str]) -> list[SkippedCell]:
    """Variants whose target options (-march, -mavx512f, ...) this CPU cannot execute, and
    variants whose compiler refuses (or would silently ignore) one of their flags. Each
    compiler is first shown to be one (toolchain.resolve), with none of the flags, in an
    environment that adds none."""
    toolchain.check_environment()
    for name, where in compilers.items():
        try:
            toolchain.resolve(name)
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
    out = []
    for v in variants:
        if why := toolchain.rejects(v.compiler, v.flags):
            out.append(SkippedCell(v, f"{v.compiler} does not take {' '.join(v.flags)}: {why}"))
            continue
        verdict = cpu.can_run_flags(v.flags, v.compiler)
        if not verdict.ok:
            out.append(SkippedCell(v, verdict.reason))
    return out


def _baseline(recipe: Recipe, variants: list[Cell], skipped: list[SkippedCell],
              compilers: list[str]) -> Cell:
    want = dict(recipe.spec.baseline)
    want.setdefault("compiler", compilers[0])

    def matches(v: Cell) -> bool:
        return all((v.compiler if k == "compiler" else v.factors.get(k)) == val
                   for k, val in want.items())

    found = [v for v in variants if matches(v)]
    lost = [s for s in skipped if matches(s.variant)]
    if not found and lost:
        raise ConfigError(f"{recipe.path}: key 'baseline': the baseline {lost[0].variant.id} "
                          f"cannot run on this CPU ({lost[0].reason}); pick another baseline")
    if len(found) != 1:
        what = "no runnable variant" if not found else f"{len(found)} variants ({', '.join(v.id for v in found)})"
        raise ConfigError(f"{recipe.path}: key 'baseline': {want} matches {what}; "
                          "expected exactly one")
    return found[0]


def _design(recipe: Recipe) -> str:
    if recipe.spec.axes and recipe.spec.include:
        return "factorial+explicit"
    return "full-factorial" if recipe.spec.axes else "explicit"
