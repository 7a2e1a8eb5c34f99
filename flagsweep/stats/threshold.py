"""The practical threshold: the smallest change that matters. It travels in percent, as the
command line and results.json write it (`threshold_pct`); the statistics work on ratios, so
this is the one place a percent becomes a fraction of 1."""

from __future__ import annotations

THRESHOLD_PCT = 1.0     # --threshold's default: a change below 1% does not matter


def fraction(threshold_pct: float) -> float:
    """The threshold as a fraction of 1: ratios within 1 -+ this are inside the band."""
    return threshold_pct / 100
