#!/usr/bin/env python3
"""The tune's search alone, on a modelled program: how many candidates each sampler (TPE, the
genetic search, the random search, TPE taking turns with a local search, and settings of
the first two tried as fixes) needs before
its best set holds the switches that matter, and what that best set is truly worth. No build and no run: a candidate's value is drawn from a model, so thousands of
candidates cost minutes and the same command prints the same table. It says which sampler is
worth the real, hour-long comparison (bench/tune.py versus); it proves nothing of a real
program.

The model is gcc's space at -O2 as the tune sees it: n on/off switches, half of them passes the
base level turns on (turning one off costs an exponential share of time, mean --cost %) and
half off (turning one on moves the time by a normal share, sd 0.2%, most of it nothing). Among
the second half, k named switches are the answer: each takes --solo % off on its own, and all
k together a further --pair %. With --harm, a share of the second half slow the program
when turned on (as -ffloat-store slows lame 1.8-fold). A candidate's value is the log of its time ratio to the base
plus normal noise (--noise %, one quick-input estimate) and is told to Optuna like a tune
tells it, a batch of 6 at a time through flagsweep.tune.search's own ask (random starts near
the base, the shipped settings). Reported per sampler: in how many seeds the best set by its
noisy value held all k within --trials candidates, the candidates that took, the true effect
(no noise) of the best set at the end, and how many switches the sampler's own sets changed.

  nice -n 19 .venv/bin/python bench/tune_sampler.py                 # the pair (an interaction)
  nice -n 19 .venv/bin/python bench/tune_sampler.py --solo 4 --pair 0   # two that act alone
  nice -n 19 .venv/bin/python bench/tune_sampler.py --harm 0.1 --solo 1.5 --pair 0  # lame-like
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import optuna  # noqa: E402

from flagsweep.tune.space import Dimension, Space  # noqa: E402
from flagsweep.tune import search  # noqa: E402

BATCH = 6


def model(seed: int, n: int, k: int, cost_pct: float, harm: float = 0.0, harm_pct: float = 0.0):
    """The space, each switch's effect (a share of time), and the k that are the answer. A
    share `harm` of the switches the base leaves off slow the program when turned on (an
    exponential share, mean `harm_pct`), as -ffloat-store slows lame 1.8-fold."""
    rng = random.Random(seed)
    dims, effect = [], {}
    for i in range(n):
        on = i < n // 2
        d = Dimension(f"-fs{i}", ("", f"-fno-s{i}" if on else f"-fs{i}"))
        dims.append(d)
        effect[d.name] = rng.expovariate(100 / cost_pct) if on else rng.gauss(0, 0.002)
        if not on and harm and rng.random() < harm:   # no draw when none: seeds keep their model
            effect[d.name] = rng.expovariate(100 / harm_pct)
    answer = [d.name for d in rng.sample(dims[n // 2:], k)]
    return Space("-O2", "gcc", "model", tuple(dims)), effect, answer


def samplers(seed: int) -> dict[str, optuna.samplers.BaseSampler]:
    """The shipped samplers, and TPE with a lighter prior (its prior pulls each switch's good
    density towards an even split, so sets change about half the switches)."""
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    warnings.simplefilter("ignore", FutureWarning)      # prior_weight is deprecated since 4.9
    lighter = dict(seed=seed, n_startup_trials=search.STARTUP_TRIALS, multivariate=True,
                   group=True, constant_liar=True)
    return {"random": search.sampler("random", seed), "tpe": search.sampler("tpe", seed),
            "ga": search.sampler("ga", seed), "tpe-local": search.sampler("tpe-local", seed),
            "ga mutation 1/n": optuna.samplers.NSGAIISampler(    # Optuna's default mutation
                seed=seed, population_size=search.POPULATION),
            "tpe prior 0.1": optuna.samplers.TPESampler(prior_weight=0.1, **lighter),
            "tpe independent": optuna.samplers.TPESampler(     # Optuna 5 defaults to multivariate
                seed=seed, n_startup_trials=search.STARTUP_TRIALS, multivariate=False,
                constant_liar=True)}


def search_once(name: str, sampler, seed: int, args) -> tuple[int | None, float, int]:
    """Candidates until the best set so far (by its noisy value) held the whole answer (None:
    not within --trials); the true value (no noise) of the best set at the end, as a share of
    time against the base; the median changes of the sets the sampler itself proposed."""
    space, effect, answer = model(seed, args.n, args.k, args.cost, args.harm, args.harm_cost)
    study = optuna.create_study(sampler=sampler, direction="minimize")
    noise = random.Random(f"noise:{seed}")
    asked_as = name.split()[0]
    best, held, changes = (float("inf"), 0.0, {}), None, []

    def truth(on: list[str]) -> float:
        return (sum(effect[n] for n in on) - args.solo / 100 * sum(a in on for a in answer)
                - args.pair / 100 * all(a in on for a in answer))

    for told in range(0, args.trials, BATCH):
        # the center of tpe-local's small changes: the best set so far when it beat the
        # base, as the tune passes it
        center = best[2] if best[0] < 0 else None
        batch = [(search.drawn_near_base(study, asked_as) or search.drawn_near_best(study, asked_as),
                  *search.ask(study, space, set(), asked_as, seed, center)) for _ in range(BATCH)]
        for near, trial, chosen in batch:
            on = [n for n, v in chosen.items() if v]
            if not near:                    # the sampler's own set, not a start or local one
                changes.append(len(on))
            true = truth(on)
            value = true + noise.gauss(0, args.noise / 100)
            study.tell(trial, value)
            best = min(best, (value, true, chosen), key=lambda b: b[0])
        if held is None and answer and all(best[2].get(a) for a in answer):
            held = told + BATCH
    changes.sort()
    return held, best[1], changes[len(changes) // 2] if changes else 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--trials", type=int, default=120, help="candidates a search may try")
    p.add_argument("--n", type=int, default=200, help="switches")
    p.add_argument("--k", type=int, default=2, help="switches that are the answer")
    p.add_argument("--cost", type=float, default=0.6, help="mean %% a base pass turned off costs")
    p.add_argument("--solo", type=float, default=0.0, help="%% each answer switch gives alone")
    p.add_argument("--pair", type=float, default=10.0, help="%% all of them give together")
    p.add_argument("--noise", type=float, default=1.5, help="sd %% of one estimate")
    p.add_argument("--harm", type=float, default=0.0,
                   help="share of the switches the base leaves off that slow it when on")
    p.add_argument("--harm-cost", type=float, default=20.0, help="mean %% such a switch costs")
    p.add_argument("--only", action="append", help="run only this sampler (repeatable)")
    args = p.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    print(f"{args.n} switches, {args.k} the answer ({args.solo:g}% each alone, {args.pair:g}% "
          f"together), {args.harm:g} of the others costing {args.harm_cost:g}% on, noise "
          f"{args.noise:g}%, {args.trials} candidates, {args.seeds} seeds")
    for name in samplers(0):
        if args.only and name not in args.only:
            continue
        runs = [search_once(name, samplers(s)[name], s, args) for s in range(1, args.seeds + 1)]
        found = sorted(r[0] for r in runs if r[0] is not None)
        median = sorted(r[0] if r[0] is not None else float("inf") for r in runs)[len(runs) // 2]
        true = sorted(100 * (math.exp(r[1]) - 1) for r in runs)
        proposed = sorted(r[2] for r in runs)
        print(f"{name:>16}: held the answer in {len(found)}/{args.seeds} seeds; candidates "
              f"{found}; upper median {median:g}; the best set's true effect: median "
              f"{true[len(true) // 2]:+.1f}% (from {true[0]:+.1f}% to {true[-1]:+.1f}%); its "
              f"own sets' median changes "
              f"{proposed[len(proposed) // 2] if name != 'random' else '(all near the base)'}",
              flush=True)


if __name__ == "__main__":
    main()
