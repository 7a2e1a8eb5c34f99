"""Option types and shared options of the commands; click alone (and flagsweep.screen, which
is re alone), so `--help` stays light."""

from __future__ import annotations

import math
from pathlib import Path

import click

from flagsweep.screen import shown


class FiniteRange(click.FloatRange):
    """A FloatRange that refuses nan and inf too (nan passes every range comparison): no
    threshold, precision or budget is infinite or not a number, and results.json, strict JSON,
    could not hold one."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


# A threshold of 100% or more would ask "faster" for a time at or below zero.
THRESHOLD = FiniteRange(min=0.01, max=100, max_open=True)
SEED = click.IntRange(0, 2**63 - 1)     # numpy's generators take no negative seed


class Folder(click.Path):
    """A folder option: not an existing file, and not '' (Path('') is the current folder, so
    an empty --out would fill whatever folder the command was started in)."""

    def __init__(self):
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path is not a folder.", param, ctx)
        return super().convert(value, param, ctx)


def target_options(f):
    """The options `build` and `run` share, what to build and how: they arrive as the
    fields of a build.selection.Selection (see `selection`)."""
    options = [
        click.argument("target_name", metavar="TARGET", required=False),
        click.option("--recipe", "recipe_name", help="Recipe name or path [default: olevels]."),
        click.option("--flags", "flag_sets", multiple=True,
                     help='A flag set to build, e.g. --flags "-O2 -march=native" (repeatable; '
                          "the first is the baseline). Replaces the recipe."),
        click.option("--compiler", "compilers", multiple=True,
                     help="Compiler(s) to use instead of the recipe's (repeatable)."),
        click.option("--jobs", "-j", type=click.IntRange(1, 4096), default=None,
                     help="Parallel build jobs, 1 to 4096 (CMake takes no more than an int) "
                          "[default: number of CPUs]."),
        click.option("--out", "out_dir", type=Folder(),
                     help="Output folder [default: ./reports/TARGET-TIMESTAMP]."),
        click.option("--offline", is_flag=True, help="Use cached sources only; never download."),
        click.option("--source-dir", type=Folder(),
                     help="Use this unpacked source tree instead of fetching (air-gapped machines)."),
        click.option("--rebuild", is_flag=True,
                     help="Build every variant again, whatever the build cache holds."),
        click.option("--package-tests", is_flag=True,
                     help="Run the package's own test suite (ctest, make check, meson test) on "
                          "each variant's build; a target file's [build] tests runs always."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


SELECTION = ("target_name", "recipe_name", "flag_sets", "compilers", "jobs", "out_dir", "offline",
             "source_dir", "rebuild")


def selection(kw: dict):
    """The target_options of a command's keyword arguments as a build.selection.Selection; the usage
    errors among them said as click's."""
    from flagsweep.compilation import selection as chosen

    if kw["flag_sets"] and kw["recipe_name"]:
        raise click.UsageError("give --recipe or --flags, not both")
    return chosen.Selection(**{name: kw[name] for name in SELECTION},
                            package_tests=kw["package_tests"])


def say(text: str) -> None:
    """A message for the user: stderr, so that stdout holds only results (paths, JSON). Shown
    here as well as by main's Screen: while rich's live bar is drawn, stderr is rich's, which
    would read an escape sequence in the text as a colour, and click drops one from a line
    that is not for a terminal; written out, the line reads the same everywhere."""
    click.echo(shown(text), err=True)


def given(ctx: click.Context, allowed: tuple[str, ...]) -> list[str]:
    """The arguments and options given on the command line, but those named in `allowed`
    (parameter names), as the user spells them: --out and --budget, not the parameters'
    names out_dir and budget_s, which are no options anyone could type."""
    return [p.opts[0] if isinstance(p, click.Option) else p.human_readable_name
            for p in ctx.command.params if p.name not in allowed
            and ctx.get_parameter_source(p.name) == click.core.ParameterSource.COMMANDLINE]
