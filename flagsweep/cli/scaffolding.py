"""`flagsweep new`: a commented target file for a program flagsweep does not ship."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from flagsweep.cli.params import say


@click.command("new")
@click.argument("name")
@click.option("--debian", "package", metavar="PACKAGE",
              help="Debian source package to take the program from (its newest version here).")
@click.option("--version", "version", metavar="DEBIAN_VERSION",
              help="That Debian version instead of the newest.")
@click.option("--url", metavar="URL", help="The upstream tarball's URL, tried before Debian.")
@click.option("--run", "run_line", metavar="COMMAND",
              help="The run command, if you know it: '{binary} -9 -c {input}' (it is run once "
                   "after the trial build, and the input is sized for it).")
@click.option("--input", "given", metavar="FILE", type=click.Path(path_type=Path),
              help="Your input (a script, an image, a corpus), copied next to target.toml with "
                   "its sha256 and measured whole, instead of a generated corpus.")
@click.option("--size", "size", is_flag=True,
              help="Size NAME's corpus input by timing its own run command at -O2 (after you "
                   "wrote it), and rewrite the sizes in its file.")
@click.option("--binary", metavar="NAME",
              help="The executable to measure, by name or path in the build tree (else the "
                   "one the trial build made named like the package, or the largest).")
@click.option("--force", is_flag=True,
              help="Redo NAME: remove the target file, trial builds and input an earlier "
                   "`new` wrote there first.")
@click.option("--no-build-deps", "no_build_deps", is_flag=True,
              help="Leave the package's Build-Depends alone (else, as root, the missing ones are "
                   "installed with apt-get; not as root, the command is named).")
@click.option("--no-patches", "no_patches", is_flag=True,
              help="Build the orig tarball as upstream released it (else Debian's patches, "
                   "where its Debian part has a debian/patches/series, are applied).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Parallel compile jobs.")
def new_cmd(name, package, version, url, run_line, given, size, binary, force, no_build_deps,
            no_patches, jobs) -> None:
    """Write ./NAME/target.toml for Debian's source PACKAGE: the release and its sha256, the
    build system, the executable and the flags the project adds itself, learned from a trial
    -O2 build; and an input sized by a timed run (or your own, --input), on which the run
    command (--run) is tried once. You then write the run command and check."""
    from flagsweep.jobs import scaffold
    from flagsweep.compilation import selection

    jobs = jobs or selection.cpu_count()
    if size:
        if package or version or url or run_line or given or binary or force or no_build_deps \
                or no_patches:
            raise click.UsageError("--size re-times an existing target: no --debian, --version, "
                                   "--url, --run, --input, --binary, --force, "
                                   "--no-build-deps or --no-patches")
        click.echo(str(scaffold.resize(name, say, jobs)))
        return
    if not package:
        raise click.UsageError("--debian PACKAGE: which Debian source package holds the program")
    argv = shlex.split(run_line) if run_line else None
    path = scaffold.new(name, package, Path(name), say, version=version, url=url, jobs=jobs,
                        argv=argv, given=given, binary=binary, force=force,
                        build_deps=not no_build_deps, patched=not no_patches)
    todo = ("check its [check]" if argv else
            "write its [run] argv and [check]" if given else
            f"write its [run] argv and [check], then `flagsweep new --size {name}`")
    say(f"wrote {path}: {todo}, then `flagsweep run ./{name} --recipe olevels --quick`")
    click.echo(str(path))
