"""What a tune spent and what its phases have left: the budget's shares by phase, each step's
builds, runs and seconds (set under the step's name, so a step done again on resume is counted
once), and the build and run paces the phases plan by."""

from __future__ import annotations

import time

from flagsweep.tune.budget import Shares
from flagsweep.tune.record import Tuning


# How the budget is shared: most of it searching, then the ablation on the search input, then
# the proof on the full input over layouts (its rounds are the longest).
SHARES = Shares(search=0.6, ablation=0.15, proof=0.25)

MIN_ROUNDS_S = 60.0          # the least an ablation's or a proof's sweep is given for its rounds


def phase_ended(tune: Tuning, phase: str, after: str) -> None:
    """The phase's seconds (the tune's clock at its end, less the phases before it) kept with
    the tune, then the next phase."""
    tune.state.phase_ended_s[phase] = round(tune.elapsed(), 1)
    tune.state.phase = after
    tune.save()


def phase_seconds(ended: dict) -> dict:
    out, before = {}, 0.0
    for phase in ("search", "ablation", "proof"):
        if phase in ended:
            out[f"{phase}_s"] = round(ended[phase] - before, 1)
            before = ended[phase]
    return out


def save_clock(tune: Tuning) -> None:
    tune.state.spent_s = tune.elapsed()
    tune.save()
    tune.spent, tune.began = tune.elapsed(), time.monotonic()


def phase_left(tune: Tuning, phase: str) -> float:
    """Seconds until the phase's share of the budget is spent (negative once it is)."""
    return phase_end(tune, phase) - tune.elapsed()


def phase_end(tune: Tuning, phase: str) -> float:
    """The tune's clock at which a phase's share of the budget is spent."""
    return tune.opts.budget_s * SHARES.through(phase)


def count(tune: Tuning, step: str, **spent: float) -> None:
    """What one step (a batch's builds, a sweep, a bisection) spent, set under its own name:
    a step done again on resume replaces its figures, never adds them twice."""
    steps = tune.state.cost.steps
    steps[step] = {**steps.get(step, {}), **spent}
    tune.save()


def spent(tune: Tuning, what: str) -> float:
    """The total over the steps (and the running total an older record kept instead)."""
    cost = tune.state.cost
    return getattr(cost, what) + sum(v.get(what, 0) for v in cost.steps.values())


def search_pace(tune: Tuning) -> float:
    """Seconds per build: the search's own timed builds, else the base's at the start."""
    opening = tune.state.opening
    return build_pace(tune) or (opening.build_s if opening else None) or 0.0


def build_pace(tune: Tuning) -> float:
    """Seconds per build, from the search's own timed builds (0 before any). A batch whose
    sets all came from the build cache built nothing: its copying time is no build's pace."""
    steps = tune.state.cost.steps.values()
    timed = [v for v in steps if "build_s" in v and v.get("builds")]
    n = sum(v["builds"] for v in timed)
    return sum(v["build_s"] for v in timed) / n if n else 0.0


def run_pace_of(tune: Tuning, run_id: str) -> float:
    """Seconds a run takes, the median of a sweep's samples."""
    walls = sorted(x.wall_s for x in tune.setting.store.samples(run_id) if x.wall_s)
    return walls[len(walls) // 2] if walls else 0.0
