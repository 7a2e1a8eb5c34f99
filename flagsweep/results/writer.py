"""The results files: results.json (the public contract, flagsweep.model, docs/results.md),
samples.csv (one row per sample, warmups and failures included), and the progress display.

Both files are rebuilt from the store, so an interrupted sweep's files hold every sample taken so
far, and a resumed sweep's files are the union. The statistics fields (summary, vs_baseline,
effects, aa, noise, recommendation) come from flagsweep.results.analysis.
"""

from __future__ import annotations

import collections
import csv
import io
import json
import logging
import statistics
from datetime import datetime, timezone
from pathlib import Path

from flagsweep.errors import FlagsweepError
from flagsweep.files import write_atomic
from flagsweep.measure import disturbance, resolution
from flagsweep.measure import metric as metric_mod
from flagsweep.measure import pairs, pilot
from flagsweep.measure.sample import SAMPLE_METRICS, Sample
from flagsweep.compilation import layout
from flagsweep import model
from flagsweep.results import analysis, confirmation, layouts
from flagsweep.model import SCHEMA
from flagsweep.results.store import NoStore, Store
from flagsweep.experiment import target
from flagsweep import stats
from flagsweep.stats import sequential

log = logging.getLogger("flagsweep.results")
CSV_COUNTERS = ("cycles", "instructions", "branch_misses", "cache_misses", "task_clock_s",
                "context_switches", "cpu_migrations", "page_faults", "duration_s",
                "involuntary_switches", "run_delay_s", "on_cpu_s", "steal_s")


def write(out: Path, store: Store, run_id: str, history: list[dict] | None = None,
          ending: dict | None = None) -> Path:
    """Write results.json and samples.csv into out; return the results.json path. `history`:
    this run's variants in earlier sweeps (across.history.of_run), for the report's plot.
    `ending` (status, stop_reason, finished): how the run ends, for the files written before
    the store is told, so that a run the store calls complete always has its files."""
    all_samples, set_aside = store.samples(run_id), store.attempts(run_id)
    doc = document(store, run_id, ending, (all_samples, set_aside))
    doc.history = [model.HistorySeries.model_validate(series) for series in history or []]
    path = write_atomic(out / "results.json", json.dumps(doc.dump(), indent=1))
    _write_csv(out / "samples.csv", run_id, all_samples, set_aside)
    return path


def document(store: Store, run_id: str, ending: dict | None = None,
             taken: tuple[list[Sample], list[Sample]] | None = None) -> model.Results:
    """results.json's content for a run as the store holds it now, without its history;
    `taken`: its samples and set-aside attempts, when already read."""
    run = store.run(run_id).model_copy(update=ending or {})
    all_samples, set_aside = taken or (store.samples(run_id), store.attempts(run_id))
    doc = _document(run, store.variants(run_id), all_samples)
    _disturbance(doc, all_samples, set_aside)
    return doc


def _disturbance(doc: model.Results, samples: list[Sample], set_aside: list[Sample]) -> None:
    """How many counted runs the machine disturbed, and how many were taken again because of
    it (flagsweep.measure.disturbance): the sweep's totals in `measurement`, each variant's in its
    summary. A set-aside attempt was disturbed and retaken; a counted sample still marked
    disturbed ran out of retakes."""
    retaken = collections.Counter(s.variant_id for s in set_aside)
    disturbed = retaken + collections.Counter(s.variant_id for s in samples
                                              if s.disturbed and s.round >= 0)
    for v in doc.variants:
        if v.summary is not None:
            v.summary.disturbed, v.summary.retaken = disturbed[v.id], retaken[v.id]
    m = doc.measurement
    m.disturbed, m.retaken = sum(disturbed.values()), sum(retaken.values())
    m.still_disturbed = sum(s.disturbed for s in samples if s.round >= 0)
    most = disturbance.limit(doc.metric, doc.threshold_pct)
    m.disturbance_rule = None if most is None else model.DisturbanceRule(
        off_cpu_share=most, steal_share=stats.fraction(doc.threshold_pct),
        max_retakes=disturbance.MAX_RETAKES)


def located(arg: str | Path, scratch: Path, store: Store | None = None) -> Path:
    """A results.json named by its path (or its folder), or by a run id in the store: then
    written from the store into scratch/<run id>/. A fleet's runs live in the shared database
    while their folders are on the driver's machine, so merge, pick and suite read them by id."""
    path = Path(arg)
    if path.is_file():
        return path
    if path.is_dir() and (path / "results.json").is_file():
        return path / "results.json"
    try:
        db = store or Store(create=False)
    except NoStore as e:
        raise FlagsweepError(f"{arg}: no such results file, and {e}") from None
    run_id = db.find_run(str(arg))
    try:
        db.run(run_id)
    except FlagsweepError:
        raise FlagsweepError(f"{arg}: no such results file, and no run of that id in the store "
                             f"{db.url}") from None
    if Path(run_id).name != run_id or run_id in (".", ".."):
        # The id is the row's word: as a folder name it could climb out of scratch.
        raise FlagsweepError(f"{arg}: run {run_id!r} in the store {db.url} has an id that is "
                             f"not a plain folder name; its results are written only into a "
                             f"folder of {scratch}'s own, named by the run id")
    out = scratch / run_id
    for folder in (scratch, out):   # renamed into place, a file would land where a link points
        if folder.is_symlink():
            raise FlagsweepError(f"{folder} is a symbolic link; the results of run {run_id} are "
                                 "written only into a folder of the --out folder's own: remove it")
    out.mkdir(parents=True, exist_ok=True)
    try:
        return write(out, db, run_id)
    except FlagsweepError:
        raise
    except Exception as e:
        # A run the store holds but whose results cannot be computed (one recorded by an
        # older flagsweep with an option value it no longer accepts, say) is named, not a crash.
        log.info("results of %s not written", run_id, exc_info=True)
        raise FlagsweepError(f"{arg}: the results of run {run_id} (status "
                             f"{db.run(run_id).status}) cannot be written from the store "
                             f"{db.url}: {type(e).__name__}: {e}") from e


def _document(run: model.RunRecord, stored: list[model.Variant],
              samples: list[Sample]) -> model.Results:
    """The document from the store's run record (its options as the sweep kept them) and its
    variants; the statistics fields filled by analysis, confirmation and explain."""
    o = run.options
    m = o.measure
    metric = metric_mod.column(m["metric"])
    t_path = o.target_path
    doc = model.Results(
        schema=SCHEMA, run_id=run.run_id, target=run.target,
        target_version=o.target_version, recipe=run.recipe, study=o.study,
        started=_iso(run.started), finished=_iso(run.finished), status=run.status,
        stop_reason=run.stop_reason,
        machine=run.machine.model_copy(update={
            "hw_counters": bool(o.counters and o.counters.hw_counters)}),
        compilers=o.compilers, metric=metric,
        workload=o.workload or model.Workload(target_file=t_path), baseline=o.baseline,
        design=o.design, distro=o.distro, skipped=o.skipped,
        measurement=_measurement(m, o.metric_choice, o.schedule),
        variants=[_variant(v, samples, run.started, metric) for v in stored],
        threshold_pct=m.get("threshold_pct", stats.THRESHOLD_PCT))
    values = analysis.values_by_round(samples, lambda s: metric_mod.metric_of(s, metric))
    refused = _replaced(doc.variants, o.replaced)
    replicates = None
    doc.measurement.layouts = None
    if m.get("layouts"):
        folded = layouts.fold(doc.variants, values, doc.baseline)
        doc.variants, values, replicates = folded.variants, folded.values, folded.replicates
        doc.measurement.layouts = model.Layouts.model_validate(layout.described(m["layouts"]))
    design = sequential.Design.stored(o.sequential)
    doc.measurement.sequential = model.Sequential.model_validate(design.to_json())
    analysis.apply(doc, values, seed=m.get("seed") or 0, replicates=replicates,
                   refused=refused, design=design, luck=o.confirmation)
    confirmation.apply(doc, o.confirmation)
    analysis.unanswered(doc)
    _stopped(doc, o.stopped, samples)
    _short_run(doc, t_path)
    analysis.advise(doc, samples)
    add_explain(doc, o.explain)
    return doc


# The measuring options results.json repeats under `measurement`, as the sweep stored them.
MEASUREMENT = ("seed", "warmup", "min_runs", "max_runs", "runs", "budget", "precision_pct", "cpu",
               "quick", "strict_check", "counters", "threshold_pct", "reference", "metric",
               "run_length", "confirm_layouts", "confirm_rows")


def _measurement(m: dict, metric_choice: model.ChosenMetric | None,
                 schedule: model.Schedule | None = None) -> model.Measurement:
    # --input-size as given: auto, else the size --quick (or its absence) chose
    size = m.get("input_size") or ("quick" if m.get("quick") else "full")
    return model.Measurement.model_validate(
        {k: m[k] for k in MEASUREMENT if k in m} | {"metric_choice": metric_choice,
                                                     "input_size": size, "schedule": schedule})


def _short_run(doc: model.Results, target_path: str) -> None:
    """`measurement.short_run`: the warning for a baseline whose runs are shorter than a sample
    resolves, with the input size that would fix it (flagsweep.measure.resolution), or null.
    Judged on a time: the metric, or wall time when the metric is a count."""
    base = next((v for v in doc.variants if v.id == doc.baseline), None)
    column = doc.metric if doc.metric in resolution.TIME_METRICS else "wall_s"
    taken = (base.samples if base is not None else None) or {}
    values = [x for x in taken.get(column) or [] if x is not None]
    try:
        inputs = target.load(target_path).spec.inputs
    except FlagsweepError:      # the target's file moved or changed: the warning without a size
        inputs = None
    warning = resolution.short_run(statistics.median(values) if values else None, inputs,
                                   bool(doc.measurement.quick), target_path)
    doc.measurement.short_run = None if warning is None \
        else model.ShortRun.model_validate(warning)


def _replaced(variants: list[model.Variant],
              replaced: dict[str, model.Replaced]) -> dict[str, str]:
    """The binaries found replaced after the rounds (checks.replaced): each one's record as its
    variant's `replaced`; returns variant -> why, for the verdicts it does not get. A layout's
    replaced binary refuses the whole variant it is a layout of."""
    refused: dict[str, str] = {}
    for v in variants:
        record = replaced.get(v.id)
        if record:
            v.replaced = record
            refused[v.layout_of or v.id] = (
                f"replaced during the sweep: {record.why}; its samples do not time one "
                "program, so it has no verdict")
    return refused


def add_explain(doc: model.Results, explain: model.StoredExplain | dict | None) -> None:
    """run --explain's profiles (flagsweep.explain.explanation.explain) into the document: each
    explained variant's entry as its `explain`, the rest as the top-level `explain`."""
    if not explain:
        return
    explain = model.StoredExplain.model_validate(explain)
    entries = explain.variants
    for v in doc.variants:
        if v.id in entries:
            v.explain = entries[v.id]
    doc.explain = model.ExplainRun.model_validate(
        {k: val for k, val in explain.dump().items() if k != "variants"}
        | {"explained": [v.id for v in doc.variants if v.id in entries]})


def _stopped(doc: model.Results, stopped: dict[str, model.EarlyStop],
             samples: list[Sample]) -> None:
    """The variants that stopped early (measure.rounds.stops): each one's round count and why in
    its summary, and the runs the sweep did not spend on them, against every variant in every
    round it ran."""
    counted = [s.round for s in samples if s.round >= 0]
    ran = max(counted) + 1 if counted else 0
    saved = 0
    for v in doc.variants:
        stop = stopped.get(v.id)
        v.summary.stopped_at = stop.rounds if stop else None
        v.summary.stopped_why = stop.why if stop else None
        if stop:
            saved += max(0, ran - stop.rounds)
    doc.measurement.runs_saved = saved


def _variant(v: model.Variant, samples: list[Sample], started: float,
             metric: str) -> model.Variant:
    """A stored variant with what was measured of it: its counted samples as columns, its
    failed runs, and how many of its samples perf multiplexed."""
    mine = [s for s in samples if s.variant_id == v.id]
    counted = [s for s in mine if s.ok and s.round >= 0]
    v.samples = _columns(counted, started, metric)
    v.failures = [model.Failure(round=s.round, failure=s.failure) for s in mine if not s.ok]
    v.multiplexed = sum(s.multiplexed for s in counted)
    return v


def _columns(samples: list[Sample], started: float, metric: str) -> dict[str, list]:
    cols: dict[str, list] = {k: [getattr(s, k) for s in samples] for k in SAMPLE_METRICS}
    # The run's metric is always a column, also when it is computed (cpu_s = user_s + sys_s):
    # a reader of samples[doc["metric"]] finds the values the statistics used.
    cols.setdefault(metric, [metric_mod.metric_of(s, metric) for s in samples])
    names = sorted({k for s in samples for k, val in (s.counters or {}).items()
                    if isinstance(val, (int, float))})
    for name in names:
        cols[name] = [(s.counters or {}).get(name) for s in samples]
    cols["round"] = [s.round for s in samples]
    cols["env_pad"] = [s.env_pad for s in samples]
    cols["cpu"] = [s.cpu for s in samples]        # the CPU each ran on, where it was recorded
    # When each sample was taken, in seconds from the run's start: the report's run-order plot.
    cols["elapsed_s"] = [round(s.taken_at - started, 3) for s in samples]
    return {k: v for k, v in cols.items() if k == metric or any(x is not None for x in v)}


def _write_csv(path: Path, run_id: str, samples: list[Sample], set_aside: list[Sample]) -> None:
    """Every run: the counted samples and, marked retaken = 1, the disturbed attempts that were
    taken again, in the order they were taken."""
    header = ["run_id", "variant", "round", "position", "warmup", "env_pad", *SAMPLE_METRICS,
              *CSV_COUNTERS, "multiplexed", "failure", "taken_at", "disturbed", "retaken",
              "pair", "partner", "cpu", "pilot"]
    partner = pairs.partners(samples + set_aside)
    rows = sorted([(s, 0) for s in samples] + [(s, 1) for s in set_aside],
                  key=lambda row: (row[0].taken_at, row[1] == 0))
    with io.StringIO(newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for s, retaken in rows:
            c = s.counters or {}
            w.writerow([run_id, s.variant_id, s.round, s.position,
                        int(s.round < 0 and not pilot.is_pilot(s.round)), s.env_pad,
                        *(getattr(s, k) for k in SAMPLE_METRICS), *(c.get(k) for k in CSV_COUNTERS),
                        int(s.multiplexed), s.failure or "", f"{s.taken_at:.3f}",
                        int(s.disturbed), retaken, s.pair or "",
                        partner.get((s.round, s.pair, s.variant_id), ""),
                        "" if s.cpu is None else s.cpu,
                        pilot.schedule_of(s.round) if pilot.is_pilot(s.round) else ""])
        write_atomic(path, f.getvalue())  # a full disk leaves the old file, not half of one


def _iso(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if ts else None
