"""The ablation's layout check: the costs decided nearer to no change than layout luck reaches,
measured again over the proof's K layouts, as many as fit in what is left of the ablation's
time and a fifth of the proof's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from flagsweep.errors import FlagsweepError, Interrupted
from flagsweep.measure.options import DEFAULT_LAYOUTS
from flagsweep import model
from flagsweep.results import confirmation, reader
from flagsweep.tune import batch, budget, cost, proof, ranking, sweeps
from flagsweep.tune.batch import Proposal
from flagsweep.tune.record import Tuning


# The share of the proof's time the ablation's check over layouts may take when its own is
# spent: the proof's rounds lose a fifth at most, which widens its intervals by about 12%
# (1/sqrt(0.8)), while a flag named for a layout's luck is a wrong answer to the ablation's
# question, which the proof does not mend.
PROOF_LOAN = 0.2


def layout_check(tune: Tuning, winner: tuple[str, ...], rows: list[model.TuneAblationRow],
                 path: Path, say: Callable[[str], None]
                 ) -> tuple[model.TuneLayoutCheck, list[model.TuneAblationRow]]:
    """The rows decided slower by less than layout luck reaches (proof.to_check), measured
    again over the proof's K layouts on the search input, in one sweep whose baseline is the
    winner: the check's record, and the rows with what it found."""
    check = _planned(tune, rows, path)
    if check.status != "running":
        if check.status == "skipped":
            say(f"ablation: not measured again over layouts: {check.why}")
        return check, rows
    try:
        found = _measured_again(tune, winner, rows, check, say)
    except Interrupted:
        raise                       # resumed with the tune, never recorded as a failure
    except FlagsweepError as e:
        say(f"ablation: the check over layouts failed ({e})")
        return check.model_copy(update={"status": "failed", "why": str(e)}), rows
    rows = proof.checked(tune.setting, found, winner, rows, check.rows)
    confirmed = [r.flag for r in rows if r.flag in check.rows and r.matters()]
    _say_checked(rows, check, confirmed, say)
    return check.model_copy(update={
        "status": "complete", "confirmed": confirmed, "run_id": batch.run_id(tune.setting, found),
        "results": str(found)}), rows


def _planned(tune: Tuning, rows: list[model.TuneAblationRow], path: Path
             ) -> model.TuneLayoutCheck:
    """The check as planned once (_layout_plan) and kept with the ablation's plan."""
    plan = tune.state.ablation_plan
    if plan.layout_check is None:
        plan.layout_check = _layout_plan(tune, rows, path).dump()
        tune.save()
    return model.TuneLayoutCheck.model_validate(plan.layout_check)


def _measured_again(tune: Tuning, winner: tuple[str, ...],
                    rows: list[model.TuneAblationRow], check: model.TuneLayoutCheck,
                    say: Callable[[str], None]) -> Path:
    """The check's sweep: each row's set and the winner over K layouts."""
    which = [r for r in rows if r.flag in check.rows]
    k = int(check.layouts or DEFAULT_LAYOUTS)
    say(f"ablation: {len(which)} cost(s) decided within the {check.reach_pct:.1f}% layout luck "
        f"reaches, measured again over {k} layouts: "
        + ", ".join(r.flag for r in which))
    todo = [Proposal(-300 - i, proof.without(winner, tuple(r.flags or [r.flag])))
            for i, r in enumerate(which)]
    # no base in this sweep: its comparisons are all against the winner
    return sweeps.sweep_once(tune, tune.out / "ablation-layouts",
                             f"{tune.name}-ablation-layouts", winner, todo, quick=True,
                             say=say, layouts=k, phase="ablation", budget=check.rounds_s,
                             setting=replace(tune.setting, base=winner))


def _say_checked(rows: list[model.TuneAblationRow], check: model.TuneLayoutCheck,
                 confirmed: list[str], say: Callable[[str], None]) -> None:
    k = int(check.layouts or DEFAULT_LAYOUTS)
    for r in rows:
        if r.flag in check.rows:
            e = r.over_layouts
            say(f"ablation: without {r.flag}, over {k} layouts: "
                + (f"{ranking.pct(e.ratio)} {e.verdict}" if e.ratio is not None else e.why or "-")
                + ("" if r.flag in confirmed else ": not counted as mattering"))


def _layout_plan(tune: Tuning, rows: list[model.TuneAblationRow], path: Path
                 ) -> model.TuneLayoutCheck:
    """Which rows the check measures, and why not when none: the most doubtful first (their
    intervals nearest to no change), as many as their builds and least rounds fit in what is
    left of the ablation's time and a fifth of the proof's (PROOF_LOAN). Kept with the study,
    so a resumed tune checks the same rows."""
    # The proof's layouts are sized later, by power (tune.budget): the check takes the
    # layouts --layouts asked, else the confirmation's default.
    s, k = tune.setting, tune.opts.layouts or DEFAULT_LAYOUTS
    doc = reader.load(path)
    reach = confirmation.measured_reach(s.store, s.target.name, doc.machine)
    reach_pct, source = reach or (confirmation.DEFAULT_REACH_PCT,
                                  "the default: no layout spread measured for this program "
                                  "on this machine")
    doubtful = sorted(proof.to_check(rows, reach_pct),
                      key=lambda r: confirmation.nearest_pct(r.ci95) or 0.0)
    record = {"reach_pct": reach_pct, "reach_source": source, "layouts": k,
              "doubtful": [r.flag for r in doubtful]}
    if not doubtful:
        decided = any(r.verdict == "slower" for r in rows)
        return model.TuneLayoutCheck(**record, status="not-needed", why=(
            f"every cost decided ends further from no change than the {reach_pct:.1f}% layout "
            f"luck reaches ({source})" if decided else "no removal was decided slower"))
    if s.fleet is not None:
        return model.TuneLayoutCheck(**record, status="skipped",
                                     why="a fleet sweep cannot build layouts")
    return model.TuneLayoutCheck(**record, **_fitted(tune, path, doubtful, k))


def _fitted(tune: Tuning, path: Path, doubtful: list[model.TuneAblationRow], k: int
            ) -> dict:
    """The most doubtful rows whose builds and least rounds fit in what is left of the
    ablation's time and PROOF_LOAN of the proof's, and the seconds of rounds they get; or
    why not one fits."""
    s = tune.setting
    pace, run_s = cost.build_pace(tune), _run_pace(tune, path)
    rounds = s.measure.min_runs + s.measure.warmup
    avail = (cost.phase_left(tune, "ablation")
             + PROOF_LOAN * cost.SHARES.proof * tune.opts.budget_s)
    n = len(doubtful)
    paces = budget.Pace(pace, run_s, rounds)
    while n and sum(budget.need(n + 1, k, paces)) > avail:
        n -= 1
    if not n:
        builds, least = budget.need(2, k, paces)
        return {"status": "skipped", "why": (
            f"one row's check, {3 * k} binaries ({k} layouts each of the set without it, the "
            f"best set and its A/A twin) and their least rounds, would take about "
            f"{builds + least:.0f} s, more than the {max(0.0, avail):.0f} s left of the "
            f"ablation's time and a fifth of the proof's")}
    builds, least = budget.need(n + 1, k, paces)
    return {"status": "running", "rows": [r.flag for r in doubtful[:n]],
            "rounds_s": max(least, avail - builds)}


def _run_pace(tune: Tuning, path: Path) -> float:
    """Seconds a run of the search input takes, from the ablation sweep's own samples."""
    return cost.run_pace_of(tune, batch.run_id(tune.setting, path))
