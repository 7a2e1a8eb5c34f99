"""The ablation phase: the best set found without each of its flags (or groups of them, when
builds are slow), one sweep on the search input whose baseline is the best set; its doubtful
costs measured again over layouts (tune.layouts), then the greedy subset that gives the
winner's effect with the fewest flags."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

from flagsweep import stats
from flagsweep.errors import FlagsweepError, Interrupted
from flagsweep import model
from flagsweep.tune import batch, cost, layouts, proof, ranking, sweeps
from flagsweep.tune.batch import Proposal
from flagsweep.model.tune import AblationPlan
from flagsweep.tune.record import Tuning, keep_ablation


def ablation(tune: Tuning, say: Callable[[str], None]) -> None:
    best = ranking.best(tune)
    if best is None:
        keep_ablation(tune, model.TuneAblation(
            status="skipped", why="no set the search measured was faster than the base"))
        say("ablation: skipped (no set found faster than the base)")
        return
    number, winner, ratio = best
    changes = winner[len(tune.setting.base):]
    if ratio > 1 - stats.fraction(tune.setting.measure.threshold_pct):
        _within_threshold(tune, number, ratio, changes, say)
        return
    plan = tune.state.ablation_plan or _ablation_plan(tune, changes)
    tune.state.ablation_plan = plan
    tune.save()
    try:
        rows = _ablated(tune, winner, plan, number, say)
    except Interrupted:
        raise                       # resumed with the tune, never recorded as a failure
    except FlagsweepError as e:
        keep_ablation(tune, model.TuneAblation(status="failed", why=str(e),
                                                  of=list(changes)))
        say(f"ablation: failed ({e})")
        return
    _concluded(tune, winner, plan, rows, say)


def _within_threshold(tune: Tuning, number: int, ratio: float, changes: tuple[str, ...],
                      say: Callable[[str], None]) -> None:
    """Within the threshold the best set is likely the luckiest of many equal ones: taking it
    apart would build and time each of its flags to find none that matters. The proof still
    measures it against the base and -O3."""
    why = (f"the best set found, trial {number}, is {100 * (ratio - 1):+.1f}% against the "
           f"base in the search, within the {tune.setting.measure.threshold_pct:g}% threshold")
    keep_ablation(tune, model.TuneAblation(status="skipped", why=why, of=list(changes)))
    say(f"ablation: skipped ({why})")


def _concluded(tune: Tuning, winner: tuple[str, ...], plan: AblationPlan,
               rows: list[model.TuneAblationRow], say: Callable[[str], None]) -> None:
    """After the removals' rows: the doubtful ones checked over layouts, the greedy subset,
    then the ablation kept and said."""
    s = tune.setting
    changes = winner[len(s.base):]
    path = Path(plan.last)
    check, rows = layouts.layout_check(tune, winner, rows, path, say)
    greedy = _greedy(tune, winner, rows, say)
    least = proof.minimal(rows)
    if greedy is not None and greedy.chosen:
        least = [f for step in greedy.steps[:greedy.chosen] for f in step.added]
    keep_ablation(tune, model.TuneAblation(
        status="complete", run_id=batch.run_id(s, path), results=str(path), of=list(changes),
        method=plan.method, why=plan.why, rows=rows, minimal=least,
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


def _ablation_plan(tune: Tuning, changes: tuple[str, ...]) -> AblationPlan:
    """Leave-one-out when its builds fit in the ablation's time at the search's build pace;
    else group screening (Watson, "A study of the group screening method", Technometrics
    1961): the winner without each of about sqrt(n) groups of its flags, as many as fit, then
    without each flag of the groups that may matter, when those builds fit in what is left.
    With few flags that matter among many, that builds about (k+1) sqrt(n) sets, not n. What
    it cannot see: flags within one group whose effects cancel. Groups save builds at the cost
    of a second sweep, whose rounds take cost.MIN_ROUNDS_S at least: when all n builds take less
    than that (duo: 25 flags at 0.3 s, in a 3-minute tune's 27-second phase), leave-one-out is
    the cheaper plan whatever the phase's time. Kept with the study, so a resumed tune takes
    the same plan."""
    pace = cost.build_pace(tune)
    fit = (int((cost.phase_left(tune, "ablation") - cost.MIN_ROUNDS_S) / pace) - 2
           if pace else len(changes))
    if len(changes) <= max(fit, 2) or len(changes) * pace <= cost.MIN_ROUNDS_S:
        return AblationPlan(method="leave-one-out", groups=[[f] for f in changes])
    n = max(2, min(fit, math.ceil(math.sqrt(len(changes)))))
    why = (f"one set without each of its {len(changes)} flags would take about "
           f"{len(changes) * pace / 60:.0f} min to build at the search's {pace:.0f} s a "
           f"build, more than the ablation's time: its flags were taken out in {n} groups "
           "first, then one by one within the groups that may matter")
    return AblationPlan(method="groups", why=why,
                        groups=[list(g) for g in proof.groups(changes, n)])


def _ablated(tune: Tuning, winner: tuple[str, ...], plan: AblationPlan, number: int,
             say: Callable[[str], None]) -> list[model.TuneAblationRow]:
    """The plan's sweeps on the search input, the winner their baseline: the removals' rows."""
    removals = [tuple(g) for g in plan.groups]
    if plan.method == "leave-one-out":
        say(f"ablation: the best set (trial {number}) without each of its {len(removals)} flags")
        return _removed(tune, "ablation", winner, removals, say)
    say(f"ablation: the best set (trial {number}) without each of {len(removals)} groups of "
        f"its flags ({plan.why})")
    rows = _removed(tune, "ablation-groups", winner, removals, say)
    split = plan.split
    if split is None:
        split = plan.split = _split(tune, rows, say)
        tune.save()
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
    left = cost.phase_left(tune, "ablation") - cost.MIN_ROUNDS_S
    pace = cost.build_pace(tune)
    split = proof.to_split(rows, int(left / pace) if pace else flags)
    if not split and may:
        say(f"ablation: the {flags} flags of the groups that may matter are not taken apart: "
            f"their builds would take longer than the {max(0, left):.0f} s left")
    elif len(split) < flags:
        say(f"ablation: {len(split)} of the {flags} flags of the groups that may matter are "
            f"taken apart, those of groups decided to matter first: the others' builds would "
            f"take longer than the {max(0, left):.0f} s left")
    return split


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
    plan = tune.state.ablation_plan
    if plan.greedy is None:
        plan.greedy, plan.greedy_why = _greedy_plan(tune, units)
        tune.save()
    if not plan.greedy:
        return model.TuneGreedy(status="skipped", why=plan.greedy_why)
    units = [tuple(u) for u in plan.greedy]
    sets = proof.greedy_sets(winner, len(tune.setting.base), units)
    say(f"ablation: the greedy subset: the base with the flags that may matter added back, "
        f"costliest first, {len(units)} steps")
    todo = [Proposal(-200 - i, k) for i, k in enumerate(sets) if k != winner]
    try:
        path = sweeps.sweep_once(tune, tune.out / "ablation-greedy",
                                 f"{tune.name}-ablation-greedy", winner, todo, quick=True,
                                 say=say)
    except Interrupted:
        raise                       # resumed with the tune, never recorded as a failure
    except FlagsweepError as e:
        say(f"ablation: the greedy subset failed ({e})")
        return model.TuneGreedy(status="failed", why=str(e))
    steps = proof.greedy_steps(tune.setting, path, winner, units)
    return model.TuneGreedy(status="complete", run_id=batch.run_id(tune.setting, path),
                               results=str(path), steps=steps,
                               chosen=proof.greedy_chosen(steps, decided))


def _greedy_plan(tune: Tuning, units: list[tuple[str, ...]]
                 ) -> tuple[list[list[str]], str | None]:
    """The greedy steps whose builds fit in what is left of the ablation's time (and why none
    when none does), kept with the study so a resumed tune measures the same steps."""
    pace = cost.build_pace(tune)
    left = cost.phase_left(tune, "ablation") - cost.MIN_ROUNDS_S
    fit = int(left / pace) if pace else len(units)
    if fit < 1:
        return [], (f"the {max(0, left + cost.MIN_ROUNDS_S):.0f} s left of the ablation's time "
                    f"do not hold one build at {pace:.0f} s and the {cost.MIN_ROUNDS_S:.0f} s "
                    "of rounds a sweep is given at least")
    return [list(u) for u in units[:fit]], None


def _removed(tune: Tuning, folder: str, winner: tuple[str, ...],
             removals: list[tuple[str, ...]], say: Callable[[str], None]
             ) -> list[model.TuneAblationRow]:
    todo = [Proposal(-1 - i, proof.without(winner, r)) for i, r in enumerate(removals)]
    path = sweeps.sweep_once(tune, tune.out / folder, f"{tune.name}-{folder}", winner, todo,
                             quick=True, say=say)
    tune.state.ablation_plan.last = str(path)
    tune.save()
    return proof.ablation_rows(tune.setting, path, winner, removals)
