"""The command line: thin click commands over library functions that tests call directly.

The group names every command but imports none: a command's module (and so statsmodels,
matplotlib, SQLAlchemy behind it) is imported when that command runs, so `flagsweep --help`,
`list` and `cpus` start in a fraction of a second. The command modules themselves import only
click at the top; `--help` loads them all for their one-line help.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys

import click

from flagsweep import __version__
from flagsweep.errors import FlagsweepError
from flagsweep.screen import Screen, shown

# Command name -> "module:function" of its click command.
COMMANDS = {
    "list": "flagsweep.cli.inventory:list_cmd",
    "cpus": "flagsweep.cli.inventory:cpus_cmd",
    "system": "flagsweep.cli.inventory:system_cmd",
    "new": "flagsweep.cli.scaffolding:new_cmd",
    "cache": "flagsweep.cli.inventory:cache_cmd",
    "build": "flagsweep.cli.sweeping:build_cmd",
    "run": "flagsweep.cli.sweeping:run_cmd",
    "campaign": "flagsweep.cli.sweeping:campaign_cmd",
    "calibrate": "flagsweep.cli.sweeping:calibrate_cmd",
    "worker": "flagsweep.cli.sweeping:worker_cmd",
    "tune": "flagsweep.cli.tuning:tune_cmd",
    "report": "flagsweep.cli.reading:report_cmd",
    "explain": "flagsweep.cli.reading:explain_cmd",
    "compare": "flagsweep.cli.reading:compare_cmd",
    "suite": "flagsweep.cli.reading:suite_cmd",
    "history": "flagsweep.cli.reading:history_cmd",
    "dashboard": "flagsweep.cli.reading:dashboard_cmd",
    "merge": "flagsweep.cli.reading:merge_cmd",
    "pick": "flagsweep.cli.reading:pick_cmd",
    "distro": "flagsweep.cli.reading:distro_cmd",
    "schema": "flagsweep.cli.reading:schema_cmd",
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (click's documented lazy-loading
    pattern)."""

    def __init__(self, *args, lazy: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.lazy:
            return super().get_command(ctx, name)
        module, attr = self.lazy[name].split(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="flagsweep")
@click.option("-v", "--verbose", count=True, help="More output (-v: steps, -vv: every command).")
@click.option("--db", metavar="URL", help="The store: an SQLAlchemy URL, e.g. postgresql://host/db "
              "[default: $FLAGSWEEP_DB, else an SQLite file]; see docs/store.md.")
def cli(verbose: int, db: str | None) -> None:
    """Which compiler flags actually matter for this program, on this CPU."""
    if db:
        os.environ["FLAGSWEEP_DB"] = db      # every Store() of this command, and its children
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)]
    logging.basicConfig(level=level, format="%(name)s: %(message)s")


def main() -> None:
    # What a command prints may quote data (a variant id, a lock's holder, a store row), as
    # may click's usage errors, log lines and tracebacks: all of it is shown, never obeyed.
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Screen(sys.stdout), Screen(sys.stderr)
    try:
        _command()
    except SystemExit:      # how every command ends; a traceback is printed through the Screens
        sys.stdout, sys.stderr = streams
        raise


def _command() -> None:
    try:
        cli(standalone_mode=True)
    except FlagsweepError as e:
        # Shown before click sees it: click would drop a colour-like sequence from a line for
        # a file and keep it for a terminal; written out, the line reads the same in both.
        click.echo(shown(f"flagsweep: {e}"), err=True)
        sys.exit(2)
    except OSError as e:
        from flagsweep import files

        # The machine's state (a folder replaced by a file, a full disk, a permission) is the
        # user's to fix, so it is said in one line; -vv logs where it happened.
        logging.getLogger("flagsweep").debug("stopped by", exc_info=True)
        where = f"{e.filename}: " if e.filename else ""
        click.echo(shown(f"flagsweep: {where}{files.reason(e)}{_whose(e.filename)}"), err=True)
        sys.exit(2)


def _whose(filename) -> str:
    """Which of flagsweep's own folders a failing path is in (or on the way to), and the
    variable that moves it: '/root/.cache: Read-only file system' alone says neither."""
    if not filename:
        return ""
    from pathlib import Path

    from flagsweep import files, shipped

    path = Path(os.fsdecode(filename)).absolute()
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local/share") / "flagsweep"
    folders = [(files.cache_dir(), "flagsweep's cache; FLAGSWEEP_CACHE or XDG_CACHE_HOME move it"),
               (data, "the store's folder; FLAGSWEEP_DB or --db choose another store, "
                      "XDG_DATA_HOME moves this folder"),
               (shipped.user_dir(), "flagsweep's own targets and recipes; XDG_CONFIG_HOME "
                                    "moves them")]
    for folder, what in folders:
        folder = folder.absolute()
        if path == folder or folder in path.parents or (path in folder.parents
                                                         and path != Path(path.anchor)):
            return f" ({folder} is {what})"
    return ""
