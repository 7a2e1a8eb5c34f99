"""A sweep's timed part: the rounds over its checked binaries on the chosen CPU, --metric auto's
choice from the warmup round, --input-size auto's pilot, and the sweep the machine was too
busy for, kept as busy."""

from __future__ import annotations

from dataclasses import asdict
from typing import Callable

from flagsweep import model
from flagsweep.host import launcher, placement, probes
from flagsweep.jobs import controls, schedule
from flagsweep.jobs.checks import Sweep, layouts_of, runnable
from flagsweep.measure import length, rounds
from flagsweep.measure.options import chosen_cpu
from flagsweep.measure.plan import METRICS, choose_metric, plan_for, round_values
from flagsweep.measure.sampler import Busy, Sampler
from flagsweep.report import lines, terminal
from flagsweep.results.store import Store
from flagsweep.workload import check


def run_length(sweep: Sweep, store: Store, say: Callable[[str], None]) -> float | None:
    """--input-size auto: the input size its pilot chose (measure.length.for_sweep), chosen
    once, before the output check, and kept with the run, so a resume measures the same input.
    None: the size --quick or its absence says."""
    o = sweep.opts
    if o.input_size != "auto":
        return None
    if o.run_length is None:
        o.run_length = length.for_sweep(
            sweep.target, runnable(sweep.builds).get(sweep.baseline), sweep.execute,
            sweep.out / "scratch", o.seed or 0, o.metric, chosen_cpu(o), say).to_json()
        store.set_option(sweep.run_id, "measure", asdict(o))
    return o.run_length.get("size")


def timed(sweep: Sweep, workload: check.Invocation, measured: list[str],
          pre: probes.Preflight | None, store: Store, say: Callable[[str], None]
          ) -> tuple[rounds.Outcome, str]:
    """The rounds' outcome and the run's status: complete, or busy when most runs stayed
    disturbed and the sweep stopped early. A busy run is kept as what it is, a partial
    measurement of a busy machine (resumable), not a sweep history, suite, pick or merge
    should take as complete."""
    o = sweep.opts
    binaries = {vid: path for vid, path in runnable(sweep.builds).items() if vid in measured}
    cachegrind = o.metric == "instructions" and (pre is None or not pre.hw_counters)
    plan = plan_for(o, measured, sweep.baseline, controls.SUFFIXES, once=cachegrind,
                    layouts=layouts_of(sweep.builds), drop=True)
    # the levels the stops and the rule spend, for the analysis at the end (sequential.Design)
    store.set_option(sweep.run_id, "sequential", rounds.design(plan).to_json())
    if cachegrind:
        say("metric: instructions counted by Cachegrind (no PMU here): a deterministic change "
            "detector, not a speed")
    cpu = chosen_cpu(o)
    measure = Sampler(sweep.run_id, workload, binaries, pre, cachegrind, store, say,
                      threshold_pct=o.threshold_pct, execute=sweep.execute, cpu=cpu,
                      together=launcher.together_of(sweep.execute))
    # --metric auto chooses from a warmup round, so it takes one even at --warmup 0
    warmups = max(plan.warmup, 1 if o.metric == "auto" else 0)
    say(f"measuring {len(measured)} distinct binaries on CPU {cpu}: {plan.min_runs}-"
        f"{plan.max_runs} rounds, {warmups} warmup, seed {o.seed}")
    with launcher.pinned(cpu), terminal.progress(plan) as tick:
        if o.metric == "auto":
            _metric_chosen(sweep, plan, measure, store, say, tick)
        plan.metric = measure.metric = METRICS[o.metric]
        schedule.decided(sweep.run_id, o, plan, measure, store, say, tick)

        def values() -> rounds.Values:
            return round_values(store.samples(sweep.run_id), plan.metric)

        def stopped(vid: str, stop: rounds.Stop) -> None:
            # Kept with the run as it happens: an interrupted sweep's results say it too.
            so_far = dict(store.run(sweep.run_id).options.stopped)
            so_far[vid] = model.EarlyStop(rounds=stop.rounds, verdict=stop.verdict, why=stop.why)
            store.set_option(sweep.run_id, "stopped", {v: s.dump() for v, s in so_far.items()})

        try:
            return rounds.rounds(plan, store.done(sweep.run_id), schedule.take(plan, measure),
                                 values, tick, lines.round_lines(), stopped), "complete"
        except Busy as e:
            busy = e
    return _stopped_busy(sweep, store, say, cpu, busy)


def _stopped_busy(sweep: Sweep, store: Store, say: Callable[[str], None], cpu: int,
                  e: Busy) -> tuple[rounds.Outcome, str]:
    """A sweep the machine was too busy for, with where it could measure now (measured
    unpinned, so every CPU is a candidate)."""
    counted = {s.round for s in store.samples(sweep.run_id) if s.round >= 0}
    why = f"{e}; {placement.after_busy(cpu)}"
    say(f"warning: {why}; the run is stored as busy, not complete (flagsweep run "
        f"--resume {sweep.run_id} continues it on CPU {cpu})")
    return rounds.Outcome(len(counted), why), "busy"


def _metric_chosen(sweep: Sweep, plan: rounds.Plan, measure: Sampler, store: Store,
                   say: Callable[[str], None], tick) -> None:
    """--metric auto, chosen from the warmup round and kept with the run before any counted
    run (measure.plan.choose_metric)."""
    choice = choose_metric(plan, store.done(sweep.run_id), measure,
                           lambda: store.samples(sweep.run_id), tick)
    sweep.opts.metric = choice.metric
    store.set_option(sweep.run_id, "measure", asdict(sweep.opts))
    store.set_option(sweep.run_id, "metric_choice", choice.to_json())
    say(f"metric: {choice.why}")
