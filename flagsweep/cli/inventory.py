"""What is here: the shipped targets and recipes, this CPU, this machine's noise settings."""

from __future__ import annotations

import json
from dataclasses import asdict

import click


@click.command("list")
def list_cmd() -> None:
    """List the targets and recipes, one line each: the shipped ones, then the user's own
    (in $XDG_CONFIG_HOME/flagsweep, default ~/.config/flagsweep)."""
    from flagsweep import shipped
    from flagsweep.cli import show
    from flagsweep.experiment import recipe, target

    targets = show.table("targets", "name", "version", "summary", "from")
    for e in shipped.targets(target.TARGETS_DIR):
        cells = _described(e, lambda: target.load(str(e.path)),
                           lambda t: (t.spec.version, t.spec.summary))
        show.add(targets, e.name, *cells, _origin(e))
    recipes = show.table("recipes", "name", "summary", "from")
    for e in shipped.recipes(recipe.RECIPES_DIR):
        cells = _described(e, lambda: recipe.load(str(e.path)), lambda r: (r.spec.summary,))
        show.add(recipes, e.name, *cells, _origin(e))
    show.echo(targets, recipes)


def _described(entry, load, describe) -> tuple[str, ...]:
    """A target's or recipe's cells; a user's that does not load is listed as invalid (a
    shipped one that does not load is flagsweep's bug, and raises)."""
    from flagsweep.errors import FlagsweepError

    try:
        return describe(load())
    except FlagsweepError as e:
        if entry.origin == "shipped":
            raise
        # One line: the file is in the "from" column; its first problem says what is wrong.
        problems = str(e).removeprefix(f"{entry.path}: ").split("; ")
        why = problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
        return ("invalid", why) if entry.path.name == "target.toml" else (f"invalid: {why}",)


def _origin(entry) -> str:
    if entry.origin == "shipped":
        return "shipped"
    note = "; not used by name, a shipped one has it" if entry.shadowed else ""
    return f"user: {entry.path}{note}"


@click.command("cpus")
@click.option("--json", "as_json", is_flag=True, help="Print the description as JSON.")
@click.option("--compiler", "compilers", multiple=True, default=("gcc",), show_default=True,
              help="Compiler whose -march=native to resolve (repeatable).")
def cpus_cmd(as_json: bool, compilers: tuple[str, ...]) -> None:
    """This CPU: model, ISA features, -march=native, and the x86-64 levels it can run."""
    from flagsweep.cli import show
    from flagsweep.host import cpu, recorded

    info = cpu.describe(cpu.read_host(), list(compilers))
    if as_json:
        click.echo(json.dumps(info.dump(), indent=2))
        return
    t = show.table(None, "what", "value", header=False)
    recording = recorded.active()
    if recording is not None:   # a recording is not this CPU: say so before anything else
        show.add(t, "recorded host", f"{recording.folder} ($FLAGSWEEP_HOST), not this machine")
    show.add(t, "cpu", f"{info.cpu_model} ({info.vendor}, family {info.family}, "
                     f"model {info.model}, microcode {info.microcode or '?'})")
    show.add(t, "hypervisor", "yes" if info.hypervisor else "no")
    for name, value in info.march_native.items():
        show.add(t, f"march=native ({name})", value or "unknown")
    for level in info.levels:
        show.add(t, level.level, "yes" if level.runnable
                  else "no, lacks " + ", ".join(level.missing))
    show.add(t, "features", " ".join(info.cpu_flags))
    show.echo(t)


@click.command("system")
@click.option("--tune", is_flag=True, help="Apply the quieter settings (root); remembered for --reset.")
@click.option("--reset", "reset_", is_flag=True, help="Undo what --tune changed.")
@click.option("--json", "as_json", is_flag=True, help="Print the machine state as JSON.")
def system_cmd(tune, reset_, as_json) -> None:
    """What affects measurement noise on this machine, with advice (like pyperf system), and
    what runs: each CPU's load and the busiest processes over half a second."""
    from flagsweep.cli import show
    from flagsweep.host import advice, placement, system

    if tune and reset_:
        raise click.UsageError("give --tune or --reset, not both")
    if tune or reset_:
        for line in (system.tune() if tune else system.reset()):
            click.echo(line)
        return
    choice = placement.default()
    machine = {**system.machine_state(["gcc"]), "cpu_choice": choice.doc()}
    state = {**machine, "busiest": [asdict(p) for p in choice.measured.busiest]}
    if as_json:
        click.echo(json.dumps(state, indent=2))
        return
    t = show.table(None, "setting", "value", "advice")
    for item in system.show():
        show.add(t, item.name, str(item.value) if item.value is not None else "n/a",
                  item.advice or "")
    would = "a sweep would measure on" + choice.why.removeprefix("measuring on")
    show.echo(t, _cpu_table(choice), _process_table(choice), would,
              *(f"warning: {warning}" for warning in advice.warnings(machine)))


def _cpu_table(choice):
    """Each CPU's load over the window, and what a sweep would make of it."""
    from flagsweep.cli import show
    from flagsweep.model import CpuChoice

    t = show.table(f"CPU load over {choice.measured.seconds:.2g} s:", "cpu", "idle", "runnable",
                   "pinned", "note")
    for row in CpuChoice.model_validate(choice.doc()).cpus or []:
        idle = f"{row.idle_pct:.0f}%" if row.idle_pct is not None else "?"
        note = [*(["isolated"] if row.isolated else []),
                *([f"held by another sweep ({row.held_by})"] if row.held_by else [])]
        show.add(t, str(row.cpu), idle, str(row.runnable), str(row.pinned), ", ".join(note))
    return t


def _process_table(choice):
    """The processes that used most CPU over the window."""
    from flagsweep.cli import show

    t = show.table("busiest processes:", "pid", "name", "cpu share", "last on CPU")
    for p in choice.measured.busiest:
        show.add(t, str(p.pid), p.name, f"{p.cpu_pct:.0f}%", str(p.cpu))
    return t


@click.command("cache")
@click.option("--clear", is_flag=True, help="Empty every cache (each fills again when needed).")
def cache_cmd(clear: bool) -> None:
    """flagsweep's caches: each one's entries, size and limit. Past its limit a cache drops its
    least recently used entries; FLAGSWEEP_<NAME>_CACHE_MB sets one (the build cache's is
    $FLAGSWEEP_BUILD_CACHE_MB, default 2048). The build cache keeps verified variant builds by
    the key of everything that decides their binary, reused instead of built again."""
    from flagsweep import caches, files
    from flagsweep.cli import show

    if clear:
        for cache in caches.ALL:
            click.echo(f"{cache.name} cache {cache.folder()}: {cache.clear()} {cache.holds} "
                       "removed")
        return
    t = show.table(f"caches in {files.cache_dir()}:", "cache", "entries", "size", "limit",
                   "folder")
    for cache in caches.ALL:
        entries, size = cache.usage()
        show.add(t, cache.name, f"{entries} {cache.holds}", f"{size / 1e6:.1f} MB",
                 _limit(cache), str(cache.folder()))
    show.echo(t)


def _limit(cache) -> str:
    limit = cache.limit_mb()
    return f"{limit:g} MB" if limit is not None else f"none: {cache.why_unbounded}"
