"""Per-function profiles of one run of the workload: where a binary spends its cost.

Without a PMU (this project's VM, most CI runners), Cachegrind: instructions executed per
function with its cache and branch simulation, deterministic for the same binary and input, so
one run is the profile. It counts instructions, not time: a function that runs the same
instructions with more cache misses is slower and shows no change in `Ir` (its `D1mr`/`DLmr`
say so). With a PMU, `perf record` of cycles (flagsweep.explain.sampling).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from flagsweep import process
from flagsweep.errors import FlagsweepError
from flagsweep.explain.symbols import canonical

# Cachegrind's events with --cache-sim=yes --branch-sim=yes, and what the page calls them.
EVENT_NAMES = {"Ir": "instructions", "Dr": "data reads", "Dw": "data writes",
               "I1mr": "L1 instruction misses", "D1mr": "L1 data read misses",
               "D1mw": "L1 data write misses", "ILmr": "LL instruction misses",
               "DLmr": "LL data read misses", "DLmw": "LL data write misses",
               "Bc": "conditional branches", "Bcm": "conditional mispredicts",
               "Bi": "indirect branches", "Bim": "indirect mispredicts"}


@dataclass
class Profile:
    """One binary's cost per function (canonical names, flagsweep.explain.symbols)."""

    source: str                          # cachegrind | perf
    primary: str                         # the event attributed: Ir, or cycles
    events: list[str]
    functions: dict[str, dict[str, float]]     # function -> event -> count
    symbols: dict[str, list[str]]              # function -> the symbol names summed into it
    path: str | None = None              # the profile file(s), for cg_annotate / perf report
    samples: int | None = None           # perf: samples taken (mean over the records)
    unknown_share: float | None = None   # perf: share of samples in no known symbol
    share_ci: dict[str, tuple[float, float]] = field(default_factory=dict)   # perf: per function

    def cost(self, function: str) -> float:
        return self.functions.get(function, {}).get(self.primary, 0.0)

    @property
    def total(self) -> float:
        return sum(counts.get(self.primary, 0.0) for counts in self.functions.values())


def parse_cachegrind(text: str, where: str = "cachegrind output") -> Profile:
    """A cachegrind.out file (`events:` then `fl=`/`fn=` blocks of `line count...` rows) summed
    per function. Code inlined from another file arrives under another `fl=` but the same
    `fn=`, so it is charged to the function it was inlined into, as the binary runs it."""
    events: list[str] = []
    functions: dict[str, dict[str, float]] = {}
    symbols: dict[str, list[str]] = {}
    current: dict[str, float] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("fn="):
            raw = line[3:]
            name = canonical(raw)
            current = functions.setdefault(name, dict.fromkeys(events, 0.0))
            if raw not in symbols.setdefault(name, []):
                symbols[name].append(raw)
        elif line[:1].isdigit() and current is not None:
            counts = line.split()[1:]      # the line number first; missing counts are zeros
            for event, count in zip(events, counts):
                current[event] += float(count)
    if not events or "Ir" not in events:
        raise FlagsweepError(f"{where}: not a Cachegrind profile (no `events:` line with Ir)")
    return Profile("cachegrind", "Ir", events, functions, symbols)


def _unrecognised(stderr: str) -> str | None:
    """Valgrind's VEX does not decode every instruction: valgrind 3.19 (Debian 12) decodes none
    with the EVEX prefix (0x62) of AVX-512, which -march=native emits on an AVX-512 CPU. Said
    plainly, with the instruction's bytes and where it was, instead of valgrind's guesses."""
    found = re.search(r"unhandled instruction bytes: ((?:0x[0-9A-Fa-f]+ ?)+)", stderr)
    if not found and "Unrecognised instruction" not in stderr:
        return None
    raw = found.group(1).split() if found else []
    at = re.search(r"==\d+==\s+at 0x[0-9A-Fa-f]+: (\S+)", stderr)
    what = ("an AVX-512 instruction (EVEX prefix 0x62), which this valgrind does not implement"
            if raw[:1] == ["0x62"] else "an instruction valgrind does not implement")
    return (f"Cachegrind cannot run this binary: it executes {what}"
            + (f" ({' '.join(raw[:6])}...)" if raw else "")
            + (f" in {at.group(1)}" if at else "")
            + ". Explain it with perf on a machine with a PMU (--with perf), or compare a "
              "variant built for a -march valgrind runs (x86-64-v3)")


def cachegrind(argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float,
               out_file: Path) -> Profile:
    """One run of argv under Cachegrind with the cache and branch simulation, its profile kept
    in out_file (cg_annotate reads it; cg_diff compares two)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise FlagsweepError("valgrind not installed (--explain without a PMU uses Cachegrind): "
                             "apt-get install valgrind")
    out_file.parent.mkdir(parents=True, exist_ok=True)
    cmd = [valgrind, "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
           f"--cachegrind-out-file={out_file}", "--", *argv]
    try:
        res = process.run(cmd, env=env, cwd=cwd, timeout=timeout, guard=True)
    except process.TimeoutExpired:
        raise FlagsweepError(f"cachegrind run of {argv[0]} timed out after {timeout:g} s") from None
    if not res.ok:
        raise FlagsweepError(_unrecognised(res.stderr) or
                             f"cachegrind run of {' '.join(argv)} failed (exit "
                             f"{res.returncode}):\n{res.tail()}")
    try:
        text = out_file.read_text(errors="replace")
    except OSError as e:
        raise FlagsweepError(f"cachegrind wrote no profile to {out_file}: {e}") from None
    profile = parse_cachegrind(text, str(out_file))
    profile.path = str(out_file)
    return profile
