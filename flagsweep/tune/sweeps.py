"""A tune's sweeps after its search: the ablation's and the proof's, started or resumed, each
given its phase's time, and any sweep of the tune resumed after a pause while the machine was
too busy for it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from flagsweep import model
from flagsweep.tune import batch, cost
from flagsweep.tune.batch import Proposal, Setting
from flagsweep.tune.record import Tuning


BUSY_PAUSE_S = 30.0          # before a sweep the machine was too busy for is resumed

BUSY_TRIES = 2               # resumptions of a busy sweep, whatever the time left


def through_busy(tune: Tuning, path: Path, say: Callable[[str], None],
                 phase: str = "search") -> Path:
    """A sweep of the tune the machine was too busy for (stored as busy, a few rounds taken)
    is resumed after a pause, at least BUSY_TRIES times and then while its phase has time: a
    busy sweep's ratios are the other work's. Still busy after that, it is judged on what it
    has (its intervals say how little)."""
    s = tune.setting
    rid = batch.run_id(s, path)
    tries = 0
    while s.store.run(rid).status == "busy" and (
            tries < BUSY_TRIES or tune.elapsed() + BUSY_PAUSE_S < cost.phase_end(tune, phase)):
        tries += 1
        say(f"the machine is busy: {rid} waits {BUSY_PAUSE_S:g} s, then resumes")
        time.sleep(BUSY_PAUSE_S)
        path = batch.resume(s, rid, until=_until(tune, phase))
    return path


def sweep_once(tune: Tuning, out: Path, name: str, best: tuple[str, ...],
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
    path = through_busy(tune, path, say, phase)
    rid = batch.run_id(s, path)
    cost.count(tune, rid, runs=len(s.store.samples(rid)), builds=batch.made(path))
    return path


def _rounds_budget(tune: Tuning, phase: str, binaries: int) -> float:
    """A sweep's --budget covers its rounds only; its builds come first. So the ablation's
    sweep gets what is left of its phase less its builds at the search's pace, and at least
    cost.MIN_ROUNDS_S to time anything. The proof's builds are mostly relinks and sets the build
    cache holds, which that pace overstates many times over (a flac proof's 28 binaries took
    220 s against 1092 s estimated, which left its rounds one round): it gets the whole phase
    here, and `_until` ends its rounds when the phase ends, whatever the builds took."""
    if phase == "proof":
        return max(cost.MIN_ROUNDS_S, cost.phase_left(tune, phase))
    left = cost.phase_left(tune, phase) - binaries * cost.build_pace(tune)
    return max(cost.MIN_ROUNDS_S, left)


def _until(tune: Tuning, phase: str) -> float | None:
    """The wall-clock time a phase's sweep ends its rounds by (MeasureOptions.until), from
    this session's clock: the proof's at the tune's end. The ablation plans its steps by the
    build pace instead, and a step must leave time for the next one."""
    return time.time() + cost.phase_left(tune, phase) if phase == "proof" else None
