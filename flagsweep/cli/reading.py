"""Commands over finished sweeps: report, compare, suite, history, dashboard, merge, pick,
distro."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flagsweep.cli.params import THRESHOLD, Folder, say
from flagsweep.host.cpu import LEVELS
from flagsweep.stats.threshold import THRESHOLD_PCT

if TYPE_CHECKING:       # the commands import what they run only when run: a fast --help
    from flagsweep.model import Variant


PARTIAL = ("Also take sweeps stopped early because the machine was busy (status busy); "
           "without it such a results file is refused.")


@click.command("report")
@click.argument("results_path", metavar="RESULTS.json|TUNE.json|RUN_ID",
                type=click.Path(path_type=Path))
@click.option("--out", "out_dir", type=Folder(),
              help="Folder for index.html, summary.md and junit.xml (tune.html for a tune.json) "
                   "[default: beside the file].")
def report_cmd(results_path, out_dir) -> None:
    """Render the HTML report (index.html), summary.md and junit.xml from a results.json
    again; given a run id (or a run's folder) whose results.json is missing, write it from the
    store first.
    Given a tune.json, its page (tune.html) again."""
    from flagsweep import report
    from flagsweep.report import terminal

    tuned = _tune_of(results_path)
    if tuned is not None:       # a tune.json: its own page and its lines
        page = report.write_tune(tuned, out_dir or results_path.parent)
        terminal.show_tune(tuned)
    else:
        results_path = _results_of(results_path)
        page = report.write(results_path, out_dir)
        terminal.show(results_path)
    click.echo(str(page))


def _tune_of(arg: Path):
    """The tune.json at arg, by its schema key, as its model; None for anything else (a
    results.json, a run id), which the results path reads. A file is read by the one reader
    of both, which refuses what neither may hold (not JSON, NaN, nesting thousands deep)."""
    from flagsweep import model
    from flagsweep.results import reader

    doc = reader.document(arg, "results.json or tune.json") if arg.is_file() else None
    if not isinstance(doc, dict) or doc.get("schema") != model.TUNE_SCHEMA:
        return None
    return reader.validate(doc, arg, "tune")


def _results_of(arg: Path) -> Path:
    """A results.json as given, or the one of a run in the store, written again into the run's
    folder when it is missing there (the store keeps every sample)."""
    from flagsweep.jobs import outputs
    from flagsweep.errors import FlagsweepError
    from flagsweep.results import stored
    from flagsweep.results.store import Store

    if arg.is_file():
        return arg
    if arg.is_dir() and (arg / "results.json").is_file():
        return arg / "results.json"
    db = Store()
    run_id = db.find_run(str(arg))
    try:
        row = db.run(run_id)
    except FlagsweepError:
        raise FlagsweepError(f"{arg}: no such results file, and no run of that id in the store "
                             f"{db.url}") from None
    # The page is written beside it: only into the run's own folder, whatever the row says.
    path = stored.out_dir(db, run_id, row) / "results.json"
    return path if path.is_file() else outputs.written_again(run_id, db, say)


@click.command("explain")
@click.argument("results_path", metavar="RESULTS.json", type=click.Path(path_type=Path))
@click.option("--with", "method", type=click.Choice(["auto", "cachegrind", "perf"]),
              default="auto", show_default=True,
              help="The profiler: auto = perf record of cycles with a PMU, else Cachegrind.")
@click.option("--repeats", type=click.IntRange(min=1, max=100), default=5, show_default=True,
              help="perf records per binary (the interval on each function's share).")
@click.option("--disassemble", "function", metavar="FUNCTION",
              help="Instead of profiling: FUNCTION's machine code in the baseline and in each "
                   "variant (or --variant), side by side.")
@click.option("--variant", "variant_id", metavar="ID", help="With --disassemble: only this variant.")
@click.option("--remarks/--no-remarks", "with_remarks", default=True, show_default=True,
              help="Rebuild the profiled binaries' compiles with the compiler's optimisation "
                   "record on, for each top function's vectorisation remarks.")
def explain_cmd(results_path, method, repeats, function, variant_id, with_remarks) -> None:
    """Profile a sweep's baseline and faster/slower variants; attribute each change to functions."""
    from flagsweep import report
    from flagsweep.explain import explanation
    from flagsweep.report import terminal

    if function:
        return _disassemble(results_path, function, variant_id)
    if variant_id:
        raise click.UsageError("--variant goes with --disassemble")
    path = explanation.explain_file(results_path, say, method, repeats, with_remarks)
    page = report.write(path)
    terminal.show(path)
    click.echo(str(page))


def _disassemble(results_path: Path, function: str, variant_id: str | None) -> None:
    """FUNCTION in the baseline's binary beside each variant's that was explained (or the one
    named), addresses dropped so equal code lines up."""
    from flagsweep.explain import disassembly
    from flagsweep.results import reader

    doc = reader.load(results_path)
    by_id = {v.id: v for v in doc.variants}
    explained = list(doc.explain.explained) if doc.explain else []
    others = [variant_id] if variant_id else explained
    if variant_id and variant_id not in by_id:
        raise click.UsageError(f"--variant {variant_id}: not a variant of {results_path} "
                               f"(its variants: {', '.join(by_id)})")
    if not others:
        raise click.UsageError(f"{results_path} has no explained variant: give --variant ID")
    base = by_id[doc.baseline]
    left = disassembly.listing(_binary(base, results_path), function)
    for vid in others:
        right = disassembly.listing(_binary(by_id[vid], results_path), function)
        for line in disassembly.side_by_side(left, right, (base.id, vid)):
            click.echo(line)
        click.echo("")


def _binary(v: Variant, results_path: Path) -> Path:
    """The variant's binary, if it is still the code the sweep timed."""
    from flagsweep.compilation import fingerprint

    path = Path(v.build.binary or "")
    if not path.is_file():
        raise click.UsageError(f"{v.id}: its binary {path} is gone (builds are kept in the "
                               f"run's folder beside {results_path})")
    changed = fingerprint.recheck(v.build.dump(), path)
    if changed is not None:
        raise click.UsageError(f"{v.id}: {changed.text()}: not the code the sweep timed")
    return path


@click.command("compare")
@click.argument("a_path", metavar="A.json", type=click.Path(path_type=Path))
@click.argument("b_path", metavar="B.json", type=click.Path(path_type=Path))
@click.option("--out", "out_dir", type=Folder(),
              help="Also write compare.html into this folder.")
def compare_cmd(a_path, b_path, out_dir) -> None:
    """Two sweeps of the same target side by side: verdicts, what changed, B against A."""
    from flagsweep import report
    from flagsweep.report import terminal

    c = report.write_comparison(a_path, b_path, out_dir)
    terminal.show_comparison(c)
    if out_dir:
        click.echo(str(Path(out_dir).resolve() / "compare.html"))


@click.command("suite")
@click.argument("paths", metavar="RESULTS...", nargs=-1, required=True)
@click.option("--out", "out_dir", type=Folder(), required=True,
              help="Folder for suite.html and suite.json.")
@click.option("--threshold", "threshold_pct", type=THRESHOLD,
              help="Practical threshold in % for the suite verdicts [default: the sweeps'].")
@click.option("--partial", is_flag=True, help=PARTIAL)
def suite_cmd(paths, out_dir, threshold_pct, partial) -> None:
    """Several programs' sweeps on one machine: each program's verdicts and the suite's."""
    from flagsweep import report
    from flagsweep.across import suite
    from flagsweep.report import terminal

    s = suite.build(suite.load_all(_located(paths, out_dir.resolve() / "runs"), partial),
                    threshold_pct)
    page = report.write_suite(s, out_dir)
    terminal.show_suite(s)
    click.echo(str(page))


@click.command("history")
@click.argument("target_name", metavar="TARGET")
@click.option("--check", is_flag=True, help="Exit 1 when the latest sweep is a significant "
                                            "regression against the history (for nightly jobs).")
@click.option("--threshold", "threshold_pct", type=THRESHOLD,
              help="Practical threshold in % [default: the latest sweep's].")
@click.option("--json", "as_json", is_flag=True, help="Print the series as JSON.")
@click.option("--partial", is_flag=True,
              help="Also read sweeps stopped early because the machine was busy (status busy).")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write JUnit XML to this file: a case per series, failed for a "
                   "regression, skipped when the newest sweep cannot check it.")
@click.option("--shadow", is_flag=True,
              help="With --check: say what the gate would have done, and exit 0 whatever it "
                   "found (try a gate on a runner before it decides jobs).")
def history_cmd(target_name, check, threshold_pct, as_json, partial, junit_path, shadow) -> None:
    """Every complete sweep of TARGET in the store: the trend per variant, steps, regressions.

    With --check the exit code is 1 for a regression, 3 when the newest sweep cannot be
    checked (no reference arm, an unstable night, another metric): said on stderr. --junit
    FILE writes the same as JUnit XML for a CI's test report; the exit code stays the same.
    --shadow judges as --check does, says "shadow: would have failed: ..." for each regression
    (and what it could not check), and exits 0."""
    from flagsweep import stats
    from flagsweep.across import history
    from flagsweep.errors import FlagsweepError
    from flagsweep.report import terminal
    from flagsweep.results import store

    if shadow and not check:
        raise click.UsageError("--shadow says what --check would have done: give both")
    if junit_path is not None:
        _refuse_unwritable(junit_path)
    name = _target_name(target_name)
    db = store.Store(create=False)
    series = history.collect(db, name, threshold_pct=threshold_pct, partial=partial)
    if not series:
        raise FlagsweepError(f"no complete sweep of {name!r} in the store {db.url}")
    if as_json:
        click.echo(json.dumps([s.document().dump() for s in series], indent=1))
    else:
        terminal.show_history(name, series)
    open_ = history.unchecked(series)
    doubtful = {id(s) for s, _ in open_}
    worse = [s for s in history.regressions(series) if id(s) not in doubtful]
    for s in history.regressions(series):
        step = s.steps[-1]
        say(("regression" if id(s) not in doubtful else "slower, unconfirmed")
            + f": {s.variant} {stats.change_text(step.ratio)} in {step.run_id}"
            + (f" ({', '.join(step.changed)})" if step.changed else "") + f": {step.why}")
    for s, why in open_:
        say(f"cannot check {_series_name(s)}: {why}")
    if junit_path is not None:
        from flagsweep.files import write_atomic
        from flagsweep.report import junit

        write_atomic(junit_path, junit.of_history(name, series, threshold_pct))
    if shadow:
        _shadow(worse, open_)
    elif check and worse:
        sys.exit(1)
    elif check and open_:
        sys.exit(3)


def _target_name(given: str) -> str:
    """A target as the store names it: a name as it is, a target file's path by its name."""
    from flagsweep.experiment import target

    return target.load(given).name if "/" in given else given


@click.command("dashboard")
@click.option("--out", "out_dir", type=Folder(), required=True,
              help="Folder for the site: index.html and a page per target (made if missing; "
                   "its parent must exist).")
@click.option("--target", "targets", multiple=True, metavar="TARGET",
              help="Only this target (repeatable) [default: every target in the store].")
@click.option("--threshold", "threshold_pct", type=THRESHOLD,
              help="Practical threshold in % [default: each target's latest sweep's].")
def dashboard_cmd(out_dir, targets, threshold_pct) -> None:
    """The store's nightly sweeps as a static site: one page across targets, CPUs and
    compilers (the newest verdicts, the open regressions) and one page per target with every
    variant's series, read as `history --check` reads them (docs/dashboard.md)."""
    from flagsweep import report
    from flagsweep.errors import FlagsweepError
    from flagsweep.results import store

    parent = out_dir.absolute().parent
    if not parent.is_dir():
        raise FlagsweepError(f"--out {out_dir}: its parent folder {parent} does not exist "
                             "(create it, or name a folder in an existing one)")
    names = tuple(dict.fromkeys(_target_name(t) for t in targets))
    click.echo(str(report.write_dashboard(store.Store(create=False), out_dir, names,
                                          threshold_pct)))


def _shadow(worse: list, open_: list) -> None:
    """What the gate would have said, on stderr beside its other messages (stdout keeps --json
    whole); the caller then exits 0, so a runner can be watched for a few weeks before its
    gate decides anything."""
    from flagsweep.stats import change_text

    for s in worse:
        step = s.steps[-1]
        say(f"shadow: would have failed: {_series_name(s)} {change_text(step.ratio)} "
            f"in {step.run_id}")
    for s, why in open_:
        say(f"shadow: could not have checked (exit 3): {_series_name(s)}: {why}")
    if not worse and not open_:
        say("shadow: would have passed")


def _refuse_unwritable(path: Path) -> None:
    """--junit FILE is a path the user typed: its folder must exist (a typo there would
    otherwise surface only after the store was read, or make folders nobody asked for)."""
    from flagsweep.errors import FlagsweepError

    parent = path.absolute().parent
    if not parent.is_dir():
        raise FlagsweepError(f"--junit {path}: its folder {parent} does not exist (create it, "
                             "or name a file in an existing folder)")


def _series_name(s) -> str:
    return s.variant + (f" / ref {s.reference[:8]}" if s.reference else "")


@click.command("merge")
@click.argument("paths", metavar="RESULTS...", nargs=-1, required=True)
@click.option("--out", "out_dir", type=Folder(), required=True,
              help="Folder for merged.html and merged.json.")
@click.option("--partial", is_flag=True, help=PARTIAL)
def merge_cmd(paths, out_dir, partial) -> None:
    """One target's results from several machines: a variant x machine heatmap."""
    from flagsweep import report
    from flagsweep.across import merge

    out = out_dir.resolve()
    page = report.write_merge(merge.load_all(_located(paths, out / "runs"), partial), out)
    click.echo(str(page))


@click.command("pick")
@click.argument("paths", metavar="RESULTS...", nargs=-1, required=True)
@click.option("--baseline-isa", type=click.Choice(list(LEVELS)),
              help="Only flags every CPU of this x86-64 level can run.")
@click.option("--threshold", "threshold_pct", type=THRESHOLD, default=THRESHOLD_PCT,
              show_default=True, help="The pick must beat the baseline by more than this, everywhere combined.")
@click.option("--json", "as_json", is_flag=True, help="Print the candidates as JSON.")
@click.option("--partial", is_flag=True, help=PARTIAL)
def pick_cmd(paths, baseline_isa, threshold_pct, as_json, partial) -> None:
    """One flag set for all the machines (and programs) given: a distribution's CFLAGS."""
    import dataclasses
    import tempfile

    from flagsweep.across import pick
    from flagsweep.report import terminal

    with tempfile.TemporaryDirectory(prefix="flagsweep-pick-") as scratch:
        p = pick.pick(_located(paths, Path(scratch)), baseline_isa, threshold_pct, partial)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(p), indent=1))
    else:
        terminal.show_pick(p)


@click.command("distro")
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", "out_dir", type=Folder(),
              help="Folder for distro.html and distro.csv [default: DIR].")
@click.option("--threshold", "threshold_pct", type=THRESHOLD,
              help="The pick across packages must beat the baseline by more than this, in % "
                   "[default: the sweeps'].")
@click.option("--partial", is_flag=True,
              help="Count packages whose sweep stopped early because the machine was busy "
                   "as measured; without it they are listed as not measured.")
def distro_cmd(folder, out_dir, threshold_pct, partial) -> None:
    """A campaign's distro report again, from DIR/campaign.json: each change's effect on each
    package with its interval, verdict, size, build time and own tests; across packages the
    geometric mean, the share faster / equivalent / slower / undecided / broken, the spread,
    pick's choice and its worst package; the packages not measured and the campaign's costs.
    distro.html and distro.csv."""
    from flagsweep import report
    from flagsweep.errors import FlagsweepError

    campaign_json = folder / "campaign.json"
    if not campaign_json.is_file():
        raise FlagsweepError(f"{folder}: no campaign.json there (DIR is the folder a "
                             "campaign swept its packages into)")
    click.echo(str(report.write_distro(campaign_json, out_dir, threshold_pct, partial)))


def _located(args, scratch: Path) -> list[Path]:
    """RESULTS arguments: results.json files, their folders, or run ids in the store."""
    from flagsweep.results import writer

    return [writer.located(a, scratch) for a in args]


@click.command("schema")
@click.argument("kind", type=click.Choice(["results", "suite", "merged", "tune", "qualify", "campaign"]),
                default="results")
def schema_cmd(kind) -> None:
    """Print the JSON Schema of results.json (or suite.json, merged.json, tune.json,
    qualify.json)."""
    from flagsweep import model

    click.echo(model.json_schema(kind))
