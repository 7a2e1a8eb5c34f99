"""How ratios and levels are written for people, the same everywhere."""

from __future__ import annotations

import math


def change_text(ratio: float, ci: tuple[float, float] | None = None) -> str:
    """How a ratio to the baseline is written for people, everywhere: "+3.2% [+1.0, +5.4]",
    the change in percent and its 95% interval in percentage points of the same change."""
    text = f"{(ratio - 1) * 100:+.1f}%"
    return f"{text} {ci_text(ci)}" if ci else text


def ci_text(ci: tuple[float, float] | None) -> str:
    """An interval of ratios as percent changes, "[+1.0, +5.4]"; "" without one."""
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f"[{(ci[0] - 1) * 100:+.1f}, {(ci[1] - 1) * 100:+.1f}]"


def level_text(level: float | None) -> str:
    """99.55% -> "99.5%": a level rounded down, so it never claims more than it is."""
    if level is None:
        return "adjusted"
    pct = math.floor(level * 1000 + 1e-9) / 10
    return f"{pct:g}%"
