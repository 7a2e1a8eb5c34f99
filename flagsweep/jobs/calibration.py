"""Calibration: what can this machine resolve, with these settings?

`flagsweep calibrate` sweeps the bundled tiny program with planted effects of known size: the
same code built with -DTINY_EXTRA_PERMILLE=N runs N/1000 more rounds over the whole input, as
targets/tiny/calibrate.toml runs it (100 rounds over a small input, so +3% is 3 whole extra
rounds: identical code and layout, only a data constant differs). A plant is so a share of the
run's instructions, not of its input: an extra share of the input costs what those bytes cost,
and tiny's match search costs more on some bytes than on others (10% more input taken from its
start was 4.3% more instructions). Cachegrind counts each plant within 0.01 points of its stated
share (docs/statistics.md, "Calibration"). The A/A twin is the 0% arm. Run through the normal
pipeline, the verdicts show which planted effects this machine detects at this many rounds
before anyone trusts a real sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from flagsweep import shipped, stats
from flagsweep.compilation import variants
from flagsweep.errors import ConfigError
from flagsweep.experiment import matrix, recipe, target
from flagsweep.host import launcher
from flagsweep.host.executor import Executor
from flagsweep.jobs import qualification, sweep
from flagsweep.measure.options import MeasureOptions
from flagsweep.results import reader
from flagsweep.model import Qualification, Results, VsBaseline
from flagsweep.results.store import Store

PLANTED_PCT = (1, 3, 10)
TARGET = shipped.TARGETS / "tiny" / "calibrate.toml"


def workload() -> target.Target:
    """tiny as calibrate runs it: enough rounds that every plant is a whole number of them."""
    t = target.load(str(TARGET))
    rounds = int(t.spec.run.argv[-1])
    if any(rounds * pct % 100 for pct in PLANTED_PCT):
        raise ConfigError(f"{TARGET}: key 'run.argv': {rounds} rounds cannot hold each planted "
                          f"effect {PLANTED_PCT} (%) as whole extra rounds; expected a multiple "
                          "of 100")
    return t


def planted_rounds(t: target.Target, pct: int) -> str:
    """What a plant is, in the run's own terms: "3 of 100 rounds"."""
    rounds = int(t.spec.run.argv[-1])
    return f"{rounds * pct // 100} of {rounds} rounds"


def flag_sets() -> list[str]:
    """The baseline (nothing planted) first, then one variant per planted effect."""
    return ["-O2 -DTINY_EXTRA_PERMILLE=0"] + [f"-O2 -DTINY_EXTRA_PERMILLE={10 * p}" for p in PLANTED_PCT]


def run(build_opts: variants.Options, opts: MeasureOptions, store: Store,
        say: Callable[[str], None], execute: Executor = launcher.run_once
        ) -> tuple[Path, list[Plant]]:
    """Sweep the shipped tiny program with the planted flag sets; `execute` is the sweep's
    executor (the real launcher; tests pass executions of known speed)."""
    t = workload()
    r = recipe.from_flags(flag_sets(), ["gcc"])
    opts.budget = None  # the rounds asked for are the setting being calibrated: all of them
    opts.same_layout = True     # the plants are data in one code: no layout luck between them
    path = sweep.start(t, r, matrix.expand(r), build_opts, opts, store, say, execute=execute)
    return path, findings(reader.load(path), t)


@dataclass(frozen=True)
class Plant:
    """One planted effect as the sweep measured it: its ratio to the baseline with its 95% CI,
    the verdict, and what that says of this machine (found, missed, a false alarm ...)."""

    planted_pct: int                # 0: the A/A twin
    ratio: float | None
    ci95: list[float] | None
    verdict: str
    outcome: str
    planted_as: str | None = None   # the plant in the run's own terms: "3 of 100 rounds"


def qualified(path: Path, runs: int, threshold_pct: float) -> Qualification:
    """The runner's qualification (jobs.qualification) from the calibrate run at `path`, in
    comparisons of `runs` rounds."""
    doc = reader.load(path)
    by_flags = {" ".join(v.flags): v.id for v in doc.variants if not v.aa_of}
    planted = {pct: by_flags[flags] for pct, flags in zip(PLANTED_PCT, flag_sets()[1:])
               if flags in by_flags}
    return qualification.qualify(doc, planted, runs, threshold_pct, path)


def findings(doc: Results, t: target.Target) -> list[Plant]:
    """One row per planted effect (0% = the A/A twin): measured ratio, CI, verdict, outcome."""
    by_flags = {" ".join(v.flags): v for v in doc.variants}
    rows = []
    if doc.aa:
        rows.append(_plant(0, doc.aa.ratio, doc.aa.ci95, doc.aa.verdict, None))
    for pct, flags in zip(PLANTED_PCT, flag_sets()[1:]):
        c = by_flags[flags].vs_baseline or VsBaseline(verdict="not-measured")
        rows.append(_plant(pct, c.ratio, c.ci95, c.verdict, c.rounds_needed,
                           planted_rounds(t, pct)))
    return rows


def _plant(planted: int, ratio, ci, verdict: str, rounds_needed,
           planted_as: str | None = None) -> Plant:
    if planted == 0:
        outcome = "correct" if verdict in ("equivalent", "inconclusive") else "FALSE ALARM"
    elif verdict == "slower":
        outcome = "found"
    elif verdict == "faster":
        outcome = "WRONG DIRECTION (added work measured as faster)"
    elif verdict == "equivalent":
        outcome = "missed (called equivalent)"
    else:
        outcome = "not resolved" + (f": about {rounds_needed} rounds would decide" if rounds_needed else "")
    return Plant(planted, ratio, ci, verdict, outcome, planted_as)


def table(rows: list[Plant]) -> list[tuple[str, str, str, str]]:
    """Each planted effect as text cells: planted, measured (95% CI), verdict, outcome."""
    cells = []
    for r in rows:
        name = "0% (A/A)" if r.planted_pct == 0 else f"+{r.planted_pct}% ({r.planted_as})"
        measured = stats.change_text(r.ratio, r.ci95) if r.ratio is not None and r.ci95 else "-"
        cells.append((name, measured, r.verdict, r.outcome))
    return cells


def smallest_found(rows: list[Plant]) -> str:
    found = [r.planted_pct for r in rows if r.outcome == "found"]
    smallest = f"+{min(found)}%" if found else "none of the planted effects"
    return f"smallest planted effect detected: {smallest}"
