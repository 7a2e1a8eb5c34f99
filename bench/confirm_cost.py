#!/usr/bin/env python3
"""What confirming a recommendation over layouts costs, and what it answers.

Runs `flagsweep run ARGS` as given (confirmation on, the default) and, unless --once, again with
`--no-confirm`, each into a fresh folder; prints each one's wall time (builds included), the
recommendation sentence, and the confirmation's record: its status, the sweep's one-layout
interval, the interval over K layouts each, the layout spread and its own time. With --once
the time without confirmation is the run's time less the confirmation's own (`seconds`,
measured from before its builds to its answer), which spares a second sweep on a busy machine.

Pass --wait among RUN_ARGS on a shared machine (another sweep holding the CPU): the wall time
then includes the wait, so each sweep's measuring time is printed beside it.

Usage: python bench/confirm_cost.py [--once] OUT_DIR -- RUN_ARGS...
  e.g. python bench/confirm_cost.py /tmp/cc -- gzip --quick
       python bench/confirm_cost.py --once /tmp/cc -- tiny --recipe march --quick --seed 3
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path


def sweep(args: list[str], out: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "flagsweep", "run", *args, "--out", str(out)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - started
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_name(out.name + ".stderr").write_text(done.stderr)     # what the terminal said
    if done.returncode != 0:
        sys.exit(f"flagsweep run {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return took, json.loads((out / "results.json").read_text())


def pct(c: dict | None) -> str:
    if not c or c.get("ratio") is None:
        return "-"
    lo, hi = c.get("ci95") or (None, None)
    ci = f" [{100 * (lo - 1):+.1f}, {100 * (hi - 1):+.1f}]" if lo is not None else ""
    return f"{100 * (c['ratio'] - 1):+.1f}%{ci}"


def _span(doc: dict) -> float:
    """The sweep's own measuring time, its store's start (after the builds) to its end (before
    any confirmation), from results.json."""
    from datetime import datetime
    stamp = [datetime.strptime(doc[k], "%Y-%m-%dT%H:%M:%SZ") for k in ("started", "finished")]
    return (stamp[1] - stamp[0]).total_seconds()


def describe(label: str, took: float, doc: dict) -> None:
    rec = doc.get("recommendation") or {}
    c = rec.get("confirmation") or {}
    over = c.get("over_layouts") or {}
    print(f"{label}: {took:.0f} s wall (any wait for the CPU's lock included), measuring "
          f"{_span(doc):.0f} s, {doc.get('stop_reason')}")
    print(f"  recommendation: {rec.get('flags')} ({rec.get('variant')})")
    print(f"  confirmation: {c.get('status')} of {c.get('variant')}; reach {c.get('reach_pct')}% "
          f"({c.get('reach_source')})")
    print(f"  one layout: {pct(c.get('one_layout'))}; over {over.get('layouts')} layouts each: "
          f"{pct(over)} {over.get('verdict') or ''}, layout spread +-"
          f"{over.get('layout_sd_pct') or 0:.2f}%; confirmation {c.get('seconds')} s")
    print(f"  why: {c.get('why')}")


def main(argv: list[str]) -> None:
    once = argv[:1] == ["--once"]
    argv = argv[1:] if once else argv
    if len(argv) < 3 or argv[1] != "--":
        sys.exit(__doc__)
    out, args = Path(argv[0]), argv[2:]
    took, doc = sweep(args, out / "confirm")
    describe("with confirmation", took, doc)
    if once:
        spent = (doc.get("recommendation") or {}).get("confirmation", {}).get("seconds") or 0
        print(f"without confirmation (derived): {took - spent:.0f} s wall; confirmation adds "
              f"{spent:.0f} s ({100 * spent / max(took - spent, 1e-9):.0f}%)")
        return
    bare, plain = sweep([*args, "--no-confirm"], out / "no-confirm")
    describe("--no-confirm", bare, plain)
    print(f"confirmation adds {took - bare:+.0f} s ({100 * (took - bare) / bare:+.0f}%)")


if __name__ == "__main__":
    main(sys.argv[1:])
