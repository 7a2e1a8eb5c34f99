#!/usr/bin/env python3
"""Does the interval beside "Use X" cover the flags' true effect? Seeded simulations through
flagsweep's own decision code, the cells of the December 2026 statistics audit's section 2.

    nice -n 19 .venv/bin/python bench/intervals.py                  # every cell, 600 sweeps each
    nice -n 19 .venv/bin/python bench/intervals.py --sweeps 100 --cells 2,6   # a quick look
    nice -n 19 .venv/bin/python bench/intervals.py --cells 6,8,10 --layouts 8  # K a side

No timing: the figures depend on the seeds alone, so a loaded machine only makes it slower
(about 25 s a 600-sweep cell on one core).

A simulated sweep (the audit's generator, ../shared/design/audit-2026-12/harness.py): the
baseline, its A/A twin (a copy of the baseline's binary), M variants with no effect and, in
some cells, one truly G% faster; each value exp(planted effect + the round's level N(0, 2%) +
run noise of the cell's CV), 14 fixed rounds. With layout luck each binary also carries its
own offset N(0, s_L), one build's luck (the twin shares the baseline's). Then what a run does,
through the functions it calls:
- `analysis.apply` on a results document (every comparison, the adjustment, the A/A gate,
  the recommendation and its printed estimate);
- `confirmation.plan` (the rule, default reach), and when it asks for one the confirmation: the
  named variant and the baseline in K fresh layouts each and the twin's K (10 rounds),
  judged by `analysis.apply` with those replicates, its answer by `confirmation.outcome`, and
  written into the recommendation by `confirmation.apply`.
The final "Use X" prints `recommendation.estimate` (flagsweep.results.estimate); before, it
printed the chosen variant's plain 95% CI from its one build ("before" columns below).
"Covers" asks whether the printed interval holds the named variant's true effect (its flags',
not its one build's: 0 for a no-effect variant). The one-build adjusted interval (`ci_fcr`, the
sweep's verdict's) is shown too: with layout luck it is not enough, which is why a one-build
answer prints the interval with the luck in it, or the confirmation's. Rates: exact Clopper-Pearson 95% intervals;
means: +-1.96 standard errors. Everything is seeded: the same command prints the same table.
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

from flagsweep.measure.options import MeasureOptions  # noqa: E402
from flagsweep import model
from flagsweep.results import analysis, confirmation  # noqa: E402
from flagsweep.model import AA_SUFFIX  # noqa: E402

BASE, TWIN = "base", "base" + AA_SUFFIX
THRESHOLD_PCT = 1.0
ROUNDS, CONFIRM_ROUNDS = 14, 10
ROUND_SD = 0.02
# (nulls M, true gain G %, run CV %, layout spread s_L %): the audit's section 2 table
CELLS = [(5, 0, 1, 0), (5, 3, 1, 0), (20, 0, 1, 0), (20, 3, 1, 0),
         (5, 0, 1, 1.5), (5, 3, 1, 1.5), (20, 0, 1, 1.5), (20, 3, 1, 1.5),
         (20, 0, 3, 1.5), (20, 5, 3, 1.5)]


# ---- the generator (the audit's harness.draw / layout_arms) ----------------------------------

def sd_of(cv: float) -> float:
    return math.sqrt(math.log(1 + cv * cv))


def draw(rng, ids: list[str], effects: dict[str, float], cv: float,
         layout_sd: float) -> dict[str, dict[int, float]]:
    """ids -> {round: value}: one build each, its layout luck fixed for the binary."""
    level = rng.normal(0, ROUND_SD, ROUNDS)
    luck = {vid: rng.normal(0, layout_sd) if layout_sd else 0.0 for vid in ids}
    luck[TWIN] = luck[BASE]              # the twin is a copy of the baseline's binary
    return {vid: {r: float(math.exp(x)) for r, x in enumerate(
        effects.get(vid, 0.0) + luck[vid] + level + rng.normal(0, sd_of(cv), ROUNDS))}
        for vid in ids}


def layout_arms(rng, arms: dict[str, float], k: int, cv: float, layout_sd: float):
    """variant -> {layout id: {round: value}}: each arm relinked in k fresh layouts, the twin
    (the baseline's code) in k more."""
    level = rng.normal(0, ROUND_SD, CONFIRM_ROUNDS)
    named = {**arms, TWIN: arms[BASE]}
    return {vid: {f"{vid}.L{j}": {r: float(math.exp(x)) for r, x in enumerate(
        eff + rng.normal(0, layout_sd) + level + rng.normal(0, sd_of(cv), CONFIRM_ROUNDS))}
        for j in range(k)} for vid, eff in named.items()}


# ---- results documents, as the writer makes them ---------------------------------------------

def document(flags: dict[str, list[str]]) -> model.Results:
    variants = [model.Variant(id=vid, compiler="gcc", flags=f, factors={"row": vid},
                                 build=model.Build(status="ok"),
                                 check=model.Check(status="ok"))
                for vid, f in flags.items()]
    doc = model.Results.model_validate({
        "schema": model.SCHEMA, "target": "sim", "recipe": "sim", "metric": "cpu_s",
        "baseline": BASE, "machine": {}, "threshold_pct": THRESHOLD_PCT,
        "variants": [v.model_dump(by_alias=True) for v in variants]})
    for v in doc.variants:
        if v.id == TWIN:
            v.aa_of = BASE
    return doc


def confirmed(rng, doc: model.Results, record: model.Confirmation,
              effects: dict[str, float], cv: float, layout_sd: float, seed: int) -> dict:
    """The confirmation sweep of `record`'s rows (every faster or slower row its rule asks to
    measure again, the recommended one first), judged as a run judges it; its record."""
    rows = record.variants or [record.variant]
    reps = layout_arms(rng, {BASE: 0.0, **{vid: effects.get(vid, 0.0) for vid in rows}},
                       record.layouts, cv, layout_sd)
    flags = {v.id: v.flags for v in doc.variants if v.id in (BASE, TWIN, *rows)}
    again = document(flags)
    again.measurement = model.Measurement(layouts={"k": record.layouts})
    from flagsweep.stats import layout
    values = {vid: layout.pooled(arm) for vid, arm in reps.items()}
    analysis.apply(again, values, seed=seed, replicates=reps)
    return confirmation.outcome(record.model_dump(mode="json"), again, 0.0,
                                Path("layouts/results.json")).model_dump(mode="json")


def sweep(i: int, cell: tuple, k: int) -> dict:
    m, gain, cv_pct, lsd_pct = cell
    cv, lsd = cv_pct / 100, lsd_pct / 100
    rng = np.random.default_rng([23, i, m, int(gain * 10), int(cv * 1000), int(lsd * 1000),
                                 ROUNDS])
    nulls = [f"n{j}" for j in range(m)]
    ids = [BASE, TWIN, *nulls] + (["win"] if gain else [])
    effects = {"win": math.log(1 - gain / 100)} if gain else {}
    values = draw(rng, ids, effects, cv, lsd)
    # the baseline -O2; each variant 1-3 flags (the winner 2), for the "simplest within" rule
    flags = {BASE: ["-O2"], TWIN: ["-O2"]}
    for vid in ids[2:]:
        n = 2 if vid == "win" else int(rng.integers(1, 4))
        flags[vid] = ["-O2"] + [f"-f{vid}{j}" for j in range(n)]
    doc = document(flags)
    analysis.apply(doc, values, seed=1000 + i)
    rec = doc.recommendation
    named = rec.variant
    before = next((v.vs_baseline for v in doc.variants if v.id == named), None)
    record = confirmation.plan(doc, None, MeasureOptions(confirm_layouts=k, budget=None))
    stored = record.model_dump(mode="json")
    if record.status == confirmation.PENDING:
        stored = confirmed(rng, doc, record, effects, cv, lsd, 2000 + i)
    # as the writer does: the rows' labels decide the answer, then the record goes with it
    analysis.apply(doc, values, seed=1000 + i, luck=stored)
    confirmation.apply(doc, stored)
    final = doc.recommendation
    use = final.variant not in (None, BASE)
    return {"named": named if named != BASE else None, "final": final.variant if use else None,
            "before": before if named != BASE else None, "estimate": final.estimate,
            "status": record.status, "truth": math.exp(effects.get(final.variant, 0.0))}


# ---- tallies -------------------------------------------------------------------------------

def rate(h: int, n: int) -> str:
    if n == 0:
        return "-"
    lo = sps.beta.ppf(0.025, h, n - h + 1) if h else 0.0
    hi = sps.beta.ppf(0.975, h + 1, n - h) if h < n else 1.0
    return f"{100 * h / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] ({h}/{n})"


def mean_ci(xs: list[float]) -> str:
    if len(xs) < 2:
        return "-" if not xs else f"{xs[0]:+.2f} (n=1)"
    a = np.asarray(xs)
    m, se = a.mean(), a.std(ddof=1) / math.sqrt(len(a))
    return f"{m:+.2f} [{m - 1.96 * se:+.2f}, {m + 1.96 * se:+.2f}] (n={len(a)})"


def covers(ci, truth: float) -> bool:
    return bool(ci) and ci[0] <= truth <= ci[1]


def cell_row(cell: tuple, n: int, k: int) -> list[str]:
    m, gain, cv, lsd = cell
    outs = [sweep(i, cell, k) for i in range(n)]
    use = [o for o in outs if o["final"]]
    win = [o for o in use if o["final"] == "win"]
    null = [o for o in use if o["final"] != "win"]
    # before: the chosen one's plain 95% CI, printed even when the confirmation kept it
    old = [o for o in outs if o["named"] == "win"]
    truth = 1 - gain / 100
    kinds: dict[str, list[bool]] = {}
    for o in use:
        kinds.setdefault(o["estimate"].kind, []).append(covers(o["estimate"].ci, o["truth"]))
    over = {kind: mean_ci([100 * (truth - o["estimate"].ratio) for o in win
                           if o["estimate"].kind == kind]) for kind in kinds}
    width = [100 * math.log(o["estimate"].ci[1] / o["estimate"].ci[0]) / 2 for o in use]
    return [f"{m} nulls" + (f" + one {gain:g}% winner" if gain else "") + f", CV {cv:g}%, "
            f"s_L {lsd:g}%", str(n),
            rate(len(null), n),
            rate(len(win), n) if gain else "-",
            rate(sum(covers(o["before"].ci95, truth) for o in old), len(old)) if gain else "-",
            rate(sum(covers(o["before"].ci_fcr, truth) for o in old), len(old)) if gain else "-",
            mean_ci([100 * (truth - o["before"].ratio) for o in old]) if gain else "-",
            rate(sum(covers(o["estimate"].ci, truth) for o in win), len(win)) if gain else "-",
            mean_ci([100 * (truth - o["estimate"].ratio) for o in win]) if gain else "-",
            rate(sum(covers(o["estimate"].ci, o["truth"]) for o in use), len(use)),
            f"{np.median(width):.1f}" if width else "-",
            "; ".join(f"{kind} {sum(c)}/{len(c)}" + (f", {over[kind]} pp" if gain else "")
                      for kind, c in sorted(kinds.items()))]


HEAD = ["cell", "sweeps", "final \"Use X\" naming a no-effect variant",
        "final \"Use X\" naming the winner",
        "before: the winner's printed 95% CI covers (when named, before the confirmation)",
        "its one-build adjusted interval (ci_fcr) would cover",
        "before: printed gain - true gain, pp",
        "now: printed interval covers (final \"Use\" naming the winner)",
        "now: printed gain - true gain, pp",
        "now: printed interval covers, every final \"Use X\"",
        "now: median half-width, pp",
        "now: by kind, covering/printed, printed gain - true gain when naming the winner"]


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=600, help="simulated sweeps a cell")
    ap.add_argument("--cells", default="", help="1-based cells to run, e.g. 2,6 (default all)")
    ap.add_argument("--layouts", type=int, default=4, help="the confirmation's K (default 4)")
    a = ap.parse_args(argv)
    chosen = [CELLS[int(c) - 1] for c in a.cells.split(",")] if a.cells else CELLS
    print(f"K = {a.layouts} layouts a side in a confirmation; {ROUNDS} rounds a sweep\n")
    print("| " + " | ".join(HEAD) + " |")
    print("|" + "---|" * len(HEAD))
    for cell in chosen:
        started = time.perf_counter()
        row = cell_row(cell, a.sweeps, a.layouts)
        print("| " + " | ".join(row) + " |", flush=True)
        print(f"  ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
