"""`flagsweep run --all`: one sweep per shipped benchmark target, then the suite across them.

A target that fails (no source, no build) is recorded and the others go on; Ctrl-C writes the
suite of what finished and stops, so the finished sweeps are never lost to the last one.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from flagsweep import model, report, shipped
from flagsweep.across import suite
from flagsweep.compilation import selection
from flagsweep.errors import FlagsweepError, Interrupted
from flagsweep.experiment import target
from flagsweep.host import launcher
from flagsweep.host.executor import Executor
from flagsweep.jobs import sweep
from flagsweep.measure.options import MeasureOptions
from flagsweep.report import terminal
from flagsweep.results.store import Store


def suite_targets() -> list[str]:
    """The shipped targets a suite sweeps, by name (those whose spec says suite = true)."""
    return [t.name for t in target.available() if t.spec.suite]


def run(names: list[str], sel: selection.Selection, opts: MeasureOptions, store: Store,
        say: Callable[[str], None], wait: bool = False,
        execute: Executor = launcher.run_once) -> Path:
    """Sweep each named target into OUT/NAME, then write the suite across them into OUT;
    returns the suite's page. `execute`: how each sweep runs a binary (sweep.start's seam)."""
    out = (sel.out_dir or shipped.reports_dir() / f"suite-{selection.stamp()}").resolve()
    done, failed, stopped = [], [], None
    for name in names:
        say(f"suite: {name} ({len(done) + len(failed) + 1} of {len(names)})")
        try:
            t, r, m, build_opts = selection.prepare(replace(sel, target_name=name, out_dir=out / name),
                                                say)
            # Each sweep its own options: a sweep records its choices (metric, seed) in them.
            done.append(sweep.start(t, r, m, build_opts, replace(opts), store, say,
                                    run_name=f"{out.name}-{name}", execute=execute, wait=wait))
        except Interrupted as e:
            stopped = e
            break
        except FlagsweepError as e:
            say(f"suite: {name} failed, going on with the others: {e}")
            failed.append(model.SuiteFailure(target=name, error=str(e)))
    page = write(done, failed, out) if done else None
    if stopped:
        where = f"{page} holds the suite of the finished sweeps; " if page else ""
        raise Interrupted(f"{stopped} (the suite stopped; {where}`flagsweep suite "
                          f"{out}/*/results.json --out {out}` redraws it after the run is resumed)")
    if page is None:
        raise FlagsweepError("no target of the suite has results: "
                             + "; ".join(f"{f.target}: {f.error}" for f in failed))
    return page


def write(paths: list[Path], failed: list[model.SuiteFailure], out: Path) -> Path:
    """The suite of these sweeps (and the targets that failed): its page, and its table on
    stderr."""
    paths, busy = suite.left_out(paths)
    if not paths:
        raise FlagsweepError("no target of the suite has complete results: "
                             + "; ".join(f"{f.target}: {f.error}" for f in failed + busy))
    s = suite.build(suite.load_all(paths), failed=failed + busy)
    page = report.write_suite(s, out)
    terminal.show_suite(s)
    return page
