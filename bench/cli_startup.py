#!/usr/bin/env python3
"""How long `flagsweep --help` takes to start, against `python -c "import click"`.

Each command runs N times (default 5) in a fresh process, the two interleaved so that load on
the machine falls on both alike; prints each one's median wall time and the ratio. The
command line's goal: --help within 4x of importing click alone (the commands' libraries,
statsmodels, matplotlib, SQLAlchemy, load only when a command runs).

Usage: python bench/cli_startup.py [N] [ARGS...]     (default: 5 --help; e.g. `5 list`)
"""

from __future__ import annotations

import subprocess
import sys
import time


def median(xs: list[float]) -> float:
    # Not the statistics module: bench/verdict_rules.py, beside this script, shadows it.
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main(n: int, args: list[str]) -> None:
    flagsweep = [sys.executable, "-m", "flagsweep", *args]
    click = [sys.executable, "-c", "import click"]
    times: dict[str, list[float]] = {"flagsweep": [], "click": []}
    for _ in range(n):
        times["flagsweep"].append(seconds(flagsweep))
        times["click"].append(seconds(click))
    ours, base = (median(times[k]) for k in ("flagsweep", "click"))
    print(f"flagsweep {' '.join(args)}: median {ours:.3f} s of {n}")
    print(f"python -c 'import click': median {base:.3f} s of {n}")
    print(f"ratio: {ours / base:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, sys.argv[2:] or ["--help"])
