"""`flagsweep tune`: search many flag sets for the fastest, then prove it and say which flags matter.

search (jobs.search: an Optuna study in the store) -> batches (jobs.batch: each one sweep on
the quick input, its baseline the best set so far, the base kept in every round) -> the
ablation and the proof (jobs.proof) -> tune.json, tune.html and one sentence.

Everything a resume needs is in the store as it happens: the study's trials (with their
flags, state and ratio), the tune's record and phase (the study's user attributes), and each
batch's sweep with every sample it took. A tune killed at any point (kill -9 included)
continues with `flagsweep tune --resume TUNE_ID`: an unfinished batch's sweep resumes where it
stopped and its trials are told; nothing measured is measured again.

On a Dask fleet (--scheduler, one --cpu-label) the batches and the ablation are fleet sweeps of
that label (jobs.batch.Fleet); the proof builds layouts, which a fleet sweep cannot, so it runs
on this machine only when this machine is of the label, and is left for a resume on one that is
otherwise.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict

from flagsweep import files, report, stats
from flagsweep.compilation import variants
from flagsweep.errors import FlagsweepError, Interrupted
from flagsweep.experiment import space as spaces
from flagsweep.experiment import target
from flagsweep.experiment.strict import quoted, validate
from flagsweep.host import launcher, system, toolchain
from flagsweep.host.executor import Executor
from flagsweep.host.lock import MeasureLock
from flagsweep.jobs import batch, budget, culprit, fleet, proof, schedule, search
from flagsweep.jobs.answer import sentence
from flagsweep.jobs.batch import Proposal, Setting
from flagsweep.measure import resolution
from flagsweep.measure.options import DEFAULT_LAYOUTS, MeasureOptions, chosen_cpu, from_store
from flagsweep.process import sigterm_as_interrupt
from flagsweep import model
from flagsweep.results import confirmation, reader, stored
from flagsweep.results.store import Store

log = logging.getLogger("flagsweep.jobs.tune")

# How the budget is shared: most of it searching, then the ablation on the search input, then
# the proof on the full input over layouts (its rounds are the longest).
SHARES = {"search": 0.6, "ablation": 0.15, "proof": 0.25}
REDUCE_SHARE = 0.2           # of the search's time, to reduce flags that fail only together
# A batch whose candidates were all proposed before, this many times in a row: the sampler has
# nothing new to try in this space.
STALE_BATCHES = 3
BUSY_PAUSE_S = 30.0          # before a sweep the machine was too busy for is resumed
MIN_ROUNDS_S = 60.0          # the least an ablation's or a proof's sweep is given for its rounds
# The share of the proof's time the ablation's check over layouts may take when its own is
# spent: the proof's rounds lose a fifth at most, which widens its intervals by about 12%
# (1/sqrt(0.8)), while a flag named for a layout's luck is a wrong answer to the ablation's
# question, which the proof does not mend.
PROOF_LOAN = 0.2
BUSY_TRIES = 2               # resumptions of a busy sweep, whatever the time left
BATCH_LEAST_S = 30.0         # the least a batch's sweep is given for its rounds


@dataclass
class TuneOptions:
    """What `flagsweep tune` is asked (kept with the tune, so a resume goes on as it began)."""
    base: str | None = None         # None: the space file's, else -O2
    space: str = "gcc-optimizers"
    compiler: str = "gcc"
    budget_s: float = 3600.0
    sampler: str = "tpe"
    starts: bool = True             # begin with -O3's switches and -march=native (not random)
    seed: int | None = None
    batch: int = 6                  # candidates a batch measures together
    trials: int | None = None       # candidates at most (default: the budget decides)
    layouts: int | None = None      # K layouts a set of the proof (None: sized by power,
                                    # jobs.budget); the ablation's check takes it too
    runners_up: int = 2             # sets after the best the proof measures too
    jobs: int = 2
    offline: bool = False
    source_dir: str | None = None
    measure: dict = field(default_factory=dict)     # MeasureOptions' fields
    scheduler: str | None = None    # a Dask fleet's scheduler: the batches run on its workers
    cpu_label: str | None = None    # ... of this one CPU label


@dataclass
class Tuning:
    """A tune in progress: its study, its options, its setting and its clock."""
    name: str
    out: Path
    study: Any
    opts: TuneOptions
    space: spaces.Space
    setting: Setting
    began: float                    # this session's start (monotonic)
    spent: float                    # seconds spent by earlier sessions
    wait: bool = False              # queue behind a sweep holding this machine's CPU

    def elapsed(self) -> float:
        return self.spent + time.monotonic() - self.began

    def record(self, key: str) -> Any:
        return self.study.user_attrs.get(key)

    def keep(self, key: str, value: Any) -> None:
        self.study.set_user_attr(key, value)


# ---- starting and resuming ----------------------------------------------------------------------

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
    record = {"options": asdict(opts), "target_path": str(t.path),
              "target_sha256": files.sha256_file(t.path), "out": str(out),
              "space": _space_json(space), "sampler": opts.sampler, "seed": opts.seed,
              "phase": "search", "spent_s": 0.0, "batches": [], "broken": [], "dropped": [],
              "codes": {}, "starts": _starts(space, opts)}
    with _placed(opts, f"{t.name} tune {out.name}", mopts, wait, say) as where, \
            sigterm_as_interrupt():
        study = search.create(store, out.name, opts.sampler, opts.seed, record)
        stored.claim(out, "tune_id", out.name)
        tune = Tuning(out.name, out, study, opts, space, _setting(t, opts, space, out, store, say,
                                                                 execute, where),
                    time.monotonic(), 0.0, wait)
        return _run(tune, say)


class StoredSpace(BaseModel):
    """A tune's space as its record keeps it (_space_json)."""
    model_config = ConfigDict(extra="ignore")
    base: str | list[str]
    compiler: str
    source: str
    dimensions: list[tuple[str, list[str]]]
    excluded: list[str] = []


class StoredTune(BaseModel):
    """What a resume reads of a tune's record (the study's user attributes), each key of the
    type the tune wrote it with: the record is data, and a value of another type (changed by
    hand, or by another user of the store) is one line naming the key, not a traceback."""
    model_config = ConfigDict(extra="ignore")
    options: TuneOptions
    target_path: str
    target_sha256: str
    out: str
    space: StoredSpace
    phase: Literal["search", "ablation", "proof", "done"]
    spent_s: float | None = None


def resume(name_or_dir: str, store: Store, say: Callable[[str], None],
           execute: Executor = launcher.run_once, wait: bool = False,
           scheduler: str | None = None) -> Path:
    """`scheduler`: a fleet tune's scheduler at a new address (kept for its next resume).
    The tune's record is data, checked as typed input is before anything runs (_checked)."""
    name = search.find(store, name_or_dir)
    study = search.load(store, name)
    row = f"tune {name}'s record in the store {store.url}"
    record = validate(StoredTune, study.user_attrs, row)
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
        study.set_user_attr("options", {**study.user_attrs["options"], "scheduler": scheduler})
    elif fleet_part:
        raise FlagsweepError(f"{row}, key 'options.scheduler': tune {name} runs on the fleet "
                             f"at {quoted(opts.scheduler)}, and flagsweep connects only to a "
                             "scheduler you name, since it runs what the scheduler sends: "
                             "resume with --scheduler ADDRESS")
    t, space, mopts = _checked(record, name, row)
    with _placed(opts if fleet_part else replace(opts, scheduler=None),
                 f"{t.name} tune {name} (resumed)", mopts, wait, say) as where, \
            sigterm_as_interrupt():
        tune = Tuning(name, out, study, opts, space, _setting(t, opts, space, out, store, say,
                                                             execute, where),
                    time.monotonic(), record.spent_s or 0.0, wait)
        say(f"resuming tune {name}: {len(search.trials(study))} trials so far, phase "
            f"{record.phase}")
        return _run(tune, say)


def _checked(record: StoredTune, name: str, row: str
             ) -> tuple[target.Target, spaces.Space, MeasureOptions]:
    """What the record says the tune builds and runs, checked as typed input is
    (results.stored): its target file one only root or you could have written, its compiler
    one that shows it is one, its source tree (--source-dir) one no other user can change,
    its measuring options of their types (kept so, for the batches to come)."""
    t = _target_of(record, row, name)
    space = _space_of(record.space.model_dump())
    stored.compiler(space.compiler, row, "space.compiler")
    source = record.options.source_dir
    if source and (why := toolchain.replaceable_tree(Path(source))):
        raise FlagsweepError(f"{row}, key 'options.source_dir': the source tree {source} is "
                             f"not built: {why}; flagsweep builds only a tree root or you "
                             "could have written")
    mopts = from_store(record.options.measure, f"{row}, key 'options.measure'")
    record.options.measure = asdict(mopts)
    return t, space, mopts


def _target_of(record: StoredTune, row: str, name: str) -> target.Target:
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


def _space_json(space: spaces.Space) -> dict:
    return {"base": space.base, "compiler": space.compiler, "source": space.source,
            "dimensions": [[d.name, list(d.choices)] for d in space.dimensions],
            "excluded": list(space.excluded)}


def _space_of(doc: dict) -> spaces.Space:
    return spaces.Space(doc["base"], doc["compiler"], doc["source"],
                        tuple(spaces.Dimension(n, tuple(c)) for n, c in doc["dimensions"]),
                        tuple(doc["excluded"]))


# ---- the phases ---------------------------------------------------------------------------------

def _run(tune: Tuning, say: Callable[[str], None]) -> Path:
    try:
        _opening(tune, say)
        _finish_open_batch(tune, say)
        # A proof that cannot run here (a fleet tune on a machine of another label) leaves
        # the phase as it is, for a resume on a machine of the label.
        for phase, step, after in (("search", _search, "ablation"),
                                   ("ablation", _ablation, "proof"), ("proof", _proved, "done")):
            if tune.record("phase") == phase and step(tune, say) is not False:
                _phase_ended(tune, phase, after)
    except (KeyboardInterrupt, Interrupted):
        _save_clock(tune)
        write(tune, "interrupted")
        # The batch's own hint (resume its sweep) is not the user's: the tune resumes it.
        raise Interrupted(f"tune {tune.name} interrupted in its {tune.record('phase')} phase; "
                          "every trial and sample is kept. Continue with: flagsweep tune "
                          f"--resume {tune.name}") from None
    except Exception:
        _save_clock(tune)
        write(tune, "failed")
        raise
    _save_clock(tune)
    path = write(tune, "complete")
    say(f"tune.json: {path}")
    return path


def _opening(tune: Tuning, say: Callable[[str], None]) -> None:
    """What the budget buys here, said once as the tune starts (jobs.budget.opening). The
    base is built first, as the first batch would build it (which then takes it from the
    build cache), and its build's time is the pace; a base the build cache held tells the
    time its build took then."""
    if tune.record("opening") is not None or tune.record("batches"):
        return
    s = tune.setting
    began = time.monotonic()
    built = batch.built(s, tune.out / "candidates" / "base", [Proposal(-1, s.base)])[-1]
    took = time.monotonic() - began
    if built.status == "ok" and not built.reused:
        _count(tune, "base", builds=1, build_s=took)
    pace = None if built.status != "ok" else built.seconds if built.reused else took
    compiles = built.audit.compiles if built.audit else None
    tune.keep("opening", {"build_s": pace, "compiles": compiles, "cached": bool(built.reused)})
    say(budget.opening(tune.opts.budget_s, SHARES, pace, compiles, bool(built.reused)))


def _phase_ended(tune: Tuning, phase: str, after: str) -> None:
    """The phase's seconds (the tune's clock at its end, less the phases before it) kept with
    the tune, then the next phase."""
    ended = tune.record("phase_ended_s") or {}
    ended[phase] = round(tune.elapsed(), 1)
    tune.keep("phase_ended_s", ended)
    tune.keep("phase", after)


def _phase_seconds(ended: dict) -> dict:
    out, before = {}, 0.0
    for phase in ("search", "ablation", "proof"):
        if phase in ended:
            out[f"{phase}_s"] = round(ended[phase] - before, 1)
            before = ended[phase]
    return out


def _save_clock(tune: Tuning) -> None:
    tune.keep("spent_s", tune.elapsed())
    tune.spent, tune.began = tune.elapsed(), time.monotonic()


def _search(tune: Tuning, say: Callable[[str], None]) -> None:
    end = tune.opts.budget_s * SHARES["search"]
    stale = 0
    while tune.elapsed() < end and stale < STALE_BATCHES and not _enough(tune):
        n = tune.opts.batch
        if tune.opts.trials is not None:
            n = min(n, tune.opts.trials - len(_asked(tune)))
        # the budget is a promise: a batch begun near the search's end builds only what fits
        n, why = budget.batch_fit(n, end - tune.elapsed(), _search_pace(tune), BATCH_LEAST_S)
        if why:
            say(f"search: {why}")
        if not n:
            break
        dropped = set(tune.record("dropped") or [])
        best = _best(tune)
        near = search.choices(tune.study, best[0]) if best else None
        begin = tune.record("starts") or []
        asked = search.ask_batch(tune.study, tune.space, n, dropped, tune.opts.sampler,
                                 tune.opts.seed, near, begin, say)
        todo = [Proposal(trial.number, tune.space.flags(chosen)) for trial, chosen in asked]
        batches = tune.record("batches") or []
        number = len(batches)
        # Each trial's flags first, then the batch: killed in between, its trials are told
        # "not measured" on resume (_finish_open_batch), never left without their flags.
        for c in todo:
            search.note(tune.study, c.number, {"flags": list(c.flags), "batch": number,
                                               "state": "pending"})
        batches.append({"batch": number, "trials": [c.number for c in todo],
                        "best": best[0] if best else None})
        tune.keep("batches", batches)
        fresh = _batch(tune, number, todo, say)
        stale = 0 if fresh else stale + 1
        _save_clock(tune)
        write(tune, "running")
    if stale >= STALE_BATCHES:
        say(f"search: {STALE_BATCHES} batches in a row proposed only sets tried before; the "
            "space is exhausted for this sampler")


def _enough(tune: Tuning) -> bool:
    return tune.opts.trials is not None and len(_asked(tune)) >= tune.opts.trials


def _asked(tune: Tuning) -> list:
    return search.trials(tune.study)


def _finish_open_batch(tune: Tuning, say: Callable[[str], None]) -> None:
    """A batch a kill interrupted: its trials measured (its sweep resumed, or started if it
    had not begun) and told, before anything new is asked."""
    open_ = {t.number: t for t in search.running(tune.study)}
    if not open_:
        return
    for entry in tune.record("batches") or []:
        todo = [Proposal(n, tuple(open_[n].user_attrs["flags"])) for n in entry["trials"]
                if n in open_ and "flags" in open_[n].user_attrs]
        if todo:
            say(f"batch {entry['batch']}: finishing {len(todo)} trials interrupted before")
            _batch(tune, entry["batch"], todo, say)
    for number in open_:            # asked but never in a batch: told as not measured
        if number in {t.number for t in search.running(tune.study)}:
            search.tell(tune.study, number, None, {"state": "not-measured",
                                                   "detail": "asked when the tune stopped"})


def _batch(tune: Tuning, number: int, todo: list[Proposal],
           say: Callable[[str], None]) -> bool:
    """One batch: repeats, known code and sets holding flags that broke before told at no
    run (nor build), failed builds bisected, the rest measured by one sweep. Whether any
    candidate was new."""
    s = tune.setting
    known = _known_flags(tune)
    broken = tune.record("broken") or []
    told, left = {}, []
    for c in todo:
        held = _holds_broken(broken, None, c.flags[len(s.base):])
        if held:
            told[c.number] = batch.Judged(f"failed-{held['kind']}", batch.vid(s, c.flags),
                                          detail=f"holds {held['flag']}, which broke the "
                                                 f"{held['kind']} of trial {held['trial']}")
        elif c.flags in known and known[c.flags][0] != c.number:
            first, ratio = known[c.flags]
            told[c.number] = batch.Judged("repeat", batch.vid(s, c.flags), ratio=ratio,
                                          identical_to=str(first),
                                          detail=f"the same flags as trial {first}")
        elif c.flags == s.base:
            told[c.number] = batch.Judged("identical", batch.vid(s, c.flags), ratio=1.0,
                                          identical_to=batch.BASE, detail="the base's flags")
        else:
            left.append(c)
    if left:
        told |= _measured(tune, number, left, say)
    for c in todo:
        _tell(tune, c, told[c.number], number)
    _say_batch(tune, number, todo, told, say)
    return bool(left)


def _measured(tune: Tuning, number: int, todo: list[Proposal],
              say: Callable[[str], None]) -> dict[int, batch.Judged]:
    s = tune.setting
    out: dict[int, batch.Judged] = {}
    began = time.monotonic()
    builds = batch.built(s, tune.out / "candidates" / f"{number:03d}", todo)
    # Two candidates of a batch with the same flags are one build, and a set another tune on
    # this machine built comes from the build cache: none
    made = sum(1 for b in {batch.vid(s, c.flags): builds[c.number] for c in todo}.values()
               if not b.reused)
    _count(tune, f"batch {number}", builds=made, build_s=time.monotonic() - began)
    codes = tune.record("codes") or {}
    rest = []
    for c in todo:
        b = builds[c.number]
        if b.status != "ok":
            out[c.number] = batch.Judged("failed-build", batch.vid(s, c.flags),
                                         detail=batch.failure(b))
        elif b.code_sha256 in codes:
            first, ratio = codes[b.code_sha256]
            out[c.number] = batch.Judged("identical", batch.vid(s, c.flags), ratio=ratio,
                                         identical_to=str(first),
                                         detail=f"the same code as {_named(first)}")
        else:
            rest.append(c)
    if rest:
        out |= _swept(tune, number, rest, say)
    for c in todo:
        if out[c.number].state in ("failed-build", "failed-check"):
            _bisect(tune, c, out[c.number], say)
    codes = tune.record("codes") or {}
    for c in todo:
        j, b = out[c.number], builds[c.number]
        if j.state == "measured" and j.ratio is not None and b.code_sha256:
            codes.setdefault(b.code_sha256, [c.number, j.ratio])
    tune.keep("codes", codes)
    return out


def _named(first) -> str:
    return "the base" if first == batch.BASE else f"trial {first}"


def _swept(tune: Tuning, number: int, todo: list[Proposal],
           say: Callable[[str], None]) -> dict[int, batch.Judged]:
    """The batch's sweep, resumed if it began before; its candidates judged."""
    s = tune.setting
    out = tune.out / "batches" / f"{number:03d}"
    best = _best(tune)
    incumbent = tuple(best[1]) if best else s.base
    found = s.store.find_run(str(out))
    remaining = tune.opts.budget_s * SHARES["search"] - tune.elapsed()
    budget = max(BATCH_LEAST_S, min(remaining, tune.opts.budget_s * SHARES["search"] / 4))
    if found != str(out):
        path = batch.resume(s, found)
    else:
        path = batch.start(s, f"{tune.name}-b{number:03d}", out, incumbent, todo,
                           seed=tune.opts.seed + number, budget=budget)
    path = _through_busy(tune, path, say)
    _fix_metric(tune, batch.run_id(s, path))
    rid = batch.run_id(s, path)
    # the candidates were built before the sweep; it builds the base the first time only
    _count(tune, rid, runs=len(s.store.samples(rid)), builds=batch.made(path))
    known = {batch.vid(s, tuple(t.user_attrs["flags"])): t.user_attrs.get("ratio")
             for t in search.trials(tune.study) if t.user_attrs.get("ratio") is not None}
    got = batch.judged(s, path, todo, known)
    _remeasured(tune, number, path, incumbent, best)
    for c in todo:
        got[c.number].run_id = batch.run_id(s, path)
    return got


def _through_busy(tune: Tuning, path: Path, say: Callable[[str], None],
                  phase: str = "search") -> Path:
    """A sweep of the tune the machine was too busy for (stored as busy, a few rounds taken)
    is resumed after a pause, at least BUSY_TRIES times and then while its phase has time: a
    busy sweep's ratios are the other work's. Still busy after that, it is judged on what it
    has (its intervals say how little)."""
    s = tune.setting
    rid = batch.run_id(s, path)
    tries = 0
    while s.store.run(rid).status == "busy" and (
            tries < BUSY_TRIES or tune.elapsed() + BUSY_PAUSE_S < _phase_end(tune, phase)):
        tries += 1
        say(f"the machine is busy: {rid} waits {BUSY_PAUSE_S:g} s, then resumes")
        time.sleep(BUSY_PAUSE_S)
        path = batch.resume(s, rid, until=_until(tune, phase))
    return path


def _phase_left(tune: Tuning, phase: str) -> float:
    """Seconds until the phase's share of the budget is spent (negative once it is)."""
    return _phase_end(tune, phase) - tune.elapsed()


def _phase_end(tune: Tuning, phase: str) -> float:
    """The tune's clock at which a phase's share of the budget is spent."""
    order = list(SHARES)
    return tune.opts.budget_s * sum(SHARES[p] for p in order[:order.index(phase) + 1])


def _remeasured(tune: Tuning, number: int, path: Path, incumbent: tuple[str, ...],
                best) -> None:
    """The best set measured again as the batch's baseline: its ratio to the base from this
    batch too, so its rank is the mean of its estimates, not its luckiest one (the winner's
    curse of picking the best of many noisy estimates)."""
    if best is None:
        return
    got = batch.judged(tune.setting, path, [Proposal(best[0], incumbent)], {})[best[0]]
    if got.ratio is None:
        return
    # Kept with the study: a told trial's attributes are final in Optuna.
    again = tune.record("again") or {}
    entries = [e for e in again.get(str(best[0]), []) if _estimate(e)[0] != number]
    again[str(best[0])] = entries + [{"batch": number, "ratio": got.ratio, "ci95": got.ci95}]
    tune.keep("again", again)


def _fix_metric(tune: Tuning, run_id: str) -> None:
    """The metric the first batch chose (--metric auto) is every later batch's: ratios of one
    tune must be of one metric. So is its schedule (--schedule, jobs.schedule): one pilot."""
    options = tune.setting.store.run(run_id).options
    chosen, kept = options.measure["metric"], options.schedule and options.schedule.dump()
    m = tune.setting.measure
    if m.metric != chosen or (kept and not m.chosen_schedule):
        tune.setting.measure = replace(m, metric=chosen,
                                       chosen_schedule=m.chosen_schedule or kept)
        opts = tune.record("options")
        opts["measure"].update(metric=chosen, chosen_schedule=m.chosen_schedule or kept)
        tune.keep("options", opts)


def _bisect(tune: Tuning, c: Proposal, j: batch.Judged, say: Callable[[str], None]) -> None:
    """The flag that breaks a failed candidate, dropped from the search, or the flags that
    break it only together, kept so that no later set holding them all is built."""
    s = tune.setting
    changes = tuple(f for f in c.flags[len(s.base):])
    kind = "build" if j.state == "failed-build" else "check"
    broken = tune.record("broken") or []
    # A batch proposes its candidates before any is judged, so several can hold a flag that
    # one of them has just been found to break: halving again would only find it again.
    known = _holds_broken(broken, kind, changes)
    if known:
        say(f"trial {c.number}: holds {known['flag']}, which broke the {kind} of trial "
            f"{known['trial']}; not halved again")
        return
    probe = culprit.Probe(s, tune.out / "probes" / f"trial-{c.number}", kind)
    # A failing set is one candidate of many: reducing flags that fail only together may take
    # a fifth of the search's time, all such sets together, so that they cannot eat the search
    # (a sampler can propose sets that fail alike many times before its model learns).
    left = REDUCE_SHARE * tune.opts.budget_s * SHARES["search"] - _spent(tune, "probe_s")
    began = time.monotonic()
    until = began + max(0.0, min(left, _phase_left(tune, "search")))
    found = culprit.culprit(changes, probe, lambda: time.monotonic() < until)
    _count(tune, f"probe {c.number}", builds=probe.builds, probe_s=time.monotonic() - began)
    broken.append({"flag": " ".join(found.flags), "flags": list(found.flags), "kind": kind,
                   "minimal": found.minimal, "detail": j.detail, "trial": c.number})
    tune.keep("broken", broken)
    if len(found.flags) == 1:
        dims = {d.name for d in tune.space.dimensions
                if found.flags[0] in d.choices}
        tune.keep("dropped", sorted(set(tune.record("dropped") or []) | dims))
        say(f"trial {c.number}: {found.flags[0]} breaks the {kind}; never proposed again")
    else:
        cut = "" if found.minimal else \
            f" (of its {len(changes)} changes, after {probe.n} probes: not reduced further in time)"
        say(f"trial {c.number}: its {kind} fails only with {' '.join(found.flags)} "
            f"together{cut}; no set holding them all is built again")


def _holds_broken(broken: list[dict], kind: str | None, changes: tuple[str, ...]
                  ) -> dict | None:
    """The first recorded flag, or combination, that `changes` holds all of (of `kind`, or
    of either kind)."""
    held = set(changes)
    return next((b for b in broken if kind in (None, b["kind"])
                 and set(b.get("flags") or [b["flag"]]) <= held), None)


def _count(tune: Tuning, step: str, **spent: float) -> None:
    """What one step (a batch's builds, a sweep, a bisection) spent, set under its own name:
    a step done again on resume replaces its figures, never adds them twice."""
    cost = tune.record("cost") or {}
    steps = cost.setdefault("steps", {})
    steps[step] = {**steps.get(step, {}), **spent}
    tune.keep("cost", cost)


def _spent(tune: Tuning, what: str) -> float:
    """The total over the steps (and the running total an older record kept instead)."""
    cost = tune.record("cost") or {}
    return cost.get(what, 0) + sum(v.get(what, 0) for v in cost.get("steps", {}).values())


def _search_pace(tune: Tuning) -> float:
    """Seconds per build: the search's own timed builds, else the base's at the start."""
    return _build_pace(tune) or (tune.record("opening") or {}).get("build_s") or 0.0


def _build_pace(tune: Tuning) -> float:
    """Seconds per build, from the search's own timed builds (0 before any). A batch whose
    sets all came from the build cache built nothing: its copying time is no build's pace."""
    steps = (tune.record("cost") or {}).get("steps", {}).values()
    timed = [v for v in steps if "build_s" in v and v.get("builds")]
    n = sum(v["builds"] for v in timed)
    return sum(v["build_s"] for v in timed) / n if n else 0.0


def _tell(tune: Tuning, c: Proposal, j: batch.Judged, number: int) -> None:
    s = tune.setting
    attrs = {"flags": list(c.flags), "changes": list(c.flags[len(s.base):]), "state": j.state,
             "batch": number, "variant": j.variant, "ratio": j.ratio, "ci95": j.ci95,
             "verdict": j.verdict, "runs": j.runs, "identical_to": j.identical_to,
             "detail": j.detail, "run_id": j.run_id,
             "elapsed_s": round(tune.elapsed(), 1)}
    failed = j.state.startswith("failed")
    search.tell(tune.study, c.number, None if failed else j.ratio, attrs)


def _say_batch(tune: Tuning, number: int, todo: list[Proposal], told: dict[int, batch.Judged],
               say: Callable[[str], None]) -> None:
    states: dict[str, int] = {}
    for j in told.values():
        states[j.state] = states.get(j.state, 0) + 1
    best = _best(tune)
    where = "none yet"
    if best:
        number_, flags, ratio = best
        changes = " ".join(flags[len(tune.setting.base):]) or "(the base)"
        where = f"{_pct(ratio)} (trial {number_}: {_short(changes)})"
    end = tune.opts.budget_s * SHARES["search"]
    more = budget.candidates_left(end - tune.elapsed(), tune.elapsed(), len(_asked(tune)))
    pace = f"; about {more} more candidates fit in the search at this pace" \
        if more is not None and tune.record("phase") == "search" else ""
    say(f"batch {number}: {len(todo)} candidates ("
        + ", ".join(f"{n} {k}" for k, n in sorted(states.items()))
        + f"); best so far {where}; {tune.elapsed():.0f} s of {tune.opts.budget_s:g}{pace}")


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _pct(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.1f}%"


# ---- ranking ------------------------------------------------------------------------------------

def _known_flags(tune: Tuning) -> dict[tuple[str, ...], tuple[int, float | None]]:
    """Flag sets told before: their first trial and its ratio."""
    out = {}
    for t in search.trials(tune.study):
        if t.user_attrs.get("state") in ("measured", "identical", "failed-build",
                                         "failed-check") and "flags" in t.user_attrs:
            out.setdefault(tuple(t.user_attrs["flags"]), (t.number, t.user_attrs.get("ratio")))
    return out


def ranked(tune: Tuning, upto: int | None = None) -> list[tuple[int, tuple[str, ...], float]]:
    """Distinct measured sets, fastest first, each by the geometric mean of its estimates (of
    the batches up to `upto`, when given)."""
    return [(n, flags, ratio) for n, flags, ratio, _ in _estimated(tune, upto)]


def _estimated(tune: Tuning, upto: int | None) -> list[tuple]:
    """(trial, flags, ratio, 95% interval) of each distinct measured set, fastest first: a set
    measured in k batches has the geometric mean of its k ratios and that mean's interval (the
    batches' sweeps are independent estimates: stats.pool)."""
    seen, out = set(), []
    again = tune.record("again") or {}
    for t in search.trials(tune.study):
        a = t.user_attrs
        if a.get("state") != "measured" or a.get("ratio") is None:
            continue
        if upto is not None and (a.get("batch") is None or a["batch"] > upto):
            continue
        flags = tuple(a["flags"])
        if flags in seen:
            continue
        seen.add(flags)
        estimates = [(a.get("batch"), a["ratio"], batch.finite_pair(a.get("ci95")))]
        estimates += [_estimate(e) for e in again.get(str(t.number), [])]
        estimates = [e for e in estimates if upto is None or (e[0] is not None and e[0] <= upto)]
        out.append((t.number, flags, *_combined(estimates)))
    return sorted(out, key=lambda x: x[2])


def _estimate(entry) -> tuple:
    """A re-measurement: (batch, ratio, 95% interval); a bare ratio from an older record."""
    if isinstance(entry, dict):
        return entry.get("batch"), entry["ratio"], batch.finite_pair(entry.get("ci95"))
    return None, entry, None


def _combined(estimates: list[tuple]) -> tuple[float, list[float] | None]:
    """The geometric mean of the ratios, with its interval when every estimate has one."""
    mean = math.exp(sum(math.log(r) for _, r, _ in estimates) / len(estimates))
    if len(estimates) == 1 or any(ci is None for _, _, ci in estimates):
        return mean, estimates[0][2] if len(estimates) == 1 else None
    pooled = stats.pool([(r, tuple(ci)) for _, r, ci in estimates])
    return mean, [float(x) for x in pooled.ci95] if pooled else None


def _best(tune: Tuning):
    found = ranked(tune)
    return found[0] if found and found[0][2] < 1.0 else None


# ---- the ablation and the proof -----------------------------------------------------------------

def _ablation(tune: Tuning, say: Callable[[str], None]) -> None:
    s = tune.setting
    best = _best(tune)
    if best is None:
        _keep_model(tune, "ablation", model.TuneAblation(
            status="skipped", why="no set the search measured was faster than the base"))
        say("ablation: skipped (no set found faster than the base)")
        return
    number, winner, ratio = best
    changes = winner[len(s.base):]
    if ratio > 1 - s.measure.threshold_pct / 100:
        # Within the threshold the best set is likely the luckiest of many equal ones: taking
        # it apart would build and time each of its flags to find none that matters. The
        # proof still measures it against the base and -O3.
        why = (f"the best set found, trial {number}, is {100 * (ratio - 1):+.1f}% against the "
               f"base in the search, within the {s.measure.threshold_pct:g}% threshold")
        _keep_model(tune, "ablation", model.TuneAblation(status="skipped", why=why,
                                                            of=list(changes)))
        say(f"ablation: skipped ({why})")
        return
    plan = tune.record("ablation_plan") or _ablation_plan(tune, changes)
    tune.keep("ablation_plan", plan)
    try:
        rows = _ablated(tune, winner, plan, number, say)
    except Interrupted:
        raise                       # resumed with the tune, never recorded as a failure
    except FlagsweepError as e:
        _keep_model(tune, "ablation", model.TuneAblation(status="failed", why=str(e),
                                                            of=list(changes)))
        say(f"ablation: failed ({e})")
        return
    path = Path(tune.record("ablation_plan")["last"])
    check, rows = _layout_check(tune, winner, rows, path, say)
    greedy = _greedy(tune, winner, rows, say)
    least = proof.minimal(rows)
    if greedy is not None and greedy.chosen:
        least = [f for step in greedy.steps[:greedy.chosen] for f in step.added]
    _keep_model(tune, "ablation", model.TuneAblation(
        status="complete", run_id=batch.run_id(s, path), results=str(path), of=list(changes),
        method=plan["method"], why=plan.get("why"), rows=rows, minimal=least,
        layout_check=check, greedy=greedy))
    if greedy is not None:
        say(f"ablation: {_greedy_said(greedy, len(least))}")
    whole = [r for r in rows if len(r.flags) > 1 and r.matters()]
    if whole:
        say(f"ablation: {len(least)} of the {len(changes)} flags are in what matters, "
            f"{len(whole)} group(s) of them not taken apart: {' '.join(least)}")
    else:
        say(f"ablation: {len(least)} of the {len(changes)} flags matter"
            + (f": {' '.join(least)}" if least else ""))


def _greedy_said(g: model.TuneGreedy, n: int) -> str:
    if g.status != "complete":
        return f"the greedy subset was not measured: {g.why}"
    if g.chosen is None:
        return (f"no step of the greedy subset gave the winner's effect within its "
                f"{len(g.steps)} steps: the flags decided to matter are the subset")
    return (f"the greedy subset gives the winner's effect after {g.chosen} of its "
            f"{len(g.steps)} steps, {n} flags")


def _ablation_plan(tune: Tuning, changes: tuple[str, ...]) -> dict:
    """Leave-one-out when its builds fit in the ablation's time at the search's build pace;
    else group screening (Watson, "A study of the group screening method", Technometrics
    1961): the winner without each of about sqrt(n) groups of its flags, as many as fit, then
    without each flag of the groups that may matter, when those builds fit in what is left.
    With few flags that matter among many, that builds about (k+1) sqrt(n) sets, not n. What
    it cannot see: flags within one group whose effects cancel. Groups save builds at the cost
    of a second sweep, whose rounds take MIN_ROUNDS_S at least: when all n builds take less
    than that (duo: 25 flags at 0.3 s, in a 3-minute tune's 27-second phase), leave-one-out is
    the cheaper plan whatever the phase's time. Kept with the study, so a resumed tune takes
    the same plan."""
    pace = _build_pace(tune)
    fit = (int((_phase_left(tune, "ablation") - MIN_ROUNDS_S) / pace) - 2
           if pace else len(changes))
    if len(changes) <= max(fit, 2) or len(changes) * pace <= MIN_ROUNDS_S:
        return {"method": "leave-one-out", "groups": [[f] for f in changes]}
    n = max(2, min(fit, math.ceil(math.sqrt(len(changes)))))
    why = (f"one set without each of its {len(changes)} flags would take about "
           f"{len(changes) * pace / 60:.0f} min to build at the search's {pace:.0f} s a "
           f"build, more than the ablation's time: its flags were taken out in {n} groups "
           "first, then one by one within the groups that may matter")
    return {"method": "groups", "why": why,
            "groups": [list(g) for g in proof.groups(changes, n)]}


def _ablated(tune: Tuning, winner: tuple[str, ...], plan: dict, number: int,
             say: Callable[[str], None]) -> list[model.TuneAblationRow]:
    """The plan's sweeps on the search input, the winner their baseline: the removals' rows."""
    removals = [tuple(g) for g in plan["groups"]]
    if plan["method"] == "leave-one-out":
        say(f"ablation: the best set (trial {number}) without each of its {len(removals)} flags")
        return _removed(tune, "ablation", winner, removals, say)
    say(f"ablation: the best set (trial {number}) without each of {len(removals)} groups of "
        f"its flags ({plan['why']})")
    rows = _removed(tune, "ablation-groups", winner, removals, say)
    split = plan.get("split")
    if split is None:
        split = _split(tune, rows, say)
        plan = {**tune.record("ablation_plan"), "split": split}
        tune.keep("ablation_plan", plan)
    if not split:
        return rows
    say(f"ablation: the best set without each of the {len(split)} flags of the groups that "
        "may matter")
    single = _removed(tune, "ablation-flags", winner, [(f,) for f in split], say)
    return [r for r in rows if not set(r.flags) <= set(split)] + single


def _split(tune: Tuning, rows: list[model.TuneAblationRow], say: Callable[[str], None]
           ) -> list[str]:
    """The flags to take apart one by one: of the groups that may matter, whole groups while
    their builds fit in what is left of the ablation's time, those decided to matter first."""
    may = [r for r in rows if len(r.flags) > 1 and proof.active(r)]
    flags = sum(len(r.flags) for r in may)
    left = _phase_left(tune, "ablation") - MIN_ROUNDS_S
    pace = _build_pace(tune)
    split = proof.to_split(rows, int(left / pace) if pace else flags)
    if not split and may:
        say(f"ablation: the {flags} flags of the groups that may matter are not taken apart: "
            f"their builds would take longer than the {max(0, left):.0f} s left")
    elif len(split) < flags:
        say(f"ablation: {len(split)} of the {flags} flags of the groups that may matter are "
            f"taken apart, those of groups decided to matter first: the others' builds would "
            f"take longer than the {max(0, left):.0f} s left")
    return split


def _layout_check(tune: Tuning, winner: tuple[str, ...], rows: list[model.TuneAblationRow],
                  path: Path, say: Callable[[str], None]
                  ) -> tuple[model.TuneLayoutCheck, list[model.TuneAblationRow]]:
    """The rows decided slower by less than layout luck reaches (proof.to_check), measured
    again over the proof's K layouts on the search input, in one sweep whose baseline is the
    winner: the check's record, and the rows with what it found."""
    plan = tune.record("ablation_plan")
    if "layout_check" not in plan:
        plan = {**plan, "layout_check": _layout_plan(tune, rows, path)}
        tune.keep("ablation_plan", plan)
    check = model.TuneLayoutCheck.model_validate(plan["layout_check"])
    if check.status != "running":
        if check.status == "skipped":
            say(f"ablation: not measured again over layouts: {check.why}")
        return check, rows
    which = [r for r in rows if r.flag in check.rows]
    k = int(check.layouts or DEFAULT_LAYOUTS)
    say(f"ablation: {len(which)} cost(s) decided within the {check.reach_pct:.1f}% layout luck "
        f"reaches, measured again over {k} layouts: "
        + ", ".join(r.flag for r in which))
    todo = [Proposal(-300 - i, proof.without(winner, tuple(r.flags or [r.flag])))
            for i, r in enumerate(which)]
    try:
        # no base in this sweep: its comparisons are all against the winner
        found = _sweep_once(tune, tune.out / "ablation-layouts",
                            f"{tune.name}-ablation-layouts", winner, todo, quick=True, say=say,
                            layouts=k, phase="ablation",
                            budget=plan["layout_check"]["rounds_s"],
                            setting=replace(tune.setting, base=winner))
    except Interrupted:
        raise                       # resumed with the tune, never recorded as a failure
    except FlagsweepError as e:
        say(f"ablation: the check over layouts failed ({e})")
        return check.model_copy(update={"status": "failed", "why": str(e)}), rows
    rows = proof.checked(tune.setting, found, winner, rows, check.rows)
    confirmed = [r.flag for r in rows if r.flag in check.rows and r.matters()]
    for r in rows:
        if r.flag in check.rows:
            e = r.over_layouts
            say(f"ablation: without {r.flag}, over {k} layouts: "
                + (f"{_pct(e.ratio)} {e.verdict}" if e.ratio is not None else e.why or "-")
                + ("" if r.flag in confirmed else ": not counted as mattering"))
    return check.model_copy(update={
        "status": "complete", "confirmed": confirmed, "run_id": batch.run_id(tune.setting, found),
        "results": str(found)}), rows


def _layout_plan(tune: Tuning, rows: list[model.TuneAblationRow], path: Path) -> dict:
    """Which rows the check measures, and why not when none: the most doubtful first (their
    intervals nearest to no change), as many as their builds and least rounds fit in what is
    left of the ablation's time and a fifth of the proof's (PROOF_LOAN). Kept with the study,
    so a resumed tune checks the same rows."""
    # The proof's layouts are sized later, by power (jobs.budget): the check takes the
    # layouts --layouts asked, else the confirmation's default.
    s, k = tune.setting, tune.opts.layouts or DEFAULT_LAYOUTS
    doc = reader.load(path)
    reach = confirmation.measured_reach(s.store, s.target.name, doc.machine)
    reach_pct, source = reach or (confirmation.DEFAULT_REACH_PCT,
                                  "the default: no layout spread measured for this program "
                                  "on this machine")
    record = {"reach_pct": reach_pct, "reach_source": source, "layouts": k}
    doubtful = sorted(proof.to_check(rows, reach_pct),
                      key=lambda r: confirmation.nearest_pct(r.ci95) or 0.0)
    record["doubtful"] = [r.flag for r in doubtful]
    if not doubtful:
        decided = any(r.verdict == "slower" for r in rows)
        return {**record, "status": "not-needed", "why": (
            f"every cost decided ends further from no change than the {reach_pct:.1f}% layout "
            f"luck reaches ({source})" if decided else "no removal was decided slower")}
    if s.fleet is not None:
        return {**record, "status": "skipped", "why": "a fleet sweep cannot build layouts"}
    pace, run_s = _build_pace(tune), _run_pace(tune, path)
    rounds = s.measure.min_runs + s.measure.warmup
    avail = _phase_left(tune, "ablation") + PROOF_LOAN * SHARES["proof"] * tune.opts.budget_s
    n = len(doubtful)
    cost = budget.Pace(pace, run_s, rounds)
    while n and sum(budget.need(n + 1, k, cost)) > avail:
        n -= 1
    if not n:
        builds, least = budget.need(2, k, cost)
        return {**record, "status": "skipped", "why": (
            f"one row's check, {3 * k} binaries ({k} layouts each of the set without it, the "
            f"best set and its A/A twin) and their least rounds, would take about "
            f"{builds + least:.0f} s, more than the {max(0.0, avail):.0f} s left of the "
            f"ablation's time and a fifth of the proof's")}
    builds, least = budget.need(n + 1, k, cost)
    return {**record, "status": "running", "rows": [r.flag for r in doubtful[:n]],
            "rounds_s": max(least, avail - builds)}


def _run_pace(tune: Tuning, path: Path) -> float:
    """Seconds a run of the search input takes, from the ablation sweep's own samples."""
    return _run_pace_of(tune, batch.run_id(tune.setting, path))


def _run_pace_of(tune: Tuning, run_id: str) -> float:
    """Seconds a run takes, the median of a sweep's samples."""
    walls = sorted(x.wall_s for x in tune.setting.store.samples(run_id) if x.wall_s)
    return walls[len(walls) // 2] if walls else 0.0


def _greedy(tune: Tuning, winner: tuple[str, ...], rows: list[model.TuneAblationRow],
            say: Callable[[str], None]) -> model.TuneGreedy | None:
    """The greedy minimal subset (proof.greedy_units): the base with the rows that may matter
    added back one at a time, costliest first, as many steps as fit in what is left of the
    ablation's time, one sweep on the search input whose baseline is the winner. None when
    fewer than two rows may matter or none was decided to (nothing to choose between)."""
    units = proof.greedy_units(rows)
    decided = sum(1 for r in rows if r.matters())
    if decided == 0 or len(units) < 2:
        return None
    plan = tune.record("ablation_plan")
    if "greedy" not in plan:
        plan = {**plan, **_greedy_plan(tune, units)}
        tune.keep("ablation_plan", plan)
    if not plan["greedy"]:
        return model.TuneGreedy(status="skipped", why=plan.get("greedy_why"))
    units = [tuple(u) for u in plan["greedy"]]
    sets = proof.greedy_sets(winner, len(tune.setting.base), units)
    say(f"ablation: the greedy subset: the base with the flags that may matter added back, "
        f"costliest first, {len(units)} steps")
    todo = [Proposal(-200 - i, k) for i, k in enumerate(sets) if k != winner]
    try:
        path = _sweep_once(tune, tune.out / "ablation-greedy", f"{tune.name}-ablation-greedy",
                           winner, todo, quick=True, say=say)
    except Interrupted:
        raise                       # resumed with the tune, never recorded as a failure
    except FlagsweepError as e:
        say(f"ablation: the greedy subset failed ({e})")
        return model.TuneGreedy(status="failed", why=str(e))
    steps = proof.greedy_steps(tune.setting, path, winner, units)
    return model.TuneGreedy(status="complete", run_id=batch.run_id(tune.setting, path),
                               results=str(path), steps=steps,
                               chosen=proof.greedy_chosen(steps, decided))


def _greedy_plan(tune: Tuning, units: list[tuple[str, ...]]) -> dict:
    """The greedy steps whose builds fit in what is left of the ablation's time, kept with
    the study so a resumed tune measures the same steps."""
    pace = _build_pace(tune)
    left = _phase_left(tune, "ablation") - MIN_ROUNDS_S
    fit = int(left / pace) if pace else len(units)
    if fit < 1:
        return {"greedy": [], "greedy_why": (
            f"the {max(0, left + MIN_ROUNDS_S):.0f} s left of the ablation's time do not hold "
            f"one build at {pace:.0f} s and the {MIN_ROUNDS_S:.0f} s of rounds a sweep is "
            "given at least")}
    return {"greedy": [list(u) for u in units[:fit]]}


def _removed(tune: Tuning, folder: str, winner: tuple[str, ...],
             removals: list[tuple[str, ...]], say: Callable[[str], None]
             ) -> list[model.TuneAblationRow]:
    todo = [Proposal(-1 - i, proof.without(winner, r)) for i, r in enumerate(removals)]
    path = _sweep_once(tune, tune.out / folder, f"{tune.name}-{folder}", winner, todo,
                       quick=True, say=say)
    tune.keep("ablation_plan", {**tune.record("ablation_plan"), "last": str(path)})
    return proof.ablation_rows(tune.setting, path, winner, removals)


def _proof(tune: Tuning, say: Callable[[str], None]) -> bool:
    """The proof's sweep and what it says of each set; whether the phase ended (a proof the
    machine stayed too busy for stays the phase, resumed with the tune)."""
    s = tune.setting
    ablation = _model(tune, "ablation", model.TuneAblation)
    top = [(n, f) for n, f, _ in ranked(tune)][:1 + tune.opts.runners_up]
    best = _best(tune)
    least = None
    if best and ablation and ablation.minimal and len(ablation.minimal) < len(ablation.of):
        least = s.base + tuple(f for f in best[1][len(s.base):] if f in ablation.minimal)
    listed = proof.entries(s.base, top if best else [], least, tune.opts.runners_up)
    plan = _proof_plan(tune, listed)
    say(f"proof: {plan.why}")
    if plan.status == "skipped":
        _keep_model(tune, "proof", model.TuneProof(status="skipped", plan=plan,
                                                      why=f"the proof was {plan.why}"))
        return True
    listed, k = listed[:int(plan.sets)], int(plan.layouts)
    try:
        path = _sweep_once(tune, tune.out / "proof", f"{tune.name}-proof", s.base,
                           [Proposal(-100 - i, e.flags) for i, e in enumerate(listed[1:])],
                           quick=False, say=say, layouts=k)
    except Interrupted:
        raise                       # resumed with the tune, never recorded as a failure
    except FlagsweepError as e:
        _keep_model(tune, "proof", model.TuneProof(status="failed", why=str(e), layouts=k,
                                                      plan=plan))
        say(f"proof: failed ({e})")
        return True
    rid = batch.run_id(s, path)
    if s.store.run(rid).status != "complete":
        # Still busy after _through_busy's pauses: its ratios are the other work's, and a
        # "Use X" from them would be an answer the proof never gave.
        why = (f"the machine stayed busy, so the proof's sweep ({rid}) stopped before its "
               "stopping rule could judge; its figures are not an answer. Continue with "
               f"`flagsweep tune --resume {tune.name}` once the machine is quieter "
               "(`flagsweep system` shows what runs)")
        _keep_model(tune, "proof", model.TuneProof(status="busy", run_id=rid,
                                                      results=str(path), layouts=k, plan=plan,
                                                      why=why))
        say(f"proof: no answer yet ({why})")
        return False
    _keep_model(tune, "proof", model.TuneProof(
        status="complete", run_id=rid, results=str(path), layouts=k,
        plan=plan, candidates=proof.candidates(s, path, listed)))
    return True


def _proof_plan(tune: Tuning, listed: list[proof.ProofSet]) -> model.TuneProofPlan:
    """The proof's sets and layouts (jobs.budget.proof_plan) at this tune's build pace, its
    full input's run time and the layout spread measured for the program, in what is left of
    the budget; kept with the study, so a resumed tune measures what it planned."""
    kept = tune.record("proof_plan")
    if kept:
        return model.TuneProofPlan.model_validate(kept)
    s = tune.setting
    pace = budget.Pace(_search_pace(tune), _full_run_s(tune),
                       s.measure.min_runs + s.measure.warmup)
    ablation = _model(tune, "ablation", model.TuneAblation)
    spread = budget.spread(ablation.layout_check if ablation else None, s.store, s.target.name,
                           _machine(tune))
    plan = budget.proof_plan([e.role for e in listed], spread, pace,
                             _phase_left(tune, "proof"), s.measure.threshold_pct,
                             tune.opts.layouts)
    tune.keep("proof_plan", plan.dump())
    return plan


def _full_run_s(tune: Tuning) -> float:
    """A run of the full input: the search's runs of the quick input (its latest batch),
    scaled by the inputs' sizes (measure.resolution)."""
    ids = [t.user_attrs["run_id"] for t in search.trials(tune.study)
           if t.user_attrs.get("run_id")]
    quick = _run_pace_of(tune, ids[-1]) if ids else 0.0
    return quick * resolution.full_to_quick(tune.setting.target.spec.inputs)


def _proved(tune: Tuning, say: Callable[[str], None]) -> bool:
    """The proof, here: on a fleet, only when this machine is of the fleet's label (its ratios
    must come from the same CPU model as the search's), under this machine's lock; else it is
    recorded as skipped, for a resume on such a machine. Whether it ran."""
    s = tune.setting
    if s.fleet is None and not tune.opts.scheduler:
        return _proof(tune, say)
    label = tune.opts.cpu_label
    here = fleet.default_label()
    if here != label:
        why = (f"the proof builds layouts, which a fleet sweep cannot: run `flagsweep tune "
               f"--resume {tune.name}` on a machine of label {label} (this one is {here})")
        _keep_model(tune, "proof", model.TuneProof(status="skipped", why=why,
                                                      layouts=tune.opts.layouts))
        say(f"proof: skipped ({why})")
        return False
    tune.setting = replace(s, fleet=None)
    if s.fleet is None:             # resumed here for the proof: the lock is held already
        _proof(tune, say)
        return True
    with MeasureLock(f"{s.target.name} tune {tune.name} proof",
                     chosen_cpu(tune.setting.measure, say), wait=tune.wait, say=say):
        _proof(tune, say)
    return True


def _sweep_once(tune: Tuning, out: Path, name: str, best: tuple[str, ...],
                todo: list[Proposal], quick: bool, say: Callable[[str], None],
                layouts: int = 0, phase: str | None = None, budget: float | None = None,
                setting: Setting | None = None) -> Path:
    """The ablation's or the proof's sweep: resumed if it began before. `budget`: its
    rounds', when its phase's share does not say it; `setting`: the tune's, but for its base
    (the ablation's check over layouts)."""
    s = setting or tune.setting
    phase = phase or ("proof" if layouts else "ablation")
    # the builds to come: the sets listed, each layout one (the winner and the base were
    # built in the search, and the build cache holds them)
    binaries = len(todo) * max(1, layouts)
    found = s.store.find_run(str(out))
    if found != str(out):
        path = batch.resume(s, found, until=_until(tune, phase))
    else:
        path = batch.start(s, name, out, best, todo, seed=tune.opts.seed + 10_000 + layouts,
                           budget=budget or _rounds_budget(tune, phase, binaries),
                           quick=quick, layouts=layouts,
                           step=None if phase == "proof" else model.TUNE_STEPS[1],
                           until=_until(tune, phase))
    path = _through_busy(tune, path, say, phase)
    rid = batch.run_id(s, path)
    _count(tune, rid, runs=len(s.store.samples(rid)), builds=batch.made(path))
    return path


def _rounds_budget(tune: Tuning, phase: str, binaries: int) -> float:
    """A sweep's --budget covers its rounds only; its builds come first. So the ablation's
    sweep gets what is left of its phase less its builds at the search's pace, and at least
    MIN_ROUNDS_S to time anything. The proof's builds are mostly relinks and sets the build
    cache holds, which that pace overstates many times over (a flac proof's 28 binaries took
    220 s against 1092 s estimated, which left its rounds one round): it gets the whole phase
    here, and `_until` ends its rounds when the phase ends, whatever the builds took."""
    if phase == "proof":
        return max(MIN_ROUNDS_S, _phase_left(tune, phase))
    left = _phase_left(tune, phase) - binaries * _build_pace(tune)
    return max(MIN_ROUNDS_S, left)


def _until(tune: Tuning, phase: str) -> float | None:
    """The wall-clock time a phase's sweep ends its rounds by (MeasureOptions.until), from
    this session's clock: the proof's at the tune's end. The ablation plans its steps by the
    build pace instead, and a step must leave time for the next one."""
    return time.time() + _phase_left(tune, phase) if phase == "proof" else None


def _keep_model(tune: Tuning, key: str, model: model.Record) -> None:
    tune.keep(key, model.dump())


def _model(tune: Tuning, key: str, kind: type[model.Record]):
    found = tune.record(key)
    return kind.model_validate(found) if found else None


# ---- tune.json ----------------------------------------------------------------------------------

def document(tune: Tuning, status: str) -> model.Tune:
    attrs = tune.study.user_attrs
    trials = [_trial(t) for t in search.trials(tune.study)]
    proof_ = _model(tune, "proof", model.TuneProof)
    ablation = _model(tune, "ablation", model.TuneAblation)
    sentence, use = answer(tune, proof_, ablation, len(trials))
    return model.Tune.model_validate({
        "schema": model.TUNE_SCHEMA, "tune_id": tune.name,
        "target": tune.setting.target.name, "status": status, "phase": attrs.get("phase"),
        "sampler": tune.opts.sampler, "seed": tune.opts.seed, "budget_s": tune.opts.budget_s,
        "threshold_pct": tune.setting.measure.threshold_pct,
        "space": {"source": tune.space.source, "base": " ".join(tune.setting.base),
                  "compiler": tune.space.compiler, "dimensions": len(tune.space.dimensions),
                  "switches": tune.space.switches(), "excluded": list(tune.space.excluded),
                  "starts": [list(tune.space.changes(tune.space.flags(s)))
                             for s in tune.record("starts") or []]},
        "machine": _machine(tune),
        "trials": [t.dump() for t in trials], "progress": _progress(tune, trials),
        "broken": attrs.get("broken") or [],
        "ablation": ablation.dump() if ablation else None,
        "proof": proof_.dump() if proof_ else None,
        "answer": sentence, "recommended": use,
        "cost": {"builds": int(_spent(tune, "builds")), "runs": int(_spent(tune, "runs")),
                 "wall_s": round(tune.elapsed(), 1),
                 **_phase_seconds(attrs.get("phase_ended_s") or {})}})


def _machine(tune: Tuning) -> dict | None:
    if tune.opts.scheduler:
        return _worker_machine(tune)
    try:
        return system.machine_state([tune.space.compiler], pinned_cpu=tune.setting.measure.cpu)
    except Exception:  # noqa: BLE001 - the record of the machine never costs the tune
        log.info("machine state not read", exc_info=True)
        return None


def _worker_machine(tune: Tuning) -> dict | None:
    """A fleet tune's machine: the label's, as a worker of it recorded it for the latest batch
    (the driver's own is not where anything was measured)."""
    ids = [t.user_attrs["run_id"] for t in search.trials(tune.study)
           if t.user_attrs.get("run_id")]
    machine = tune.setting.store.run(ids[-1]).machine if ids else None
    return machine.dump() if machine else None


def _trial(t) -> model.TuneTrial:
    a = t.user_attrs
    flags = a.get("flags") or []
    return model.TuneTrial(
        number=t.number, flags=flags, changes=a.get("changes") or [],
        state=a.get("state") or "pending", batch=a.get("batch"), run_id=a.get("run_id"),
        variant=a.get("variant"), ratio=a.get("ratio"),
        ci95=batch.finite_pair(a.get("ci95")),
        verdict=a.get("verdict"), runs=a.get("runs"), identical_to=a.get("identical_to"),
        detail=a.get("detail"), elapsed_s=a.get("elapsed_s"))


def _progress(tune: Tuning, trials: list[model.TuneTrial]) -> list[dict]:
    """The best-so-far curve: after each batch, the best set as the search ranked it then (the
    mean of its estimates so far, with the mean's interval), and what had been spent (runs
    counted from the trials, builds made by the batch and its probes, wall time at the batch's
    end)."""
    out, runs, builds = [], 0, 0
    steps = (tune.record("cost") or {}).get("steps", {})
    # a record from before the steps were kept: each candidate not a repeat, built
    kept = any(name.startswith("batch ") for name in steps)
    for entry in tune.record("batches") or []:
        told = [t for t in trials if t.batch == entry["batch"] and t.state != "pending"]
        if not told:
            continue
        runs += sum(t.runs or 0 for t in told)
        made = [steps.get(f"batch {entry['batch']}", {})] + \
            [steps.get(f"probe {t.number}", {}) for t in told]
        builds += sum(m.get("builds", 0) for m in made) if kept else \
            sum(1 for t in told if t.state != "repeat")
        found = _estimated(tune, entry["batch"])
        best = found[0] if found else None
        out.append({"batch": entry["batch"], "trials": max(t.number for t in told) + 1,
                    "builds": builds, "runs": runs,
                    "elapsed_s": max(t.elapsed_s or 0 for t in told),
                    "best": best[0] if best else None,
                    "ratio": best[2] if best else None, "ci95": best[3] if best else None})
    return out


def answer(tune: Tuning, proof_: model.TuneProof | None, ablation: model.TuneAblation | None,
           n: int) -> tuple[str | None, list[str] | None]:
    """The one sentence and the set it names (jobs.answer); a proof left for another machine
    is said as what the search found, not proved."""
    if proof_ is not None and proof_.status in ("skipped", "busy"):
        return _unproved(tune, proof_, n), None
    return sentence(proof_, ablation, n, tune.setting.base, tune.setting.measure.threshold_pct)


def _unproved(tune: Tuning, proof_: model.TuneProof, n: int) -> str:
    """What the search found, said as not proved: a fleet tune's proof waits for a machine of
    its label, a busy one for a quieter machine."""
    base = " ".join(tune.setting.base)
    best = _best(tune)
    found = f"no set found beats {base} in the search after {n} candidates"
    if best:
        number, flags, ratio = best
        found = (f"the best set found after {n} candidates, trial {number} ({base} "
                 f"{_short(' '.join(flags[len(tune.setting.base):]))}), was {_pct(ratio)} "
                 f"against {base} in the search")
    return f"Not proved: {found}; {proof_.why}."


def write(tune: Tuning, status: str) -> Path:
    """tune.json, then its page: a page that cannot be drawn never costs the record."""
    doc = document(tune, status)
    path = tune.out / "tune.json"
    files.write_atomic(path, json.dumps(doc.dump(), indent=1) + "\n")
    try:
        report.write_tune(doc, tune.out)
    except Exception as e:  # noqa: BLE001 - the data is already safe
        log.info("tune page not written", exc_info=True)
        tune.setting.say(f"tune page: not written ({type(e).__name__}: {e})")
    return path
