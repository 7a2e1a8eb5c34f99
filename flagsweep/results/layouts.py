"""Layout replicates (run --layouts) folded back into their variants for results.json.

A sweep with layouts builds, checks and times each variant as K binaries, the same code linked in
K seeded orders (flagsweep.compilation.layout), each stored under its own id (`gcc-O2.L3`). Users ask
about variants, so results.json lists one entry per variant: its build with `layouts` (each
binary: seed, hashes, status), its samples with a `layout` column beside `round`, and the
values the statistics need: per round, the geometric mean of its layouts (summary, noise,
plots), and per layout (the two-level comparison, flagsweep.stats.layout).
"""

from __future__ import annotations

from dataclasses import dataclass

from flagsweep.compilation import layout
from flagsweep import model
from flagsweep.model import AA_SUFFIX
from flagsweep.stats import layout as layout_stats

Values = dict[str, dict[int, float]]      # id -> {round: value}


@dataclass
class Folded:
    variants: list[model.Variant]      # one per variant, replicates folded in
    values: Values                        # variant -> {round: its layouts' geometric mean}
    replicates: dict[str, Values]         # variant -> {binary id: {round: value}}


def fold(docs: list[model.Variant], values: Values, baseline: str) -> Folded:
    """Fold the replicates (those with `layout_of`) into one variant each; variants without
    layouts pass unchanged. A replicate with identical code to another variant's replicate of
    the same seed was not timed: it takes that one's values."""
    groups: dict[str, list[model.Variant]] = {}
    order: list[model.Variant | str] = []   # a variant, or where a folded one goes
    for d in docs:
        of = _layout_of(d)
        if of is None:
            order.append(d)
        elif of not in groups:
            groups[of] = [d]
            order.append(of)
        else:
            groups[of].append(d)
    replicates = {of: {d.id: values[_timed(d)] for d in reps if _timed(d) in values}
                  for of, reps in groups.items()}
    folded = [_variant(groups[d], baseline) if isinstance(d, str) else d for d in order]
    pooled = {vid: v for vid, v in values.items() if vid not in _ids(groups)}
    pooled |= {of: layout_stats.pooled(reps) for of, reps in replicates.items() if reps}
    return Folded(folded, pooled, replicates)


def _layout_of(d: model.Variant) -> str | None:
    return d.layout_of


def _ids(groups: dict[str, list[model.Variant]]) -> set[str]:
    return {d.id for reps in groups.values() for d in reps}


def _timed(d: model.Variant) -> str:
    """The binary whose samples stand for this replicate."""
    return d.build.identical_to or d.id


# A replicate's own keys, not the variant's: the variant gets them folded over its layouts.
OWN = {"layout_of", "layout", "samples", "failures", "multiplexed", "build", "check"}


def _variant(reps: list[model.Variant], baseline: str) -> model.Variant:
    first = reps[0]
    of = _layout_of(first)
    own = len(layout.flags(first.layout))
    kept = {k: v for k, v in first.dump().items() if k not in OWN}
    twin = {"aa_of": baseline} if of == baseline + AA_SUFFIX else {}
    return model.Variant.model_validate({
        **kept, "id": of, "flags": first.flags[:-own], **twin, "build": _build(reps),
        "check": _worst_check(reps), "samples": _samples(reps),
        "failures": [{**f.dump(), "layout": r.layout} for r in reps for f in r.failures],
        "multiplexed": sum(r.multiplexed or 0 for r in reps)})


# A variant's output is as good as its worst layout's: a layout whose output failed or differs
# makes the variant so, an equivalent one (other bytes, as good a result) before an ok one.
CHECK_ORDER = {"failed": 0, "differs": 1, "equivalent": 2}


def _worst_check(reps: list[model.Variant]) -> dict | None:
    checks = [r.check for r in reps]
    worst = min(checks, key=lambda c: CHECK_ORDER.get(c.status if c else None, 3))
    return worst.dump() if worst else None


def _build(reps: list[model.Variant]) -> dict:
    """The variant's build: the first layout's, judged over all of them, with each layout's."""
    builds = [r.build for r in reps]
    bad = next((b for b in builds if b.status != "ok"), None)
    twins = {(b.identical_to or "").rsplit(layout.MARK, 1)[0] for b in builds}
    functions = {b.functions_sha256 for b in builds}
    return {**(bad or builds[0]).dump(),
            "flags_verified": all(b.flags_verified for b in builds),
            # Every layout's code equal to the same other variant's: the variant is that one.
            "identical_to": twins.pop() if len(twins) == 1 and "" not in twins
            and _layout_of(reps[0]) not in twins else None,
            "seconds": sum(b.seconds or 0 for b in builds) or None,
            "same_functions": len(functions) == 1 and None not in functions,
            "layouts": [{"id": r.id, "seed": r.layout, "status": r.build.status,
                         "binary": r.build.binary, "code_sha256": r.build.code_sha256,
                         "functions_sha256": r.build.functions_sha256,
                         "flags_verified": r.build.flags_verified,
                         "identical_to": r.build.identical_to,
                         "log": r.build.log} for r in reps]}


def _samples(reps: list[model.Variant]) -> dict[str, list]:
    """The layouts' sample columns one after another, with `layout` (the seed) beside `round`."""
    names = list(dict.fromkeys(k for r in reps for k in (r.samples or {})))
    cols: dict[str, list] = {k: [] for k in names}
    cols["layout"] = []
    for r in reps:
        s = r.samples or {}
        n = max((len(v) for v in s.values()), default=0)
        for k in names:
            cols[k] += s.get(k, [None] * n)
        cols["layout"] += [r.layout] * n
    return cols if cols["layout"] else {}
