"""A sweep: `flagsweep run` from target to results, and its resumption.

build every variant -> generate the input -> check each distinct binary's output -> measure in
pinned, shuffled rounds -> results.json and samples.csv. Everything a resume needs is in the
store from the start (options, variants, checks, then each sample as taken), so an interrupted
sweep (Ctrl-C, SIGTERM, kill -9) continues with `--resume RUN_ID` without rebuilding or
re-running what is done.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from flagsweep.compilation import layout, variants
from flagsweep.errors import FlagsweepError, Interrupted
from flagsweep.experiment import matrix, recipe, target
from flagsweep.explain import explanation
from flagsweep.host import advice, launcher, placement, system, toolchain
from flagsweep.host.executor import Executor
from flagsweep.jobs import controls, schedule
from flagsweep.jobs.checks import Sweep, checked, replaced, same_binaries
from flagsweep.jobs.outputs import (drop_outputs, run_options, workload_option, write_files,
                                    written_again)
from flagsweep.jobs.timing import run_length, timed
from flagsweep.measure import counters
from flagsweep.measure.options import MeasureOptions, chosen_cpu
from flagsweep.process import sigterm_as_interrupt
from flagsweep.report import lines
from flagsweep import model
from flagsweep.results import confirmation, reader, stored, writer
from flagsweep.model import AA_SUFFIX
from flagsweep.results.store import Store
from flagsweep.workload import check, inputs

log = logging.getLogger("flagsweep.jobs.sweep")


def start(t: target.Target, r: recipe.Recipe, m: matrix.Matrix, build_opts: variants.Options,
          opts: MeasureOptions, store: Store, say: Callable[[str], None],
          run_name: str | None = None,
          execute: Executor = launcher.run_once, wait: bool = False) -> Path:
    out = build_opts.out_dir.resolve()
    base = run_name or out.name      # the run id: this, numbered if the store has it
    opts.seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**31)
    schedule.prepare(opts, execute, say)
    with schedule.locked(f"{t.name} {base}", opts, wait, say), sigterm_as_interrupt():
        return started(t, r, m, build_opts, opts, store, say, base, execute)


def started(t: target.Target, r: recipe.Recipe, m: matrix.Matrix, build_opts: variants.Options,
             opts: MeasureOptions, store: Store, say: Callable[[str], None], base: str,
             execute: Executor, confirms: dict | None = None) -> Path:
    """start() once the CPU is ours; `confirms`: the sweep this one confirms over layouts."""
    out = build_opts.out_dir.resolve()
    cpu = chosen_cpu(opts)
    if opts.layouts:
        m = _layouts(m, opts.layouts)
    # Before building: the load average must show other work, not our own compiles.
    machine = system.machine_state(sorted({v.compiler for v in m.variants}), pinned_cpu=cpu) \
        | {"cpu_choice": opts.cpu_choice or placement.given(cpu).doc()}
    for warning in advice.warnings(machine):
        say(f"warning: {warning}")
    # Fail fast, before any build, on what cannot work.
    counters.refuse_unusable(opts.counters, opts.metric)
    reference = controls.reference_binary(Path(opts.reference)) if opts.reference else None
    if opts.quick and (note := inputs.quick_note(t)):
        say(note)
    try:
        inputs.prepare(t, quick=opts.quick)
        if any(v.pgo for v in m.variants):
            build_opts = replace(build_opts, training=inputs.training(t))
        builds = variants.build_all(t, m, build_opts,
                                    lines.built_lines())
    except KeyboardInterrupt:
        # No run exists yet, so there is nothing to resume; the build processes are ended
        # by then (process.run waits until none of them runs).
        raise Interrupted(f"interrupted before measuring; no run was recorded. {out} holds "
                          "a partial build, and builds start in a new folder: run again "
                          "with another --out, or remove it first") from None
    variants.write_summary(out, t, r, m, builds)
    for line in variants.failures(builds):
        say(line)
    for line in variants.foreign(builds) + variants.build_programs(builds):
        say(f"note: {line}")
    for line in variants.left_out(builds):
        say(f"warning: {line}")
    docs = [model.Variant.model_validate(b.doc(out)) for b in builds]
    if not opts.layouts:         # with layouts the twin is built: other layouts, same code
        docs += controls.aa_twin(docs, m.baseline.id, out)
    if reference is None and controls.kept_reference_applies(opts):
        reference = controls.kept_reference(store, t.name, machine, m.baseline.id, out, say)
    docs += controls.reference_arm(docs, m.baseline.id, out, reference)
    options = run_options(t, r, m, opts) | ({"confirms": confirms} if confirms else {})
    run_id = store.create_unique_run(base, t.name, r.name, out, options, machine)
    stored.claim(out, "run_id", run_id)
    say(f"run id {run_id}")
    store.save_variants(run_id, docs)
    sweep = Sweep(run_id, t, r.name, out, opts, docs, m.baseline.id, execute, build_opts)
    return _measure(sweep, store, say)


def _layouts(m: matrix.Matrix, k: int) -> matrix.Matrix:
    """The matrix as layout replicates (build.layout), refused where the linker cannot."""
    for compiler in sorted({v.compiler for v in m.variants}):
        why = layout.unavailable(toolchain.resolve(compiler).cc)
        if why:
            raise FlagsweepError(f"--layouts {k}: {why}")
    return layout.replicate(m, k, m.baseline.id + AA_SUFFIX)


def confirm(screen_path: Path, t: target.Target, r: recipe.Recipe, m: matrix.Matrix,
            build_opts: variants.Options, opts: MeasureOptions, store: Store,
            say: Callable[[str], None], wait: bool = False) -> Path | None:
    """The flags a screen found to matter, each alone on the base: main effects in a screen are
    aliased with interactions, so survivors are confirmed one at a time. None: nothing
    mattered, so there is nothing to confirm."""
    # The compiler column of a two-compiler screen is not a flag to add to the base.
    survivors = [e.factor for e in reader.load(screen_path).effects or []
                 if e.matters and e.factor != "compiler"]
    if not survivors:
        say("confirm: no flag mattered in the screen; nothing to confirm")
        return None
    say(f"confirm: re-testing {', '.join(survivors)} one at a time against {r.spec.base}")
    one_by_one = recipe.from_flags([r.spec.base] + [f"{r.spec.base} {f}" for f in survivors],
                                   [m.baseline.compiler])
    out = build_opts.out_dir.resolve()
    # A fresh seed: the confirmation is a new experiment, not a replay of the screen's order.
    return start(t, one_by_one, matrix.expand(one_by_one),
                 replace(build_opts, out_dir=out.with_name(out.name + "-confirm")),
                 replace(opts, seed=None), store, say, wait=wait)


def resume(id_or_dir: str, store: Store, say: Callable[[str], None],
           execute: Executor = launcher.run_once, wait: bool = False) -> Path:
    run_id = store.find_run(id_or_dir)
    row = store.run(run_id)
    if row.status == "complete":
        if not (stored.out_dir(store, run_id, row) / "results.json").is_file():
            return written_again(run_id, store, say)
        raise FlagsweepError(f"run {run_id} is already complete ({row.stop_reason})")
    # A tune's end (until) does not bind a sweep resumed by hand: it gets its --budget again.
    sweep = of_store(store, run_id, execute)
    with schedule.locked(f"{sweep.target.name} {run_id} (resumed)", sweep.opts, wait, say,
                         row.options.schedule), sigterm_as_interrupt():
        return resumed(sweep, store, say)


def of_store(store: Store, run_id: str, execute: Executor = launcher.run_once,
             t: target.Target | None = None, until: float | None = None) -> Sweep:
    """A stored run as a sweep to resume, once its row shows it may be acted on
    (results.stored.run: its folder, target file, compilers and options); `t`: the target a
    tune checked already. `until`: the wall-clock end of its rounds (MeasureOptions.until)."""
    found = stored.run(store, run_id, t)
    named = found.options.baseline
    # With layouts the run's baseline is a variant: its first layout is the binary checks use.
    baseline = next((d.id for d in found.docs if d.layout_of == named), named)
    if baseline not in {d.id for d in found.docs}:
        raise FlagsweepError(f"{stored.row_of(store, run_id)}, key 'options.baseline': "
                             f"{baseline!r} is none of the run's variants")
    return Sweep(run_id, found.target, found.row.recipe, found.out,
                 replace(found.measure, until=until), found.docs, baseline, execute)


def resumed(sweep: Sweep, store: Store, say: Callable[[str], None]) -> Path:
    """resume() once the CPU is ours (a tune resumes its batch under its own lock)."""
    same_binaries(sweep)
    store.reopen_run(sweep.run_id)
    done = store.done(sweep.run_id)
    say(f"resuming {sweep.run_id}: {len(done)} samples already taken")
    return _measure(sweep, store, say)


def _measure(sweep: Sweep, store: Store, say: Callable[[str], None]) -> Path:
    try:
        inp = inputs.prepare(sweep.target, quick=sweep.opts.quick,
                             size=run_length(sweep, store, say))
        workload = check.Invocation(sweep.target, inp.path, sweep.out / "scratch")
        # A resume measures without checking again, and a complete run's scratch/ is gone.
        workload.scratch.mkdir(parents=True, exist_ok=True)
        store.set_option(sweep.run_id, "workload", workload_option(sweep.target, inp))
        measured = checked(sweep, workload, store, say)
        pre = counters.setup(sweep.opts.counters, say)
        store.set_option(sweep.run_id, "counters", pre.to_json() if pre else None)
        outcome, status = timed(sweep, workload, measured, pre, store, say)
        replaced(sweep, store, say)
    except KeyboardInterrupt:
        store.finish_run(sweep.run_id, "interrupted", "interrupted")
        _outputs_so_far(sweep, store, say)
        raise Interrupted(f"interrupted; every finished sample is kept. Continue with: "
                             f"flagsweep run --resume {sweep.run_id}") from None
    except Exception as e:
        # Whatever stopped it, the run ends as failed with the reason, never left `running`;
        # a failed run can be resumed.
        store.finish_run(sweep.run_id, "failed", _reason(e))
        _outputs_so_far(sweep, store, say)
        raise
    ending = {"status": status, "stop_reason": outcome.stop_reason, "finished": time.time()}
    try:
        # Decided before the files are written: the page never says "Use X" unconfirmed. A
        # sweep that ended busy has no answer to confirm (analysis.unanswered) until resumed:
        # its rows within layout luck's reach are labelled so.
        confirmation_planned(sweep, store, ending,
                             None if status == "complete" else f"the sweep ended {status}")
        # The files first, then the status: killed in between, the run is still resumable
        # (resuming writes them); the other way round it was complete with no results.json.
        path = write_outputs(sweep, store, say, ending)
        store.finish_run(sweep.run_id, **ending)
        if status == "complete" and controls.kept_reference_applies(sweep.opts):
            controls.keep_reference(store, sweep.run_id, sweep.target.name, sweep.builds,
                                    sweep.baseline, say)
        path = _confirmed(sweep, store, path, say)
        if sweep.opts.explain:
            path = _explained(sweep, store, path, say)
        if not sweep.opts.keep_scratch:
            drop_outputs(workload.scratch, say)
        return path
    except Interrupted:
        raise                        # in the confirmation: this run is complete and stays so
    except Exception as e:
        # A complete run is one with its results written: otherwise it is failed, with why.
        why = f"every sample is taken, but results.json was not written ({_reason(e)})"
        store.finish_run(sweep.run_id, "failed", why)
        log.info("results.json not written", exc_info=True)
        raise FlagsweepError(f"run {sweep.run_id}: {why}; the run is marked failed and keeps "
                             f"its samples: `flagsweep run --resume {sweep.run_id}` writes the "
                             "results once that is fixed") from e


def confirmation_planned(sweep: Sweep, store: Store, ending: dict,
                         off: str | None = None) -> None:
    """Which of this sweep's faster/slower rows are confirmed over layouts, over how many
    (results.confirmation), kept with the run: a confirmation that needs running is recorded
    `running` until it ends. `off`: why this sweep cannot run one (its rows are labelled)."""
    store.set_option(sweep.run_id, "confirmation", None)    # a plan of an earlier attempt
    doc = writer.document(store, sweep.run_id, ending)
    reach = confirmation.measured_reach(store, sweep.target.name, doc.machine)
    planned = confirmation.plan(doc, reach, sweep.opts, off)
    if doc.status != "complete" and planned.status == confirmation.NOT_NEEDED:
        planned = None      # no answer yet: "not needed" would read as a settled answer's
    store.set_option(sweep.run_id, "confirmation", planned)


def _confirmed(sweep: Sweep, store: Store, path: Path, say: Callable[[str], None]) -> Path:
    """The confirmation over layouts, when this sweep's record asks for it: a sweep of its own
    (the rows within layout luck's reach and the baseline, K layouts each, and the A/A twin's
    K) in `OUT/layouts`, its answer written into this run's results. It never costs this run's
    samples or results: a failure is recorded as the rows' caveat, and an interruption leaves a
    complete run and a confirmation to resume. A confirmation sweep itself reports to the run it
    confirms."""
    options = store.run(sweep.run_id).options
    if options.confirms:
        _report_confirmation(options.confirms, path, store, say)
        return path
    record = _record(options)
    if record is None or record.status != confirmation.PENDING:
        return path
    say(f"confirm: {record.why}; {record.sizing}")
    out = sweep.out / "layouts"
    try:
        _layout_sweep(sweep, record, out, store, say)
    except Interrupted as e:
        child = _run_in(store, out)
        store.set_option(sweep.run_id, "confirmation", confirmation.ended(
            record.dump(), confirmation.INTERRUPTED, f"not confirmed over layouts: the confirmation "
            f"was interrupted ({e})", child))
        path = write_outputs(sweep, store, say)
        raise Interrupted(f"run {sweep.run_id} is complete ({path}), but the confirmation of "
                          f"its recommendation over layouts was interrupted: {e}") from None
    except Exception as e:  # noqa: BLE001 - whatever it was, the sweep's own answer stands
        log.info("confirmation failed", exc_info=True)
        store.set_option(sweep.run_id, "confirmation", confirmation.ended(
            record.dump(), confirmation.FAILED, f"not confirmed over layouts: the confirmation "
            f"failed ({_reason(e)})", _run_in(store, out)))
    path = write_outputs(sweep, store, say)
    for line in _confirmed_lines(reader.load(path)):
        say(line)
    return path


def _confirmed_lines(doc: model.Results) -> list[str]:
    """What the confirmation did to each row it was about, one line each."""
    c = doc.recommendation.confirmation if doc.recommendation else None
    if c is None:
        return []
    rows = [v for v in doc.variants if v.vs_baseline and v.vs_baseline.layout_luck]
    if c.status in (confirmation.FAILED, confirmation.INTERRUPTED) or not rows:
        return [f"confirm: {c.why}"]
    return [f"confirm: {' '.join(v.flags) or v.id}: {v.vs_baseline.layout_luck.why}"
            for v in rows]


def _record(options: model.RunOptions) -> model.Confirmation | None:
    """A run's confirmation record (results.confirmation keeps it with the run's options), as
    results.json's `recommendation.confirmation` says it; None before one is planned."""
    return options.confirmation


def _layout_sweep(sweep: Sweep, record: model.Confirmation, out: Path, store: Store,
                  say: Callable[[str], None]) -> Path:
    """The rows to confirm and the baseline again, each built in K seeded layouts (the same code
    relinked in K function orders), measured like any sweep with --layouts, under this sweep's
    lock."""
    by_id = {d.id: d for d in sweep.builds}
    rows = [by_id[sweep.baseline]] + [by_id[vid] for vid in record.variants or [record.variant]]
    chosen = [matrix.Cell(d.id, d.compiler, tuple(d.flags), d.factors or {},
                          pgo=d.id.endswith("-pgo")) for d in rows]
    r = recipe.from_flags([" ".join(d.flags) for d in rows], sorted({d.compiler for d in rows}))
    m = matrix.Matrix(chosen, chosen[0], [], "explicit")
    build_opts = replace(sweep.build_opts or variants.Options(out_dir=out), out_dir=out,
                         training=None)
    # Its own seed, derived from this one's: --seed reproduces the whole run.
    rounds = confirmation.rounds_of(sweep.opts)
    opts = replace(sweep.opts, layouts=record.layouts, layout_confirm=False, explain=False,
                   reference=None, seed=(sweep.opts.seed or 0) + 1, max_runs=rounds,
                   min_runs=min(sweep.opts.min_runs, rounds))
    confirms = {"run_id": sweep.run_id, "began": time.time()}
    return started(sweep.target, r, m, build_opts, opts, store, say, f"{sweep.run_id}-layouts",
                    sweep.execute, confirms)


def _report_confirmation(confirms: model.Confirms, path: Path, store: Store,
                         say: Callable[[str], None]) -> None:
    """A confirmation sweep's answer into the run it confirms, and that run's files written
    again (also when the confirmation was resumed on its own)."""
    parent = store.run(confirms.run_id)
    record = _record(parent.options)
    if record is None or not (record.variants or record.variant):
        return
    out = stored.out_dir(store, confirms.run_id, parent)
    doc = reader.load(path)
    if doc.status != "complete":     # stopped busy: its few layouts are no answer yet
        done = confirmation.ended(
            record.dump(), confirmation.INTERRUPTED, f"not confirmed over layouts: the "
            f"confirmation ended {doc.status} ({doc.stop_reason}). Continue with: flagsweep run "
            f"--resume {doc.run_id}", doc.run_id)
    else:
        done = confirmation.outcome(record.dump(), doc, time.time() - (confirms.began or 0), path)
    store.set_option(confirms.run_id, "confirmation", done)
    write_files(store, confirms.run_id, out, say)


def _run_in(store: Store, out: Path) -> str | None:
    """The run recorded in folder `out`, if one was."""
    found = store.find_run(str(out))
    return found if found != str(out) else None


def _explained(sweep: Sweep, store: Store, path: Path, say: Callable[[str], None]) -> Path:
    """run --explain, once the verdicts are in results.json: the profiles are stored with the
    run (so every later rewrite of results.json keeps them) and the files written again. The
    explanation never costs the results: a failure of it is recorded and told."""
    try:
        found = explanation.explain(reader.load(path), sweep.out, say)
    except FlagsweepError as e:
        say(f"explain: not done ({e})")
        found = {"method": None, "failure": str(e), "variants": {}}
    store.set_option(sweep.run_id, "explain", found)
    return write_outputs(sweep, store, say)


def _outputs_so_far(sweep: Sweep, store: Store, say: Callable[[str], None]) -> None:
    """results.json of a stopped run, if it can be written: the error that stopped the run is
    what the user must see, not a second one from writing."""
    try:
        replaced(sweep, store, say)
        write_outputs(sweep, store, say)
    except Exception as e:  # noqa: BLE001 - the stopping error is raised by the caller
        log.info("results.json not written", exc_info=True)
        say(f"results.json not written ({_reason(e)}); the samples are in the store")


def _reason(e: BaseException) -> str:
    """An exception in one line: a FlagsweepError's own message, else its type and text."""
    return str(e) if isinstance(e, FlagsweepError) else f"{type(e).__name__}: {e}"


def write_outputs(sweep: Sweep, store: Store, say: Callable[[str], None],
                  ending: dict | None = None) -> Path:
    """results.json and samples.csv, then the report made from them. A report that cannot be
    drawn must not cost the results: they are written first, and the failure is told.
    `ending`: how the run ends, when the files are written before the store is told."""
    return write_files(store, sweep.run_id, sweep.out, say, ending)


