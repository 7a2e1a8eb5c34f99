"""tune.json and its page: the tune's record and its trials as the results contract's Tune, with
the one sentence the tune ends with (tune.answer) or, while the proof is left, what the search
found, said as not proved."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from flagsweep import files, report
from flagsweep.host import system
from flagsweep import model
from flagsweep.tune import batch, cost, ranking, search
from flagsweep.tune.answer import sentence
from flagsweep.tune.record import Tuning, kept_ablation, kept_proof, trial_record

log = logging.getLogger("flagsweep.tune.document")


def document(tune: Tuning, status: str) -> model.Tune:
    state = tune.state
    trials = [_trial(t) for t in search.trials(tune.study)]
    proof_ = kept_proof(tune)
    ablation = kept_ablation(tune)
    sentence, use = answer(tune, proof_, ablation, len(trials))
    return model.Tune.model_validate({
        "schema": model.TUNE_SCHEMA, "tune_id": tune.name,
        "target": tune.setting.target.name, "status": status, "phase": state.phase,
        "sampler": tune.opts.sampler, "seed": tune.opts.seed, "budget_s": tune.opts.budget_s,
        "threshold_pct": tune.setting.measure.threshold_pct,
        "space": {"source": tune.space.source, "base": " ".join(tune.setting.base),
                  "compiler": tune.space.compiler, "dimensions": len(tune.space.dimensions),
                  "switches": tune.space.switches(), "excluded": list(tune.space.excluded),
                  "starts": [list(tune.space.changes(tune.space.flags(s)))
                             for s in state.starts]},
        "machine": machine(tune),
        "trials": [t.dump() for t in trials], "progress": _progress(tune, trials),
        "broken": [b.model_dump(exclude_unset=True) for b in state.broken],
        "ablation": ablation.dump() if ablation else None,
        "proof": proof_.dump() if proof_ else None,
        "answer": sentence, "recommended": use,
        "cost": {"builds": int(cost.spent(tune, "builds")),
                 "runs": int(cost.spent(tune, "runs")), "wall_s": round(tune.elapsed(), 1),
                 **cost.phase_seconds(state.phase_ended_s)}})


def machine(tune: Tuning) -> dict | None:
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
    ids = [r.run_id for r in map(trial_record, search.trials(tune.study)) if r.run_id]
    machine = tune.setting.store.run(ids[-1]).machine if ids else None
    return machine.dump() if machine else None


def _trial(t) -> model.TuneTrial:
    a = trial_record(t)
    return model.TuneTrial(
        number=t.number, flags=a.flags or [], changes=a.changes or [],
        state=a.state or "pending", batch=a.batch, run_id=a.run_id, variant=a.variant,
        ratio=a.ratio, ci95=batch.finite_pair(a.ci95), verdict=a.verdict, runs=a.runs,
        identical_to=a.identical_to, detail=a.detail, elapsed_s=a.elapsed_s)


def _progress(tune: Tuning, trials: list[model.TuneTrial]) -> list[dict]:
    """The best-so-far curve: after each batch, the best set as the search ranked it then (the
    mean of its estimates so far, with the mean's interval), and what had been spent (runs
    counted from the trials, builds made by the batch and its probes, wall time at the batch's
    end)."""
    out, runs, builds = [], 0, 0
    steps = tune.state.cost.steps
    # a record from before the steps were kept: each candidate not a repeat, built
    kept = any(name.startswith("batch ") for name in steps)
    for entry in tune.state.batches:
        told = [t for t in trials if t.batch == entry.batch and t.state != "pending"]
        if not told:
            continue
        runs += sum(t.runs or 0 for t in told)
        made = [steps.get(f"batch {entry.batch}", {})] + \
            [steps.get(f"probe {t.number}", {}) for t in told]
        builds += sum(m.get("builds", 0) for m in made) if kept else \
            sum(1 for t in told if t.state != "repeat")
        found = ranking.estimated(tune, entry.batch)
        best = found[0] if found else None
        out.append({"batch": entry.batch, "trials": max(t.number for t in told) + 1,
                    "builds": builds, "runs": runs,
                    "elapsed_s": max(t.elapsed_s or 0 for t in told),
                    "best": best[0] if best else None,
                    "ratio": best[2] if best else None, "ci95": best[3] if best else None})
    return out


def answer(tune: Tuning, proof_: model.TuneProof | None,
           ablation: model.TuneAblation | None, n: int) -> tuple[str | None, list[str] | None]:
    """The one sentence and the set it names (tune.answer); a proof left for another machine
    is said as what the search found, not proved."""
    if proof_ is not None and proof_.status in ("skipped", "busy"):
        return _unproved(tune, proof_, n), None
    return sentence(proof_, ablation, n, tune.setting.base, tune.setting.measure.threshold_pct)


def _unproved(tune: Tuning, proof_: model.TuneProof, n: int) -> str:
    """What the search found, said as not proved: a fleet tune's proof waits for a machine of
    its label, a busy one for a quieter machine."""
    base = " ".join(tune.setting.base)
    best = ranking.best(tune)
    found = f"no set found beats {base} in the search after {n} candidates"
    if best:
        number, flags, ratio = best
        found = (f"the best set found after {n} candidates, trial {number} ({base} "
                 f"{ranking.short(' '.join(flags[len(tune.setting.base):]))}), was "
                 f"{ranking.pct(ratio)} "
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
