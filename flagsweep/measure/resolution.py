"""The shortest run a sample resolves, and the input size that would make a run that long.

Every sample holds more than the program's own work: the launcher's fork and exec of it, the
dynamic loader, and the exit. The launcher reports that part, for a C program that does nothing,
as about 1 ms of CPU time (user + sys) and 1-5 ms of wall time (bench/overhead.py, "floor of a
sample", 2-vCPU VM under load; the clocks themselves resolve microseconds, far below it).
Compiler flags change only the program's own part, so in a run of T seconds an effect e reads as
e * (T - floor) / T: a 0.7 ms run is mostly the floor, and a real +10% may read as +1%. At
DILUTION times the floor an effect reads at least 90% of its size (a +3% no less than +2.7%),
the tolerance calibrate holds its own plants to; below it a sweep says so, with the input size
that would reach it (the run's time grows with its input).
"""

from __future__ import annotations

from flagsweep.experiment.target import InputSpec
from flagsweep.workload import inputs as inputs_mod

FLOOR_S = 0.001           # what the launcher reports for a program that does nothing
DILUTION = 10             # runs at least this many floors long
SHORTEST_S = DILUTION * FLOOR_S
TIME_METRICS = ("wall_s", "cpu_s")


def short_run(median_s: float | None, inputs: InputSpec | None, quick: bool,
              where: str) -> dict | None:
    """None for a run long enough (or never timed); else what results.json's
    `measurement.short_run` holds: the baseline's median time, the limit, the input key and its
    size now and needed (scaled by limit / median), and the warning in words. `where` is the
    target's file, named in the warning."""
    if median_s is None or median_s <= 0 or median_s >= SHORTEST_S:
        return None
    key, size, _ = inputs_mod.size_of(inputs, quick)
    needed = None if size is None else _round_up(size * SHORTEST_S / median_s)
    if key is None:
        fix = (f"use an input about {SHORTEST_S / median_s:.0f} times larger (`inputs` in "
               f"{where})")
    else:
        fix = f"set `inputs.{key}` to {needed:g} or more (now {size:g}) in {where}"
    warning = (f"The baseline's runs take {1e3 * median_s:.2g} ms, under the "
               f"{1e3 * SHORTEST_S:g} ms a sample resolves: process start and exit alone take "
               f"about {1e3 * FLOOR_S:g} ms of every sample, so flag effects read smaller than "
               f"they are; {fix}.")
    return {"median_s": median_s, "shortest_s": SHORTEST_S, "input_key": key,
            "input_size": size, "input_needed": needed, "warning": warning}


def full_to_quick(inputs: InputSpec | None) -> float:
    """How many times longer a run of the full input is than one of the quick input, by
    their sizes (a workload's run grows with its input); 1 for a given file, which has one."""
    quick, full = inputs_mod.size_of(inputs, True)[1], inputs_mod.size_of(inputs, False)[1]
    return full / quick if quick and full else 1.0


def _round_up(x: float) -> float:
    """Two significant digits, rounded up: the size suggested must reach the limit."""
    from math import ceil, floor, log10

    scale = 10 ** (floor(log10(x)) - 1)
    return round(ceil(x / scale) * scale, 12)
