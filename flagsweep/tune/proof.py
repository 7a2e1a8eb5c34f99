"""The end of a tune: the ablation of the best set found, then the proof on the full input.

The search's ratios are single quick-input estimates of many candidates: the best of many noisy
estimates is biased towards luck (the winner's curse), and a gain can be a code layout's
rather than the flags' (Mytkowicz et al., "Producing Wrong Data Without Doing Anything
Obviously Wrong!", ASPLOS 2009). So nothing the search found is recommended until:

1. the ablation: the best set without each of its flags in turn, one sweep on the search input
   whose baseline is the best set. A flag whose removal is decided slower does work here;
   identical code without a flag shows that it does nothing, at no run. A cost decided nearer
   to no change than layout luck reaches is measured again over layouts (below), and counts
   only if decided there too. The flags that matter, by cost, are the minimal subset (the
   leave-one-out ablation of Fawcett & Hoos, "Analysing differences between algorithm
   configurations through ablation", J. Heuristics 2016), unless the greedy steps (below)
   find the fewest that give the winner's effect.
2. the proof: the base, -O3, the best set, its minimal subset and the next best sets, on the
   full input, each built in K seeded layouts, with the A/A twin's gate and Benjamini-Hochberg
   across the comparisons: exactly as a sweep with --layouts judges a variant. Each set is
   compared with the base (the sweep's own comparison) and with -O3 (the same samples,
   compared over layouts with -O3 as the reference, adjusted together).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flagsweep import stats
from flagsweep.jobs import checks
from flagsweep.tune.batch import Setting, finite_pair, run_id, vid
from flagsweep.measure.plan import round_values
from flagsweep import model
from flagsweep.results import confirmation, reader
from flagsweep.stats import gate, layout


@dataclass(frozen=True)
class ProofSet:
    """A set the proof measures."""
    role: str                      # base | -O3 | winner | minimal | runner-up
    flags: tuple[str, ...]
    trial: int | None = None


def o3(base: tuple[str, ...]) -> tuple[str, ...]:
    """-O3 in place of the base's optimisation level (the base's other flags kept)."""
    kept = tuple(f for f in base if not (f.startswith("-O") and len(f) <= 4))
    return ("-O3",) + kept


def ablation_rows(s: Setting, path: Path, winner: tuple[str, ...],
                  removals: list[tuple[str, ...]]) -> list[model.TuneAblationRow]:
    """Each removal (one flag, or a group of them): the winner without it, against the winner
    (>1: what was removed helps)."""
    doc = reader.load(path)
    by_id = {v.id: v for v in doc.variants}
    rows = []
    for removed in removals:
        v = by_id.get(vid(s, without(winner, removed)))
        rows.append(_row(removed, v, vid(s, winner), by_id))
    return rows


def without(winner: tuple[str, ...], removed: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f for f in winner if f not in removed)


def groups(changes: tuple[str, ...], n: int) -> list[tuple[str, ...]]:
    """The changes in n groups of near-equal size, in their order."""
    n = max(1, min(n, len(changes)))
    size, extra = divmod(len(changes), n)
    out, at = [], 0
    for i in range(n):
        take = size + (i < extra)
        out.append(changes[at:at + take])
        at += take
    return out


def _row(removed: tuple[str, ...], v: model.Variant | None, winner_id: str,
         by_id: dict[str, model.Variant]) -> model.TuneAblationRow:
    named = {"flag": " ".join(removed), "flags": list(removed)}
    if v is None:
        return model.TuneAblationRow(**named, status="not-built")
    if v.build.status != "ok":
        return model.TuneAblationRow(**named, variant=v.id, status="failed-build")
    if v.build.identical_to == winner_id:
        return model.TuneAblationRow(**named, variant=v.id, ratio=1.0, identical=True,
                                        status="identical", verdict="identical")
    # The same code as another set of the sweep (the base, or the winner without another
    # flag): that set's comparison is this one's.
    measured = by_id.get(v.build.identical_to, v) if v.build.identical_to else v
    if measured.check is None or measured.check.status not in ("ok", "equivalent"):
        return model.TuneAblationRow(**named, variant=v.id, status="failed-check")
    vs = measured.vs_baseline
    if vs is None:
        return model.TuneAblationRow(**named, variant=v.id, status="not-measured")
    return model.TuneAblationRow(**named, variant=v.id, ratio=vs.ratio, ci95=vs.ci95,
                                    verdict=vs.verdict, p_adjusted=vs.p_adjusted,
                                    ci_fcr=vs.ci_fcr)


def minimal(rows: list[model.TuneAblationRow]) -> list[str]:
    """The flags whose removal (alone, or with their group) is decided slower, and again over
    layouts where it was measured there (TuneAblationRow.matters), the costliest first."""
    kept = [r for r in rows if r.matters() and r.ratio is not None]
    return [f for r in sorted(kept, key=lambda r: -r.ratio) for f in (r.flags or [r.flag])]


# ---- the costs layout luck could give -----------------------------------------------------------
# The ablation times each set in one layout on the search input, and a removed flag changes
# the code around the hot loops too, so their placement: a cost near no change can be that
# placement's luck, or a noisy spell of the machine, not the flag's work (duo, seed 4 of the
# known-answer bench: +8.8% [+2.7, +17.3] without a flag that does nothing there, +0.6%
# [-0.8, +2.0] over 4 layouts). So a row decided slower whose interval comes within the reach of
# layout luck is measured again, K layouts each of the winner and the winner without it, and
# counts only if decided slower there too: the rule and the reach are results.confirmation's,
# the comparison over layouts the proof's (stats.layout).

def to_check(rows: list[model.TuneAblationRow], reach_pct: float
             ) -> list[model.TuneAblationRow]:
    """The rows decided slower whose cost layout luck alone could give."""
    return [r for r in rows if r.verdict == "slower"
            and confirmation.within_reach(r.ci95, reach_pct)]


def checked(s: Setting, path: Path, winner: tuple[str, ...],
            rows: list[model.TuneAblationRow], which: list[str]
            ) -> list[model.TuneAblationRow]:
    """The rows named in `which` (by `flag`) with their removal against the winner over the
    layouts of the check's sweep (its baseline the winner), adjusted together; a row the sweep
    could not measure is not confirmed."""
    doc = reader.load(path)
    found = _against(s, path, doc, vid(s, winner))
    out = []
    for r in rows:
        if r.flag in which:
            e = found.get(vid(s, without(winner, tuple(r.flags or [r.flag]))))
            r = r.model_copy(update={"over_layouts": e or model.TuneEstimate(
                why="not measured over layouts: its build or its output check failed")})
        out.append(r)
    return out


def active(row: model.TuneAblationRow) -> bool:
    """A group that may hold a flag that matters: its removal not decided harmless (slower,
    or not decided at all), so its flags are worth taking apart."""
    return not (row.status == "identical" or row.verdict in ("equivalent", "faster",
                                                             "identical"))


def by_cost(rows: list[model.TuneAblationRow]) -> list[model.TuneAblationRow]:
    """The rows that may matter, those that matter first (each surely holds a flag that does
    work), then those not decided; each part the costliest first."""
    kept = [r for r in rows if active(r)]
    return sorted(kept, key=lambda r: (not r.matters(), r.ratio is None,
                                       -(r.ratio or 0)))


def to_split(rows: list[model.TuneAblationRow], fits: int) -> list[str]:
    """The flags of the groups to take apart one by one, whole groups while `fits` builds
    allow, in the order of `by_cost`: when not all fit, a group known to matter is taken
    apart before one that may not."""
    out: list[str] = []
    for r in by_cost(rows):
        if len(r.flags) > 1 and len(out) + len(r.flags) <= fits:
            out += r.flags
    return out


# ---- the greedy minimal subset ------------------------------------------------------------------
# Leave-one-out finds the flags whose removal alone costs something; it cannot see flags each
# worth less than the threshold that add up to more, nor a flag needed only beside another.
# So the base gets the flags back in the order of their cost, one row (a flag, or a group left
# whole) a step, and each step is measured against the winner: the first that gives the
# winner's effect is the minimal subset. This is forward selection along the leave-one-out
# order, the cheap form of the ablation path between two configurations (Fawcett & Hoos 2016,
# above: their path picks the best flag at each step, n^2/2 sets; this one n).

def greedy_units(rows: list[model.TuneAblationRow]) -> list[tuple[str, ...]]:
    """What each greedy step adds: the rows that may matter, in the order of `by_cost`. Not a
    row measured again over layouts and not decided slower there: its one-layout cost was all
    that said it might matter, and a greedy step, timed in one layout too, would repeat it."""
    return [tuple(r.flags or [r.flag]) for r in by_cost(rows)
            if r.over_layouts is None or r.matters()]


def greedy_sets(winner: tuple[str, ...], base: int,
                units: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Each step's set: the base (the winner's first `base` flags) with the flags of the
    units so far, in the winner's order (a later flag can override an earlier one)."""
    kept: set[str] = set()
    out = []
    for unit in units:
        kept |= set(unit)
        out.append(winner[:base] + tuple(f for f in winner[base:] if f in kept))
    return out


def greedy_steps(s: Setting, path: Path, winner: tuple[str, ...],
                 units: list[tuple[str, ...]]) -> list[model.TuneGreedyStep]:
    """Each step's set against the winner, from the greedy sweep (its baseline the winner)."""
    doc = reader.load(path)
    by_id = {v.id: v for v in doc.variants}
    base = len(s.base)
    out = []
    for unit, kept in zip(units, greedy_sets(winner, base, units)):
        named = {"added": list(unit), "flags": list(kept[base:])}
        if kept == winner:
            out.append(model.TuneGreedyStep(**named, variant=vid(s, winner), ratio=1.0,
                                               identical=True, status="identical",
                                               verdict="identical"))
            continue
        r = _row(tuple(f for f in winner if f not in kept), by_id.get(vid(s, kept)),
                 vid(s, winner), by_id)
        out.append(model.TuneGreedyStep(**named, **r.model_dump(
            exclude={"flag", "flags"}, exclude_unset=True)))
    return out


def greedy_chosen(steps: list[model.TuneGreedyStep], decided: int) -> int | None:
    """How many steps the minimal subset takes: the first whose set gives the winner's
    effect, or None. A step short of the `decided` rows (those whose removal alone was
    decided slower) leaves one of them out, so it must be decided as fast (equivalent,
    faster, or the winner's code); from there on, not decided slower is enough, as a flag
    not decided to matter is left out of the ablation's subset."""
    for n, step in enumerate(steps, 1):
        if step.status not in ("measured", "identical") or step.ratio is None:
            continue
        if step.status == "identical" or step.verdict in ("equivalent", "faster"):
            return n
        if n >= decided and step.verdict != "slower":
            return n
    return None


def entries(base: tuple[str, ...], ranked: list[tuple[int, tuple[str, ...]]],
            least: tuple[str, ...] | None, runners_up: int) -> list[ProofSet]:
    """The proof's sets, the base first (its baseline): -O3, the best set found, its minimal
    subset when it differs, then the next best sets; a set already listed is not repeated."""
    out = [ProofSet("base", base)]
    if o3(base) != base:
        out.append(ProofSet("-O3", o3(base)))
    if ranked:
        out.append(ProofSet("winner", ranked[0][1], ranked[0][0]))
    if least is not None:
        out.append(ProofSet("minimal", least))
    for number, flags in ranked[1:1 + runners_up]:
        out.append(ProofSet("runner-up", flags, number))
    seen, unique = set(), []
    for e in out:
        if e.flags not in seen:
            seen.add(e.flags)
            unique.append(e)
    return unique


def candidates(s: Setting, path: Path, listed: list[ProofSet]) -> list[model.TuneCandidate]:
    """Each set of the proof against the base (the sweep's comparison) and -O3 (over the same
    layouts, adjusted across the sets)."""
    doc = reader.load(path)
    by_id = {v.id: v for v in doc.variants}
    o3_id, base_id = vid(s, o3(s.base)), vid(s, s.base)
    vs_o3 = _against(s, path, doc, o3_id) if o3_id in by_id else {}
    out = []
    for e in listed:
        v = by_id.get(vid(s, e.flags))
        # The same code as another set of the proof: measured once, as that set.
        same = v.build.identical_to if v is not None else None
        measured = by_id.get(same, v) if same else v
        out.append(model.TuneCandidate(
            role=e.role, variant=vid(s, e.flags), flags=list(e.flags),
            changes=[f for f in e.flags if f not in s.base], trial=e.trial,
            identical_to=same,
            vs_base=(_same_code() if same == base_id else _estimate(measured.vs_baseline)
                     if measured is not None and e.role != "base" else None),
            vs_o3=_same_code() if same == o3_id else vs_o3.get(same or vid(s, e.flags)),
            check=measured.check if measured is not None else None))
    _minimal_against_winner(s, path, doc, out)
    return out


def _minimal_against_winner(s: Setting, path: Path, doc: model.Results,
                            sets: list[model.TuneCandidate]) -> None:
    """The minimal subset against the best set it was taken from, over the same layouts: the
    ablation drops the flags whose removal alone was not decided slower, yet together they may
    still be worth more than the threshold, and then the subset is not the answer."""
    by_role = {c.role: c for c in sets}
    least, winner = by_role.get("minimal"), by_role.get("winner")
    if least is None or winner is None:
        return
    # Each set's code, as candidates() found it: a set with another's binary is measured as that.
    ours, theirs = least.identical_to or least.variant, winner.identical_to or winner.variant
    if ours == theirs:
        least.vs_winner = _same_code()
        return
    if {ours, theirs} <= {v.id for v in doc.variants}:
        least.vs_winner = _against(s, path, doc, theirs).get(ours)


def _same_code() -> model.TuneEstimate:
    """A set whose binary is the reference's own: ratio 1 by construction, never measured."""
    return model.TuneEstimate(ratio=1.0, verdict="identical-code")


def _estimate(vs: model.VsBaseline | None) -> model.TuneEstimate | None:
    if vs is None:
        return None
    return model.TuneEstimate(ratio=vs.ratio, ci95=vs.ci95, verdict=vs.verdict,
                                 p_adjusted=vs.p_adjusted, ci_fcr=vs.ci_fcr,
                                 fcr_level=vs.fcr_level, why=vs.why)


def _against(s: Setting, path: Path, doc: model.Results, ref: str
             ) -> dict[str, model.TuneEstimate]:
    """Every set against `ref` over their layouts, adjusted together (stats.layout, stats.adjust)."""
    rid = run_id(s, path)
    values = round_values(s.store.samples(rid), doc.metric)
    layouts = checks.layouts_of(s.store.variants(rid))
    if layouts:
        found = layout.compare_all(values, layouts, ref)
    else:
        found = {v: stats.compare(values[v], values[ref]) for v in values if v != ref}
    found = {v: e for v, e in found.items() if not model.is_control(v)}
    stats.adjust(list(found.values()), threshold_pct=doc.threshold_pct)
    _gated_as_the_sweep(found, doc)
    return {v: model.TuneEstimate(ratio=e.ratio, ci95=finite_pair(e.ci95), verdict=e.verdict,
                                     p_adjusted=e.p_adjusted, ci_fcr=finite_pair(e.ci_fcr),
                                     fcr_level=e.fcr_level, why=e.why) for v, e in found.items()}


def _gated_as_the_sweep(found: dict[str, stats.RatioEstimate], doc: model.Results) -> None:
    """The A/A gate the proof's sweep applied to each set against the base, applied to the
    same rounds against -O3: an unstable machine, or a twin that moved further than the
    threshold, overrules these calls as it overruled those (stats.gate)."""
    aa = doc.aa
    if aa is None or aa.ratio is None:
        return
    twin_is = aa.is_ or gate.TWIN_IS[True]
    unstable = gate.unstable_why(aa.verdict, aa.ratio, twin_is) \
        if getattr(aa, "unstable", False) else None
    bound = None if aa.bound_pct is None else aa.bound_pct / 100
    gate.rule(found, unstable, bound, doc.threshold_pct, twin_is)
