"""Seeded simulations of duet rounds through flagsweep's own decision code: false calls of the
A/A twin and of a no-effect variant, and how often a planted effect is called, in duet and in
serial rounds of the same simulated machine.

    nice -n 19 .venv/bin/python bench/duet_decisions.py                 # 400 sweeps a cell
    nice -n 19 .venv/bin/python bench/duet_decisions.py --sweeps 100    # a quick look

A run's time is exp(effect + the host's moment + its own noise + its CPU's offset): the moment
(sd `shared`) is drawn once per serial run and once per duet, so a duet's two runs share it;
its own noise (sd `own`) is drawn per run; in a duet, CPU 1 runs `cpu_pct` % slower than CPU 0
(serial runs all stay on CPU 0). The sweep is the real loop: rounds.rounds with the plan a sweep
makes (duet rounds in rounds.order's shuffle, each pair's sides from rounds.duet, the stopping
rule and the variant stops), the sampler's stand-in storing Samples with their pairs, and the
values measure.metric.values_by_round makes of them (measure.pairs for duets); then every
variant against the baseline by stats.compare, stats.adjust at the sweep's design and the A/A
gate, as analysis.apply does. Rates carry an exact Clopper-Pearson 95% interval.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flagsweep import stats  # noqa: E402
from flagsweep.measure import metric, rounds  # noqa: E402
from flagsweep.measure.sample import Sample  # noqa: E402
from flagsweep.stats import gate  # noqa: E402

BASE, TWIN = "base", "base.aa"
THR = stats.THRESHOLD_PCT
# (name, log sd of the host's moment, of a run's own noise, CPU 1's offset in %)
WORLDS = [("CV 4%, most of it shared (a VM)", 0.035, 0.02, 0.0),
          ("CV 4%, most of it shared, CPU 1 2% slower", 0.035, 0.02, 2.0),
          ("CV 4%, little shared", 0.01, 0.04, 0.0)]


def sweep(seed: int, schedule: str, shared: float, own: float, cpu_pct: float,
          effects: dict[str, float], max_runs: int = 30) -> dict[str, str]:
    """One simulated sweep's verdicts (variant -> verdict)."""
    rng = np.random.default_rng(seed)
    ids = [BASE, TWIN, *effects]
    plan = rounds.Plan(ids, seed, warmup=0, min_runs=5, max_runs=max_runs,
                       precision=THR / 100, baseline=BASE, threshold_pct=THR, drop=True,
                       keep=frozenset({BASE, TWIN}), twin=TWIN,
                       duet=(0, 1) if schedule == "duet" else None)
    taken: list[Sample] = []

    def run(vid: str, rnd: int, moment: float, cpu: int = 0, pair: str | None = None) -> None:
        x = effects.get(vid, 0.0) + moment + rng.normal(0, own) + (cpu_pct / 100 if cpu else 0)
        taken.append(Sample(vid, rnd, 0, 0, wall_s=math.exp(x), pair=pair, cpu=cpu))

    def measure(vid: str, rnd: int, pos: int, pad: int) -> None:
        if not plan.duet:
            run(vid, rnd, rng.normal(0, shared))
            return
        d = rounds.duet(plan, vid, rnd)
        moment = rng.normal(0, shared)
        run(vid, rnd, moment, d.cpus[0], vid)
        run(BASE, rnd, moment, d.cpus[1], vid)

    def values() -> rounds.Values:
        return metric.values_by_round(taken, lambda s: s.wall_s)

    out = rounds.rounds(plan, set(), measure, values)
    design = rounds.design(plan)
    got = rounds.first_rounds(values(), out.rounds)
    comps = {vid: stats.compare(got[vid], got[BASE], seed=seed, tost=design.tost)
             for vid in ids if vid != BASE and vid in got}
    stats.adjust(list(comps.values()), threshold_pct=THR, alpha=design.alpha)
    gate.aa_gate(comps, TWIN, THR, gate.TWIN_IS[False])
    return {vid: c.verdict for vid, c in comps.items()}


def rate(hits: int, n: int) -> str:
    lo = sps.beta.ppf(0.025, hits, n - hits + 1) if hits else 0.0
    hi = sps.beta.ppf(0.975, hits + 1, n - hits) if hits < n else 1.0
    return f"{100 * hits / n:5.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=400, help="simulated sweeps a cell")
    n = ap.parse_args().sweeps
    effects = {"null": 0.0, "plus3": math.log(1.03)}
    print(f"{n} sweeps a cell; variants: the A/A twin, a no-effect variant, one 3% slower")
    print("world | schedule | A/A twin faster/slower | no-effect faster/slower | +3% called slower")
    for name, shared, own, cpu_pct in WORLDS:
        for schedule in ("serial", "duet"):
            verdicts = [sweep(20261206 + i, schedule, shared, own, cpu_pct, effects)
                        for i in range(n)]
            false_aa = sum(v[TWIN] in ("faster", "slower") for v in verdicts)
            false_null = sum(v["null"] in ("faster", "slower") for v in verdicts)
            found = sum(v["plus3"] == "slower" for v in verdicts)
            print(f"{name} | {schedule} | {rate(false_aa, n)} | {rate(false_null, n)} | "
                  f"{rate(found, n)}")


if __name__ == "__main__":
    main()
