"""Commands that build and measure: build, run, calibrate, and the fleet's worker."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import click

from flagsweep.cli.params import (
    SEED,
    THRESHOLD,
    FiniteRange,
    Folder,
    given,
    say,
    selection,
    target_options,
)
from flagsweep.measure.metric import COLUMNS
from flagsweep.stats.threshold import THRESHOLD_PCT


@click.command("build")
@target_options
@click.option("--json", "as_json", is_flag=True,
              help="Print the builds as JSON on stdout (the builds.json path goes to stderr).")
def build_cmd(as_json, **kw) -> None:
    """Fetch TARGET and build every variant of a recipe, audited and fingerprinted."""
    from flagsweep.compilation import variants
    from flagsweep.report import lines

    t, r, m, opts = _prepare(kw)
    if any(v.pgo for v in m.variants):
        from flagsweep.workload import inputs
        opts = dataclasses.replace(opts, training=inputs.training(t))
    builds = variants.build_all(t, m, opts, lines.built_lines())
    out = opts.out_dir.resolve()
    summary_path = variants.write_summary(out, t, r, m, builds)
    if as_json:
        click.echo(json.dumps([b.doc(out) for b in builds], indent=2))
        say(str(summary_path))
    else:
        _print_builds(builds, m)
        click.echo(str(summary_path))
    if any(b.status != "ok" for b in builds):
        sys.exit(1)


def _prepare(kw: dict):
    from flagsweep.compilation import selection as chosen

    if not kw["target_name"]:
        raise click.UsageError("missing argument TARGET")
    return chosen.prepare(selection(kw), say)


MEASURE_OPTIONS = [
    click.option("--runs", type=click.IntRange(min=1),
                 help="Exactly N counted rounds (no adaptive stop)."),
    click.option("--min-runs", type=click.IntRange(min=1), default=5, show_default=True,
                 help="Rounds before the stopping rule may stop (it also waits for the rounds a "
                      "verdict needs at this sweep's number of comparisons)."),
    click.option("--max-runs", type=click.IntRange(min=1), default=30, show_default=True,
                 help="Most rounds."),
    click.option("--budget", type=FiniteRange(min=1), default=1800, show_default=True,
                 help="Seconds of measuring at most; no new round starts that would overrun it."),
    click.option("--precision", "precision_pct", type=THRESHOLD,
                 help="An undecided comparison counts as settled once its paired 95% CI "
                      "half-width is under this percentage [default: the --threshold]."),
    click.option("--threshold", "threshold_pct", type=THRESHOLD, default=THRESHOLD_PCT,
                 help="Practical threshold in %: smaller effects do not matter "
                      "(faster/slower need their CI beyond it) [default: 1]."),
    click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True,
                 help="Warmup rounds (run, stored, not counted)."),
    click.option("--cpu", type=click.IntRange(min=0),
                 help="CPU to pin to [default: the quietest CPU no other sweep holds, measured "
                      "over 0.5 s at the start (a free isolated CPU first); the sweep says which "
                      "and why]."),
    click.option("--metric", type=click.Choice(sorted({*COLUMNS, "auto"})), default="auto",
                 show_default=True,
                 help="Primary metric. auto: CPU time when the warmup round shows a single-threaded, "
                      "CPU-bound workload (waiting for the CPU does not inflate it), else wall time; "
                      "both are always recorded. instructions without a PMU: Cachegrind's count, a "
                      "change detector."),
    click.option("--counters", type=click.Choice(["auto", "hardware", "software", "none"]),
                 default="auto", show_default=True,
                 help="perf stat counters: auto = hardware counters when the machine has a PMU, "
                      "else wait4's rusage only; software = perf's software events anyway."),
    click.option("--quick", is_flag=True, help="A smaller input (a fast look, not a final answer)."),
    click.option("--input-size", type=click.Choice(["full", "quick", "auto"]),
                 help="The input: full, quick (as --quick), or auto: a pilot of A/A pairs at both "
                      "sizes, then the size between them that buys the narrowest interval per "
                      "minute of measuring, said and recorded [default: full]."),
    click.option("--strict-check", is_flag=True, help="Do not time binaries whose output differs."),
    click.option("--seed", type=SEED, help="Seed for round order and environment padding, 0 to 2^63-1 "
                 "[default: random, recorded]."),
    click.option("--keep-scratch", is_flag=True,
                 help="Keep the check and timing outputs in OUT/scratch after a complete run "
                      "(deleted by default: they can be hundreds of MB)."),
    click.option("--reference", metavar="BINARY|RUN_DIR",
                 help="Measure this kept binary (or an earlier run's baseline binary) beside the "
                      "baseline in every round; `history` divides the machine's drift out by it. "
                      "See docs/history.md."),
    click.option("--no-reference", is_flag=True,
                 help="Measure no kept reference arm. By default a sweep measures the binary the "
                      "store keeps for this target, machine and baseline (the first complete "
                      "sweep's baseline) beside its own build, so `history` can tell the machine's "
                      "drift from the program's; the first sweep keeps it. See docs/history.md."),
    click.option("--layouts", type=click.IntRange(min=0, max=64), default=0,
                 help="Build every variant K times (K >= 2), the same code linked in K seeded "
                      "function orders (LLD's --shuffle-sections), and compare over the layouts, "
                      "so a verdict must beat what layout alone does; the A/A twin is then K more "
                      "layouts of the baseline. See docs/measurement.md."),
    click.option("--no-confirm", "layout_confirm", is_flag=True, flag_value=False, default=True,
                 help="Do not measure faster/slower rows again over code layouts (by default each "
                      "row whose interval with one build's layout luck reaches within the "
                      "threshold is measured again, it and the baseline relinked in K layouts "
                      "each, in one sweep); such rows then read \"one layout, within layout "
                      "luck\". See docs/statistics.md."),
    click.option("--confirm-layouts", type=click.IntRange(min=2, max=64),
                 help="Layouts a side (K) for that confirmation [default: sized by power: the "
                      "fewest at which an effect as large as layout luck's reach is confirmed "
                      "80% of the time, within the --budget]."),
    click.option("--confirm-rows", type=click.IntRange(min=1, max=64),
                 help="At most this many rows are measured again, the most doubtful first; the "
                      "rest read \"one layout, within layout luck\" [default: 8]."),
    click.option("--schedule", type=click.Choice(["auto", "duet", "serial"]), default="auto",
                 show_default=True,
                 help="duet: each variant runs at the same time as a run of the baseline, one on "
                      "each of two CPUs, and the pair's ratio is the sample; serial: one run at a "
                      "time; auto: a pilot measures both and takes duet only where it is narrower "
                      "per minute and agrees with serial. See docs/measurement.md."),
    click.option("--explain", is_flag=True,
                 help="Then profile the baseline and every faster or slower variant on the "
                      "workload and attribute each change to functions (Cachegrind without a PMU, "
                      "perf record with one); see docs/explain.md."),
]


def measure_options(f):
    """The options `run` and `campaign` share, how to measure: they arrive as the fields of a
    sweep.MeasureOptions (see `_measure_options`)."""
    for option in reversed(MEASURE_OPTIONS):
        f = option(f)
    return f


@click.command("run")
@target_options
@measure_options
@click.option("--confirm", is_flag=True, help="After a plackett-burman screen, re-test the flags "
                                              "that matter one at a time against the base.")
@click.option("--wait", is_flag=True,
              help="If another sweep measures on this CPU, start when it ends (saying who it "
                   "waits for) instead of refusing.")
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
def run_cmd(confirm, wait, resume_id, all_, skip, scheduler, cpu_labels, **kw) -> None:
    """Build TARGET's variants, check their outputs, and measure them in pinned shuffled rounds.

    Exit status: 0 with an answer; 2 on bad input or an error (an interrupted sweep too); 3
    when the sweep ended without an answer, stopped early because the machine was busy (the
    recommendation says "No answer yet"; --resume continues it), or with --all or
    --scheduler when any of its sweeps did."""
    from flagsweep.jobs import campaign, fleet, sweep
    from flagsweep.results import store

    db = store.Store()
    if resume_id:
        _resume_alone()
        return _finish(sweep.resume(resume_id, db, say, wait=wait))
    mopts = _measure_options(kw)
    if mopts.reference and mopts.no_reference:
        raise click.UsageError("--reference names a reference arm, --no-reference asks for none: "
                               "give one of them")
    if mopts.reference and (scheduler or cpu_labels or all_ or skip):
        raise click.UsageError("--reference is one binary beside one target's baseline on this "
                               "machine: not with --all or --scheduler")
    if mopts.layouts == 1:
        raise click.UsageError("--layouts 1 is one layout, as without the option: give 2 or "
                               "more (the spread between layouts needs two)")
    if mopts.explain and (scheduler or cpu_labels):
        raise click.UsageError("--explain profiles on this machine: not with --scheduler "
                               "(run flagsweep explain RESULTS.json on a worker's files)")
    if mopts.layouts and (scheduler or cpu_labels or confirm or mopts.reference):
        raise click.UsageError("--layouts is for a sweep on this machine: not with --scheduler, "
                               "--confirm or --reference")
    if mopts.schedule == "duet" and (scheduler or cpu_labels or mopts.layouts):
        raise click.UsageError("--schedule duet runs two binaries at once on this machine: not "
                               "with --scheduler (a worker runs one at a time) or --layouts "
                               "(duets of layouts are not designed)")
    if scheduler or cpu_labels:
        sel = selection(kw)
        _fleet_usage(scheduler, cpu_labels, confirm, all_, mopts, sel)
        labels = [fleet.check_label(label) for label in dict.fromkeys(cpu_labels)]
        return _show_fleet(fleet.sweep_on(scheduler, sel, labels, mopts, db, say))
    if all_ or skip:
        sel = selection(kw)
        names = _suite_names(all_, skip, confirm, sel)
        page = campaign.run(names, sel, mopts, db, say, wait=wait)
        click.echo(str(page))
        # this suite's sweeps only (campaign: OUT/NAME), not whatever else --out holds
        swept = [page.parent / name / "results.json" for name in names]
        return _exit_unanswered([p for p in swept if p.exists()])
    t, r, m, opts = _prepare(kw)
    if confirm and r.spec.design != "plackett-burman":
        raise click.UsageError("--confirm follows a design = \"plackett-burman\" screen")
    path = sweep.start(t, r, m, opts, mopts, db, say, wait=wait)
    if confirm:
        _finish(path)
        path = sweep.confirm(path, t, r, m, opts, mopts, db, say, wait=wait)
        if path is None:
            return
    _finish(path)


@click.command("campaign")
@click.argument("packages", metavar="PACKAGES.txt", type=click.Path(path_type=Path))
@click.option("--recipe", "recipe_name", default="distro", show_default=True,
              help="Recipe name or path every package is swept with.")
@click.option("--compiler", "compilers", multiple=True,
              help="Compiler(s) to use instead of the recipe's (repeatable).")
@click.option("--out", "out_dir", type=Folder(),
              help="The campaign's folder; the same command with the same --out resumes it "
                   "[default: ./reports/campaign-LIST].")
@click.option("--jobs", "-j", type=click.IntRange(1, 4096), default=None,
              help="Parallel build jobs [default: number of CPUs].")
@click.option("--no-package-tests", "package_tests", is_flag=True, flag_value=False,
              default=True, help="Do not run each package's own test suite on each variant.")
@click.option("--retry-failed", is_flag=True,
              help="Take the packages that failed before again (by default they stay failed).")
@click.option("--retry", "retry", multiple=True, metavar="NAME",
              help="Take this failed package again (repeatable): after a fix of its own.")
@click.option("--wait", is_flag=True,
              help="If another sweep measures on this CPU, wait for it instead of refusing.")
@click.option("--scheduler", metavar="ADDRESS",
              help="Run on a Dask cluster (tcp://HOST:8786): each package generated and swept "
                   "whole on one worker, one package a worker at a time; see docs/fleet.md.")
@measure_options
def campaign_cmd(packages, recipe_name, compilers, out_dir, jobs, package_tests, retry_failed,
                 retry, wait, scheduler, **kw) -> None:
    """For each line of PACKAGES.txt (a Debian source package and its run command: `zopfli
    --run '{binary} -c {input}'`; also --name, --binary, --version, --input FILE and
    --no-patches, as `new` takes them), write its target file as `flagsweep new --debian` does,
    then sweep it with the recipe; then the distro report across them. Resumable: run the
    same command again. A package that fails is recorded and the others go on."""
    from flagsweep import shipped
    from flagsweep.compilation import selection as chosen
    from flagsweep.jobs import distro_campaign
    from flagsweep.results import store

    mopts = _measure_options(kw)
    out = (out_dir or shipped.reports_dir() / f"campaign-{packages.stem}").resolve()
    sel = chosen.Selection(recipe_name=recipe_name, compilers=compilers, jobs=jobs,
                           package_tests=package_tests)
    chosen.recipe_of(sel)       # a recipe that does not load stops before any package
    c = distro_campaign.open_campaign(packages, out, recipe_name)
    if unknown := sorted(set(retry) - {p.name for p in c.doc.packages}):
        raise click.UsageError(f"--retry {', '.join(unknown)}: not a package of {packages}")
    db = store.Store()
    if scheduler:
        distro_campaign.run_on(scheduler, c, sel, mopts, db.url, say, retry_failed,
                               frozenset(retry))
    else:
        stages = distro_campaign.Stages(jobs=jobs or chosen.cpu_count())
        distro_campaign.run(c, sel, mopts, db, say, stages, retry_failed, wait,
                            frozenset(retry))
    click.echo(str(distro_campaign.report(c, mopts.threshold_pct, say)))


def _resume_alone() -> None:
    others = given(click.get_current_context(), ("resume_id", "wait"))
    if others:
        raise click.UsageError(f"--resume continues a run exactly as it started; it takes no "
                               f"other arguments (got {', '.join(others)})")


def _measure_options(kw: dict):
    """The measuring options of `run` (their names are sweep.MeasureOptions' fields)."""
    from dataclasses import fields

    from flagsweep.jobs import sweep

    o = sweep.MeasureOptions(**{f.name: kw[f.name] for f in fields(sweep.MeasureOptions)
                                if f.name in kw})
    if o.runs is not None:
        o.min_runs = o.max_runs = o.runs
    # not given: K sized by power (0), the default cap of rows
    o.confirm_layouts = o.confirm_layouts or 0
    o.confirm_rows = o.confirm_rows or sweep.MeasureOptions.confirm_rows
    if o.precision_pct is None:
        o.precision_pct = o.threshold_pct
    if o.min_runs > o.max_runs:
        raise click.UsageError(f"--min-runs {o.min_runs} is more than --max-runs {o.max_runs}")
    size = kw.get("input_size")        # as given: quick, full or auto
    if o.quick and size not in (None, "quick"):
        raise click.UsageError(f"--quick is --input-size quick: not with --input-size {size}")
    o.quick = o.quick or size == "quick"
    o.input_size = "auto" if size == "auto" else None
    return o


def _fleet_usage(scheduler, cpu_labels, confirm, all_, mopts, sel) -> None:
    if not scheduler or not cpu_labels:
        raise click.UsageError("--scheduler and --cpu-label go together (which cluster, which CPUs)")
    if confirm or all_ or sel.source_dir:
        raise click.UsageError("--scheduler runs one TARGET's recipe: no --confirm, --all or "
                               "--source-dir")
    if mopts.cpu is not None:
        raise click.UsageError("--cpu: each worker pins to its own (flagsweep worker --cpu N)")
    if mopts.input_size == "auto":
        raise click.UsageError("--input-size auto pilots on this machine: not with --scheduler "
                               "(give full or quick)")
    if not sel.target_name:
        raise click.UsageError("missing argument TARGET")


def _show_fleet(paths: list[Path]) -> None:
    from flagsweep.report import terminal

    for path in paths:
        terminal.show(path)
        click.echo(str(path.parent / "index.html"))
    merged = paths[0].parent.parent / "merged.html" if paths else None
    if merged and merged.exists():
        click.echo(str(merged))
    _exit_unanswered(paths)


def _suite_names(all_, skip, confirm, sel) -> list[str]:
    """The targets `run --all` sweeps, the --skip ones left out."""
    from flagsweep.jobs import campaign

    if not all_:
        raise click.UsageError("--skip goes with --all")
    if confirm:
        raise click.UsageError("--confirm follows one screen; give it a TARGET, not --all")
    if sel.target_name or sel.source_dir:
        raise click.UsageError("--all sweeps every shipped target: give no TARGET or --source-dir")
    names = campaign.suite_targets()
    unknown = sorted(set(skip) - set(names))
    if unknown:
        raise click.UsageError(f"--skip {', '.join(unknown)}: not a suite target (expected some "
                               f"of {', '.join(names)})")
    return [n for n in names if n not in skip]


# The exit status of a sweep that ended without an answer (busy: stopped early because the
# machine was busy), as `history --check` says 3 for a night it cannot check: not a failure
# of the program, nor an error, but no answer a CI job may act on.
NO_ANSWER = 3


def _finish(results_path: Path) -> None:
    """The verdicts table on stderr; the report's path last on stdout (results.json beside
    it); then exit NO_ANSWER when the sweep did not end complete."""
    from flagsweep.report import terminal

    terminal.show(results_path)
    page = results_path.parent / "index.html"
    click.echo(str(page if page.exists() else results_path))
    _exit_unanswered([results_path])


def _exit_unanswered(paths: list[Path]) -> None:
    """Exit NO_ANSWER, naming them, when any of these sweeps did not end complete: a CI job
    running a suite or a fleet must not read one busy sweep as an answer."""
    from flagsweep.results import reader

    docs = [reader.load(p) for p in paths]
    open_ = [d for d in docs if d.status not in (None, "complete")]
    if len(docs) == 1 and open_:
        say(f"no answer yet: the sweep is {open_[0].status} (exit status {NO_ANSWER})")
    elif open_:
        named = ", ".join(f"{d.run_id or d.target} ({d.status})" for d in open_)
        say(f"no answer yet from {len(open_)} of {len(docs)} sweeps: {named} (exit status "
            f"{NO_ANSWER}; --resume each)")
    if open_:
        sys.exit(NO_ANSWER)


def _print_builds(builds, m) -> None:
    from flagsweep.cli import show
    from flagsweep.compilation import variants

    t = show.table(None, "variant", "status", "flags ok", "code", "size", "secs", "flags")
    for b in builds:
        code = (f"= {b.identical_to}" if b.identical_to else (b.code_sha256 or "-")[:12])
        show.add(t, b.variant.id + (" *" if b.variant is m.baseline else ""), b.status,
                 "yes" if b.flags_verified else "no", code,
                 f"{b.size_bytes:,}" if b.size_bytes else "-",
                 "reused" if b.reused else f"{b.seconds:.1f}" if b.seconds is not None else "-",
                 " ".join(b.variant.flags) or "(none)")
    lines = ["* baseline;  code '= X': identical code to variant X, measured once"
             + ("; secs 'reused': from the build cache (--rebuild builds again)"
                if any(b.reused for b in builds) else "")]
    lines += [f"\n{b.variant.id}: {b.status}\n{b.detail}" for b in builds if b.status != "ok"]
    # (a walrus in a comprehension binds in this function: named `t`, it replaced the table)
    lines += [f"\n{b.variant.id}: fails its own tests ({own.status}, "
              f"{' '.join(own.command or [])}; {own.log})\n{own.tail or ''}" for b in builds
              if (own := b.package_tests) is not None and own.status in ("failed", "timeout")]
    lines += [f"\n{fix}" for fix in dict.fromkeys(f for b in builds for f in b.fixes)]
    lines += [f"\nnote: {line}" for line in variants.foreign(builds)
              + variants.build_programs(builds)]
    lines += [f"\nwarning: {line}" for line in variants.left_out(builds)]
    show.echo(t, *lines)


@click.command("calibrate")
@click.option("--runs", type=click.IntRange(min=2), default=10, show_default=True,
              help="Rounds to measure (the setting whose resolution you want to know); with "
                   "--qualify, the rounds of one comparison (a gate's night).")
@click.option("--threshold", "threshold_pct", type=THRESHOLD, default=THRESHOLD_PCT,
              help="Practical threshold in %, as for run [default: 1].")
@click.option("--quick", is_flag=True, help="The smaller input.")
@click.option("--cpu", type=click.IntRange(min=0),
              help="CPU to pin to [default: as for run, the quietest free CPU].")
@click.option("--out", "out_dir", type=Folder(),
              help="Output folder [default: reports/calibrate-TIMESTAMP].")
@click.option("--qualify", is_flag=True,
              help="Qualify this runner for a nightly gate: --repeats comparisons of --runs "
                   "rounds each; prints the A/A false-call rate, the power, the planted changes "
                   "found and the --threshold/--max-runs a gate needs (also qualify.json).")
@click.option("--repeats", type=click.IntRange(min=2), default=10, show_default=True,
              help="With --qualify: how many comparisons of --runs rounds (the run measures "
                   "their product).")
def calibrate_cmd(runs, threshold_pct, quick, cpu, out_dir, qualify, repeats) -> None:
    """Plant effects of +1%, +3% and +10% in the bundled tiny program and see which this machine finds."""
    from flagsweep import shipped
    from flagsweep.jobs import calibration, sweep
    from flagsweep.compilation import selection as chosen
    from flagsweep.compilation import variants
    from flagsweep.cli import show
    from flagsweep.results import store

    given_repeats = click.get_current_context().get_parameter_source("repeats")
    if given_repeats is not click.core.ParameterSource.DEFAULT and not qualify:
        raise click.UsageError("--repeats is how many comparisons --qualify makes: give both")
    out = out_dir or shipped.reports_dir() / f"calibrate-{chosen.stamp()}"
    rounds = runs * repeats if qualify else runs
    opts = sweep.MeasureOptions(runs=rounds, min_runs=rounds, max_runs=rounds, quick=quick,
                                cpu=cpu, threshold_pct=threshold_pct, no_reference=True)
    path, rows = calibration.run(variants.Options(out_dir=out, jobs=chosen.cpu_count()), opts,
                                 store.Store(), say)
    t = show.table(f"planted effects on this machine ({rounds} rounds, threshold {threshold_pct:g}%):",
                   "planted", "measured (95% CI)", "verdict", "outcome")
    for cells in calibration.table(rows):
        show.add(t, *cells)
    show.echo(t, calibration.smallest_found(rows))
    click.echo(str(path))
    if qualify:
        _qualified(path, runs, threshold_pct)


def _qualified(path: Path, runs: int, threshold_pct: float) -> None:
    """The runner's qualification from the calibrate run at `path`: said, and qualify.json
    beside its results.json (its path the last line on stdout)."""
    from flagsweep.jobs import calibration, qualification

    q = calibration.qualified(path, runs, threshold_pct)
    for line in qualification.lines(q):
        click.echo(line)
    click.echo(str(qualification.write(q, path.parent)))


@click.command("worker")
@click.option("--scheduler", required=True, metavar="ADDRESS", help="The Dask scheduler (tcp://HOST:8786).")
@click.option("--cpu-label", "cpu_label", metavar="LABEL",
              help="This machine's CPU label [default: what gcc's -march=native is here].")
@click.option("--cpu", type=click.IntRange(min=0),
              help="CPU to pin measurements to [default: an isolated CPU, else the last].")
@click.option("--name", help="The worker's name [default: HOST-LABEL].")
@click.option("--host", "listen", default="127.0.0.1", show_default=True, metavar="IP",
              help="Address the worker listens on: this machine only unless told. Anyone who "
                   "can connect to it runs code here as this user, so on an address other "
                   "machines reach, require TLS (--tls-ca-file, --tls-cert, --tls-key).")
@click.option("--tls-ca-file", type=click.Path(exists=True, dir_okay=False), metavar="PEM",
              help="TLS: the CA whose certificates the worker's port accepts (with --tls-cert "
                   "and --tls-key; the scheduler's address is then tls://).")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), metavar="PEM",
              help="TLS: this worker's certificate, signed by that CA.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), metavar="PEM",
              help="TLS: this worker's private key.")
def worker_cmd(scheduler, cpu_label, cpu, name, listen, tls_ca_file, tls_cert, tls_key) -> None:
    """Serve fleet sweeps on this machine: `dask worker` with flagsweep's resources
    (bench=1: one build or measurement at a time; cpu-LABEL=1: measurements of that label)."""
    from flagsweep.jobs import fleet, worker
    from flagsweep.results import store

    given = [tls_ca_file, tls_cert, tls_key]
    if any(given) and not all(given):
        raise click.UsageError("--tls-ca-file, --tls-cert and --tls-key go together (the CA, "
                               "this worker's certificate and its key)")
    tls = worker.Tls(*given) if all(given) else None
    label = fleet.check_label(cpu_label or fleet.default_label())
    argv = worker.worker_argv(scheduler, label, name, listen, tls)
    env = dict(os.environ, **({worker.CPU_ENV: str(cpu)} if cpu is not None else {}))
    say(f"flagsweep worker: label {label}, store {store.Store().url}: {' '.join(argv)}")
    if warning := worker.exposure(listen, tls):
        say(f"warning: {warning}")
    os.execvpe(argv[0], argv, env)
