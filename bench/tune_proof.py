#!/usr/bin/env python3
"""How often a tune's proof confirms a real winner, and how often a false one, per proof size
and per budget: seeded simulations through flagsweep's own proof functions.

    nice -n 19 .venv/bin/python bench/tune_proof.py                 # every table, minutes
    nice -n 19 .venv/bin/python bench/tune_proof.py --tunes 100 layouts   # fewer, one table

The harness is the statistics audit's item 3 (../shared/design/audit-2026-12/item3.py and
harness.py, December 2026), carried here so the bench stands alone:

- the search, a surrogate of tune.tune's batches: N candidates, each one build on the quick
  input, whose estimate of its log ratio to the base is its truth + that build's layout luck
  N(0, s_L) - the base build's luck + run noise with the s.e. of a Hodges-Lehmann paired
  estimate over 12 rounds; batches of 6; after each batch the best so far measured again (the
  same binary: the same luck) and ranked by the mean of its estimates. One candidate is truly
  G% faster (G = 0: none is). The top three go to the proof.
- the proof, flagsweep's code: the base, -O3 (no effect here), the winner and two runners-up,
  each in K fresh layouts (new luck), the A/A twin in K more of the base's code, R rounds;
  judged as analysis.apply judges a --layouts sweep (stats.layout.compare_arms, stats.adjust,
  stats.gate.aa_gate), against -O3 as tune.proof._against does (the same comparison with -O3
  the reference, adjusted, the sweep's A/A ruling by gate.rule), the candidates built as
  tune.proof.candidates builds them and the sentence from tune.answer.sentence.

`layouts` holds K fixed (the audit's table: N = 200, R = 10). `budgets` lets tune.budget plan
the proof as a tune does: the candidates the search's share holds at a program's pace (gzip
and lame on the project's 2-vCPU VM, docs/tune.md's measured tunes: 66 and 30 candidates in
the search's 36 minutes, so about 33 and 74 s a candidate, builds and rounds; 12-21 s a
build, taken as 20 and 18 s; about 2.1 s a run of the full input), then budget.proof_plan's sets and layouts in the
proof's share at the layout spread a tune would measure (the level spread of these draws), the
proof's rounds what its share leaves after the builds (at most --max-runs 20). A confirmation
is "Use X" naming the true winner; a false one is "Use X" naming a set not truly faster, or
"keep -O3" (-O3 is the base's equal here). Rates: hits/n with the exact Clopper-Pearson 95%
interval. The same command prints the same tables.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flagsweep import stats  # noqa: E402
from flagsweep.tune import answer, budget  # noqa: E402
from flagsweep import model  # noqa: E402
from flagsweep.stats import gate, layout  # noqa: E402

SEED = 20261231
THR = 1.0
BASE, TWIN, O3 = "gcc-O2", "gcc-O2.aa", "gcc-O3"
SEARCH_ROUNDS, BATCH = 12, 6
ROLES = ["base", "-O3", "winner", "runner-up", "runner-up"]


@dataclass(frozen=True)
class Cell:
    gain_pct: float           # the planted winner's gain; 0: no candidate is faster
    cv: float                 # per-run noise
    luck: float               # a build's layout sd (log)

    @property
    def name(self) -> str:
        return f"G {self.gain_pct:g}%, CV {100 * self.cv:g}%, layout sd {100 * self.luck:g}%"


@dataclass(frozen=True)
class Program:
    name: str
    candidate_s: float        # a candidate in the search: its build and its rounds
    build_s: float            # a set's build at the search's pace
    run_s: float              # a run of the full input


PROGRAMS = (Program("gzip", 33.0, 20.0, 2.1), Program("lame", 74.0, 18.0, 2.1))
BUDGETS_S = (1200.0, 2400.0, 3600.0, 7200.0)


def sd_of(cv: float) -> float:
    return math.sqrt(math.log(1 + cv * cv))


def rate(hits: int, n: int) -> str:
    lo = sps.beta.ppf(0.025, hits, n - hits + 1) if hits else 0.0
    hi = sps.beta.ppf(0.975, hits + 1, n - hits) if hits < n else 1.0
    return f"{100 * hits / n:5.1f}% [{100 * lo:4.1f}, {100 * hi:5.1f}] ({hits}/{n})"


def search(rng, n: int, cell: Cell) -> tuple[np.ndarray, list[int]]:
    """The audit's surrogate of the tune's batches: truths, and the candidates ranked."""
    truth = np.zeros(n)
    if cell.gain_pct:
        truth[int(rng.integers(0, n))] = math.log(1 - cell.gain_pct / 100)
    se = math.sqrt(2) * sd_of(cell.cv) / math.sqrt(SEARCH_ROUNDS) * math.sqrt(math.pi / 3)
    luck, luck_base = rng.normal(0, cell.luck, n), rng.normal(0, cell.luck)
    ests: dict[int, list[float]] = {}
    for start in range(0, n, BATCH):
        ranked = sorted(ests, key=lambda c: np.mean(ests[c]))
        best = ranked[0] if ranked and np.mean(ests[ranked[0]]) < 0 else None
        for c in range(start, min(n, start + BATCH)):
            ests[c] = [truth[c] + luck[c] - luck_base + rng.normal(0, se)]
        if best is not None:
            ests[best].append(truth[best] + luck[best] - luck_base + rng.normal(0, se))
    return truth, sorted(ests, key=lambda c: np.mean(ests[c]))


def arms(rng, effects: dict[str, float], k: int, rounds: int, cell: Cell) -> dict:
    """Each arm in k fresh layouts (a fixed luck each) over `rounds` rounds sharing a drift;
    the twin: the base's code in k other layouts."""
    drift = rng.normal(0, 0.02, rounds)
    named = {**effects, TWIN: effects[BASE]}
    return {vid: {f"{vid}.L{j}": dict(enumerate(np.exp(
        mu + rng.normal(0, cell.luck) + drift + rng.normal(0, sd_of(cell.cv), rounds))))
        for j in range(k)} for vid, mu in named.items()}


def estimate(e) -> model.TuneEstimate:
    pair = lambda ci: None if ci is None or not all(map(math.isfinite, ci)) else \
        [float(ci[0]), float(ci[1])]  # noqa: E731
    return model.TuneEstimate(ratio=e.ratio, ci95=pair(e.ci95), verdict=e.verdict,
                                 p_adjusted=e.p_adjusted, ci_fcr=pair(e.ci_fcr),
                                 fcr_level=e.fcr_level, why=e.why)


def prove(rng, truth, top: list[int], k: int, rounds: int, cell: Cell):
    """The proof as flagsweep judges it; returns the trial 'Use X' names, "-O3", or None."""
    effects = {BASE: 0.0, O3: 0.0}
    roles = [("base", BASE, None), ("-O3", O3, None)]
    for j, c in enumerate(top):
        effects[f"gcc-c{c}"] = float(truth[c])
        roles.append(("winner" if j == 0 else "runner-up", f"gcc-c{c}", c))
    reps = arms(rng, effects, k, rounds, cell)
    comps = layout.compare_arms(reps, BASE)
    stats.adjust(list(comps.values()), threshold_pct=THR, alpha=0.05)
    g = gate.aa_gate(comps, TWIN, THR, gate.TWIN_IS[True])
    found = {v: e for v, e in layout.compare_arms(reps, O3).items()
             if not model.is_control(v)}
    stats.adjust(list(found.values()), threshold_pct=THR)
    aa = comps[TWIN]
    unstable = gate.unstable_why(aa.verdict, aa.ratio, gate.TWIN_IS[True]) \
        if g["unstable"] else None
    gate.rule(found, unstable, None if g["bound_pct"] is None else g["bound_pct"] / 100, THR,
              gate.TWIN_IS[True])
    cands = []
    for role, vid, c in roles:
        flags = ["-O2"] if role == "base" else ["-O3"] if role == "-O3" else ["-O2", f"-fc{c}"]
        cands.append(model.TuneCandidate(
            role=role, variant=vid, flags=flags, trial=c, check=model.Check(status="ok"),
            changes=flags[1:] if role not in ("base", "-O3") else [],
            vs_base=None if role == "base" else estimate(comps[vid]),
            vs_o3=estimate(found[vid]) if vid in found and role != "-O3" else None))
    _, use = answer.sentence(model.TuneProof(status="complete", layouts=k, candidates=cands),
                             None, len(truth), ("-O2",), THR)
    if use == ["-O3"]:
        return "-O3"
    return next((c.trial for c in cands if use and c.flags == use and c.trial is not None),
                None)


def tally(cell: Cell, tunes: int, n: int, plan_of) -> tuple[int, int]:
    """(true winners confirmed, false confirmations) over `tunes` seeded tunes; plan_of(level
    sd) -> (sets, K, rounds) of the proof."""
    hits = false = 0
    for t in range(tunes):
        rng = np.random.default_rng([SEED, t, n, int(cell.gain_pct * 10), int(cell.cv * 1e3),
                                     int(cell.luck * 1e3)])
        truth, ranked = search(rng, n, cell)
        sets, k, rounds = plan_of()
        got = prove(rng, truth, ranked[:max(1, sets - 2)], k, rounds, cell)
        true_c = int(np.argmin(truth)) if cell.gain_pct else None
        hits += got is not None and got == true_c
        false += got is not None and got != true_c
    return hits, false


def level_sd(cell: Cell, rounds: int) -> float:
    """A layout's level spread as a tune would measure it: its luck and its runs' median."""
    return math.sqrt(cell.luck ** 2 + sd_of(cell.cv) ** 2 * math.pi / 2 / rounds)


def per_layouts(cells: list[Cell], tunes: int) -> None:
    print("\n== the proof at a fixed K (N = 200 candidates, 5 sets, R = 10 rounds)")
    print(f"{'cell':42} {'K':>3}  {'winner confirmed':28} {'false confirmation':28}")
    for cell in cells:
        for k in (4, 8, 12, 16):
            hits, false = tally(cell, tunes, 200, lambda: (5, k, 10))
            print(f"{cell.name:42} {k:3d}  {rate(hits, tunes) if cell.gain_pct else '-':28} "
                  f"{rate(false, tunes)}")


def per_budget(cells: list[Cell], tunes: int, default_spread: bool) -> None:
    print("\n== the proof as tune.budget plans it, per budget and program (spread: "
          + ("the default 1.8%" if default_spread else "as measured") + ")")
    print(f"{'cell':42} {'program':7} {'budget':>6} {'N':>4} {'sets':>4} {'K':>3} {'R':>3} "
          f"{'power':>5}  {'winner confirmed':28} {'false confirmation':28}")
    for cell in cells:
        for prog in PROGRAMS:
            for total in BUDGETS_S:
                n = max(BATCH, int(budget_search(total) // prog.candidate_s))
                left = 0.25 * total
                spread = budget.Spread(budget.confirmation.spread_of_reach(5.0)
                                       if default_spread else level_sd(cell, 6), "bench")
                plan = budget.proof_plan(ROLES, spread, budget.Pace(prog.build_s, prog.run_s, 6),
                                         left, THR)
                if plan.status == "skipped":
                    print(f"{cell.name:42} {prog.name:7} {total / 60:5.0f}m {n:4d}  skipped")
                    continue
                sets, k = int(plan.sets), int(plan.layouts)
                builds, _ = budget.need(sets, k, budget.Pace(prog.build_s, prog.run_s, 6))
                per_round = (sets + 1) * k * prog.run_s
                rounds = int(max(5, min(20, (left - builds) // per_round - 1)))
                hits, false = tally(cell, tunes, n, lambda: (sets, k, rounds))
                print(f"{cell.name:42} {prog.name:7} {total / 60:5.0f}m {n:4d} {sets:4d} {k:3d} "
                      f"{rounds:3d} {plan.power:5.2f}  "
                      f"{rate(hits, tunes) if cell.gain_pct else '-':28} {rate(false, tunes)}")


def budget_search(total: float) -> float:
    return 0.6 * total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="*", default=["layouts", "budgets"],
                    choices=["layouts", "budgets", "default-spread"])
    ap.add_argument("--tunes", type=int, default=400, help="simulated tunes a row")
    args = ap.parse_args()
    began = time.time()
    found = [Cell(3.0, 0.01, 0.01), Cell(3.0, 0.04, 0.01)]
    null = [Cell(0.0, 0.01, 0.01), Cell(0.0, 0.04, 0.02)]
    if "layouts" in args.tables:
        per_layouts(found + null, args.tunes)
    if "budgets" in args.tables:
        per_budget(found + null, args.tunes, default_spread=False)
    if "default-spread" in args.tables:
        per_budget(found + null, args.tunes, default_spread=True)
    print(f"\n({time.time() - began:.0f} s)")


if __name__ == "__main__":
    main()
