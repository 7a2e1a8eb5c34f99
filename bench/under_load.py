#!/usr/bin/env python3
"""Is flagsweep right on a busy machine? Sweeps under bench/load.py's seeded bursty load and
without it, through the real `flagsweep run`, and the figures that say so.

Sections (each prints its own table; pick with --only):

  rule   the evidence behind flagsweep.measure.disturbance's limits: one gzip -9 binary run pinned, quiet
         and under load, and how wall and CPU time grow with the share of the run spent waiting
         for the CPU (least squares of value / quiet median on that share, with its SE).
  aa     SWEEPS sweeps of the bundled tiny with default options: the baseline, its A/A twin and
         planted +3% and +10% (-DTINY_EXTRA_PERMILLE, the calibrate mechanism). Printed: A/A
         false calls, how often +10% is found and +3% called faster, rounds, disturbed/retaken.
  gzip   `flagsweep run gzip --recipe olevels --quick` quiet and under load: each variant's
         verdict and ratio side by side, -O0's ratio difference, the A/A arm, disturbance counts.
  duet   the round design against duet pairs (each run of the variant started at the same time
         as a run of the baseline on the other CPU, compared within the pair; Bulej et al., ICPE
         2020) on two identical copies and on a planted +3%: the width of the 95% CI of the
         ratio, quiet and under load, from the same number of runs.

Usage: python bench/under_load.py [--only rule,aa,gzip,duet] [--sweeps 20] [--quick]
       [--metric auto] [--load-seed 1] [--quiet-too | --quiet-only] [--schedule auto|duet|serial]
Everything runs in a private store and cache-sharing temp folder; the load is stopped on exit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
from load import running  # noqa: E402  (bench/ is this script's folder, first on sys.path)

from flagsweep import stats  # noqa: E402
from flagsweep.jobs import calibration
from flagsweep.host import launcher

ROOT = Path(__file__).resolve().parent.parent
FLAGSWEEP = [sys.executable, "-m", "flagsweep"]
PLANTED = {"base": 0, "plus3": 30, "plus10": 100}     # TINY_EXTRA_PERMILLE
# tiny as calibrate runs it: the plants are whole extra rounds, so each is its stated share of
# the run's instructions (flagsweep.jobs.calibration).
PLANTED_TARGET = str(calibration.TARGET)


def flagsweep(args: list[str], env: dict[str, str], log: Path) -> dict:
    """Run the real CLI; return its results.json (the run's folder is the last line)."""
    with open(log, "w") as f:
        subprocess.run([*FLAGSWEEP, *args], env=env, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT,
                       check=True)
    folder = Path(log.read_text().strip().splitlines()[-1]).parent
    return json.loads((folder / "results.json").read_text())


def loaded(on: bool, seed: int):
    return running(seed=seed) if on else nullcontext()


# ---- rule ------------------------------------------------------------------------------------

def section_rule(work: Path, env: dict[str, str], seed: int, runs: int = 60,
                 loaded_runs: int = 150) -> None:
    doc = flagsweep(["run", "gzip", "--flags", "-O2", "--runs", "2", "--quick", "--out",
                     str(work / "rule-build")], env, work / "rule-build.log")
    binary = doc["variants"][0]["build"]["binary"]
    argv = [a.format(binary=binary, input=doc["workload"]["inputs"][0])
            for a in doc["workload"]["argv"]]
    cpu = sorted(os.sched_getaffinity(0))[-1]

    def take(n: int) -> np.ndarray:
        rows = []
        for i in range(n):
            e = launcher.run_once(argv, env=launcher.padded_env(launcher.MINIMAL_ENV, i), timeout=120,
                                stderr_path=work / "rule.err")
            c = e.counters
            rows.append((e.wall_s, e.user_s + e.sys_s, c["run_delay_s"], c["involuntary_switches"]))
        return np.array(rows)

    with launcher.pinned(cpu):
        quiet = np.vstack([take(runs // 2)])
        with running(seed=seed):
            busy = take(loaded_runs)
        quiet = np.vstack([quiet, take(runs // 2)])
    print(f"\n== rule: gzip -9 -O2 pinned to CPU {cpu}, {len(quiet)} quiet and {len(busy)} loaded runs")
    print(f"{'':8}{'wall med':>10}{'cpu med':>10}{'wall CV':>9}{'cpu CV':>8}{'off-CPU p50':>13}"
          f"{'p99':>7}{'max':>7}{'preempted':>11}")
    for name, a in (("quiet", quiet), ("loaded", busy)):
        share = a[:, 2] / a[:, 0]
        print(f"{name:8}{np.median(a[:, 0]):10.4f}{np.median(a[:, 1]):10.4f}"
              f"{_cv(a[:, 0]):8.1f}%{_cv(a[:, 1]):7.1f}%{100 * np.median(share):12.2f}%"
              f"{100 * np.quantile(share, .99):6.1f}%{100 * share.max():6.1f}%{np.median(a[:, 3]):11.0f}")
    both = np.vstack([quiet, busy])
    share = both[:, 2] / both[:, 0]
    for col, name in ((0, "wall"), (1, "cpu")):
        slope, se = _slope(share, both[:, col] / np.median(quiet[:, 1]))
        print(f"{name} time per unit off-CPU share, quiet and loaded runs: {slope:+.3f} +- "
              f"{se:.3f} (SE), over shares 0-{100 * share.max():.0f}%")
    # Within the loaded runs alone: does a run that waited more use more CPU time than its
    # loaded neighbours (what a retake could fix), beyond what the load does to every run?
    share = busy[:, 2] / busy[:, 0]
    slope, se = _slope(share, busy[:, 1] / np.median(busy[:, 1]))
    print(f"cpu time per unit off-CPU share within the loaded runs: {slope:+.3f} +- {se:.3f} (SE); "
          f"share p10/p50/p90/max {'/'.join(f'{100 * q:.1f}' for q in np.quantile(share, [.1, .5, .9, 1]))}%")
    edges = [0, .15, .25, .35, 1.01]
    print("  cpu median by share: " + ", ".join(
        f"{100 * lo:.0f}-{100 * min(hi, 1):.0f}%: {np.median(busy[(share >= lo) & (share < hi), 1]):.4f} "
        f"(n {int(((share >= lo) & (share < hi)).sum())})"
        for lo, hi in zip(edges, edges[1:]) if ((share >= lo) & (share < hi)).any()))


def _cv(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1) / np.mean(x) * 100)


def _slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    X = np.c_[np.ones(len(x)), x]
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    cov = resid @ resid / (len(y) - 2) * np.linalg.inv(X.T @ X)
    return float(beta[1]), float(np.sqrt(cov[1, 1]))


# ---- aa --------------------------------------------------------------------------------------

def section_aa(work: Path, env: dict[str, str], seed: int, sweeps: int, quick: bool,
               metric: str, load: bool, schedule: str = "auto") -> None:
    flags = [a for name, permille in PLANTED.items()
             for a in ("--flags", f"-O2 -DTINY_EXTRA_PERMILLE={permille}")]
    rows = []
    with loaded(load, seed):
        for i in range(sweeps):
            out = work / f"aa-{'load' if load else 'quiet'}-{i}"
            args = ["run", PLANTED_TARGET, *flags, "--seed", str(1000 + i), "--metric", metric,
                    "--schedule", schedule, "--out", str(out)] + (["--quick"] if quick else [])
            t0 = time.monotonic()
            doc = flagsweep(args, env, work / f"{out.name}.log")
            v = {x["id"]: x.get("vs_baseline") or {} for x in doc["variants"]}
            by = {p: next(x for x in doc["variants"]
                          if x["flags"] == ["-O2", f"-DTINY_EXTRA_PERMILLE={m}"])["id"]
                  for p, m in PLANTED.items()}
            m = doc["measurement"]
            rows.append({"aa": doc["aa"]["verdict"], "plus3": v[by["plus3"]].get("verdict"),
                         "plus10": v[by["plus10"]].get("verdict"),
                         "r3": v[by["plus3"]].get("ratio"), "r10": v[by["plus10"]].get("ratio"),
                         "rounds": doc["variants"][0]["summary"]["n"], "metric": doc["metric"],
                         "disturbed": m.get("disturbed", 0), "retaken": m.get("retaken", 0),
                         "unstable": doc["aa"].get("unstable"), "seconds": time.monotonic() - t0,
                         "schedule": (m.get("schedule") or {}).get("schedule", "serial"),
                         "stop": doc.get("stop_reason", "")})
            print(f"  sweep {i + 1:2}: A/A {rows[-1]['aa']:12} +3% {rows[-1]['plus3']:12} "
                  f"({_pct(rows[-1]['r3'])}) +10% {rows[-1]['plus10']:12} ({_pct(rows[-1]['r10'])}) "
                  f"rounds {rows[-1]['rounds']:2} disturbed {rows[-1]['disturbed']:3} "
                  f"retaken {rows[-1]['retaken']:3} {rows[-1]['schedule']} "
                  f"{rows[-1]['seconds']:.0f} s", flush=True)
    n = len(rows)
    kinds = sorted({r["schedule"] for r in rows})
    print(f"\n== aa: {n} sweeps of tiny {'--quick ' if quick else ''}(metric {rows[0]['metric']}, "
          f"--schedule {schedule}: {', '.join(kinds)} rounds), {'under load' if load else 'quiet'}")
    print(f"A/A twin called faster/slower: {sum(r['aa'] in ('faster', 'slower') for r in rows)} of {n}")
    print(f"+10% called slower: {sum(r['plus10'] == 'slower' for r in rows)} of {n}; "
          f"+3% called slower: {sum(r['plus3'] == 'slower' for r in rows)} of {n}, "
          f"called faster: {sum(r['plus3'] == 'faster' for r in rows)} of {n}")
    print(f"median measured: +3% -> {_pct(_median([r['r3'] for r in rows]))}, "
          f"+10% -> {_pct(_median([r['r10'] for r in rows]))}; rounds median "
          f"{_median([r['rounds'] for r in rows]):g}; sweeps gated as unstable "
          f"{sum(bool(r['unstable']) for r in rows)}; disturbed {sum(r['disturbed'] for r in rows)}, "
          f"retaken {sum(r['retaken'] for r in rows)}; {sum(r['seconds'] for r in rows) / 60:.1f} min")


def _median(values: list) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.median(kept)) if kept else None


def _pct(r) -> str:
    return "-" if r is None else f"{(r - 1) * 100:+.1f}%"


# ---- gzip ------------------------------------------------------------------------------------

def section_gzip(work: Path, env: dict[str, str], seed: int, metric: str) -> None:
    docs = {}
    for load in (False, True):
        name = "load" if load else "quiet"
        with loaded(load, seed):
            docs[name] = flagsweep(["run", "gzip", "--recipe", "olevels", "--quick", "--metric",
                                    metric, "--seed", "7", "--out", str(work / f"gzip-{name}")],
                                   env, work / f"gzip-{name}.log")
    print(f"\n== gzip olevels --quick, metric {docs['quiet']['metric']} / {docs['load']['metric']}")
    print(f"{'variant':14}{'quiet':>28}{'under load':>28}")
    ratios = {}
    for v in docs["quiet"]["variants"]:
        cells = []
        for name in ("quiet", "load"):
            w = next(x for x in docs[name]["variants"] if x["id"] == v["id"])
            c = w.get("vs_baseline") or {}
            ratios[(name, v["id"])] = c.get("ratio")
            cells.append(f"{c.get('verdict', 'baseline')} {_pct(c.get('ratio'))} "
                         f"n={w['summary']['n']}")
        print(f"{v['id']:14}{cells[0]:>28}{cells[1]:>28}")
    o0 = [k for k in ratios if k[1].endswith("-O0")]
    if len(o0) == 2:
        q, l_ = ratios[("quiet", o0[0][1])], ratios[("load", o0[0][1])]
        print(f"-O0 ratio: quiet {q:.4f}, under load {l_:.4f}: {100 * abs(l_ / q - 1):.1f}% apart")
    for name in ("quiet", "load"):
        m, aa = docs[name]["measurement"], docs[name]["aa"]
        print(f"{name}: A/A {aa['verdict']} {_pct(aa['ratio'])}, disturbed {m.get('disturbed')}, "
              f"retaken {m.get('retaken')}, stop: {docs[name]['stop_reason']}")


# ---- duet ------------------------------------------------------------------------------------

def section_duet(work: Path, env: dict[str, str], seed: int, pairs: int = 40) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        print("\n== duet: needs two CPUs")
        return
    builds = {}
    for name, permille in (("base", 0), ("plus3", 30)):
        doc = flagsweep(["run", PLANTED_TARGET, "--flags", f"-O2 -DTINY_EXTRA_PERMILLE={permille}",
                         "--runs", "2", "--out", str(work / f"duet-{name}")], env,
                        work / f"duet-{name}.log")
        builds[name] = doc
    b0 = builds["base"]
    argv = lambda doc: [a.format(binary=doc["variants"][0]["build"]["binary"],  # noqa: E731
                                 input=doc["workload"]["inputs"][0]) for a in doc["workload"]["argv"]]
    print(f"\n== duet: {pairs} pairs per design on tiny, CPUs {cpus[-2]} and {cpus[-1]}; "
          "95% CI width of the ratio (signed-rank interval of the pairs)")
    print(f"{'':10}{'comparison':12}{'rounds: wall':>14}{'cpu':>8}{'duet: wall':>12}{'cpu':>8}")
    for load in (False, True):
        with loaded(load, seed):
            for label, other in (("A/A", b0), ("+3%", builds["plus3"])):
                r = _rounds_design(argv(b0), argv(other), cpus[-1], pairs, work)
                d = _duet_design(argv(b0), argv(other), cpus[-2], cpus[-1], pairs, work)
                print(f"{'loaded' if load else 'quiet':10}{label:12}{_width(r, 0):>13.2f}%"
                      f"{_width(r, 1):>7.2f}%{_width(d, 0):>11.2f}%{_width(d, 1):>7.2f}%"
                      f"   ratio rounds {_ratio(r, 1)} duet {_ratio(d, 1)}", flush=True)


def _once(argv: list[str], work: Path, tag: str) -> tuple[float, float]:
    e = launcher.run_once(argv, env=launcher.MINIMAL_ENV, timeout=120, stderr_path=work / f"{tag}.err")
    return e.wall_s, e.user_s + e.sys_s


def _rounds_design(base, other, cpu, n, work) -> list[tuple]:
    """Both on one pinned CPU, one after the other in a shuffled order: a round of two."""
    out = []
    rng = np.random.default_rng(1)
    with launcher.pinned(cpu):
        for _ in range(n):
            first = rng.random() < 0.5
            a = _once(other if first else base, work, "r")
            b = _once(base if first else other, work, "r")
            v, bl = (a, b) if first else (b, a)
            out.append((v[0] / bl[0], v[1] / bl[1]))
    return out


def _duet_design(base, other, cpu_a, cpu_b, n, work) -> list[tuple]:
    """Both at the same time, each pinned to its own CPU, swapping CPUs every pair."""
    out = []
    for i in range(n):
        got = {}
        cpus = (cpu_a, cpu_b) if i % 2 else (cpu_b, cpu_a)

        def run(name, argv, cpu):
            os.sched_setaffinity(0, {cpu})     # a thread's own affinity, inherited by the spawn
            got[name] = _once(argv, work, name)

        threads = [threading.Thread(target=run, args=("v", other, cpus[0])),
                   threading.Thread(target=run, args=("b", base, cpus[1]))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out.append((got["v"][0] / got["b"][0], got["v"][1] / got["b"][1]))
    return out


def _width(ratios: list[tuple], col: int) -> float:
    c = stats.compare({i: r[col] for i, r in enumerate(ratios)}, {i: 1.0 for i in range(len(ratios))})
    return (c.ci95[1] - c.ci95[0]) * 100


def _ratio(ratios: list[tuple], col: int) -> str:
    c = stats.compare({i: r[col] for i, r in enumerate(ratios)}, {i: 1.0 for i in range(len(ratios))})
    return _pct(c.ratio)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="rule,aa,gzip,duet")
    ap.add_argument("--sweeps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="tiny's small input in the aa section")
    ap.add_argument("--metric", default="auto")
    ap.add_argument("--load-seed", type=int, default=1)
    ap.add_argument("--quiet-too", action="store_true", help="aa section: also without load")
    ap.add_argument("--quiet-only", action="store_true", help="aa section: without load only")
    ap.add_argument("--schedule", default="auto", choices=("auto", "duet", "serial"),
                    help="the aa section's sweeps' --schedule")
    ap.add_argument("--work", type=Path, help="keep the runs here (default: a temp folder)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="flagsweep-load-") as tmp:
        work = a.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, FLAGSWEEP_DB=f"sqlite:///{work / 'store.sqlite'}",
                   FLAGSWEEP_LOCK_DIR=str(work), PYTHONPATH=str(ROOT))
        only = set(a.only.split(","))
        if "rule" in only:
            section_rule(work, env, a.load_seed)
        if "aa" in only:
            for load in [False] * (a.quiet_too or a.quiet_only) + [True] * (not a.quiet_only):
                section_aa(work, env, a.load_seed, a.sweeps, a.quick, a.metric, load=load,
                           schedule=a.schedule)
        if "gzip" in only:
            section_gzip(work, env, a.load_seed, a.metric)
        if "duet" in only:
            section_duet(work, env, a.load_seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
