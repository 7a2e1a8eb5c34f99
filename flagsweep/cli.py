"""The command line: thin commands over library functions that tests call directly."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import click

from . import __version__, build, calibration, cpu, files, fleet, history, matrix, merge, recipe, report, results, shipped, store, suite, sweep, system, target
from . import pick as pick_mod
from .report import terminal
from .errors import FlagsweepError, Interrupted

REPORTS = shipped.REPORTS


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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


@cli.command("list")
def list_cmd() -> None:
    """List the targets and recipes, one line each: the shipped ones, then the user's own
    (in $XDG_CONFIG_HOME/flagsweep, default ~/.config/flagsweep)."""
    click.echo("targets:")
    for e in shipped.targets(target.TARGETS_DIR):
        click.echo(_list_line(e, lambda: target.load(str(e.path)),
                              lambda t: f"{t.spec.version:<8} {t.spec.summary}"))
    click.echo("recipes:")
    for e in shipped.recipes(recipe.RECIPES_DIR):
        click.echo(_list_line(e, lambda: recipe.load(str(e.path)), lambda r: r.spec.summary))


def _list_line(entry: shipped.Entry, load, describe) -> str:
    """One target or recipe; a user's is marked with its path, and listed even if invalid."""
    try:
        text = describe(load())
    except FlagsweepError as e:
        if entry.origin == "shipped":
            raise
        text = f"invalid: {e}"
    if entry.origin == "shipped":
        return f"  {entry.name:<12} {text}"
    note = "; not used by name, a shipped one has it" if entry.shadowed else ""
    return f"  {entry.name:<12} {text}  [user: {entry.path}{note}]"


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


def target_options(f):
    """The options `build` and `run` share: what to build and how."""
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
                     help="Output folder [default: reports/TARGET-TIMESTAMP]."),
        click.option("--offline", is_flag=True, help="Use cached sources only; never download."),
        click.option("--source-dir", type=Folder(),
                     help="Use this unpacked source tree instead of fetching (air-gapped machines)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _prepare(target_name, recipe_name, flag_sets, compilers, jobs, out_dir, offline, source_dir):
    if not target_name:
        raise click.UsageError("missing argument TARGET")
    t = target.load(target_name)
    r = _recipe(recipe_name, flag_sets, compilers)
    m = matrix.expand(r, list(compilers) or None)
    out = out_dir or REPORTS / f"{t.name}-{_stamp()}"
    files.check_writable(out, "--out")
    opts = build.Options(out_dir=out, jobs=jobs or _cpu_count(), offline=offline,
                         source_dir=source_dir)
    click.echo(f"{t.name} {t.spec.version}: recipe {r.name}, {len(m.variants)} variants "
               f"({m.design}), {len(m.skipped)} skipped", err=True)
    return t, r, m, opts


def _recipe(recipe_name, flag_sets, compilers) -> recipe.Recipe:
    """--flags sets as a recipe of their own, else the named recipe (olevels by default)."""
    if flag_sets and recipe_name:
        raise click.UsageError("give --recipe or --flags, not both")
    if flag_sets:
        return recipe.from_flags(list(flag_sets), list(compilers) or ["gcc"])
    return recipe.load(recipe_name or "olevels")


@cli.command("build")
@target_options
@click.option("--json", "as_json", is_flag=True, help="Print the builds as JSON.")
def build_cmd(as_json, **kw) -> None:
    """Fetch TARGET and build every variant of a recipe, audited and fingerprinted."""
    t, r, m, opts = _prepare(**kw)
    builds = build.build_all(t, m, opts)
    out = opts.out_dir.resolve()
    summary_path = build.write_summary(out, t, r, m, builds)
    if as_json:
        click.echo(json.dumps([b.doc(out) for b in builds], indent=2))
    else:
        _print_table(builds, m)
    click.echo(str(summary_path))
    if any(b.status != "ok" for b in builds):
        sys.exit(1)


@cli.command("run")
@target_options
@click.option("--runs", type=click.IntRange(min=1), help="Exactly N counted rounds (no adaptive stop).")
@click.option("--min-runs", type=click.IntRange(min=1), default=5, show_default=True,
              help="Rounds before the stopping rule may stop (it also waits for the rounds a "
                   "verdict needs at this sweep's number of comparisons).")
@click.option("--max-runs", type=click.IntRange(min=1), default=30, show_default=True,
              help="Most rounds.")
@click.option("--budget", type=FiniteRange(min=1), default=1800, show_default=True,
              help="Seconds of measuring at most; no new round starts that would overrun it.")
@click.option("--precision", "precision_pct", type=THRESHOLD,
              help="An undecided comparison counts as settled once its paired 95% CI "
                   "half-width is under this percentage [default: the --threshold].")
@click.option("--threshold", "threshold_pct", type=THRESHOLD, default=1.0,
              show_default=True, help="Practical threshold in %: smaller effects do not matter "
                                      "(faster/slower need their CI beyond it).")
@click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True,
              help="Warmup rounds (run, stored, not counted).")
@click.option("--cpu", type=click.IntRange(min=0), help="CPU to pin to [default: an isolated CPU, else the last].")
@click.option("--metric", type=click.Choice(sorted(sweep.METRICS)), default="auto", show_default=True,
              help="Primary metric. auto: CPU time when the warmup round shows a single-threaded, "
                   "CPU-bound workload (waiting for the CPU does not inflate it), else wall time; "
                   "both are always recorded. instructions without a PMU: Cachegrind's count, a "
                   "change detector.")
@click.option("--counters", type=click.Choice(["auto", "hardware", "software", "none"]),
              default="auto", show_default=True,
              help="perf stat counters: auto = hardware counters when the machine has a PMU, "
                   "else wait4's rusage only; software = perf's software events anyway.")
@click.option("--quick", is_flag=True, help="A smaller input (a fast look, not a final answer).")
@click.option("--strict-check", is_flag=True, help="Do not time binaries whose output differs.")
@click.option("--seed", type=SEED, help="Seed for round order and environment padding, 0 to 2^63-1 "
              "[default: random, recorded].")
@click.option("--confirm", is_flag=True, help="After a plackett-burman screen, re-test the flags "
                                              "that matter one at a time against the base.")
@click.option("--resume", "resume_id", metavar="RUN_ID|DIR",
              help="Continue an interrupted run, named by its run id or its output folder.")
@click.option("--all", "all_", is_flag=True,
              help="Sweep every shipped benchmark target in turn (each its own sweep, report and "
                   "--budget, in OUT/TARGET/), then a suite report across them in OUT.")
@click.option("--skip", "skip", multiple=True, metavar="TARGET",
              help="With --all: leave this target out (repeatable).")
@click.option("--scheduler", metavar="ADDRESS",
              help="Run on a Dask cluster (tcp://HOST:8786): builds on any worker, rounds on "
                   "workers of each --cpu-label; see docs/fleet.md.")
@click.option("--cpu-label", "cpu_labels", multiple=True, metavar="LABEL",
              help="With --scheduler: measure on workers of this CPU label (repeatable; one "
                   "results.json per label, merged).")
def run_cmd(runs, min_runs, max_runs, budget, precision_pct, threshold_pct, warmup, cpu, metric,
            counters, quick, strict_check, seed, confirm, resume_id, all_, skip, scheduler,
            cpu_labels, **kw) -> None:
    """Build TARGET's variants, check their outputs, and measure them in pinned shuffled rounds."""
    db = store.Store()
    say = lambda text: click.echo(text, err=True)  # noqa: E731
    if resume_id:
        ctx = click.get_current_context()
        given = [f"--{name.replace('_', '-')}" for name in ctx.params if name != "resume_id"
                 and ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]
        if given:
            raise click.UsageError(f"--resume continues a run exactly as it started; it takes no "
                                   f"other arguments (got {', '.join(given)})")
        path = sweep.resume(resume_id, db, say)
    else:
        if runs is not None:
            min_runs = max_runs = runs
        if precision_pct is None:
            precision_pct = threshold_pct
        if min_runs > max_runs:
            raise click.UsageError(f"--min-runs {min_runs} is more than --max-runs {max_runs}")
        mopts = sweep.MeasureOptions(runs=runs, min_runs=min_runs, max_runs=max_runs, budget=budget,
                                     warmup=warmup, cpu=cpu, metric=metric, counters=counters,
                                     precision_pct=precision_pct, threshold_pct=threshold_pct,
                                     quick=quick,
                                     strict_check=strict_check, seed=seed)
        if scheduler or cpu_labels:
            return _run_fleet(scheduler, cpu_labels, confirm, all_, mopts, db, say, kw)
        if all_ or skip:
            if confirm:
                raise click.UsageError("--confirm follows one screen; give it a TARGET, not --all")
            return _run_suite(all_, skip, mopts, db, say, kw)
        t, r, m, opts = _prepare(**kw)
        if confirm and r.spec.design != "plackett-burman":
            raise click.UsageError("--confirm follows a design = \"plackett-burman\" screen")
        path = sweep.start(t, r, m, opts, mopts, db, say)
        if confirm:
            _finish(path)
            path = _confirm(path, t, r, m, opts, mopts, db, say)
            if path is None:
                return
    _finish(path)


def _run_fleet(scheduler, cpu_labels, confirm, all_, mopts, db, say, kw) -> None:
    """`run --scheduler`: the sweep on a Dask cluster, one results.json per CPU label."""
    if not scheduler or not cpu_labels:
        raise click.UsageError("--scheduler and --cpu-label go together (which cluster, which CPUs)")
    if confirm or all_ or kw["source_dir"]:
        raise click.UsageError("--scheduler runs one TARGET's recipe: no --confirm, --all or "
                               "--source-dir")
    if mopts.cpu is not None:
        raise click.UsageError("--cpu: each worker pins to its own (flagsweep worker --cpu N)")
    if not kw["target_name"]:
        raise click.UsageError("missing argument TARGET")
    labels = [fleet.check_label(label) for label in dict.fromkeys(cpu_labels)]
    t = target.load(kw["target_name"])
    r = _recipe(kw["recipe_name"], kw["flag_sets"], kw["compilers"])
    out = (kw["out_dir"] or REPORTS / f"{t.name}-{_stamp()}").resolve()
    client = fleet.connect(scheduler)
    try:
        paths = fleet.run(client, t, r, list(kw["compilers"]) or None, labels, out, mopts, db, say)
    finally:
        client.close()
    for path in paths:
        terminal.show(path)
        click.echo(str(path.parent / "index.html"))
    merged = out / "merged.html"
    if merged.exists():
        click.echo(str(merged))


def _run_suite(all_, skip, mopts, db, say, kw) -> None:
    """`run --all`: one sweep per shipped benchmark target, then the suite across them. A target
    that fails (no source, no build) is recorded and the others go on; Ctrl-C writes the suite of
    what finished and stops."""
    if not all_:
        raise click.UsageError("--skip goes with --all")
    if kw["target_name"] or kw["source_dir"]:
        raise click.UsageError("--all sweeps every shipped target: give no TARGET or --source-dir")
    names = [t.name for t in target.available() if t.spec.suite]
    unknown = sorted(set(skip) - set(names))
    if unknown:
        raise click.UsageError(f"--skip {', '.join(unknown)}: not a suite target (expected some "
                               f"of {', '.join(names)})")
    out = (kw["out_dir"] or REPORTS / f"suite-{_stamp()}").resolve()
    done, failed, stopped = [], [], None
    for name in [n for n in names if n not in skip]:
        say(f"suite: {name} ({len(done) + len(failed) + 1} of {len(names) - len(skip)})")
        try:
            t, r, m, opts = _prepare(**{**kw, "target_name": name, "out_dir": out / name})
            done.append(sweep.start(t, r, m, opts, dataclasses.replace(mopts), db, say,
                                    run_name=f"{out.name}-{name}"))
        except Interrupted as e:
            stopped = e
            break
        except FlagsweepError as e:
            say(f"suite: {name} failed, going on with the others: {e}")
            failed.append({"target": name, "error": str(e)})
    if done:
        _write_suite(done, failed, out)
    if stopped:
        raise Interrupted(f"{stopped} (the suite stopped; `flagsweep suite {out}/*/results.json "
                          f"--out {out}` redraws it after the run is resumed)")
    if not done:
        raise FlagsweepError("no target of the suite has results: "
                             + "; ".join(f"{f['target']}: {f['error']}" for f in failed))


def _write_suite(paths: list[Path], failed: list[dict], out: Path) -> None:
    s = suite.build(suite.load_all(paths), failed=failed)
    page = suite.write(s, out)
    terminal.show_suite(s)
    click.echo(str(page))


def _finish(results_path: Path) -> None:
    """The verdicts table on stderr; the report's path last on stdout (results.json beside it)."""
    terminal.show(results_path)
    page = results_path.parent / "index.html"
    click.echo(str(page if page.exists() else results_path))


def _confirm(screen_path, t, r, m, opts, mopts, db, say):
    """The flags a screen found to matter, each alone on the base: main effects in a screen are
    aliased with interactions, so survivors are confirmed one at a time (issue 4's --confirm)."""
    # The compiler column of a two-compiler screen is not a flag to add to the base.
    survivors = [e["factor"] for e in json.loads(screen_path.read_text())["effects"]
                 if e.get("matters") and e["factor"] != "compiler"]
    if not survivors:
        say("confirm: no flag mattered in the screen; nothing to confirm")
        return None
    say(f"confirm: re-testing {', '.join(survivors)} one at a time against {r.spec.base}")
    one_by_one = recipe.from_flags([r.spec.base] + [f"{r.spec.base} {f}" for f in survivors],
                                   [m.baseline.compiler])
    out = opts.out_dir.resolve().with_name(opts.out_dir.resolve().name + "-confirm")
    mopts.seed = None
    return sweep.start(t, one_by_one, matrix.expand(one_by_one),
                       build.Options(out_dir=out, jobs=opts.jobs, offline=opts.offline,
                                     source_dir=opts.source_dir), mopts, db, say)


@cli.command("report")
@click.argument("results_path", metavar="RESULTS.json", type=click.Path(path_type=Path))
@click.option("--out", "out_dir", type=Folder(),
              help="Folder for index.html and summary.md [default: beside RESULTS.json].")
def report_cmd(results_path, out_dir) -> None:
    """Render the HTML report (index.html) and summary.md from a results.json again."""
    page = report.write(results_path, out_dir)
    terminal.show(results_path)
    click.echo(str(page))


@cli.command("compare")
@click.argument("a_path", metavar="A.json", type=click.Path(path_type=Path))
@click.argument("b_path", metavar="B.json", type=click.Path(path_type=Path))
@click.option("--out", "out_dir", type=Folder(),
              help="Also write compare.html into this folder.")
def compare_cmd(a_path, b_path, out_dir) -> None:
    """Two sweeps of the same target side by side: verdicts, what changed, B against A."""
    c = report.write_comparison(a_path, b_path, out_dir)
    terminal.show_comparison(c)
    if out_dir:
        click.echo(str(Path(out_dir).resolve() / "compare.html"))


@cli.command("suite")
@click.argument("paths", metavar="RESULTS...", nargs=-1, required=True)
@click.option("--out", "out_dir", type=Folder(), required=True,
              help="Folder for suite.html and suite.json.")
@click.option("--threshold", "threshold_pct", type=THRESHOLD,
              help="Practical threshold in % for the suite verdicts [default: the sweeps'].")
def suite_cmd(paths, out_dir, threshold_pct) -> None:
    """Several programs' sweeps on one machine: each program's verdicts and the suite's."""
    s = suite.build(suite.load_all(_located(paths, out_dir.resolve() / "runs")), threshold_pct)
    page = suite.write(s, out_dir)
    terminal.show_suite(s)
    click.echo(str(page))


@cli.command("history")
@click.argument("target_name", metavar="TARGET")
@click.option("--check", is_flag=True, help="Exit 1 when the latest sweep is a significant "
                                            "regression against the history (for nightly jobs).")
@click.option("--threshold", "threshold_pct", type=THRESHOLD,
              help="Practical threshold in % [default: the latest sweep's].")
@click.option("--json", "as_json", is_flag=True, help="Print the series as JSON.")
def history_cmd(target_name, check, threshold_pct, as_json) -> None:
    """Every complete sweep of TARGET in the store: the trend per variant, steps, regressions."""
    name = target.load(target_name).name if "/" in target_name else target_name
    db = store.Store()
    series = history.collect(db, name, threshold_pct=threshold_pct)
    if not series:
        raise FlagsweepError(f"no complete sweep of {name!r} in the store {db.url}")
    if as_json:
        click.echo(json.dumps([s.to_json() for s in series], indent=1))
    else:
        terminal.show_history(name, series)
    worse = history.regressions(series)
    for s in worse:
        step = s.steps[-1]
        click.echo(f"regression: {s.variant} {(step.ratio - 1) * 100:+.1f}% in {step.run_id}"
                   + (f" ({', '.join(step.changed)})" if step.changed else "") + f": {step.why}",
                   err=True)
    if check and worse:
        sys.exit(1)


@cli.command("merge")
@click.argument("paths", metavar="RESULTS...", nargs=-1, required=True)
@click.option("--out", "out_dir", type=Folder(), required=True,
              help="Folder for merged.html and merged.json.")
def merge_cmd(paths, out_dir) -> None:
    """One target's results from several machines: a variant x machine heatmap."""
    out = out_dir.resolve()
    page = merge.write(merge.load_all(_located(paths, out / "runs")), out)
    click.echo(str(page))


@cli.command("pick")
@click.argument("paths", metavar="RESULTS...", nargs=-1, required=True)
@click.option("--baseline-isa", type=click.Choice(list(cpu.LEVELS)),
              help="Only flags every CPU of this x86-64 level can run.")
@click.option("--threshold", "threshold_pct", type=THRESHOLD, default=1.0,
              show_default=True, help="The pick must beat the baseline by more than this, everywhere combined.")
@click.option("--json", "as_json", is_flag=True, help="Print the candidates as JSON.")
def pick_cmd(paths, baseline_isa, threshold_pct, as_json) -> None:
    """One flag set for all the machines (and programs) given: a distribution's CFLAGS."""
    with tempfile.TemporaryDirectory(prefix="flagsweep-pick-") as scratch:
        p = pick_mod.pick(_located(paths, Path(scratch)), baseline_isa, threshold_pct)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(p), indent=1))
    else:
        terminal.show_pick(p)


@cli.command("worker")
@click.option("--scheduler", required=True, metavar="ADDRESS", help="The Dask scheduler (tcp://HOST:8786).")
@click.option("--cpu-label", "cpu_label", metavar="LABEL",
              help="This machine's CPU label [default: what gcc's -march=native is here].")
@click.option("--cpu", type=click.IntRange(min=0),
              help="CPU to pin measurements to [default: an isolated CPU, else the last].")
@click.option("--name", help="The worker's name [default: HOST-LABEL].")
@click.option("--host", "listen", default=None, metavar="IP",
              help="Address the worker listens on [default: chosen by Dask from the route to the scheduler].")
def worker_cmd(scheduler, cpu_label, cpu, name, listen) -> None:
    """Serve fleet sweeps on this machine: `dask worker` with flagsweep's resources
    (bench=1: one build or measurement at a time; cpu-LABEL=1: measurements of that label)."""
    label = fleet.check_label(cpu_label or fleet.default_label())
    argv = fleet.worker_argv(scheduler, label, name, listen)
    env = dict(os.environ, **({fleet.CPU_ENV: str(cpu)} if cpu is not None else {}))
    click.echo(f"flagsweep worker: label {label}, store {store.Store().url}: {' '.join(argv)}",
               err=True)
    os.execvpe(argv[0], argv, env)


@cli.command("calibrate")
@click.option("--runs", type=click.IntRange(min=2), default=10, show_default=True,
              help="Rounds to measure (the setting whose resolution you want to know).")
@click.option("--threshold", "threshold_pct", type=THRESHOLD, default=1.0,
              show_default=True, help="Practical threshold in %, as for run.")
@click.option("--quick", is_flag=True, help="The smaller input.")
@click.option("--cpu", type=click.IntRange(min=0), help="CPU to pin to.")
@click.option("--out", "out_dir", type=Folder(),
              help="Output folder [default: reports/calibrate-TIMESTAMP].")
def calibrate_cmd(runs, threshold_pct, quick, cpu, out_dir) -> None:
    """Plant effects of +1%, +3% and +10% in the bundled tiny program and see which this machine finds."""
    say = lambda text: click.echo(text, err=True)  # noqa: E731
    out = out_dir or REPORTS / f"calibrate-{_stamp()}"
    opts = sweep.MeasureOptions(runs=runs, min_runs=runs, max_runs=runs, quick=quick, cpu=cpu,
                                threshold_pct=threshold_pct)
    path, rows = calibration.run(build.Options(out_dir=out, jobs=_cpu_count()), opts,
                                 store.Store(), say)
    for line in calibration.table(rows, runs, threshold_pct):
        click.echo(line)
    click.echo(str(path))


@cli.command("system")
@click.option("--tune", is_flag=True, help="Apply the quieter settings (root); remembered for --reset.")
@click.option("--reset", "reset_", is_flag=True, help="Undo what --tune changed.")
@click.option("--json", "as_json", is_flag=True, help="Print the machine state as JSON.")
def system_cmd(tune, reset_, as_json) -> None:
    """What affects measurement noise on this machine, with advice (like pyperf system)."""
    if tune and reset_:
        raise click.UsageError("give --tune or --reset, not both")
    if tune or reset_:
        for line in (system.tune() if tune else system.reset()):
            click.echo(line)
        return
    state = system.machine_state(["gcc"])
    if as_json:
        click.echo(json.dumps(state, indent=2))
        return
    for item in system.show():
        advice = f"  -> {item['advice']}" if item["advice"] else ""
        click.echo(f"{item['name']:<22} {item['value'] if item['value'] is not None else 'n/a'}{advice}")
    for warning in system.warnings(state):
        click.echo(f"warning: {warning}")


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


def _located(args, scratch: Path) -> list[Path]:
    """RESULTS arguments: results.json files, their folders, or run ids in the store."""
    return [results.located(a, scratch) for a in args]


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
    except OSError as e:
        # The machine's state (a folder replaced by a file, a full disk, a permission) is the
        # user's to fix, so it is said in one line; -vv logs where it happened.
        logging.getLogger("flagsweep").debug("stopped by", exc_info=True)
        where = f"{e.filename}: " if e.filename else ""
        click.echo(f"flagsweep: {where}{files.reason(e)}", err=True)
        sys.exit(2)
