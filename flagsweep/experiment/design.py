"""Screening designs: which variants a screen builds."""

from __future__ import annotations

from pyDOE3 import pbdesign


def plackett_burman_rows(flags: list[str]) -> list[list[bool]]:
    """Plackett-Burman design rows for k on/off flags (True = flag on).

    pyDOE3.pbdesign(k) gives N = the next multiple of 4 above k runs (12 for 8..11 flags), each
    column balanced and every pair of columns orthogonal (Plackett & Burman, "The design of
    optimum multifactorial experiments", Biometrika 1946). Deterministic: the same flags give the
    same rows, so a resumed or repeated screen builds the same variants.
    """
    if not flags:
        raise ValueError("a Plackett-Burman design needs at least one flag")
    if len(set(flags)) != len(flags):
        raise ValueError(f"flags repeat: {flags}")
    return [[bool(x > 0) for x in row] for row in pbdesign(len(flags))]
