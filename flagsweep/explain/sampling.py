"""With a PMU: `perf record` of cycles, repeated, read back with `perf report`.

Each record samples the workload's cycles once; `perf report --stdio --no-children -F
overhead,period,sample,sym --field-separator=,` gives one row per symbol (`35.48% , 5500000 ,
11 ,[.] work.constprop.0`) under a header that names the event and the sample count. A
function's cost is its period (cycles) averaged over the records; its share of the cycles has
an interval from the records' spread.

The interval is Student's t over the R records' shares (mean +- t(0.975, R-1) s / sqrt R): each
record is one independent run of the program. A binomial interval on the pooled samples would
treat every sample as independent, which periodic sampling of one run is not (the samples of a
loop are correlated), and would come out too narrow.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from flagsweep import process, stats
from flagsweep.errors import FlagsweepError
from flagsweep.explain.profile import Profile
from flagsweep.explain.symbols import canonical

REPEATS = 5
EVENT = "cycles"
KERNEL = "[kernel]"        # every kernel symbol: the same kernel under every variant
_SAMPLES = re.compile(r"^# Samples: (\d+)\S*\s+of event '([^']+)'")
_UNKNOWN = re.compile(r"^(?:0x[0-9a-f]+|\[unknown\])$")


@dataclass
class PerfReport:
    """One `perf report` of one record."""

    event: str
    samples: int                     # the header's sample count
    periods: dict[str, float]        # function -> cycles (period) in this record
    sample_counts: dict[str, int]
    symbols: dict[str, list[str]]
    unknown_samples: int             # samples in no known symbol (stripped code, JIT, ...)


def parse_report(text: str, where: str = "perf report output") -> PerfReport:
    event, samples = None, None
    periods: dict[str, float] = {}
    counts: dict[str, int] = {}
    symbols: dict[str, list[str]] = {}
    unknown = 0
    for line in text.splitlines():
        header = _SAMPLES.match(line)
        if header:
            samples, event = int(header.group(1)), header.group(2)
        if not line.strip() or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",", 3)]
        if len(fields) < 4 or not fields[0].endswith("%"):
            raise FlagsweepError(f"{where}: unexpected row {line.strip()!r}; expected "
                                 "`overhead%, period, samples, [.] symbol` (perf report -F "
                                 "overhead,period,sample,sym --field-separator=,)")
        period, n, sym = float(fields[1]), int(fields[2]), fields[3]
        name = _function(sym)
        if name is None:
            unknown += n
            name = sym.split("] ", 1)[-1]
        periods[name] = periods.get(name, 0.0) + period
        counts[name] = counts.get(name, 0) + n
        symbols.setdefault(name, []).append(sym.split("] ", 1)[-1])
    if event is None:
        raise FlagsweepError(f"{where}: no `# Samples: N of event 'E'` header; expected perf "
                             "report --stdio output")
    return PerfReport(event, samples, periods, counts, symbols, unknown)


def _function(sym: str) -> str | None:
    """`[.] foo.constprop.0` -> foo; `[k] x` -> the kernel; an address -> None (unknown)."""
    kind, _, name = sym.partition("] ")
    if kind == "[k":
        return KERNEL
    return None if _UNKNOWN.match(name.strip()) else canonical(name)


def combine(reports: list[PerfReport]) -> Profile:
    """The profile of R records: mean cycles per function, each function's share with its
    t interval, the mean sample count and the share of samples in unknown symbols."""
    if not reports:
        raise FlagsweepError("perf record gave no report")
    names = sorted({n for r in reports for n in r.periods})
    totals = [sum(r.periods.values()) for r in reports]
    functions = {n: {EVENT: _mean([r.periods.get(n, 0.0) for r in reports]),
                     "samples": _mean([r.sample_counts.get(n, 0) for r in reports])}
                 for n in names}
    share_ci = {}
    for n in names:
        shares = [r.periods.get(n, 0.0) / t if t else 0.0 for r, t in zip(reports, totals)]
        ci = stats.mean_interval(shares)
        if ci:
            share_ci[n] = max(0.0, ci[0]), min(1.0, ci[1])      # a share lies in [0, 1]
    symbols: dict[str, list[str]] = {}
    for r in reports:
        for n, syms in r.symbols.items():
            symbols.setdefault(n, [])
            symbols[n] += [s for s in syms if s not in symbols[n]]
    unknown = _mean([r.unknown_samples / r.samples if r.samples else 0.0 for r in reports])
    return Profile("perf", EVENT, [EVENT, "samples"], functions, symbols,
                   samples=round(_mean([r.samples for r in reports])), unknown_share=unknown,
                   share_ci=share_ci)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def record(argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float,
           out_stem: Path, repeats: int = REPEATS) -> Profile:
    """`perf record -e cycles` of argv, `repeats` times, each read back by perf report."""
    perf = shutil.which("perf")
    if perf is None:
        raise FlagsweepError("perf not installed (--explain with a PMU samples with perf record)")
    reports = []
    for i in range(repeats):
        data = out_stem.with_name(f"{out_stem.name}.{i}.data")
        _perf([perf, "record", "-e", EVENT, "-q", "-o", str(data), "--", *argv], env, cwd, timeout)
        text = _perf([perf, "report", "-i", str(data), "--stdio", "--no-children", "-F",
                      "overhead,period,sample,sym", "--field-separator=,"], env, cwd, timeout)
        reports.append(parse_report(text, f"perf report -i {data}"))
        if reports[-1].event != EVENT:
            raise FlagsweepError(f"perf record sampled {reports[-1].event!r}, not {EVENT} "
                                 "(no PMU here?); --explain-with cachegrind counts instructions")
    profile = combine(reports)
    profile.path = str(out_stem.with_name(f"{out_stem.name}.0.data"))
    return profile


def _perf(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> str:
    try:
        res = process.run(cmd, env=env, cwd=cwd, timeout=timeout, guard=True)
    except process.TimeoutExpired:
        raise FlagsweepError(f"{' '.join(cmd[:2])} timed out after {timeout:g} s") from None
    if not res.ok:
        raise FlagsweepError(f"{' '.join(cmd)} failed (exit {res.returncode}):\n{res.tail()}")
    return res.stdout
