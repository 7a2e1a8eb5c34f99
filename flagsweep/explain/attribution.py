"""A variant's change, function by function: what each function costs in the baseline and in
the variant, and its share of the change.

The share is of the gross change, the sum over functions of |variant - baseline|: a variant
often gains in one function and loses in another, and a share of the net change would then
pass 100% for some functions and be negative for others. Against the gross change every share
is in [0, 100%] and the shares of all functions sum to 100%, so the top functions' shares sum
to at most that; each row's own sign says which way it moved.
"""

from __future__ import annotations

from pathlib import Path

from flagsweep.errors import FlagsweepError
from flagsweep.explain import symbols
from flagsweep.explain.profile import Profile
from flagsweep.model import Explain, ExplainFunction, Variant

TOP = 10


def attribute(base: Profile, var: Profile, base_sizes: dict[str, int],
              var_sizes: dict[str, int], top: int = TOP) -> Explain:
    """The explain entry of one variant against the baseline (results.json `explain`)."""
    names = set(base.functions) | set(var.functions)
    change = {n: var.cost(n) - base.cost(n) for n in names}
    gross = sum(abs(d) for d in change.values())
    ranked = sorted((n for n in names if change[n]), key=lambda n: (-abs(change[n]), n))[:top]
    rows = [_row(n, base, var, change[n], gross, base_sizes, var_sizes) for n in ranked]
    base_total, var_total = base.total, var.total
    return Explain(
        status="ok", method=base.source, unit=unit_of(base),
        baseline_total=base_total, variant_total=var_total,
        change=var_total - base_total,
        change_pct=_pct(var_total - base_total, base_total),
        gross_change=gross,
        top_share_pct=sum(r.share_pct for r in rows),
        functions=rows,
        baseline_profile=base.path, variant_profile=var.path,
        samples=_pair_or_none(base.samples, var.samples),
        unknown_share_pct=_pair_or_none(_times100(base.unknown_share),
                                        _times100(var.unknown_share)),
    )


def unit_of(profile: Profile) -> str:
    return "instructions" if profile.primary == "Ir" else profile.primary


def _row(name: str, base: Profile, var: Profile, change: float, gross: float,
         base_sizes: dict[str, int], var_sizes: dict[str, int]) -> ExplainFunction:
    b, v = base.cost(name), var.cost(name)
    return ExplainFunction(
        function=name,
        baseline=b, variant=v, change=change,
        change_pct=_pct(change, b),
        share_pct=100.0 * abs(change) / gross if gross else 0.0,
        symbols_baseline=base.symbols.get(name, []),
        symbols_variant=var.symbols.get(name, []),
        size_baseline=base_sizes.get(name), size_variant=var_sizes.get(name),
        note=_fate(name, b, v, base_sizes, var_sizes),
        events_baseline=base.functions.get(name) or None,
        events_variant=var.functions.get(name) or None,
        share_ci_baseline=_ci_pct(base.share_ci.get(name)),
        share_ci_variant=_ci_pct(var.share_ci.get(name)),
    )


def _fate(name: str, b: float, v: float, base_sizes: dict[str, int],
          var_sizes: dict[str, int]) -> str | None:
    """Why a function has a cost on one side only. One of the program's own functions (in the
    symbol table of the binary that runs it) absent from the other binary's symbol table: the
    compiler inlined it there into its callers, whose rows carry its cost, or removed it. A
    function in neither table is a shared library's (a libm `sqrt` that one variant calls and
    the other computes inline). Sizes known for neither binary (stripped): nothing to say."""
    if b and v:
        return None
    mine, other, side, there = ((base_sizes, var_sizes, "baseline", "variant") if b
                                else (var_sizes, base_sizes, "variant", "baseline"))
    if mine and name in mine and other and name not in other:
        return f"no such function in the {there}: inlined into its callers there (or removed)"
    if mine and name not in mine:
        return f"runs in the {side} only; a shared library's function"
    return f"runs in the {side} only"


def _pct(change: float, of: float) -> float | None:
    return 100.0 * change / of if of else None


def _times100(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def _pair_or_none(a, b):
    return None if a is None and b is None else [a, b]


def _ci_pct(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else [100.0 * ci[0], 100.0 * ci[1]]


def library_shares(v: Variant, profile: Profile, sizes: dict[str, int]) -> dict[str, float] | None:
    """The share (%) of a binary's profiled cost in each library from outside its build tree
    (the C/C++ runtime left out), by the functions the library exports that the binary (its
    function sizes) and its tree's libraries do not define: a lower bound, as a stripped
    library's internal functions have no name in a profile. None without such libraries."""
    foreign = [lib for lib in v.build.external_libraries or [] if not lib.runtime and lib.path]
    if not foreign or not profile.total:
        return None
    own = set(sizes)
    for path in v.build.libraries or []:
        try:
            own |= set(symbols.function_sizes(Path(path)))
        except FlagsweepError:      # unreadable: its functions may be counted as the library's
            pass
    shares = {}
    for lib in foreign:
        names = symbols.exported_functions(Path(lib.path)) - own
        shares[lib.name] = round(100.0 * sum(map(profile.cost, names)) / profile.total, 2)
        own |= names            # a function two libraries export is counted once
    return shares
