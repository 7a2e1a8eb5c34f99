"""The distro report's page and CSV, drawn from across/distro.py's table: what each change did
to each package, and across them, for the people who decide a distribution's flags.

distro.html (page.write_distro, the suite page's style) and distro.csv, one row per package x
change, for the spreadsheet it will be pasted into. The CSV is RFC 4180 (the csv module:
quoted where needed, CRLF), and since package names, versions, flags and errors are anyone's
data, a text cell that a spreadsheet would read as a formula is written with a leading quote
(OWASP, "CSV Injection").
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from flagsweep import stats
from flagsweep.across.distro import DistroChange, DistroRow, DistroTable
from flagsweep.report.formats import duration, pct, pct_pair, signed_pct
from flagsweep.report.heatmap import HeatCell, heat_cell
from flagsweep.report.variants import link

CSV_COLUMNS = ("package", "target_version", "change", "compiler", "flags", "ratio", "ci_low",
               "ci_high", "verdict", "text_size_ratio", "build_cpu_ratio", "tests", "note")
# What a spreadsheet takes for the start of a formula (=, +, -, @) or, after a tab or carriage
# return it skips, for one too.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
BROKEN_COLOR = "rgba(207,34,46,0.18)"


@dataclass
class PackageCell:
    heat: HeatCell
    costs: str                   # "text +1.2%, build +3.0%"
    tests: str                   # its own tests on this build
    why: str                     # broken, not measured or absent: why (the hover)


@dataclass
class PackageLine:
    name: str
    href: str | None             # its sweep's page
    version: str
    tests: str                   # its own tests on the baseline's build
    cells: list[PackageCell]


@dataclass
class ChangeLine:
    label: str
    mean: HeatCell               # pick's geometric mean and its interval
    shares: list[str]            # faster, equivalent, slower, undecided, broken: "2 (50%)"
    spread: str                  # smallest / median / largest
    size: str
    build_cpu: str
    note: str
    chosen: bool


def changes(t: DistroTable) -> list[ChangeLine]:
    """The across-packages table, a row per change in the recipe's order."""
    return [ChangeLine(c.change, heat_cell(pct(c.ratio), pct_pair(c.ci95), _mean_verdict(c)),
                       _shares(c), _spread(c), _signed(c.size_ratio), _signed(c.build_cpu_ratio),
                       c.note, c is t.chosen)
            for c in t.changes]


def packages(t: DistroTable, out: Path) -> list[PackageLine]:
    """The package x change table: a line per measured package, a cell per change."""
    by_package: dict[str, list[DistroRow]] = {}
    for r in t.rows:
        by_package.setdefault(r.package, []).append(r)
    lines = []
    for p in t.packages:
        if p.name not in by_package or p.results is None:
            continue
        folder = p.results.parent
        lines.append(PackageLine(p.name, link(folder / "index.html", out, folder), p.version,
                                 p.baseline_tests, [_cell(r) for r in by_package[p.name]]))
    return lines


def headline(t: DistroTable) -> str:
    """Pick's decision, and the package where the chosen set does worst."""
    c = t.chosen
    if c is None or c.worst is None:
        return t.why + "."
    return (f"{t.why}. Its worst package: {c.worst.program} "
            f"{stats.change_text(c.worst.ratio, c.worst.ci95)} ({c.worst.verdict}).")


def csv_text(t: DistroTable) -> str:
    """distro.csv: the header, then a row per package x change."""
    with io.StringIO(newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in t.rows:
            low, high = r.ci95 or (None, None)
            w.writerow([spreadsheet_text(x) for x in (
                r.package, r.version, r.change, r.compiler, " ".join(r.flags), _number(r.ratio),
                _number(low), _number(high), r.verdict, _number(r.size_ratio),
                _number(r.build_cpu_ratio), r.tests, r.why)])
        return f.getvalue()


def spreadsheet_text(text: str) -> str:
    """A cell as a spreadsheet shows it, never runs it: a leading quote before a formula's
    start."""
    return "'" + text if text.startswith(FORMULA_START) else text


def cost_lines(t: DistroTable) -> list[tuple[str, str, str, str, str]]:
    """Each package's campaign costs (name, Debian package, status, generate, sweep), then
    the total."""
    return [*((p.name, p.package, p.status, duration(p.generate_seconds),
               duration(p.sweep_seconds)) for p in t.packages),
            ("total", "", "", duration(t.total("generate_seconds")),
             duration(t.total("sweep_seconds")))]


def _cell(r: DistroRow) -> PackageCell:
    heat = heat_cell(pct(r.ratio), pct_pair(r.ci95), r.verdict)
    if r.verdict == "broken":
        heat.color = BROKEN_COLOR
    costs = ", ".join(x for x in (f"text {_signed(r.size_ratio)}" if r.size_ratio else "",
                                  f"build {_signed(r.build_cpu_ratio)}" if r.build_cpu_ratio
                                  else "") if x)
    return PackageCell(heat, costs, "" if r.tests == "absent" else f"tests {r.tests}", r.why)


def _mean_verdict(c: DistroChange) -> str:
    """The pooled cell has no verdict of its own (pick's choice adjusts its interval for
    choosing among the changes; the shares say how the packages' own verdicts fell)."""
    return "not-measured" if c.ratio is None else "pooled"


def _shares(c: DistroChange) -> list[str]:
    s = c.skew
    return [f"{n} ({100 * n / c.packages:.0f}%)" if c.packages else str(n)
            for n in (s.faster, s.equivalent, s.slower, s.undecided, len(c.broken))]


def _spread(c: DistroChange) -> str:
    if c.spread is None:
        return ""
    return " / ".join(f"{pct(x):+.1f}" for x in c.spread) + "%"


def _signed(ratio: float | None) -> str:
    return "" if ratio is None else signed_pct(pct(ratio))


def _number(x: float | None) -> str:
    return "" if x is None else f"{x:.4f}"
