"""Rows layout luck makes faster, before and after every row within its reach is confirmed.

    nice -n 19 .venv/bin/python bench/layout_rows.py                  # every cell, 600 sweeps each
    nice -n 19 .venv/bin/python bench/layout_rows.py --sweeps 50 --cells 0 2   # a quick look

Seeded simulations through flagsweep's own decision code, as the December 2026 statistics
audit's item 2 made them (its generator, ../shared/design/audit-2026-12/harness.py, copied here
so the bench stands alone). A sweep: the baseline, its A/A twin (a copy of the baseline's
binary: the same layout) and M variants of no effect, with or without one truly G% faster; each
value exp(planted log effect + that binary's layout offset N(0, s_L), fixed for the build + the
round's level N(0, 2%) shared by every binary of the round + the run's log-normal noise of CV),
14 fixed rounds. Then what `flagsweep run` does with it, every step its own function:

1. analysis.apply (compare, BH, the A/A gate, the effects, the recommendation) on the sweep;
2. confirmation.plan: the faster and slower rows whose interval with one build's layout luck
   (the default 5% reach, or one measured at the true spread with --reach measured) reaches
   within the threshold, K by power, at most --confirm-rows;
3. the confirmation: those rows and the baseline in K fresh layouts each (new offsets), the
   twin's K more, 10 rounds, judged by analysis.apply as a --layouts sweep, and
   confirmation.outcome;
4. analysis.apply again with the record: the rows' labels, the effects and the answer.

A row is printed "faster" when its verdict is faster and it is settled (beyond the reach, or
confirmed over layouts); a row labelled "faster (one layout, within layout luck)" is counted
apart. Rates are hits/n with an exact Clopper-Pearson 95% interval; every sweep is seeded by its
cell and index, so the same command prints the same table.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flagsweep.measure import rounds  # noqa: E402
from flagsweep.measure.options import MeasureOptions  # noqa: E402
from flagsweep import model
from flagsweep.results import analysis, confirmation  # noqa: E402
from flagsweep.stats import layout  # noqa: E402

BASE, TWIN, WIN = "base", "base.aa", "win"
THRESHOLD_PCT = 1.0
ROUNDS, CONFIRM_ROUNDS = 14, 10
# (nulls, winner %, run CV, layout spread s_L): the audit's cells with layout luck (its table
# in section 2), and one winner at the default reach's edge
CELLS = [(5, 0.0, 0.01, 0.015), (5, 3.0, 0.01, 0.015), (20, 0.0, 0.01, 0.015),
         (20, 3.0, 0.01, 0.015), (20, 0.0, 0.03, 0.015), (20, 5.0, 0.03, 0.015),
         (5, 5.0, 0.01, 0.015)]


# ---- the generator (the audit's harness.draw and layout_arms) --------------------------------

def sd_of(cv: float) -> float:
    return math.sqrt(math.log(1 + cv * cv))


def draw(rng, ids, n_rounds, effects, cv, layout_sd, round_sd=0.02):
    """binary -> {round: value}; one layout offset per binary (the twin shares the baseline's)."""
    level = rng.normal(0, round_sd, n_rounds)
    luck = {vid: rng.normal(0, layout_sd) for vid in ids}
    luck[TWIN] = luck[BASE]
    return {vid: {r: float(math.exp(v)) for r, v in enumerate(
        effects.get(vid, 0.0) + luck[vid] + level + rng.normal(0, sd_of(cv), n_rounds))}
        for vid in ids}


def layout_arms(rng, arms: dict[str, float], k: int, n_rounds: int, cv: float, layout_sd: float,
                round_sd=0.02):
    """variant -> {its layout's id: {round: value}}: each arm in k fresh layouts, and the twin
    as k more layouts of the baseline's code."""
    level = rng.normal(0, round_sd, n_rounds)
    named = {**arms, TWIN: arms[BASE]}
    return {vid: {f"{vid}.L{j}": {r: float(math.exp(v)) for r, v in enumerate(
        eff + rng.normal(0, layout_sd) + level + rng.normal(0, sd_of(cv), n_rounds))}
        for j in range(k)} for vid, eff in named.items()}


# ---- the documents the writer would make ------------------------------------------------------

def document(ids: list[str], flags: dict[str, list[str]], layouts: int = 0) -> model.Results:
    """A results.json before its statistics: built, checked variants, one factor level each."""
    variants = []
    for vid in ids:
        v = {"id": vid, "compiler": "gcc", "flags": flags[vid], "factors": {"row": vid},
             "build": {"status": "ok"}, "check": {"status": "ok"}}
        if vid == TWIN:
            v |= {"aa_of": BASE, "factors": {"row": BASE}}
        variants.append(v)
    return model.Results.model_validate({
        "schema": model.SCHEMA, "target": "sim", "recipe": "sim", "metric": "cpu_s",
        "baseline": BASE, "machine": {}, "variants": variants, "threshold_pct": THRESHOLD_PCT,
        "measurement": {"layouts": {"k": layouts} if layouts else None}})


def sweep(rng, i: int, nulls: int, g: float, cv: float, s_l: float, opts: MeasureOptions,
          reach: tuple[float, str] | None) -> dict:
    """One simulated sweep and its confirmation; what was printed."""
    ids = [BASE, TWIN, *[f"n{j}" for j in range(nulls)], *([WIN] if g else [])]
    effects = {WIN: math.log(1 - g / 100)} if g else {}
    flags = {BASE: ["-O2"], TWIN: ["-O2"]}
    for vid in ids[2:]:        # 1-3 flags each, the winner 2: the "simplest within" rule acts
        flags[vid] = ["-O2"] + [f"-f{vid}{j}" for j in
                                range(2 if vid == WIN else int(rng.integers(1, 4)))]
    values = draw(rng, ids, ROUNDS, effects, cv, s_l)
    plan = rounds.Plan(ids, 1000 + i, warmup=0, min_runs=ROUNDS, max_runs=ROUNDS,
                       budget_s=None, precision=THRESHOLD_PCT / 100, baseline=BASE,
                       threshold_pct=THRESHOLD_PCT, layouts={}, drop=False,
                       keep=frozenset({BASE, TWIN}), twin=TWIN)
    design = rounds.design(plan)
    doc = document(ids, flags)
    analysis.apply(doc, values, seed=i, design=design)
    before = _printed(doc)
    record = confirmation.plan(doc, reach, opts)
    if record.status == confirmation.PENDING:
        arms = {vid: effects.get(vid, 0.0) for vid in [BASE, *record.variants]}
        reps = layout_arms(rng, arms, record.layouts, CONFIRM_ROUNDS, cv, s_l)
        over = document([BASE, *record.variants, TWIN], flags, layouts=record.layouts)
        analysis.apply(over, {vid: layout.pooled(r) for vid, r in reps.items()}, seed=i,
                       replicates=reps)
        record = confirmation.outcome(record.dump(), over, 0.0, Path("bench"))
    analysis.apply(doc, values, seed=i, design=design, luck=record.dump())
    after = _printed(doc)
    return {"before": before, "after": after, "record": record,
            "measured": list(record.variants or []) if record.rows else []}


def _printed(doc: model.Results) -> dict:
    """What the page says: the rows printed faster (settled), those labelled one layout, the
    variant "Use X" names and whether the answer agrees with the table."""
    rows = {v.id: v.vs_baseline for v in doc.variants
            if not model.is_control(v.id) and v.vs_baseline is not None}
    faster = [vid for vid, vs in rows.items() if vs.verdict == "faster"]
    slower = [vid for vid, vs in rows.items() if vs.verdict == "slower"
              and confirmation.settled(vs.layout_luck)]
    settled = [vid for vid in faster if confirmation.settled(rows[vid].layout_luck)]
    named = doc.recommendation.variant
    use = named not in (None, BASE)
    luck = [vid for vid in faster if vid not in settled]
    # the answer agrees with the table: it names a settled faster row when there is one; one
    # layout luck could give (saying it is unconfirmed) only when none is settled and no row
    # was measured again; else it keeps the baseline
    unconfirmed = [] if confirmation.measured_again(doc) else luck
    consistent = (named in settled if settled else named in unconfirmed if unconfirmed
                  else named == BASE)
    return {"faster": settled, "slower": slower, "luck": luck, "use": named if use else None,
            "use_settled": use and named in settled, "consistent": consistent,
            "effects_matter": [e.variant for e in doc.effects or [] if e.matters and
                               confirmation.settled(e.layout_luck)]}


# ---- rates --------------------------------------------------------------------------------------

def rate(hits: int, n: int) -> str:
    if n == 0:
        return "n/a (0)"
    lo = sps.beta.ppf(0.025, hits, n - hits + 1) if hits else 0.0
    hi = sps.beta.ppf(0.975, hits + 1, n - hits) if hits < n else 1.0
    return f"{100 * hits / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] ({hits}/{n})"


def cell(index: int, nulls: int, g: float, cv: float, s_l: float, n: int, opts: MeasureOptions,
         measured_reach: bool) -> list[str]:
    reach = ((confirmation.reach_of_spread(s_l), f"measured s_L {100 * s_l:g}%")
             if measured_reach else None)
    t0 = time.time()
    tally = dict(slower_before=0, slower_after=0, null_before=0, null_after=0, null_luck=0,
                 use_null_before=0, use_null=0, use_win=0, win_before=0, inconsistent=0,
                 confirmed=0, effects_null=0, win_measured=0, win_confirmed=0)
    ks, powers, measured = [], [], []
    for i in range(n):
        rng = np.random.default_rng([2027, index, i])
        out = sweep(rng, i, nulls, g, cv, s_l, opts, reach)
        before, after, record = out["before"], out["after"], out["record"]
        tally["null_before"] += any(v != WIN for v in before["faster"])
        tally["null_after"] += any(v != WIN for v in after["faster"])
        tally["null_luck"] += any(v != WIN for v in after["luck"])
        tally["slower_before"] += any(v != WIN for v in before["slower"])
        tally["slower_after"] += any(v != WIN for v in after["slower"])
        tally["effects_null"] += any(v != WIN for v in after["effects_matter"])
        tally["use_null_before"] += before["use"] not in (None, WIN)
        tally["use_null"] += after["use"] not in (None, WIN)
        tally["use_win"] += after["use"] == WIN
        tally["win_before"] += before["use"] == WIN
        tally["inconsistent"] += not after["consistent"]
        tally["confirmed"] += record.status not in (confirmation.NOT_NEEDED,)
        if record.rows:
            ks.append(record.layouts)
            powers.append(record.power)
            measured.append(len(record.rows))
        if WIN in out["measured"]:
            tally["win_measured"] += 1
            tally["win_confirmed"] += WIN in after["faster"]
    name = (f"{nulls} nulls{f' + one {g:g}% winner' if g else ''}, CV {100 * cv:g}%, "
            f"s_L {100 * s_l:g}%, {ROUNDS} rounds, reach "
            f"{'measured' if measured_reach else 'default'}")
    lines = [f"== {name} ({n} sweeps, {time.time() - t0:.0f} s)",
             f"  a no-effect row printed faster: before {rate(tally['null_before'], n)} -> after "
             f"{rate(tally['null_after'], n)}",
             f"  a no-effect row printed slower: before {rate(tally['slower_before'], n)} -> "
             f"after {rate(tally['slower_after'], n)}",
             f"  a no-effect row labelled faster (one layout, within layout luck): "
             f"{rate(tally['null_luck'], n)}; a no-effect effect 'matters' (settled, faster or "
             f"slower): {rate(tally['effects_null'], n)}",
             f"  'Use X' naming a no-effect set: before {rate(tally['use_null_before'], n)} -> "
             f"after {rate(tally['use_null'], n)}; answer inconsistent with the table: "
             f"{rate(tally['inconsistent'], n)}",
             f"  a confirmation ran: {rate(tally['confirmed'], n)}; its K "
             f"{_spread(ks)}, rows {_spread(measured)}, stated power at the reach's edge "
             f"{_spread([100 * p for p in powers], '%')}"]
    if g:
        lines.append(f"  'Use X' naming the true winner: before {rate(tally['win_before'], n)} "
                     f"-> after {rate(tally['use_win'], n)}; the winner measured again and "
                     f"confirmed: {rate(tally['win_confirmed'], tally['win_measured'])}")
    return lines


def _spread(xs: list[float], unit: str = "") -> str:
    if not xs:
        return "-"
    q = np.percentile(xs, [0, 50, 100])
    return f"median {q[1]:.0f}{unit} (min {q[0]:.0f}, max {q[2]:.0f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=600, help="simulated sweeps a cell")
    ap.add_argument("--cells", type=int, nargs="*", help=f"which of the {len(CELLS)} cells")
    ap.add_argument("--reach", choices=("default", "measured"), default="default",
                    help="the reach a sweep uses: the default 5%% (no layout spread measured "
                         "before, as the audit), or one measured at the true spread")
    ap.add_argument("--confirm-rows", type=int, default=MeasureOptions.confirm_rows)
    ap.add_argument("--confirm-layouts", type=int, default=0, help="0: sized by power")
    args = ap.parse_args()
    opts = MeasureOptions(budget=None, confirm_rows=args.confirm_rows,
                          confirm_layouts=args.confirm_layouts, max_runs=CONFIRM_ROUNDS)
    for index in args.cells if args.cells is not None else range(len(CELLS)):
        for line in cell(index, *CELLS[index], args.sweeps, opts, args.reach == "measured"):
            print(line, flush=True)


if __name__ == "__main__":
    main()
