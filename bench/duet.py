#!/usr/bin/env python3
"""Duet or serial pairs, quick or full input: which buys the narrowest interval per minute of
measuring on this machine, and do the schedules agree on a real difference.

For each target its -O2, -O0 and -O3 are built with `flagsweep build` (the build cache makes a
rerun cheap). For each input size (the target's quick and full input) the script takes PAIRS
pairs of each comparison (A/A: -O2 against itself; -O0 and -O3 against -O2) in each schedule,
all in one seeded, shuffled order, so the machine's drift falls on every cell alike:

  serial  the two runs back to back on one pinned CPU (the one a sweep would take without
          --cpu on an idle machine: host.launcher.choose_cpu), which side runs first alternating
          from pair to pair;
  duet    both started together, each pinned to its own CPU, the sides swapping CPUs from pair
          to pair (Bulej, Horky, Tuma, Farquet & Prokopec, "Duet Benchmarking: Improving
          Measurement Accuracy in the Cloud", ICPE 2020).

Every run goes through flagsweep's launcher (host.launcher.run_once), pinned the way a sweep
pins (host.launcher.pinned: the affinity of the thread that starts it) and with a padded
environment of a seeded size, as a sweep's runs are. Printed per target and size, for CPU time
and wall time, per comparison and schedule: the spread of the pair's log ratio (sd), the 95%
half-width of the ratio's interval from the pairs taken (flagsweep's own paired comparison,
stats.compare), the half-width one minute of measuring buys (Z95 sd / sqrt(pairs a minute),
the time each pair took, harness included: a duet pair costs one run's time, a serial pair two), the
change against -O2 with its interval, and whether the schedules agree (Student's two-sample t
of the mean log ratio, stats.mean_shift: agree when its 95% interval holds no difference).
Then the side bias (A/A: first run against second in serial, CPU against CPU in duet), the
effect at the quick input against the full one, and the run length measure.length would choose
from the A/A spreads at the two sizes, per schedule and metric.

Usage: python bench/duet.py [--targets tiny,gzip,lame] [--sizes quick,full] [--pairs 40]
       [--seed 1] [--cpus A,B] [--out pairs.csv] [--work DIR]
       python bench/duet.py --replay pairs.csv          (the figures again, nothing run)
Needs two CPUs this process may use for the duet schedule (with one, serial only).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from flagsweep import stats
from flagsweep.experiment import target as target_mod
from flagsweep.host import launcher, system
from flagsweep.measure import length
from flagsweep.workload import check, inputs

ROOT = Path(__file__).resolve().parent.parent
FLAGSWEEP = [sys.executable, "-m", "flagsweep"]
BASELINE = "gcc-O2"
FLAGS = {"gcc-O2": "-O2", "gcc-O0": "-O0", "gcc-O3": "-O3"}
# (label, variant): each against the baseline; the A/A pair is the baseline against itself.
COMPARISONS = (("A/A", BASELINE), ("-O0", "gcc-O0"), ("-O3", "gcc-O3"))
SCHEDULES = ("serial", "duet")
METRICS = ("cpu", "wall")


@dataclass(frozen=True)
class Task:
    """One pair to take: which comparison, in which schedule, with which sides."""

    comparison: str
    schedule: str
    index: int          # within its comparison and schedule
    side: int           # 0: the variant runs first (serial) or on the first CPU (duet); 1: swapped


@dataclass
class Pair:
    """One pair as taken (a row of --out)."""

    target: str
    size: str                     # quick | full
    size_value: float | None      # in the target's unit (MB, s)
    unit: str
    comparison: str
    schedule: str
    index: int
    order: int                    # place in the cell's shuffled order
    side: int
    variant_cpu_no: int           # the CPU each side ran on
    baseline_cpu_no: int
    variant_wall_s: float | None = None
    variant_cpu_s: float | None = None
    baseline_wall_s: float | None = None
    baseline_cpu_s: float | None = None
    variant_run_delay_s: float | None = None
    baseline_run_delay_s: float | None = None
    elapsed_s: float = 0.0        # what the pair cost, harness included
    started_at: float = 0.0
    failure: str = ""

    def value(self, who: str, metric: str) -> float | None:
        return getattr(self, f"{who}_{metric}_s")

    def log_ratio(self, metric: str) -> float | None:
        v, b = self.value("variant", metric), self.value("baseline", metric)
        return math.log(v / b) if not self.failure and v and b else None


# ---- the design ------------------------------------------------------------------------------

def tasks(pairs: int, seed: int, schedules: tuple[str, ...] = SCHEDULES) -> list[Task]:
    """Every pair of one target and size, in a seeded order: in each comparison and schedule,
    the sides alternate (balanced: half each way, so a side's own bias cancels in the mean),
    and the whole list is shuffled, so serial and duet pairs share the machine's drift."""
    todo = [Task(label, schedule, i, i % 2) for label, _ in COMPARISONS for schedule in schedules
            for i in range(pairs)]
    order = np.random.default_rng(seed).permutation(len(todo))
    return [todo[i] for i in order]


def placement(pair_cpus: tuple[int, int], task: Task) -> tuple[int, int]:
    """(the variant's CPU, the baseline's CPU) of a task: one CPU for both in serial (the
    second of pair_cpus, the one a sweep takes), the two swapped by side in duet."""
    first, second = pair_cpus
    if task.schedule == "serial":
        return second, second
    return (first, second) if task.side == 0 else (second, first)


# ---- taking pairs ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    """One target at one input size, ready to run."""

    target: str
    size: str
    size_value: float | None
    unit: str
    invocation: check.Invocation
    binaries: dict[str, Path]


def take(w: Workload, task: Task, order: int, cpus: tuple[int, int], rng) -> Pair:
    vcpu, bcpu = placement(cpus, task)
    pair = Pair(w.target, w.size, w.size_value, w.unit, task.comparison, task.schedule,
                task.index, order, task.side, vcpu, bcpu, started_at=time.time())
    variant = dict(COMPARISONS)[task.comparison]
    runs = {"variant": (variant, vcpu), "baseline": (BASELINE, bcpu)}
    sides = ["variant", "baseline"] if task.side == 0 else ["baseline", "variant"]
    pads = {who: int(rng.integers(0, launcher.ENV_PAD_MAX + 1)) for who in sides}
    began = time.monotonic()
    if task.schedule == "serial":
        got = {who: _run(w, who, *runs[who], pads[who]) for who in sides}
    else:
        got = _together(w, runs, pads)
    pair.elapsed_s = time.monotonic() - began
    for who, e in got.items():
        if e.failure:
            pair.failure = f"{who}: {e.failure}"
            continue
        setattr(pair, f"{who}_wall_s", e.wall_s)
        setattr(pair, f"{who}_cpu_s", e.user_s + e.sys_s)
        setattr(pair, f"{who}_run_delay_s", (e.counters or {}).get("run_delay_s"))
    return pair


def _run(w: Workload, who: str, vid: str, cpu: int, pad: int, start=None):
    """One run through the launcher, pinned as a sweep pins (this thread's affinity, which the
    launcher inherits); each side has its own scratch folder, so two at once never share a
    file. `start`: a barrier both sides of a duet wait at, so they start together."""
    scratch = w.invocation.scratch / who
    scratch.mkdir(parents=True, exist_ok=True)
    argv = w.invocation.argv(w.binaries[vid], scratch / "run.out")
    with launcher.pinned(cpu):
        if start is not None:
            start.wait()
        return launcher.run_once(argv, env=launcher.padded_env(launcher.MINIMAL_ENV, pad),
                                 timeout=w.invocation.timeout, stderr_path=scratch / "run.stderr")


def _together(w: Workload, runs: dict, pads: dict) -> dict:
    """Both sides at once, each from its own thread pinned to its own CPU."""
    got: dict = {}
    start = threading.Barrier(len(runs))

    def one(who: str) -> None:
        got[who] = _run(w, who, *runs[who], pads[who], start)

    threads = [threading.Thread(target=one, args=(who,), daemon=True) for who in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


# ---- the figures -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Figures:
    """One comparison in one schedule, one metric."""

    n: int
    sd: float                  # of the pair's log ratio
    ratio: float               # Hodges-Lehmann, as a sweep reports it
    ci95: tuple[float, float]
    half: float                # log half-width of ci95
    minutes: float             # spent taking these pairs
    logs: tuple[float, ...]

    @property
    def half_per_minute(self) -> float:
        """The 95% half-width one minute of such pairs buys: Z95 sd / sqrt(pairs a minute), the
        normal interval of a mean (measure.length's model; from the sd, so it exists below the
        six pairs a signed-rank interval needs and is not stepped by its ranks)."""
        return stats.Z95 * self.sd * math.sqrt(self.minutes / self.n)


def figures(pairs: list[Pair], metric: str) -> Figures | None:
    good = [p for p in pairs if p.log_ratio(metric) is not None]
    if len(good) < 2:
        return None
    logs = np.array([p.log_ratio(metric) for p in good])
    c = stats.compare({i: float(np.exp(d)) for i, d in enumerate(logs)},
                      {i: 1.0 for i in range(len(logs))})
    # A failed pair cost its time too.
    minutes = sum(p.elapsed_s for p in pairs) / 60
    return Figures(len(good), float(np.std(logs, ddof=1)), c.ratio, c.ci95,
                   stats.log_half_width(c.ci95), minutes, tuple(map(float, logs)))


def agreement(a: Figures, b: Figures) -> stats.MeanShift:
    """b's mean log ratio against a's (Student's two-sample t, stats.mean_shift)."""
    return stats.mean_shift(np.array(a.logs), np.array(b.logs))


def side_bias(pairs: list[Pair], metric: str) -> tuple[float, tuple[float, float] | None]:
    """The first side's log excess over the second's in A/A pairs (the first run over the
    second in serial, the first CPU over the second in duet), with its t interval: sides are
    balanced, so it cancels in a comparison's mean, but it widens the spread."""
    signed = [(p.log_ratio(metric) if p.side == 0 else -p.log_ratio(metric))
              for p in pairs if p.comparison == "A/A" and p.log_ratio(metric) is not None]
    mean = float(np.mean(signed)) if signed else math.nan
    return mean, stats.mean_interval(signed)


def spread_at(pairs: list[Pair], metric: str) -> length.PilotPoint | None:
    """What measure.length needs from one size's A/A pairs of one schedule."""
    f = figures(pairs, metric)
    runs = [p.value("baseline", metric) for p in pairs if p.value("baseline", metric)]
    if f is None or not runs or pairs[0].size_value is None:
        return None
    return length.PilotPoint(pairs[0].size_value, float(np.median(runs)), f.sd,
                         float(np.mean([p.elapsed_s for p in pairs])), f.n)


# ---- printing --------------------------------------------------------------------------------

def _pct(x: float) -> str:
    return f"{100 * x:.2f}%" if math.isfinite(x) else "-"


def _change(f: Figures) -> str:
    lo, hi = f.ci95
    interval = (f"[{100 * (lo - 1):+.1f}, {100 * (hi - 1):+.1f}]" if math.isfinite(f.half)
                else "[no interval]")
    return f"{100 * (f.ratio - 1):+.1f}% {interval}"


def report(pairs: list[Pair]) -> None:
    for target in dict.fromkeys(p.target for p in pairs):
        mine = [p for p in pairs if p.target == target]
        for size in dict.fromkeys(p.size for p in mine):
            _cell(target, size, [p for p in mine if p.size == size])
        _sizes(target, mine)
    for metric in METRICS:
        overview(pairs, metric)


def overview(pairs: list[Pair], metric: str) -> None:
    """Every target's A/A half-width per minute in each schedule and size, the narrowest, and
    whether it is trustworthy: its schedule agrees with serial on -O0 and -O3 at that size
    (the bias check), and that size agrees with the full input (the same workload)."""
    cells = [(s, size) for s in SCHEDULES for size in ("quick", "full")]
    print(f"\n== A/A 95% half-width per minute of measuring, {metric} time")
    print(f"{'target':8}" + "".join(f"{s + ' ' + size:>13}" for s, size in cells)
          + "  narrowest")
    for target in dict.fromkeys(p.target for p in pairs):
        got = {}
        for s, size in cells:
            f = figures([p for p in pairs if (p.target, p.schedule, p.size, p.comparison)
                         == (target, s, size, "A/A")], metric)
            if f is not None:
                got[(s, size)] = f.half_per_minute
        if not got:
            continue
        best = min(got, key=got.get)
        base = got.get(("serial", "full"))
        gain = f", {base / got[best]:.1f}x narrower than serial full" if base else ""
        print(f"{target:8}" + "".join(f"{_pct(got[c]) if c in got else '-':>13}" for c in cells)
              + f"  {' '.join(best)}{gain}; {_trusted(pairs, target, *best, metric)}")


def _trusted(pairs: list[Pair], target: str, schedule: str, size: str, metric: str) -> str:
    """Whether -O0 and -O3 read the same in that cell as serially at that size, and as at
    the full input in that schedule."""
    def logs(s: str, sz: str, label: str) -> Figures | None:
        return figures([p for p in pairs if (p.target, p.schedule, p.size, p.comparison)
                        == (target, s, sz, label)], metric)

    said = []
    for what, other in (("bias check", ("serial", size)), ("same as full", (schedule, "full"))):
        if other == (schedule, size):
            continue
        checks = [(a, b) for label, _ in COMPARISONS[1:]
                  if (a := logs(*other, label)) and (b := logs(schedule, size, label))]
        if checks:
            ok = all(agreement(a, b).p >= 0.05 for a, b in checks)
            said.append(f"{what}: {'yes' if ok else 'NO'}")
    return ", ".join(said) or "nothing to check against"


def _cell(target: str, size: str, pairs: list[Pair]) -> None:
    first = pairs[0]
    failed = sum(bool(p.failure) for p in pairs)
    print(f"\n== {target}, {size} input ({first.size_value:g} {first.unit}): "
          f"{len(pairs)} pairs{f', {failed} failed' if failed else ''}")
    print(f"{'metric':7}{'comparison':11}{'schedule':9}{'n':>4}{'sd':>8}{'+-95%':>8}"
          f"{'+-/min':>8}  {'change [95% CI]':26}agree (duet - serial)")
    for metric in METRICS:
        for label, _ in COMPARISONS:
            got = {s: figures([p for p in pairs if p.comparison == label and p.schedule == s],
                              metric) for s in SCHEDULES}
            for s, f in got.items():
                if f is None:
                    continue
                agree = ""
                if s == "duet" and got["serial"] is not None:
                    m = agreement(got["serial"], f)
                    agree = (f"{'yes' if m.p >= 0.05 else 'NO'} "
                             f"({100 * m.shift:+.1f}% [{100 * (m.ci95[0] - 1):+.1f}, "
                             f"{100 * (m.ci95[1] - 1):+.1f}])")
                print(f"{metric:7}{label:11}{s:9}{f.n:>4}{_pct(f.sd):>8}{_pct(f.half):>8}"
                      f"{_pct(f.half_per_minute):>8}  {_change(f):26}{agree}")
    for metric in METRICS:
        said = []
        for s, what in (("serial", "first run over second"), ("duet", "first CPU over second")):
            mean, ci = side_bias([p for p in pairs if p.schedule == s], metric)
            if ci is not None:
                said.append(f"{s} {what} {100 * mean:+.2f}% [{100 * ci[0]:+.2f}, "
                            f"{100 * ci[1]:+.2f}]")
        if said:
            print(f"side bias, A/A, {metric}: " + "; ".join(said))
    aa = {s: figures([p for p in pairs if p.comparison == "A/A" and p.schedule == s], "cpu")
          for s in SCHEDULES}
    if all(aa.values()):
        gain = aa["serial"].half_per_minute / aa["duet"].half_per_minute
        print(f"A/A per minute, CPU time: duet {'narrower' if gain > 1 else 'wider'} by "
              f"{max(gain, 1 / gain):.2f}x")


def _sizes(target: str, pairs: list[Pair]) -> None:
    """The same comparison at both sizes, and the length measure.length would choose."""
    if {"quick", "full"} - {p.size for p in pairs}:
        return
    print(f"-- {target}: quick against full input")
    for metric in METRICS:
        for s in SCHEDULES:
            at = {size: [p for p in pairs if p.schedule == s and p.size == size]
                  for size in ("quick", "full")}
            for label, _ in COMPARISONS[1:]:
                f = {size: figures([p for p in got if p.comparison == label], metric)
                     for size, got in at.items()}
                if all(f.values()):
                    m = agreement(f["full"], f["quick"])
                    print(f"{metric:5}{s:7}{label} vs -O2: quick {_change(f['quick'])}, full "
                          f"{_change(f['full'])}: {'same' if m.p >= 0.05 else 'DIFFERENT'}")
            short, long = (spread_at([p for p in got if p.comparison == "A/A"], metric)
                           for got in at.values())
            if short and long:
                print(f"{metric:5}{s:7}run length: {length.choose(short, long, pairs[0].unit).why}")


# ---- the run ---------------------------------------------------------------------------------

def build(name: str, work: Path, env: dict[str, str]) -> dict[str, Path]:
    """-O2, -O0 and -O3 of a target, built (or found in the build cache) by flagsweep build."""
    out = work / "builds" / name
    flags = [a for vid in FLAGS for a in ("--flags", FLAGS[vid])]
    done = subprocess.run([*FLAGSWEEP, "build", name, *flags, "--json", "--out", str(out)],
                          env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"flagsweep build {name} failed:\n{done.stderr[-2000:]}")
    built = {v["id"]: v["build"] for v in json.loads(done.stdout)}
    bad = [vid for vid in FLAGS if built.get(vid, {}).get("status") != "ok"]
    if bad:
        sys.exit(f"{name}: {', '.join(bad)} did not build (see {out})")
    # Identical code (-O3 = -O2 in some programs) is the representative's binary.
    return {vid: Path(built[built[vid].get("identical_to") or vid]["binary"]) for vid in FLAGS}


def workload(name: str, size: str, binaries: dict[str, Path], work: Path) -> Workload:
    t = target_mod.load(name)
    quick = size == "quick"
    made = inputs.prepare(t, quick=quick)
    _, value, unit = inputs.size_of(t.spec.inputs, quick)
    scratch = work / "scratch" / f"{name}-{size}"
    return Workload(name, size, value, unit, check.Invocation(t, made.path, scratch), binaries)


def measure(a: argparse.Namespace, work: Path) -> list[Pair]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cpus = a.cpus or tuple(sorted(os.sched_getaffinity(0))[-2:])
    serial_cpu = launcher.choose_cpu(system.isolated_cpus())
    if len(cpus) == 2 and serial_cpu in cpus:
        cpus = (cpus[0] if cpus[1] == serial_cpu else cpus[1], serial_cpu)
    schedules = SCHEDULES if len(set(cpus)) == 2 else ("serial",)
    if schedules == ("serial",):
        print("one CPU only: serial pairs only")
        cpus = (serial_cpu, serial_cpu)
    print(f"serial on CPU {cpus[1]}, duet on CPUs {cpus[0]} and {cpus[1]}; {a.pairs} pairs per "
          f"comparison and schedule, seed {a.seed}", flush=True)
    pairs: list[Pair] = []
    for n, name in enumerate(a.targets):
        binaries = build(name, work, env)
        for k, size in enumerate(a.sizes):
            w = workload(name, size, binaries, work)
            seed = a.seed + 1000 * n + k
            rng = np.random.default_rng(seed)
            todo = tasks(a.pairs, seed, schedules)
            began = time.monotonic()
            for order, task in enumerate(todo):
                pairs.append(take(w, task, order, cpus, rng))
            print(f"{name} {size}: {len(todo)} pairs in {time.monotonic() - began:.0f} s, "
                  f"load average {os.getloadavg()[1]:.1f} (5 min) on "
                  f"{len(os.sched_getaffinity(0))} CPUs", flush=True)
            if a.out:
                write_csv(a.out, pairs)
    return pairs


def write_csv(path: Path, pairs: list[Pair]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, [x.name for x in fields(Pair)])
        w.writeheader()
        w.writerows(asdict(p) for p in pairs)


def read_csv(path: Path) -> list[Pair]:
    types = {x.name: x.type for x in fields(Pair)}
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            out.append(Pair(**{k: _typed(v, types[k]) for k, v in row.items()}))
    return out


def _typed(text: str, kind: str):
    if kind.startswith("int"):
        return int(text)
    if kind.startswith("float"):
        return float(text) if text != "" else None
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", default="tiny,gzip,lame", type=lambda s: s.split(","))
    ap.add_argument("--sizes", default="quick,full", type=lambda s: s.split(","))
    ap.add_argument("--pairs", type=int, default=40, help="pairs per comparison and schedule")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cpus", type=lambda s: tuple(int(c) for c in s.split(",")),
                    help="the duet's two CPUs (serial runs on the second)")
    ap.add_argument("--out", type=Path, help="a CSV of every pair")
    ap.add_argument("--work", type=Path, help="builds and scratch here (default: a temp folder)")
    ap.add_argument("--replay", type=Path, help="the figures of an earlier --out; nothing is run")
    a = ap.parse_args()
    if a.replay:
        report(read_csv(a.replay))
        return 0
    if set(a.sizes) - {"quick", "full"} or a.pairs < 2:
        ap.error("--sizes takes quick and full; --pairs at least 2")
    with tempfile.TemporaryDirectory(prefix="flagsweep-duet-") as tmp:
        work = a.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        report(measure(a, work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
