"""The proof phase: the base, -O3, the best sets and the minimal subset on the full input, over
layouts sized by power (tune.budget), judged as a sweep with --layouts judges a variant
(tune.proof); on a fleet, only on a machine of its label."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from flagsweep.errors import FlagsweepError, Interrupted
from flagsweep.host.lock import MeasureLock
from flagsweep.jobs import fleet
from flagsweep.measure import resolution
from flagsweep.measure.options import chosen_cpu
from flagsweep import model
from flagsweep.tune import batch, budget, cost, document, proof, ranking, search, sweeps
from flagsweep.tune.batch import Proposal
from flagsweep.tune.record import Tuning, keep_proof, kept_ablation, trial_record


def _proof(tune: Tuning, say: Callable[[str], None]) -> bool:
    """The proof's sweep and what it says of each set; whether the phase ended (a proof the
    machine stayed too busy for stays the phase, resumed with the tune)."""
    s = tune.setting
    listed = _listed(tune)
    plan = _proof_plan(tune, listed)
    say(f"proof: {plan.why}")
    if plan.status == "skipped":
        keep_proof(tune, model.TuneProof(status="skipped", plan=plan,
                                            why=f"the proof was {plan.why}"))
        return True
    listed, k = listed[:int(plan.sets)], int(plan.layouts)
    try:
        path = sweeps.sweep_once(tune, tune.out / "proof", f"{tune.name}-proof", s.base,
                                 [Proposal(-100 - i, e.flags) for i, e in enumerate(listed[1:])],
                                 quick=False, say=say, layouts=k)
    except Interrupted:
        raise                       # resumed with the tune, never recorded as a failure
    except FlagsweepError as e:
        keep_proof(tune, model.TuneProof(status="failed", why=str(e), layouts=k, plan=plan))
        say(f"proof: failed ({e})")
        return True
    return _judged(tune, path, listed, k, plan, say)


def _listed(tune: Tuning) -> list[proof.ProofSet]:
    """The sets the proof measures (proof.entries): the best sets the search ranked, and the
    ablation's minimal subset when it leaves some of the best set's flags out."""
    s = tune.setting
    ablation = kept_ablation(tune)
    top = [(n, f) for n, f, _ in ranking.ranked(tune)][:1 + tune.opts.runners_up]
    best = ranking.best(tune)
    least = None
    if best and ablation and ablation.minimal and len(ablation.minimal) < len(ablation.of):
        least = s.base + tuple(f for f in best[1][len(s.base):] if f in ablation.minimal)
    return proof.entries(s.base, top if best else [], least, tune.opts.runners_up)


def _judged(tune: Tuning, path: Path, listed: list[proof.ProofSet], k: int,
            plan: model.TuneProofPlan, say: Callable[[str], None]) -> bool:
    """The proof's sweep read: each set's candidates, or no answer while it stopped busy."""
    s = tune.setting
    rid = batch.run_id(s, path)
    if s.store.run(rid).status != "complete":
        # Still busy after through_busy's pauses: its ratios are the other work's, and a
        # "Use X" from them would be an answer the proof never gave.
        why = (f"the machine stayed busy, so the proof's sweep ({rid}) stopped before its "
               "stopping rule could judge; its figures are not an answer. Continue with "
               f"`flagsweep tune --resume {tune.name}` once the machine is quieter "
               "(`flagsweep system` shows what runs)")
        keep_proof(tune, model.TuneProof(status="busy", run_id=rid, results=str(path),
                                            layouts=k, plan=plan, why=why))
        say(f"proof: no answer yet ({why})")
        return False
    keep_proof(tune, model.TuneProof(
        status="complete", run_id=rid, results=str(path), layouts=k,
        plan=plan, candidates=proof.candidates(s, path, listed)))
    return True


def _proof_plan(tune: Tuning, listed: list[proof.ProofSet]) -> model.TuneProofPlan:
    """The proof's sets and layouts (tune.budget.proof_plan) at this tune's build pace, its
    full input's run time and the layout spread measured for the program, in what is left of
    the budget; kept with the study, so a resumed tune measures what it planned."""
    kept = tune.state.proof_plan
    if kept:
        return model.TuneProofPlan.model_validate(kept)
    s = tune.setting
    pace = budget.Pace(cost.search_pace(tune), _full_run_s(tune),
                       s.measure.min_runs + s.measure.warmup)
    ablation = kept_ablation(tune)
    spread = budget.spread(ablation.layout_check if ablation else None, s.store, s.target.name,
                           document.machine(tune))
    plan = budget.proof_plan([e.role for e in listed], spread, pace,
                             cost.phase_left(tune, "proof"), s.measure.threshold_pct,
                             tune.opts.layouts)
    tune.state.proof_plan = plan.dump()
    tune.save()
    return plan


def _full_run_s(tune: Tuning) -> float:
    """A run of the full input: the search's runs of the quick input (its latest batch),
    scaled by the inputs' sizes (measure.resolution)."""
    ids = [r.run_id for r in map(trial_record, search.trials(tune.study)) if r.run_id]
    quick = cost.run_pace_of(tune, ids[-1]) if ids else 0.0
    return quick * resolution.full_to_quick(tune.setting.target.spec.inputs)


def proved(tune: Tuning, say: Callable[[str], None]) -> bool:
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
        keep_proof(tune, model.TuneProof(status="skipped", why=why,
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
