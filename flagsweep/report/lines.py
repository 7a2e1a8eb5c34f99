"""Progress as plain lines, one per built variant and per completed round, when stderr is a
file, a pipe or a CI log (terminal.progress draws the live bar otherwise)."""

from __future__ import annotations

import sys
from typing import Callable


def plain() -> bool:
    """Progress as plain lines, not a live bar: stderr is a file, a pipe or a CI log, where a
    bar is not drawn and a long sweep would otherwise say nothing until its end."""
    return not sys.stderr.isatty()


def built_lines() -> Callable[[str, str, float | None, int, int], None] | None:
    """One line per variant whose build ended, when plain() (variants.build_all's on_built)."""
    if not plain():
        return None

    def line(variant_id: str, status: str, seconds: float | None, done: int, total: int) -> None:
        took = f" in {seconds:.1f} s" if seconds is not None else ""
        print(f"built {done}/{total}: {variant_id} {status}{took}", file=sys.stderr, flush=True)

    return line


def round_lines() -> Callable[[int, int, str], None] | None:
    """One line per completed round, with what the stopping rule says, when plain(); with a
    terminal the live bar of `progress` shows the rounds instead."""
    if not plain():
        return None

    def line(completed: int, most: int, rule: str) -> None:
        print(f"round {completed}/{most}: {rule}", file=sys.stderr, flush=True)

    return line
