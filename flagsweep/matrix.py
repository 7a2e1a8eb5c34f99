"""The matrix: a recipe's axes crossed with its compilers, minus what this CPU cannot run.

Every variant gets a canonical, filename-safe id derived from its compiler and flags alone, so
the same flags give the same id in any recipe and any sweep (history and merging rely on it).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import shlex
from dataclasses import dataclass, field

from . import cpu
from .errors import ConfigError
from .recipe import AxisLevel, Recipe

ID_MAX = 80


@dataclass(frozen=True)
class Variant:
    id: str
    compiler: str
    flags: tuple[str, ...]
    factors: dict[str, str] = field(hash=False, compare=False)


@dataclass(frozen=True)
class Skipped:
    variant: Variant
    reason: str


@dataclass(frozen=True)
class Matrix:
    variants: list[Variant]        # baseline first, then in recipe order
    baseline: Variant
    skipped: list[Skipped]
    design: str                    # "full-factorial", "explicit" or "factorial+explicit"


def variant_id(compiler: str, flags: tuple[str, ...]) -> str:
    """gcc + (-O2, -march=x86-64-v3) -> 'gcc-O2-march-x86-64-v3'; long ids end in a hash."""
    parts = [re.sub(r"[^A-Za-z0-9._+-]", "_", compiler)]
    parts += [re.sub(r"[^A-Za-z0-9._+-]", "_", f.lstrip("-").replace("=", "-")) for f in flags]
    vid = "-".join(parts) if flags else f"{parts[0]}-default"
    if len(vid) > ID_MAX:
        digest = hashlib.sha256("\0".join((compiler, *flags)).encode()).hexdigest()[:10]
        vid = f"{vid[:ID_MAX - 11]}-{digest}"
    return vid


def expand(recipe: Recipe, compilers: list[str] | None = None, filter_cpu: bool = True) -> Matrix:
    """All variants of a recipe, the baseline identified, un-runnable -march values skipped."""
    compilers = compilers or recipe.spec.compilers
    candidates = _factorial(recipe, compilers) + _included(recipe, compilers)
    kept = [v for v in candidates if not _excluded(v, recipe.spec.exclude)]
    kept = _dedupe(kept, recipe)
    skipped = _unrunnable(kept) if filter_cpu else []
    runnable = [v for v in kept if v not in {s.variant for s in skipped}]
    baseline = _baseline(recipe, runnable, compilers)
    ordered = [baseline] + [v for v in runnable if v is not baseline]
    return Matrix(ordered, baseline, skipped, _design(recipe))


def _factorial(recipe: Recipe, compilers: list[str]) -> list[Variant]:
    axes = recipe.axes()
    if not axes:
        return []
    names = list(axes)
    out = []
    for compiler in compilers:
        for combo in itertools.product(*(axes[n] for n in names)):
            out.append(_variant(compiler, dict(zip(names, combo))))
    return out


def _variant(compiler: str, levels: dict[str, AxisLevel]) -> Variant:
    flags = tuple(f for level in levels.values() for f in level.flags)
    factors = {axis: level.label for axis, level in levels.items()}
    return Variant(variant_id(compiler, flags), compiler, flags, factors)


def _included(recipe: Recipe, compilers: list[str]) -> list[Variant]:
    out = []
    for inc in recipe.spec.include:
        for compiler in ([inc.compiler] if inc.compiler else compilers):
            if compiler not in compilers:
                continue
            level = AxisLevel("", tuple(shlex.split(inc.flags)))
            out.append(Variant(variant_id(compiler, level.flags), compiler, level.flags,
                               dict(inc.factors)))
    return out


def _excluded(variant: Variant, rules: list[dict[str, str]]) -> bool:
    def matches(rule: dict[str, str]) -> bool:
        return all((variant.compiler if key == "compiler" else variant.factors.get(key)) == value
                   for key, value in rule.items())
    return any(matches(rule) for rule in rules)


def _dedupe(variants: list[Variant], recipe: Recipe) -> list[Variant]:
    """Two rows with the same compiler and flags are one build; different flags must not share an id."""
    seen: dict[str, Variant] = {}
    for v in variants:
        other = seen.get(v.id)
        if other is None:
            seen[v.id] = v
        elif other.flags != v.flags:
            raise ConfigError(f"{recipe.path}: variants {other.flags} and {v.flags} map to the "
                              f"same id '{v.id}'; change one flag spelling")
    return list(seen.values())


def _unrunnable(variants: list[Variant]) -> list[Skipped]:
    out = []
    for v in variants:
        for flag in v.flags:
            if flag.startswith("-march="):
                verdict = cpu.can_run(flag.split("=", 1)[1], v.compiler)
                if not verdict.ok:
                    out.append(Skipped(v, verdict.reason))
                    break
    return out


def _baseline(recipe: Recipe, variants: list[Variant], compilers: list[str]) -> Variant:
    want = dict(recipe.spec.baseline)
    want.setdefault("compiler", compilers[0])
    found = [v for v in variants
             if all((v.compiler if k == "compiler" else v.factors.get(k)) == val
                    for k, val in want.items())]
    if len(found) != 1:
        what = "no runnable variant" if not found else f"{len(found)} variants ({', '.join(v.id for v in found)})"
        raise ConfigError(f"{recipe.path}: key 'baseline': {want} matches {what}; "
                          "expected exactly one")
    return found[0]


def _design(recipe: Recipe) -> str:
    if recipe.spec.axes and recipe.spec.include:
        return "factorial+explicit"
    return "full-factorial" if recipe.spec.axes else "explicit"
