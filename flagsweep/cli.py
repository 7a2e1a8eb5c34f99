"""The command line: thin commands over library functions that tests call directly."""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from . import __version__, build, cpu, matrix, recipe, target, toolchain
from .errors import FlagsweepError

REPORTS = Path(__file__).resolve().parent.parent / "reports"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="flagsweep")
@click.option("-v", "--verbose", count=True, help="More output (-v: steps, -vv: every command).")
def cli(verbose: int) -> None:
    """Which compiler flags actually matter for this program, on this CPU."""
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)]
    logging.basicConfig(level=level, format="%(name)s: %(message)s")


@cli.command("list")
def list_cmd() -> None:
    """List the shipped targets and recipes, one line each."""
    click.echo("targets:")
    for t in target.available():
        click.echo(f"  {t.name:<12} {t.spec.version:<8} {t.spec.summary}")
    click.echo("recipes:")
    for r in recipe.available():
        click.echo(f"  {r.name:<12} {r.spec.summary}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the description as JSON.")
@click.option("--compiler", "compilers", multiple=True, default=("gcc",), show_default=True,
              help="Compiler whose -march=native to resolve (repeatable).")
def cpus(as_json: bool, compilers: tuple[str, ...]) -> None:
    """This CPU: model, ISA features, -march=native, and the x86-64 levels it can run."""
    info = cpu.describe(cpu.read_host(), list(compilers))
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    click.echo(f"cpu:          {info['cpu_model']} ({info['vendor']}, family {info['family']}, "
               f"model {info['model']}, microcode {info['microcode'] or '?'})")
    click.echo(f"hypervisor:   {'yes' if info['hypervisor'] else 'no'}")
    for name, value in info["march_native"].items():
        click.echo(f"march=native: {value or 'unknown'} ({name})")
    for level in info["levels"]:
        mark = "yes" if level["runnable"] else "no, lacks " + ", ".join(level["missing"])
        click.echo(f"{level['level']:<13} {mark}")
    click.echo(f"features:     {' '.join(info['cpu_flags'])}")


@cli.command("build")
@click.argument("target_name", metavar="TARGET")
@click.option("--recipe", "recipe_name", help="Recipe name or path [default: olevels].")
@click.option("--flags", "flag_sets", multiple=True,
              help='A flag set to build, e.g. --flags "-O2 -march=native" (repeatable; '
                   "the first is the baseline). Replaces the recipe.")
@click.option("--compiler", "compilers", multiple=True,
              help="Compiler(s) to use instead of the recipe's (repeatable).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Parallel build jobs [default: number of CPUs].")
@click.option("--out", "out_dir", type=click.Path(path_type=Path),
              help="Output folder [default: reports/TARGET-TIMESTAMP].")
@click.option("--offline", is_flag=True, help="Use cached sources only; never download.")
@click.option("--source-dir", type=click.Path(path_type=Path),
              help="Use this unpacked source tree instead of fetching (air-gapped machines).")
@click.option("--json", "as_json", is_flag=True, help="Print the builds as JSON.")
def build_cmd(target_name, recipe_name, flag_sets, compilers, jobs, out_dir, offline, source_dir,
              as_json) -> None:
    """Fetch TARGET and build every variant of a recipe, audited and fingerprinted."""
    t = target.load(target_name)
    if flag_sets and recipe_name:
        raise click.UsageError("give --recipe or --flags, not both")
    r = (recipe.from_flags(list(flag_sets), list(compilers) or ["gcc"]) if flag_sets
         else recipe.load(recipe_name or "olevels"))
    m = matrix.expand(r, list(compilers) or None)
    out = out_dir or REPORTS / f"{t.name}-{_stamp()}"
    opts = build.Options(out_dir=out, jobs=jobs or _cpu_count(), offline=offline,
                         source_dir=source_dir)
    click.echo(f"building {t.name} {t.spec.version}: recipe {r.name}, {len(m.variants)} variants "
               f"({m.design}), {len(m.skipped)} skipped", err=True)
    builds = build.build_all(t, m, opts)
    out = out.resolve()
    doc = [{"id": b.variant.id, "compiler": b.variant.compiler, "flags": list(b.variant.flags),
            "factors": b.variant.factors, "build": b.contract(out)} for b in builds]
    summary = {"target": t.name, "recipe": r.name, "design": m.design, "baseline": m.baseline.id,
               "compilers": [toolchain.describe(toolchain.resolve(c))
                             for c in sorted({v.compiler for v in m.variants})],
               "variants": doc,
               "skipped": [{"id": s.variant.id, "flags": list(s.variant.flags), "reason": s.reason}
                           for s in m.skipped]}
    (out / "builds.json").write_text(json.dumps(summary, indent=2))
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        _print_table(builds, m)
    click.echo(str(out / "builds.json"))
    if any(b.status != "ok" for b in builds):
        sys.exit(1)


def _print_table(builds: list[build.VariantBuild], m: matrix.Matrix) -> None:
    rows = [("variant", "status", "flags ok", "code", "size", "secs", "flags")]
    for b in builds:
        code = (f"= {b.identical_to}" if b.identical_to else (b.code_sha256 or "-")[:12])
        rows.append((b.variant.id + (" *" if b.variant is m.baseline else ""), b.status,
                     "yes" if b.flags_verified else "no", code,
                     f"{b.size_bytes:,}" if b.size_bytes else "-",
                     f"{b.seconds:.1f}" if b.seconds is not None else "-",
                     " ".join(b.variant.flags) or "(none)"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    click.echo("* baseline;  code '= X': identical code to variant X, measured once")
    for s in m.skipped:
        click.echo(f"skipped {s.variant.id}: {s.reason}")
    for b in builds:
        if b.status != "ok":
            click.echo(f"\n{b.variant.id}: {b.status}\n{b.detail}")


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")


def _cpu_count() -> int:
    return len(os.sched_getaffinity(0))


def main() -> None:
    try:
        cli(standalone_mode=True)
    except FlagsweepError as e:
        click.echo(f"flagsweep: {e}", err=True)
        sys.exit(2)
