"""The search of a tune: an Optuna study kept in flagsweep's own store, asked and told in batches.

Optuna (Akiba et al., "Optuna: A Next-generation Hyperparameter Optimization Framework", KDD
2019) keeps every trial in its RDB storage, here the store's own SQLite or PostgreSQL database,
so a tune killed at any point resumes with every trial it told, and several machines of one CPU
label may share one study. Its TPE sampler (Bergstra et al., "Algorithms for Hyper-Parameter
Optimization", NeurIPS 2011) models the good and the bad trials' choices apart and proposes
where the ratio of the two is highest; the random sampler is the baseline it must beat
(Bergstra & Bengio, JMLR 2012: random search is strong in high dimension). docs/tune.md says
why Optuna rather than OpenTuner or a hand-written optimiser.

A trial's value is the log of its time ratio to the base level on the search input: lower is
faster, and the log makes a 2x and a 0.5x equally far from 1. The tune's own record (its
options, space, batches, the flags found to break: flagsweep.model.tune.TuneRecord) lives in
the study's user attribute RECORD, written whole (tune.record).
"""

from __future__ import annotations

import logging
import math
import random
import warnings
from pathlib import Path
from typing import Any, Callable

from flagsweep.errors import FlagsweepError
from flagsweep.experiment.strict import quoted
from flagsweep.results.store import Store
from flagsweep.tune.dimensions import MARCH
from flagsweep.tune.space import Space

SAMPLERS = ("tpe", "ga", "random", "tpe-local")
# Trials drawn at random (near the base: `near_base`) before TPE models: Optuna's default.
STARTUP_TRIALS = 10
# tpe-local: after the start, every other trial is a small change to the best set so far
# (`near`), each dimension changed with a probability drawn log-uniformly between 1/n and this.
LOCAL_MOST = 0.1
# The genetic search (ga): a population of two batches, its first drawn near the base; each
# child takes each switch from one of two good parents and draws each switch again with this
# probability (about half of those change), so children stay near sets that did well. Optuna's
# default, 1/n, mutates one switch a child, and a search of ~100 children rarely adds a switch
# no parent held; bench/tune_sampler.py's model found 0.05 better (docs/tune.md).
POPULATION = 12
MUTATION = 0.05
# Rows a batch's draw may write before it says how far it is: a trial's choice of each
# dimension is one store row and commit (~2.5 ms on SQLite here, more on a PostgreSQL across a
# network), so ~5 s; gcc-optimizers' ~210 dimensions in a batch of 6 stay under it.
QUIET_DRAW = 2000
# The study's one user attribute that holds the tune's record.
RECORD = "record"


def _optuna():
    """Optuna, imported where a tune needs it: `flagsweep run` never pays its import."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    return optuna


def storage(store: Store):
    """Optuna's RDB storage on the store's own database (its tables beside flagsweep's)."""
    optuna = _optuna()
    url = store.engine.url.render_as_string(hide_password=False)
    try:
        return optuna.storages.RDBStorage(url, skip_compatibility_check=False)
    except Exception as e:  # noqa: BLE001 - Optuna wraps the driver's errors in its own
        raise FlagsweepError(f"the store {store.url}: Optuna could not open its tables there "
                             f"({type(e).__name__}: {e})") from None


def sampler(name: str, seed: int):
    optuna = _optuna()
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name in ("tpe", "tpe-local"):
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        # multivariate: flags interact (one vectorises a loop another unrolls); group: the space
        # shrinks as flags that break are dropped, and a grouped model copes with that.
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=STARTUP_TRIALS,
                                          multivariate=True, group=True, constant_liar=True)
    if name == "ga":
        # NSGA-II with one objective is a plain elitist genetic search (ACOVEA's kind of search,
        # with uniform crossover and tournament selection of parents).
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=POPULATION,
                                             mutation_prob=MUTATION)
    raise FlagsweepError(f"--sampler {name}: expected one of {', '.join(SAMPLERS)}")


def drawn_near_best(study, sampler_name: str) -> bool:
    """Whether the study's next trial is a small change to the best set so far (`near`):
    tpe-local's every other trial after its start. TPE's own sets after the start change
    about 40 of gcc's ~200 switches, and on lame a set that far from -O2 is mostly slower;
    taking turns with a local search keeps half the search near what did well, as OpenTuner's
    ensembles mix a model of the space with local moves (Ansel et al., "OpenTuner: An
    Extensible Framework for Program Autotuning", PACT 2014)."""
    if sampler_name != "tpe-local":
        return False
    number = len(study.get_trials(deepcopy=False))
    return number >= STARTUP_TRIALS and number % 2 == 1


def drawn_near_base(study, sampler_name: str) -> bool:
    """Whether the study's next trial is drawn near the base (`near_base`) rather than by its
    sampler: every one of the random search's; TPE's first STARTUP_TRIALS; the genetic search's
    until its first generation holds POPULATION measured sets. That search counts only trials
    told complete into a generation, so a set that broke leaves room for another, which it
    would draw uniformly, changing half the switches, were it not drawn here."""
    if sampler_name == "random":
        return True
    if sampler_name == "ga":
        done = _optuna().trial.TrialState.COMPLETE
        return len(study.get_trials(deepcopy=False, states=(done,))) < POPULATION
    return len(study.get_trials(deepcopy=False)) < STARTUP_TRIALS


def create(store: Store, name: str, sampler_name: str, seed: int, record: dict[str, Any]):
    """A new study named after the tune, its record stored with it (RECORD)."""
    optuna = _optuna()
    try:
        study = optuna.create_study(study_name=name, storage=storage(store),
                                    sampler=sampler(sampler_name, seed), direction="minimize")
    except optuna.exceptions.DuplicatedStudyError:
        raise FlagsweepError(f"a tune named {name!r} is already in the store {store.url}: "
                             f"resume it with `flagsweep tune --resume {name}`, or choose "
                             "another --out") from None
    study.set_user_attr(RECORD, record)
    return study


def stored_record(attrs: dict[str, Any]) -> dict[str, Any]:
    """The tune's record among a study's user attributes: RECORD's value, or the attributes
    themselves for a tune started when the record was one attribute per key."""
    found = attrs.get(RECORD, attrs)
    return found if isinstance(found, dict) else {RECORD: found}


def load(store: Store, name: str):
    """The study of tune `name`, with the sampler it was started with."""
    optuna = _optuna()
    found = {s.study_name: s for s in _summaries(store)}
    if name not in found:
        known = ", ".join(sorted(found)) or "none"
        raise FlagsweepError(f"no tune {name!r} in the store {store.url} (tunes there: {known})")
    attrs = stored_record(found[name].user_attrs)
    chosen, seed = attrs.get("sampler"), attrs.get("seed")
    if chosen not in SAMPLERS or not isinstance(seed, int) or isinstance(seed, bool):
        # The record is data: a sampler named wrong, or a seed that is no whole number, would
        # end in Optuna's own error deep in the search.
        raise FlagsweepError(f"tune {name}'s record in the store {store.url}, keys 'sampler' "
                             f"and 'seed': expected one of {', '.join(SAMPLERS)} and a whole "
                             f"number, got {quoted(chosen)} and {quoted(seed)}")
    return optuna.load_study(study_name=name, storage=storage(store),
                             sampler=sampler(chosen, seed))


def find(store: Store, name_or_dir: str) -> str:
    """A tune's name as given, or the name of the tune whose folder this is: the one whose
    record names it as its `out`, never a tune that only shares the folder's name."""
    summaries = _summaries(store)
    if any(s.study_name == name_or_dir for s in summaries):
        return name_or_dir
    if not Path(name_or_dir).is_dir():
        return name_or_dir          # load says there is no such tune
    folder = str(Path(name_or_dir).resolve())
    for s in summaries:
        if stored_record(s.user_attrs).get("out") == folder:
            return s.study_name
    known = ", ".join(sorted(s.study_name for s in summaries)) or "none"
    raise FlagsweepError(f"no tune in the store {store.url} was started in the folder {folder} "
                         f"(tunes there: {known})")


def _summaries(store: Store) -> list:
    try:
        return _optuna().get_all_study_summaries(storage(store), include_best_trial=False)
    except Exception as e:  # noqa: BLE001
        raise FlagsweepError(f"the store {store.url}: no tunes readable ({e})") from None


def starts(space: Space, level: dict[str, str]) -> list[dict[str, str]]:
    """The sets a search tries first, before any it draws: `level`, the choices nearest the
    reference level the proof compares with (-O3: `space.level_choices`); the most specific
    -march this CPU runs (-march=native, the last choice); and both together. They are what a
    user tries by hand, so a search that begins from them is never behind the usual answers,
    as OpenTuner's searches begin from the seed configurations they are given (Ansel et al.,
    PACT 2014) and Optuna's `enqueue_trial` is meant to begin from known good values."""
    march = next((d for d in space.dimensions if d.name == MARCH), None)
    top = {MARCH: march.choices[-1]} if march is not None else {}
    out: list[dict[str, str]] = []
    for chosen in (level, top, {**level, **top}):
        if chosen and chosen not in out:
            out.append(chosen)
    return out


def ask_batch(study, space: Space, n: int, dropped: set[str], sampler_name: str, seed: int,
              best: dict[str, str] | None, begin: list[dict[str, str]],
              say: Callable[[str], None]) -> list:
    """n trials (`ask`) with their choices; a line before each set when the draw writes
    more than QUIET_DRAW rows."""
    dims = sum(1 for d in space.dimensions if d.name not in dropped)
    asked = []
    for i in range(n):
        if dims * n > QUIET_DRAW:
            say(f"drawing set {i + 1}/{n} of the batch: {dims} dimensions, a store row each")
        asked.append(ask(study, space, dropped, sampler_name, seed, best, begin))
    return asked


def ask(study, space: Space, dropped: set[str], sampler_name: str, seed: int,
        best: dict[str, str] | None = None, begin: list[dict[str, str]] = ()):
    """One trial and the choices it makes: every dimension not dropped (a flag that broke a
    build or an output is never proposed again; its dimension is left out, so the trial keeps
    the base's default there). The first trials of every sampler but the random search are the
    sets of `begin` (`starts`), in order. The random search's trials, and the others' first ones
    after those (`drawn_near_base`), are drawn near the base (`near_base`); tpe-local's turns
    (`drawn_near_best`) near `best`, the choices of the best set so far (None: none faster
    than the base yet, so near the base); each enqueued so the study records it as its own."""
    dims = [d for d in space.dimensions if d.name not in dropped]
    number = len(study.get_trials(deepcopy=False))
    rng = random.Random(f"{seed}:{number}")
    if sampler_name != "random" and number < len(begin):
        given = begin[number]
        study.enqueue_trial({d.name: given[d.name] if given.get(d.name) in d.choices
                             else d.choices[0] for d in dims})
    elif drawn_near_base(study, sampler_name):
        study.enqueue_trial(near_base(dims, rng))
    elif drawn_near_best(study, sampler_name):
        study.enqueue_trial(near(dims, best, rng) if best is not None else near_base(dims, rng))
    trial = study.ask()
    if isinstance(study.sampler, _optuna().samplers.BaseGASampler):
        # An enqueued trial never reaches the sampler, so it would join no generation and the
        # genetic search would breed from sets drawn uniformly: count it in the first.
        frozen = [t for t in study.get_trials(deepcopy=False) if t.number == trial.number]
        study.sampler.get_trial_generation(study, frozen[0])
    chosen = {d.name: trial.suggest_categorical(d.name, list(d.choices)) for d in dims}
    return trial, chosen


def near_base(dims: list, rng: random.Random) -> dict[str, str]:
    """A random set whose changes to the base are few or many: each dimension changed with a
    probability drawn log-uniformly between 1/n and 1/2 for this set. Drawn uniformly, every
    set would change half of ~200 switches, mostly turning off what the base level turned on,
    and nearly every set would be slower than the base; real gains come from a few flags (the
    sparse sets) or from their combinations (the dense ones)."""
    if not dims:
        return {}
    p = _rate(len(dims), 0.5, rng)
    return {d.name: (rng.choice(d.choices[1:]) if len(d.choices) > 1 and rng.random() < p
                     else d.choices[0]) for d in dims}


def near(dims: list, best: dict[str, str], rng: random.Random) -> dict[str, str]:
    """A small change to a set: each dimension changed, to another of its choices, with a
    probability drawn log-uniformly between 1/n and LOCAL_MOST for this set, so most such
    sets change one to a few switches and some up to a tenth of them. A dimension the set
    does not hold (dropped before, or new to it) starts at the base's default."""
    if not dims:
        return {}
    p = _rate(len(dims), LOCAL_MOST, rng)
    out = {}
    for d in dims:
        held = best.get(d.name, d.choices[0])
        held = held if held in d.choices else d.choices[0]
        others = [c for c in d.choices if c != held]
        out[d.name] = rng.choice(others) if others and rng.random() < p else held
    return out


def _rate(n: int, most: float, rng: random.Random) -> float:
    """One set's chance to change each of its n dimensions: log-uniform between 1/n and
    `most`, so sets of one change and sets of many are drawn alike often."""
    return math.exp(rng.uniform(math.log(1 / max(2, n)), math.log(most)))


def tell(study, number: int, ratio: float | None, attrs: dict[str, Any]) -> None:
    """A trial's outcome: its log ratio to the base, or failed (ratio None: it broke, or it was
    not measured); its attributes (state, flags, interval, batch ...) kept with it."""
    optuna = _optuna()
    for key, value in attrs.items():
        study._storage.set_trial_user_attr(_trial_id(study, number), key, value)
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        study.tell(number, state=optuna.trial.TrialState.FAIL)
    else:
        study.tell(number, math.log(ratio))


def note(study, number: int, attrs: dict[str, Any]) -> None:
    """Attributes of a trial still running (its batch, its flags), kept before it is measured."""
    for key, value in attrs.items():
        study._storage.set_trial_user_attr(_trial_id(study, number), key, value)


def _trial_id(study, number: int) -> int:
    return study._storage.get_trial_id_from_study_id_trial_number(study._study_id, number)


def trials(study) -> list:
    """Every trial, in order, as Optuna keeps it (state, value, params, user_attrs)."""
    return sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)


def choices(study, number: int) -> dict[str, str]:
    """The choices trial `number` made, dimension by dimension."""
    return dict(next(t for t in trials(study) if t.number == number).params)


def running(study) -> list:
    optuna = _optuna()
    return [t for t in trials(study) if t.state == optuna.trial.TrialState.RUNNING]
