"""One batch of a tune's candidates, measured as one flagsweep sweep, and what it says of each.

The batch's baseline is the best set so far, so a candidate stops as soon as its verdict
against it is final (rounds.stops): racing, as irace and F-race drop a configuration once a
test says it is worse (Birattari et al., GECCO 2002; Lopez-Ibanez et al., Operations Research
Perspectives 2016). The base level runs in every round beside it (MeasureOptions.keep), so each
candidate's ratio to the base is paired by round like any comparison of a sweep. The sweep does
the rest as it does for any variant: the build audit (flags verified, identical code found),
the output check, pinned shuffled rounds, every sample in the store.

On a fleet (Setting.fleet) a batch is a fleet sweep of the tune's one CPU label instead: its
builds and rounds on that label's workers, its samples in the same store. A fleet sweep does
not race: its workers run the whole rounds they are handed (measure.plan.plan_for drops nothing
there), so every candidate of a fleet batch runs until the batch's stopping rule ends it.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from flagsweep import files
from flagsweep.compilation import variants
from flagsweep.errors import FlagsweepError
from flagsweep.experiment import matrix, recipe
from flagsweep.experiment.target import Target
from flagsweep.host import launcher
from flagsweep.host.executor import Executor
from flagsweep.jobs import fleet, outputs, sweep, worker
from flagsweep.measure.options import MeasureOptions
from flagsweep.measure.plan import round_values
from flagsweep import stats
from flagsweep.report import lines
from flagsweep import model
from flagsweep.results import analysis, reader, stored
from flagsweep.results.store import Store

BASE = "base"          # how a trial identical to the base level names it


@dataclass(frozen=True)
class Proposal:
    number: int                    # the trial's number in the study
    flags: tuple[str, ...]


@dataclass
class Judged:
    """What a batch says of one candidate (tune.json's trial fields)."""
    state: str                     # measured | identical | failed-build | failed-check
    variant: str
    ratio: float | None = None     # against the base level, paired by round
    ci95: list[float] | None = None
    verdict: str | None = None     # against the batch's baseline, the best so far
    runs: int = 0
    identical_to: str | None = None
    detail: str | None = None
    run_id: str | None = None      # the batch's sweep


@dataclass(frozen=True)
class Fleet:
    """Where a fleet tune's batches run: a Dask client and the one CPU label whose workers build
    and measure them (one label: a tune's ratios must all come from one CPU model)."""
    client: Any
    label: str


@dataclass
class Setting:
    """What every batch of one tune shares."""
    target: Target
    compiler: str
    base: tuple[str, ...]
    build: variants.Options
    measure: MeasureOptions
    store: Store
    say: Callable[[str], None]
    execute: Executor = launcher.run_once
    fleet: Fleet | None = None


def flag_text(flags: tuple[str, ...]) -> str:
    return " ".join(flags)


def vid(s: Setting, flags: tuple[str, ...]) -> str:
    return matrix.variant_id(s.compiler, flags)


def start(s: Setting, name: str, out: Path, best: tuple[str, ...], todo: list[Proposal],
          seed: int, budget: float, quick: bool = True, layouts: int = 0,
          step: str | None = model.TUNE_STEPS[0], until: float | None = None) -> Path:
    """The batch's sweep: `best` its baseline, the base kept in every round, then the
    candidates; its results.json. `step`: its recipe name, a step of the tune that `history`
    leaves out (None: a sweep like any, as the proof is). `until`: the wall-clock time its
    rounds end by, whatever its builds took (MeasureOptions.until)."""
    sets = [best] + ([s.base] if s.base != best else []) + [c.flags for c in todo]
    r = recipe.from_flags([flag_text(f) for f in _unique(sets)], [s.compiler])
    m = matrix.expand(r, [s.compiler])
    r = replace(r, name=step) if step else r
    opts = replace(s.measure, seed=seed, budget=budget, until=until, quick=quick,
                   layouts=layouts, keep=[vid(s, s.base)], layout_confirm=False, explain=False,
                   no_reference=True, reference=None, strict_check=True)
    if s.fleet:
        return _on_fleet(s, r, out, opts, name)
    return sweep.started(s.target, r, m, replace(s.build, out_dir=out), opts, s.store, s.say,
                         name, s.execute)


def _on_fleet(s: Setting, r: recipe.Recipe, out: Path, opts: MeasureOptions, name: str) -> Path:
    """The batch as a fleet sweep of the label: its results.json in out/LABEL/ (a fleet sweep's
    folder per label), which run_id() finds like a local sweep's. A fleet sweep cannot resume:
    one a kill interrupted is measured again, one that completed is taken as it is."""
    if opts.layouts:
        raise FlagsweepError("a fleet sweep cannot build layouts: the proof runs on a machine "
                             f"of label {s.fleet.label}")
    folder = (out / s.fleet.label).resolve()
    found = s.store.find_run(str(folder))
    if found != str(folder):
        row = s.store.run(found)
        if row.status == "complete" and (folder / "results.json").is_file():
            return folder / "results.json"
        s.store.finish_run(found, "interrupted", "a fleet sweep does not resume: measured again")
    return fleet.run(s.fleet.client, s.target, r, [s.compiler], [s.fleet.label], out.resolve(),
                     opts, s.store, s.say, name)[0]


def _unique(sets: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    return list(dict.fromkeys(sets))


def resume(s: Setting, run_id: str, until: float | None = None) -> Path:
    """A batch interrupted mid-sweep, continued under the tune's lock; `until` as start()'s,
    from this session's clock. Its row is checked as any resumed run's (sweep.of_store), its
    target the tune's own."""
    row = s.store.run(run_id)
    if row.status == "complete":
        path = stored.out_dir(s.store, run_id, row) / "results.json"
        return path if path.is_file() else outputs.written_again(run_id, s.store, s.say)
    one = sweep.of_store(s.store, run_id, s.execute, s.target, until)
    return sweep.resumed(one, s.store, s.say)


def judged(s: Setting, path: Path, todo: list[Proposal], known: dict[str, float]
           ) -> dict[int, Judged]:
    """Each candidate's outcome in the batch whose results are at `path`. `known`: ratio to the
    base of earlier sets by variant id (a candidate with their code takes their ratio)."""
    doc = reader.load(path)
    by_id = {v.id: v for v in doc.variants}
    values = round_values(s.store.samples(run_id(s, path)), doc.metric)
    base_id = vid(s, s.base)
    counts = _runs(s, path)
    out = {c.number: _one(by_id[vid(s, c.flags)], values, base_id, counts, doc.baseline)
           for c in todo}
    # Identical code has its representative's ratio: the base's, a set of an earlier batch,
    # or another candidate of this one.
    ratios = {**known, base_id: 1.0, **{j.variant: j.ratio for j in out.values()
                                         if j.state == "measured"}}
    for j in out.values():
        if j.state == "identical":
            j.ratio = ratios.get(j.identical_to)
    return out


def built(s: Setting, out: Path, todo: list[Proposal]) -> dict[int, model.Build]:
    """The candidates built before their batch is measured: a failed build or code the tune has
    measured already costs no run (the batch's sweep then takes the rest from the build cache,
    a copy). One line per build as it ends when stderr is not a terminal, as `run` prints
    them (report.lines): a batch of large programs builds for many minutes."""
    cells = [matrix.Cell(vid(s, c.flags), s.compiler, c.flags, {"flags": flag_text(c.flags)})
             for c in todo]
    m = matrix.Matrix(cells, cells[0], [], "explicit")
    fresh(out)
    if s.fleet:
        found = _built_on_fleet(s, m)
    else:
        found = {b.variant.id: model.Variant.model_validate(b.doc(out.resolve())).build
                 for b in variants.build_all(s.target, m, replace(s.build, out_dir=out),
                                             lines.built_lines())}
    return {c.number: found[vid(s, c.flags)] for c in todo}


def _built_on_fleet(s: Setting, m: matrix.Matrix) -> dict[str, model.Build]:
    """The candidates built on a worker of the label (the compiler the label's workers have),
    their build records sent back."""
    sha = files.sha256_file(s.target.path)
    tag = files.sha256_bytes(",".join(v.id for v in m.variants).encode())[:12]
    got = s.fleet.client.submit(worker.build_task, str(s.target.path), sha, m, tag, pure=False,
                                resources={worker.BENCH: 1,
                                           worker.label_resource(s.fleet.label): 1}
                                ).result()
    return {v.id: v.build for v in map(model.Variant.model_validate, got["docs"])}


def run_id(s: Setting, path: Path) -> str:
    return s.store.find_run(str(path.parent))


def made(path: Path) -> int:
    """The builds the sweep whose results are at `path` made: its binaries, each layout of a set
    one, less those the build cache held (a relinked layout of a set built before is a build;
    the base, built in an earlier sweep, is none). Read from the sweep's builds.json, which
    lists every layout's build; a fleet sweep keeps none there, and has no layouts, so its
    results.json's variants tell the same, but for the A/A twin: a copy of the baseline's
    binary, with the baseline's build record."""
    listed = path.parent / "builds.json"
    try:
        docs = json.loads(listed.read_text())["variants"]
        return sum(1 for d in docs if not d["build"].get("reused"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return sum(1 for v in reader.load(path).variants if v.build and not v.build.reused
                   and not v.id.endswith(model.AA_SUFFIX))


def _runs(s: Setting, path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for sample in s.store.samples(run_id(s, path)):
        counts[sample.variant_id] = counts.get(sample.variant_id, 0) + 1
    return counts


def _one(v: model.Variant, values, base_id: str, counts: dict[str, int],
         baseline: str) -> Judged:
    build = v.build
    if build.status != "ok":
        return Judged("failed-build", v.id, detail=failure(build))
    if build.identical_to:
        return Judged("identical", v.id, identical_to=build.identical_to,
                      detail=f"the same code as {build.identical_to}")
    check = v.check
    if check is None or check.status not in analysis.PASSED:
        why = f"{check.status}: {check.detail}" if check else "not checked"
        return Judged("failed-check", v.id, detail=why)
    if v.id not in values or base_id not in values:
        return Judged("measured", v.id, runs=counts.get(v.id, 0), detail="no samples")
    est = stats.compare(values[v.id], values[base_id])
    vs = v.vs_baseline
    ratio = est.ratio if math.isfinite(est.ratio) and est.ratio > 0 else None
    return Judged("measured", v.id, ratio=ratio, ci95=finite_pair(est.ci95),
                  verdict=vs.verdict if vs and v.id != baseline else None,
                  runs=counts.get(v.id, 0))


def fresh(folder: Path) -> None:
    """A tune's own build folder, emptied of an attempt a kill interrupted: builds start in an
    empty folder, and the build cache holds what the attempt finished."""
    if folder.exists():
        shutil.rmtree(folder)


def failure(build: model.Build) -> str:
    return f"{build.status}: {analysis.build_reason(getattr(build, 'detail', None))}"


def finite_pair(ci) -> list[float] | None:
    """An interval as JSON holds it: none where it is not finite (too few pairs for it)."""
    ok = ci and all(x is not None and math.isfinite(x) for x in ci)
    return [float(ci[0]), float(ci[1])] if ok else None
