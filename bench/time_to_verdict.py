#!/usr/bin/env python3
"""How long until flagsweep's verdicts are final: the adaptive sweep (the stopping rule) against
a fixed design of the maximum rounds, same target, recipe and seed, through the real
`flagsweep run`.

For each sweep, the analysis (results.analysis.apply, the same function results.json comes
from) is replayed on the first k rounds for every k; the verdicts are final at the first k after
which they never change again. Its time is when round k's last sample was taken, counted from
the moment `flagsweep run` was started (builds included; they come from a warm build cache, made
by one `flagsweep build` before either sweep, so both sweeps pay alike). For reference, the cost
of hyperfine's default design, 10 timed runs of every binary one after the other, is computed
from the fixed sweep's median run time per binary (wall time, as hyperfine measures); hyperfine
itself is not run.

Usage: python bench/time_to_verdict.py [TARGET ...] [--recipe olevels] [--seed 7] [--full]
       [--repeat N]
Default targets gzip and lame, with --quick inputs unless --full. A private store is used.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from flagsweep.measure import metric as metric_mod
from flagsweep.measure import rounds
from flagsweep import model
from flagsweep.results import analysis
from flagsweep.results.store import Store

FLAGSWEEP = [sys.executable, "-m", "flagsweep"]
HYPERFINE_RUNS = 10


def sweep(args: list[str], env: dict[str, str]) -> tuple[dict, float, float]:
    """Run `flagsweep run`; (its results.json, its launch time as an epoch, its wall time)."""
    launched, t0 = time.time(), time.monotonic()
    done = subprocess.run([*FLAGSWEEP, "run", *args], env=env, capture_output=True,
                          text=True)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        sys.exit(f"flagsweep run {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    page = Path(done.stdout.strip().splitlines()[-1])
    return json.loads((page.parent / "results.json").read_text()), launched, wall


def verdicts_by_round(doc: dict, store: Store) -> list[tuple[int, float, dict[str, str]]]:
    """(k, when round k-1 ended as an epoch, each variant's verdict on the first k rounds)."""
    samples = store.samples(doc["run_id"])
    counted = [s for s in samples if s.round >= 0]
    metric = doc["metric"]
    values = analysis.values_by_round(counted, lambda s: metric_mod.metric_of(s, metric))
    n = max(s.round for s in counted) + 1
    out = []
    for k in range(1, n + 1):
        first = rounds.first_rounds(values, k)
        replay = model.Results.model_validate(doc)
        analysis.apply(replay, first, doc["measurement"]["seed"])
        verdicts = {v.id: v.vs_baseline.verdict if v.vs_baseline else None
                    for v in replay.variants if v.id != replay.baseline}
        ended = max(s.taken_at for s in counted if s.round == k - 1)
        out.append((k, ended, verdicts))
    return out


def final_at(series: list[tuple[int, float, dict[str, str]]]) -> tuple[int, float]:
    """The first round count from which the verdicts stay what they end as, and when."""
    last = series[-1][2]
    k_final, when = series[-1][0], series[-1][1]
    for k, ended, verdicts in reversed(series):
        if verdicts != last:
            break
        k_final, when = k, ended
    return k_final, when


def hyperfine_cost(doc: dict, store: Store) -> float:
    """10 runs of every measured binary, one after the other, at its median wall time."""
    by_variant: dict[str, list[float]] = {}
    for s in store.samples(doc["run_id"]):
        if s.round >= 0 and s.ok and s.wall_s:
            by_variant.setdefault(s.variant_id, []).append(s.wall_s)
    twin = doc["baseline"] + ".aa"
    return HYPERFINE_RUNS * sum(float(np.median(x)) for v, x in by_variant.items() if v != twin)


def one_target(name: str, recipe: str, seed: int, quick: bool, repeat: int,
               env: dict[str, str]) -> None:
    subprocess.run([*FLAGSWEEP, "build", name, "--recipe", recipe], env=env, check=True,
                   capture_output=True)
    common = [name, "--recipe", recipe, "--seed", str(seed), *(["--quick"] if quick else [])]
    store = Store()
    print(f"\n== {name} --recipe {recipe}{' --quick' if quick else ''} --seed {seed}, "
          f"{repeat} pair(s), the two designs alternating")
    print(f"{'design':<20} {'rounds':>6} {'wall s':>8} {'final at':>9} {'final s':>8} "
          f"{'runs':>5} {'saved':>5}  stopped early; verdicts")
    walls: dict[str, list[float]] = {}
    finals: dict[str, list[float]] = {}
    agree, hyperfine = 0, []
    for _ in range(repeat):
        ends = {}
        for label, extra in (("adaptive (default)", []), ("fixed 30 rounds", ["--runs", "30"])):
            doc, launched, wall = sweep(common + extra, env)
            series = verdicts_by_round(doc, store)
            k, when = final_at(series)
            verdicts = ", ".join(f"{v}={x}" for v, x in sorted(series[-1][2].items()))
            stopped = ", ".join(f"{v['id']}@{v['summary']['stopped_at']}" for v in doc["variants"]
                                if (v.get("summary") or {}).get("stopped_at")) or "none"
            runs = sum((v.get("summary") or {}).get("n") or 0 for v in doc["variants"])
            saved = doc["measurement"].get("runs_saved") or 0
            print(f"{label:<20} {series[-1][0]:>6} {wall:>8.1f} {k:>9} {when - launched:>8.1f} "
                  f"{runs:>5} {saved:>5}  {stopped}; {verdicts}", flush=True)
            walls.setdefault(label, []).append(wall)
            finals.setdefault(label, []).append(when - launched)
            ends[label] = series[-1][2]
        agree += ends["adaptive (default)"] == ends["fixed 30 rounds"]
        hyperfine.append(hyperfine_cost(doc, store))
    med = {k: float(np.median(v)) for k, v in walls.items()}
    print(f"medians: adaptive wall {med['adaptive (default)']:.1f} s, fixed "
          f"{med['fixed 30 rounds']:.1f} s ({100 * med['adaptive (default)'] / med['fixed 30 rounds']:.0f}%); "
          f"final verdicts at {np.median(finals['adaptive (default)']):.1f} s and "
          f"{np.median(finals['fixed 30 rounds']):.1f} s; the two designs' verdicts agree in "
          f"{agree} of {repeat} pairs")
    print(f"hyperfine's default (10 runs a binary, one after another, no verdicts): "
          f"{np.median(hyperfine):.1f} s of runs")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", default=["gzip", "lame"])
    ap.add_argument("--recipe", default="olevels")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--full", action="store_true", help="full inputs, not --quick")
    ap.add_argument("--repeat", type=int, default=1, help="pairs of sweeps per target")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="flagsweep-ttv-") as tmp:
        os.environ["FLAGSWEEP_DB"] = f"sqlite:///{Path(tmp) / 'store.sqlite'}"
        env = {**os.environ}
        os.chdir(tmp)              # ./reports lands in the temporary folder
        for name in a.targets:
            one_target(name, a.recipe, a.seed, not a.full, a.repeat, env)


if __name__ == "__main__":
    main()
