"""`flagsweep tune`: search many flag sets for the fastest, then prove it and say which flags matter.

search (tune.search: an Optuna study in the store) -> batches (tune.race, tune.batch: each
one sweep on the quick input, its baseline the best set so far, the base kept in every round)
-> the ablation (tune.ablation) and the proof (tune.proving) -> tune.json, tune.html and one
sentence (tune.document).

Everything a resume needs is in the store as it happens: the study's trials (with their
flags, state and ratio), the tune's record and phase (flagsweep.model.tune's TuneRecord, one
user attribute of the study: tune.record), and each batch's sweep with every sample it took.
A tune killed at any point (kill -9 included) continues with `flagsweep tune --resume
TUNE_ID`: an unfinished batch's sweep resumes where it stopped and its trials are told;
nothing measured is measured again.

On a Dask fleet (--scheduler, one --cpu-label) the batches and the ablation are fleet sweeps of
that label (tune.batch.Fleet); the proof builds layouts, which a fleet sweep cannot, so it runs
on this machine only when this machine is of the label, and is left for a resume on one that is
otherwise.
"""

from __future__ import annotations

import random
import time
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from flagsweep import files
from flagsweep.compilation import variants
from flagsweep.errors import FlagsweepError, Interrupted
from flagsweep.experiment import target
from flagsweep.experiment.strict import quoted
from flagsweep.host import launcher, toolchain
from flagsweep.host.executor import Executor
from flagsweep.jobs import fleet, schedule
from flagsweep.measure.options import MeasureOptions, from_store
from flagsweep.process import sigterm_as_interrupt
from flagsweep.results import stored
from flagsweep.model.tune import BuildOpening, TuneOptions, TuneRecord
from flagsweep.results.store import Store
from flagsweep.tune import ablation, batch, budget, cost, document, proving, race, search
from flagsweep.tune import space as spaces
from flagsweep.tune.batch import Proposal, Setting
from flagsweep.tune.record import Tuning, read, space_of, stored_space


def start(t: target.Target, opts: TuneOptions, out: Path, store: Store,
          say: Callable[[str], None], execute: Executor = launcher.run_once,
          wait: bool = False) -> Path:
    opts.seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**31)
    # What can refuse the start is decided before the folder is made: a refused start leaves
    # no folder for the retry's --out to be refused as used.
    space = spaces.load(opts.space, opts.compiler, opts.base, say=say)
    opts.base = space.base
    mopts = MeasureOptions(**opts.measure)
    if not opts.scheduler:
        schedule.prepare(mopts, execute, say)
    opts.measure = asdict(mopts)
    out = files.make_dir(out.resolve(), "the tune's folder")
    say(f"tune {out.name}: {len(space.dimensions)} dimensions from {space.source} "
        f"({space.switches()} switches) on {space.base}, {opts.sampler} sampler, "
        f"seed {opts.seed}, budget {opts.budget_s:g} s")
    state = TuneRecord(options=opts, target_path=str(t.path),
                       target_sha256=files.sha256_file(t.path), out=str(out),
                       space=stored_space(space), sampler=opts.sampler, seed=opts.seed,
                       phase="search", spent_s=0.0, starts=_starts(space, opts))
    with _placed(opts, f"{t.name} tune {out.name}", mopts, wait, say) as where, \
            sigterm_as_interrupt():
        study = search.create(store, out.name, opts.sampler, opts.seed, state.model_dump())
        stored.claim(out, "tune_id", out.name)
        tune = Tuning(out.name, out, study, state, space,
                      _setting(t, opts, space, out, store, say, execute, where),
                      time.monotonic(), 0.0, wait)
        return _run(tune, say)


def resume(name_or_dir: str, store: Store, say: Callable[[str], None],
           execute: Executor = launcher.run_once, wait: bool = False,
           scheduler: str | None = None) -> Path:
    """`scheduler`: a fleet tune's scheduler at a new address (kept for its next resume).
    The tune's record is data, checked as typed input is before anything runs (_checked)."""
    name = search.find(store, name_or_dir)
    study = search.load(store, name)
    row = f"tune {name}'s record in the store {store.url}"
    record = read(study, row)
    out = stored.folder(record.out, "tune_id", name, row, "out")
    if record.phase == "done":
        path = out / "tune.json"
        say(f"tune {name} is complete: {path}")
        return path
    opts = record.options
    fleet_part = bool(opts.scheduler) and record.phase != "proof"
    if scheduler:
        if not opts.scheduler:
            raise FlagsweepError(f"tune {name} runs on this machine: --scheduler resumes a tune "
                                 "started on a fleet")
        opts.scheduler = scheduler
        study.set_user_attr(search.RECORD, record.model_dump())
    elif fleet_part:
        raise FlagsweepError(f"{row}, key 'options.scheduler': tune {name} runs on the fleet "
                             f"at {quoted(opts.scheduler)}, and flagsweep connects only to a "
                             "scheduler you name, since it runs what the scheduler sends: "
                             "resume with --scheduler ADDRESS")
    t, space, mopts = _checked(record, name, row)
    with _placed(opts if fleet_part else opts.model_copy(update={"scheduler": None}),
                 f"{t.name} tune {name} (resumed)", mopts, wait, say) as where, \
            sigterm_as_interrupt():
        tune = Tuning(name, out, study, record, space,
                      _setting(t, opts, space, out, store, say, execute, where),
                      time.monotonic(), record.spent_s or 0.0, wait)
        tune.save()                 # an older record's keys as one attribute from here on
        say(f"resuming tune {name}: {len(search.trials(study))} trials so far, phase "
            f"{record.phase}")
        return _run(tune, say)


def _checked(record: TuneRecord, name: str, row: str
             ) -> tuple[target.Target, spaces.Space, MeasureOptions]:
    """What the record says the tune builds and runs, checked as typed input is
    (results.stored): its target file one only root or you could have written, its compiler
    one that shows it is one, its source tree (--source-dir) one no other user can change,
    its measuring options of their types (kept so, for the batches to come)."""
    t = _target_of(record, row, name)
    space = space_of(record.space)
    stored.compiler(space.compiler, row, "space.compiler")
    source = record.options.source_dir
    if source and (why := toolchain.replaceable_tree(Path(source))):
        raise FlagsweepError(f"{row}, key 'options.source_dir': the source tree {source} is "
                             f"not built: {why}; flagsweep builds only a tree root or you "
                             "could have written")
    mopts = from_store(record.options.measure, f"{row}, key 'options.measure'")
    record.options.measure = asdict(mopts)
    return t, space, mopts


def _target_of(record: TuneRecord, row: str, name: str) -> target.Target:
    """The tune's target: the folder of its recorded file, else (a fleet tune's proof resumed
    on another machine) the shipped target of that name; either checked as a row's target
    (results.stored.target), with the bytes the tune started with."""
    path = Path(record.target_path)
    return stored.target(str(path.parent) if path.exists() else path.parent.name,
                         record.target_sha256, row, "target_path", f"tune {name}")


@contextmanager
def _placed(opts: TuneOptions, what: str, mopts: MeasureOptions, wait: bool,
            say: Callable[[str], None]):
    """Where the tune measures: this machine under its per-CPU locks (its duets' second CPU's
    too, jobs.schedule), or the fleet through a client (no lock here: each worker measures
    one thing at a time, its `bench` resource)."""
    if not opts.scheduler:
        with schedule.locked(what, mopts, wait, say, mopts.chosen_schedule):
            yield None
        return
    client = fleet.connect(opts.scheduler)
    try:
        yield batch.Fleet(client, fleet.check_label(opts.cpu_label or ""))
    finally:
        client.close()


def _setting(t: target.Target, opts: TuneOptions, space: spaces.Space, out: Path, store: Store,
             say: Callable[[str], None], execute: Executor,
             where: batch.Fleet | None = None) -> Setting:
    build = variants.Options(out_dir=out, jobs=opts.jobs, offline=opts.offline,
                             source_dir=Path(opts.source_dir) if opts.source_dir else None)
    logged = _logger(out / "tune.log")
    return Setting(t, space.compiler, tuple(space.base.split()) if isinstance(space.base, str)
                   else tuple(space.base), build, MeasureOptions(**opts.measure), store,
                   logged, execute, where)


def _logger(path: Path) -> Callable[[str], None]:
    """The batches' own sweep lines go to tune.log: the terminal gets one line a batch."""
    def say(line: str) -> None:
        with path.open("a") as f:
            f.write(line + "\n")
    return say


def _starts(space: spaces.Space, opts: TuneOptions) -> list[dict[str, str]]:
    """The sets the search begins with (`search.starts`): none for the random search, which
    stays the plain baseline, or when asked for none."""
    if not opts.starts or opts.sampler == "random":
        return []
    # -O3: the level the proof compares every set with (proof.o3).
    return search.starts(space, spaces.level_choices(space, "-O3"))


def _run(tune: Tuning, say: Callable[[str], None]) -> Path:
    try:
        _opening(tune, say)
        race.finish_open_batch(tune, say)
        # A proof that cannot run here (a fleet tune on a machine of another label) leaves
        # the phase as it is, for a resume on a machine of the label.
        for phase, step, after in (("search", race.race, "ablation"),
                                   ("ablation", ablation.ablation, "proof"),
                                   ("proof", proving.proved, "done")):
            if tune.state.phase == phase and step(tune, say) is not False:
                cost.phase_ended(tune, phase, after)
    except (KeyboardInterrupt, Interrupted):
        cost.save_clock(tune)
        document.write(tune, "interrupted")
        # The batch's own hint (resume its sweep) is not the user's: the tune resumes it.
        raise Interrupted(f"tune {tune.name} interrupted in its {tune.state.phase} phase; "
                          "every trial and sample is kept. Continue with: flagsweep tune "
                          f"--resume {tune.name}") from None
    except Exception:
        cost.save_clock(tune)
        document.write(tune, "failed")
        raise
    cost.save_clock(tune)
    path = document.write(tune, "complete")
    say(f"tune.json: {path}")
    return path


def _opening(tune: Tuning, say: Callable[[str], None]) -> None:
    """What the budget buys here, said once as the tune starts (tune.budget.opening). The
    base is built first, as the first batch would build it (which then takes it from the
    build cache), and its build's time is the pace; a base the build cache held tells the
    time its build took then."""
    if tune.state.opening is not None or tune.state.batches:
        return
    s = tune.setting
    began = time.monotonic()
    built = batch.built(s, tune.out / "candidates" / "base", [Proposal(-1, s.base)])[-1]
    took = time.monotonic() - began
    if built.status == "ok" and not built.reused:
        cost.count(tune, "base", builds=1, build_s=took)
    pace = None if built.status != "ok" else built.seconds if built.reused else took
    compiles = built.audit.compiles if built.audit else None
    tune.state.opening = BuildOpening(build_s=pace, compiles=compiles, cached=bool(built.reused))
    tune.save()
    say(budget.opening(tune.opts.budget_s, cost.SHARES, pace, compiles, bool(built.reused)))
