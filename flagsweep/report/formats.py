"""How the report writes what it shows: the verdicts' names and colours, numbers (a signed
change, an interval, a p-value, a column of medians) in one format wherever they appear, and
the terminal's tables in one style."""

from __future__ import annotations

import math
from typing import TextIO

from rich.console import Console, ConsoleOptions, RenderableType, RenderHook, RenderResult
from rich.segment import Segment
from rich.table import Table

from flagsweep import stats
from flagsweep.screen import beneath, shown

VERDICTS = ("faster", "slower", "equivalent", "inconclusive", "identical-code", "not-measured")
# One colour per verdict, shared by the page's badges and the plots' markers.
BASELINE_COLOR = "#0969da"     # the baseline, and what is drawn against it (plots' zero line)
COLORS = {"faster": "#1a7f37", "slower": "#cf222e", "equivalent": "#57606a",
          "inconclusive": "#bf8700", "identical-code": "#8250df", "not-measured": "#24292f",
          "baseline": BASELINE_COLOR, "faster-luck": "#6f9f7b", "slower-luck": "#c27c80"}
VERDICT_TEXT = {"faster": "faster", "slower": "slower", "equivalent": "no difference",
                "inconclusive": "inconclusive", "identical-code": "identical code",
                "not-measured": "not measured", "baseline": "baseline",
                "faster-luck": "faster (one layout, within layout luck)",
                "slower-luck": "slower (one layout, within layout luck)"}
# How a faster or slower row that layout luck could give, and that no comparison over layouts
# confirmed, is shown: its own badge, counted and listed apart (results.confirmation).
LUCK_SUFFIX = "-luck"
SHOWN = ("faster", "slower", "faster-luck", "slower-luck", "equivalent", "inconclusive",
         "identical-code", "not-measured")
UNITS = {"wall_s": "s", "cpu_s": "s", "user_s": "s", "sys_s": "s", "cycles": "cycles",
         "instructions": "instructions"}


def table(title: str | None, header: bool = True) -> Table:
    """An empty table in flagsweep's style: no box, bold headers, the title on the left. Kept
    here, beside the other formats, because a command that only lists (list, cpus, cache) must
    not load the statistics and the store that the terminal's reports import."""
    return Table(title=title, title_justify="left", header_style="bold", box=None,
                 pad_edge=False, show_header=header)


def console(stream: TextIO, width: int | None) -> Console:
    """A rich console on stream (beneath flagsweep's Screen) for every table and line the
    terminal shows: rich leaves ESC and C1 in a string as they are, so each thing printed has
    its text's control characters shown (ShownText), and rich's own colours are the only
    escapes that reach the terminal."""
    out = Console(file=beneath(stream), width=width, highlight=False)
    out.push_render_hook(ShownText())
    return out


class ShownText(RenderHook):
    """Each renderable printed, drawn as it would be, its text then shown (screen.shown); the
    segments rich emits to move the cursor (a live display's) pass as they are."""

    def process_renderables(self, renderables: list) -> list:
        return [_Shown(r) for r in renderables]


class _Shown:
    def __init__(self, inner: RenderableType):
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for s in console.render(self.inner, options):
            yield s if s.control else Segment(shown(s.text), s.style)


def threshold(value: float | None) -> float:
    """The threshold a document was judged by, in percent (older documents lack it)."""
    return stats.THRESHOLD_PCT if value is None else value


def pct(ratio: float | None) -> float | None:
    return (ratio - 1) * 100 if ratio is not None else None


def pct_pair(ci) -> tuple[float, float] | None:
    return ((ci[0] - 1) * 100, (ci[1] - 1) * 100) if ci else None


def signed_pct(pct: float) -> str:
    return f"{pct:+.1f}%" if abs(pct) >= 0.05 else "0.0%"


def ci_pct_text(ci) -> str:
    return stats.ci_text(ci)


def p_text(p: float | None) -> str:
    if p is None:
        return ""
    return "<0.0001" if p < 1e-4 else f"{p:.2g}"


def column(values: list[float | None]) -> list[str]:
    """Numbers that are read down a column, with one number of decimals: four significant
    digits for the smallest (0.321 and 0.3206 become 0.3210 and 0.3206) less the trailing zeros
    every row shares; whole numbers whole, grouped; never in exponent form."""
    present = [abs(x) for x in values if x is not None]
    if not present or all(float(x).is_integer() for x in present):
        return [number(x) for x in values]
    smallest = min((x for x in present if x), default=1.0)
    digits = max(0, 3 - math.floor(math.log10(smallest)))
    while digits and all(f"{x:.{digits}f}".endswith("0") for x in values if x is not None):
        digits -= 1     # zeros every row would end in say nothing
    return ["" if x is None else f"{x:,.{digits}f}" for x in values]


def number(x: float | None) -> str:
    """At most four significant digits, never in exponent form (a peak RSS of 10810 KiB is 10,810, not
    1.081e+04 beside rows of plain integers); whole numbers whole."""
    if x is None:
        return ""
    if float(x).is_integer():
        return f"{int(x):,}"
    digits = max(0, 3 - math.floor(math.log10(abs(x))))
    text = f"{x:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def times100(x: float | None) -> float | None:
    return None if x is None else x * 100


def names(ids: list[str]) -> str:
    """A list of ids in a sentence: the first six, then how many more."""
    return ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")


def duration(seconds: float | None) -> str:
    """A span of wall time as people read it: 42 s, 12 min, 3.4 h."""
    if seconds is None:
        return ""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
