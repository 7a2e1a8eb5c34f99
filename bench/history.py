"""Nightly history under machine drift: how often `flagsweep history --check` fires over 20
nights of an unchanged program, before and with the default nightly set-up (a kept reference arm).

    nice -n 10 .venv/bin/python bench/history.py                 # random walk: 1000 series a cell
    nice -n 10 .venv/bin/python bench/history.py --scale 0.1     # a quick look

One simulated series: one variant, 10 samples a night at CV 1% (log-normal), the machine's level
moving from night to night either as a random walk (level_t = level_(t-1) + N(0, D)) or
independently (level_t = N(0, D)). Every sample of a night shares that night's level.

- no reference arm (the default before): the values go to the series as they are;
- kept reference arm (the default now, controls.kept_reference): the first night's baseline binary
  is kept and measured beside every later night, 10 samples of its own in the same rounds (its
  own 1% noise, the same night's level); on the first night the A/A twin (a copy of that
  binary) stands in for it. Each night's values go through history._against_reference exactly
  as `history.collect` passes them.

history._detect runs once over the 20 nights (it never looks ahead, so a step it finds with
night k, Step.found_in, is what `history --check` run on night k reports) and each night's
outcome is read the way the CLI reads it: a slower step found that night in a series with a
reference arm fails the check (exit 1); a series without one is never a pass or a fail from
its second night on (history.unchecked: exit 3, "cannot tell the machine's drift from the
program's"). The old code had no such rule: its exit 1 on an unreferenced series is counted as
the false alarm it was. Rates carry one binomial standard error and an exact (Clopper-Pearson)
95% interval. Seeded: the same command prints the same tables.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flagsweep.across import history  # noqa: E402
from flagsweep.model import Build, Variant  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_statistics",
                                               Path(__file__).with_name("verdict_rules.py"))
_stats = sys.modules["bench_statistics"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_stats)            # its rate and table: one format for every table
rate = _stats.rate

SEED = 20261126
NIGHTS = 20
SAMPLES = 10
CV = 0.01
KEPT = "kept-sha"
FIRST = [Variant(id="v", compiler="gcc", flags=[], build=Build(status="ok")),
         Variant(id="v.aa", compiler="gcc", flags=[], aa_of="v", build=Build(status="ok"))]
LATER = [Variant(id="v", compiler="gcc", flags=[], build=Build(status="ok")),
         Variant(id="v.ref", compiler="gcc", flags=[], reference_of="v",
                 build=Build(status="ok", reference_sha256=KEPT))]


def header(cols: list[str]) -> None:
    """A table's head; its rows are printed as their cells are done."""
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols), flush=True)


def levels(rng: np.random.Generator, drift: str, day: float) -> np.ndarray:
    steps = rng.normal(0, day, NIGHTS)
    return np.cumsum(steps) if drift == "walk" else steps


def series(rng: np.random.Generator, drift: str, day: float, thr: float, kept: bool,
           step_at: int | None = None, own: float = 0.0) -> history.VariantSeries:
    """One series of 20 nights through history's own code, steps detected. `own`: a random
    walk of the program's own level (sd a night) that the reference does not share."""
    level = levels(rng, drift, day)
    mine = np.cumsum(rng.normal(0, own, NIGHTS)) if own else np.zeros(NIGHTS)
    s = history.VariantSeries("v", [], "m")
    for night in range(NIGHTS):
        late = step_at is not None and night >= step_at
        x = np.exp(level[night] + mine[night] + (math.log(1.05) if late else 0.0)
                   + rng.normal(0, CV, SAMPLES))
        values = {"v": dict(enumerate(map(float, x)))}
        if kept:
            arm = np.exp(level[night] + rng.normal(0, CV, SAMPLES))
            docs = FIRST if night == 0 else LATER
            values[docs[1].id] = dict(enumerate(map(float, arm)))
            values, s.reference = history._against_reference(docs, values,
                                                             KEPT if night == 0 else None)
        v = [float(y) for y in values["v"].values()]
        s.points.append(history.Point(f"n{night}", float(night), v, float(np.median(v)), None,
                                      {"target": "1.1" if late else "1.0"}))
    history._detect([s], thr)
    return s


def outcomes(s: history.VariantSeries, new_rule: bool) -> tuple[set[int], set[int]]:
    """(nights whose check fails, nights whose check says it cannot tell)."""
    fails = {int(st.found_in[1:]) for st in s.steps if st.verdict == "slower"}
    if not new_rule or s.reference is not None:
        return fails, set()
    return set(), set(range(1, NIGHTS))       # history.unchecked: no reference arm


def false_alarms(cell: tuple) -> list[str]:
    """One row of the no-change table: (seed index, drift, D, threshold, code, series)."""
    k, drift, day, thr, setup, n = cell
    rng = np.random.default_rng([SEED, k])
    fails, cannot, late = 0, 0, 0
    for _ in range(n):
        f, c = outcomes(series(rng, drift, day, thr, setup == "after, default"), setup != "before")
        fails += bool(f)
        late += any(night >= history.MIN_SPREAD_RUNS for night in f)
        cannot += bool(c)
    return [drift, f"{100 * day:g}%", f"{thr:g}%", setup,
            "kept" if setup == "after, default" else "none", str(n), rate(fails, n),
            rate(late, n), rate(cannot, n)]


def null(scale: float, jobs: int) -> None:
    print(f"### No change, only drift: {NIGHTS} nights, `history --check` each night\n")
    full, part = max(20, int(1000 * scale)), max(20, int(250 * scale))
    cells = [("walk", day, thr, setup, full) for day in (0.02, 0.03) for thr in (1.0, 3.0)
             for setup in ("before", "after, default")]
    # The independent-drift case (--threshold 1), and one row of the new rule without
    # a reference arm (exit 3 from the second night on, whatever the drift).
    cells += [("independent", day, 1.0, setup, part) for day in (0.02, 0.03)
              for setup in ("before", "after, default")]
    cells += [("walk", 0.03, 3.0, "after, no reference", max(20, int(100 * scale)))]
    header(["drift", "D a night", "--threshold", "code", "reference arm", "series",
           ">= 1 false alarm (exit 1) in 20 nights",
           f"... on nights {history.MIN_SPREAD_RUNS + 1}-{NIGHTS}",
           "says it cannot tell (exit 3)"])
    with multiprocessing.Pool(jobs) as pool:       # each row as it is done, in order
        for row in pool.imap(false_alarms, [(k, *c) for k, c in enumerate(cells)]):
            print("| " + " | ".join(row) + " |", flush=True)
    print()


def found(cell: tuple) -> list[str]:
    """One row of the step table: (seed index, D, threshold, series)."""
    k, day, thr, n = cell
    rng = np.random.default_rng([SEED, 100 + k])
    on, placed, early = 0, 0, 0
    for _ in range(n):
        s = series(rng, "walk", day, thr, True, step_at=15)
        slower = [st for st in s.steps if st.verdict == "slower"]
        early += any(int(st.found_in[1:]) < 15 for st in slower)
        on += any(st.found_in == "n15" for st in slower)
        placed += any(st.run_id == "n15" for st in slower)
    return [f"{100 * day:g}%", f"{thr:g}%", str(n), rate(on, n), rate(placed, n), rate(early, n)]


def step(scale: float, jobs: int) -> None:
    print("### A +5% step on night 15, random-walk drift, the default set-up (kept reference)\n")
    n = max(20, int(250 * scale))
    cells = [(k, day, thr, n) for k, (day, thr) in
             enumerate([(0.02, 1.0), (0.02, 3.0), (0.03, 1.0), (0.03, 3.0)])]
    header(["D a night", "--threshold", "series", "fails on night 15",
            "found by night 20, placed on night 15", ">= 1 false alarm on nights 2-14"])
    with multiprocessing.Pool(jobs) as pool:
        for row in pool.imap(found, cells):
            print("| " + " | ".join(row) + " |", flush=True)
    print()


def unshared_cell(cell: tuple) -> list[str]:
    k, own, thr, n = cell
    rng = np.random.default_rng([SEED, 200 + k])
    fails = sum(bool(outcomes(series(rng, "walk", 0.03, thr, True, own=own), True)[0])
                for _ in range(n))
    return [f"{100 * own:g}%", f"{thr:g}%", str(n), rate(fails, n)]


def unshared(scale: float, jobs: int) -> None:
    print("### The assumption: a drift the reference does not share (random walk D = 3% shared, "
          "plus the program's own walk), default set-up, no change\n")
    n = max(20, int(250 * scale))
    cells = [(k, own, thr, n) for k, (own, thr) in
             enumerate([(0.0025, 1.0), (0.005, 1.0), (0.005, 3.0), (0.01, 3.0)])]
    header(["own walk a night", "--threshold", "series", ">= 1 false alarm (exit 1) in 20 nights"])
    with multiprocessing.Pool(jobs) as pool:
        for row in pool.imap(unshared_cell, cells):
            print("| " + " | ".join(row) + " |", flush=True)
    print()


TABLES = {"null": null, "step": step, "unshared": unshared}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="*", metavar="TABLE",
                    help=f"which tables (default: all): {', '.join(TABLES)}")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every cell's series")
    ap.add_argument("--jobs", type=int, default=2, help="cells computed side by side")
    args = ap.parse_args()
    unknown = set(args.tables) - set(TABLES)
    if unknown:
        ap.error(f"unknown table(s): {', '.join(sorted(unknown))}")
    started = time.monotonic()
    for name in args.tables or TABLES:
        TABLES[name](args.scale, args.jobs)
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
