"""Tables on stdout, in the style of the run's verdicts table (flagsweep.report.formats.table:
rich, no box, bold headers, the title on the left)."""

from __future__ import annotations

import sys

import click
from rich.table import Table
from rich.text import Text


def echo(*things: Table | str) -> None:
    """Tables and plain lines on stdout, wide when it is not a terminal (so a piped or logged
    row is not wrapped) and without the padding rich leaves at the ends of lines."""
    from flagsweep.report import formats
    from flagsweep.screen import beneath

    console = formats.console(sys.stdout, None if sys.stdout.isatty() else 1000)
    with console.capture() as captured:
        for thing in things:
            console.print(thing, markup=not isinstance(thing, str))
    # Shown by the console already, and coloured on a terminal: written beneath the Screen.
    click.echo("\n".join(line.rstrip() for line in captured.get().splitlines()),
               file=beneath(sys.stdout))


def table(title: str | None, *columns: str, header: bool = True) -> Table:
    from flagsweep.report import formats

    t = formats.table(title, header=header)
    for name in columns:
        t.add_column(name, overflow="fold")
    return t


def add(t: Table, *cells: str) -> None:
    """A row of plain text: a flag set or a summary with [brackets] is not rich markup."""
    t.add_row(*(Text(c) for c in cells))
