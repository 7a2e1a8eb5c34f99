"""`flagsweep tune`: search for the fastest flag set, then prove it (flagsweep.tune.tune)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from flagsweep.cli.params import SEED, THRESHOLD, Folder, given, say

UNITS = {"s": 1, "m": 60, "h": 3600}


class Duration(click.ParamType):
    """A time budget: seconds, or a number with s, m or h (1h, 30m, 90s, 1.5h)."""
    name = "DURATION"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            return float(value)
        found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", str(value))
        if not found:
            self.fail(f"{value!r} is not a duration (expected seconds, or e.g. 1h, 30m, 90s)",
                      param, ctx)
        seconds = float(found.group(1)) * UNITS[found.group(2) or "s"]
        if seconds < 60:
            self.fail(f"{value!r} is under a minute: a tune needs at least 60 s", param, ctx)
        return seconds


@click.command("tune")
@click.argument("target_name", metavar="TARGET", required=False)
@click.option("--base", default=None, help="The level every candidate starts from, e.g. -O2 or "
              "-O3 [default: the space file's, else -O2].")
@click.option("--space", "space", default="gcc-optimizers", show_default=True,
              help="gcc-optimizers: the compiler's own switches (on/off against the base), "
                   "curated --params and the -march levels this CPU runs; or a space file.")
@click.option("--compiler", default="gcc", show_default=True)
@click.option("--budget", "budget_s", type=Duration(), default="1h", show_default=True,
              help="Wall time for the whole tune: the search, the ablation and the proof.")
# search.SAMPLERS, spelt out: importing the search (SQLAlchemy, Optuna) would slow every command
@click.option("--sampler", type=click.Choice(["tpe", "ga", "random", "tpe-local"]),
              default="tpe", show_default=True, help="Optuna's TPE, a genetic search (Optuna's "
              "NSGA-II, near the sets that did well), a plain random search, or TPE taking "
              "turns with small changes to the best set so far.")
@click.option("--no-starts", "no_starts", is_flag=True, help="Do not begin the search with -O3's "
              "switches, the most specific -march this CPU runs and both together (a random "
              "search never does).")
@click.option("--seed", type=SEED, default=None, help="Seed of the sampler and of the rounds "
              "[default: random, recorded].")
@click.option("--batch", type=click.IntRange(1, 64), default=6, show_default=True,
              help="Candidates measured together in one sweep.")
@click.option("--trials", type=click.IntRange(1), default=None,
              help="Candidates at most [default: the budget decides].")
@click.option("--layouts", type=click.IntRange(2, 16), default=None,
              help="Layouts each set of the proof is built in [default: the fewest at which a "
                   "gain of three times the threshold is confirmed with 90% power, at the "
                   "layout spread measured for the program, within what the budget leaves; "
                   "either way cut to fit the budget, saying so].")
@click.option("--max-runs", type=click.IntRange(1), default=20, show_default=True,
              help="Most rounds of one batch.")
@click.option("--threshold", "threshold_pct", type=THRESHOLD, default=1.0, show_default=True,
              help="Practical threshold in %: smaller effects do not matter.")
@click.option("--metric", type=click.Choice(["auto", "cpu", "wall", "instructions"]),
              default="auto", show_default=True)
@click.option("--cpu", type=click.IntRange(0), default=None, help="CPU to pin to.")
@click.option("--schedule", type=click.Choice(["auto", "duet", "serial"]), default="auto",
              show_default=True,
              help="The batches' rounds, as for run: duet (each candidate at once with a run "
                   "of the baseline, on two CPUs), serial, or auto (the first batch's pilot "
                   "chooses for the whole tune). See docs/measurement.md.")
@click.option("--jobs", "-j", type=click.IntRange(1, 4096), default=None,
              help="Parallel build jobs [default: number of CPUs].")
@click.option("--out", "out_dir", type=Folder(), default=None,
              help="Output folder [default: ./reports/TARGET-tune-TIMESTAMP]; its name is the "
                   "tune's id.")
@click.option("--offline", is_flag=True, help="Use cached sources only; never download.")
@click.option("--source-dir", type=Folder(), default=None,
              help="Use this unpacked source tree instead of fetching.")
@click.option("--resume", "resume_id", metavar="TUNE_ID",
              help="Continue an interrupted tune (its id, or its folder).")
@click.option("--wait", is_flag=True, help="Queue behind a sweep holding the CPU.")
@click.option("--scheduler", metavar="ADDRESS",
              help="Run the search and the ablation on a Dask cluster (tcp://HOST:8786), on "
                   "workers of --cpu-label; with --resume, the fleet's new address. See "
                   "docs/fleet.md.")
@click.option("--cpu-label", "cpu_label", metavar="LABEL",
              help="With --scheduler: the one CPU label whose workers build and measure (a "
                   "tune's ratios come from one CPU model).")
def tune_cmd(target_name, base, space, compiler, budget_s, sampler, no_starts, seed, batch,
             trials, layouts, max_runs, threshold_pct, metric, cpu, schedule, jobs, out_dir,
             offline, source_dir, resume_id, wait, scheduler, cpu_label) -> None:
    """Search TARGET's flag space for the fastest set, then prove it on the full input over
    layouts and say which of its flags matter (docs/tune.md).

    Exit status: 0 with an answer; 2 on bad input or an error (an interrupted tune too); 3
    when the proof's sweep stayed busy (no answer yet: resume it)."""
    from flagsweep import shipped
    from flagsweep.compilation import selection as chosen
    from flagsweep.experiment import target
    from flagsweep.jobs import fleet
    from flagsweep.tune import tune
    from flagsweep.report import terminal
    from flagsweep.results import reader, store

    db = store.Store()
    if resume_id:
        if target_name:
            raise click.UsageError("--resume continues a tune as it began: give no TARGET")
        _resume_alone()
        path = tune.resume(resume_id, db, say, wait=wait, scheduler=scheduler)
    else:
        if not target_name:
            raise click.UsageError("name a TARGET to tune (flagsweep list shows them)")
        if scheduler or cpu_label:
            metric = _fleet_usage(scheduler, cpu_label, cpu, source_dir, metric)
            if schedule == "duet":
                raise click.UsageError("--schedule duet runs two binaries at once on this "
                                       "machine: not with --scheduler (a worker runs one at a "
                                       "time)")
            fleet.check_label(cpu_label)
        t = target.load(target_name)
        out = out_dir or shipped.reports_dir() / f"{t.name}-tune-{chosen.stamp()}"
        opts = tune.TuneOptions(
            base=base, space=space, compiler=compiler, budget_s=budget_s, sampler=sampler,
            starts=not no_starts, seed=seed, batch=batch, trials=trials, layouts=layouts,
            jobs=jobs or _cpus(), offline=offline, source_dir=str(source_dir) if source_dir else None,
            measure={"max_runs": max_runs, "threshold_pct": threshold_pct,
                     "precision_pct": threshold_pct, "metric": metric, "cpu": cpu,
                     "budget": budget_s, "schedule": schedule},
            scheduler=scheduler, cpu_label=cpu_label)
        path = tune.start(t, opts, Path(out), db, say, wait=wait)
    doc = reader.load(path, "tune")
    terminal.show_tune(doc)
    page = path.parent / "tune.html"
    click.echo(str(page if page.exists() else path))
    if doc.proof is not None and doc.proof.status == "busy":
        from flagsweep.cli.sweeping import NO_ANSWER
        say(f"no answer yet: the proof's sweep is busy (exit status {NO_ANSWER})")
        sys.exit(NO_ANSWER)


def _resume_alone() -> None:
    """A resumed tune goes on with the options it began with; only a fleet's scheduler may
    have moved (--scheduler), and --wait is how this session queues."""
    others = given(click.get_current_context(), ("resume_id", "wait", "scheduler", "target_name"))
    if others:
        raise click.UsageError(f"--resume continues a tune with the options it began with; "
                               f"only --scheduler (a fleet's new address) goes with it "
                               f"(got {', '.join(others)})")


def _fleet_usage(scheduler, cpu_label, cpu, source_dir, metric) -> str:
    """A fleet tune's options checked as `run --scheduler` checks them; its metric."""
    if not scheduler or not cpu_label:
        raise click.UsageError("--scheduler and --cpu-label go together (which cluster, which "
                               "CPU)")
    if cpu is not None:
        raise click.UsageError("--cpu: each worker pins to its own (flagsweep worker --cpu N)")
    if source_dir:
        raise click.UsageError("--source-dir is this machine's tree: not with --scheduler")
    if metric == "instructions":
        raise click.UsageError("--metric instructions needs one machine's counters: a fleet "
                               "tune measures wall or cpu time")
    if metric == "auto":
        # A fleet sweep has no probe round to choose from; the tune's batches must agree.
        say("metric: wall time (a fleet sweep does not choose; --metric cpu measures CPU time)")
        return "wall"
    return metric


def _cpus() -> int:
    import os
    return os.cpu_count() or 1

