"""The schedule of a sweep's counted rounds: duet or serial (docs/measurement.md, "Duet rounds").

`--schedule auto|duet|serial` (MeasureOptions.schedule). Before the builds, `prepare` finds the
duets' second CPU (host.placement.partner) and refuses, in one line, a forced duet that cannot
be; `locked` holds both CPUs' measurement locks. After the output checks, `decided` makes the
choice: serial without a pilot where a duet cannot be or buys nothing (one CPU, layouts, a
count instead of a time, an executor that runs one workload at a time), else the pilot
(measure.pilot) and its choice. The choice is kept with the run (option `schedule`, as
results.json's `measurement.schedule` shows it), said in one line, and set on the plan; a
resumed sweep keeps it, and a serial choice lets the second CPU go.
"""

from __future__ import annotations

import time
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from typing import Callable, Iterator

from flagsweep import model
from flagsweep.errors import FlagsweepError
from flagsweep.host import launcher, placement
from flagsweep.host.executor import Executor
from flagsweep.host.lock import MeasureLock
from flagsweep.measure import metric, pilot, rounds
from flagsweep.measure.options import MeasureOptions, chosen_cpu
from flagsweep.measure.sampler import Sampler
from flagsweep.results.store import Store

DESIGN = ("each variant (the A/A twin and a reference arm too) paired with a run of the "
          "baseline of its own, the two started together on CPUs {0} and {1}, sides "
          "alternating over rounds from a seeded first side; the sample is the pair's ratio")
# The second CPU's lock, while this process holds it: let go once the rounds are serial.
_partners: dict[int, MeasureLock] = {}


def no_duet(opts: MeasureOptions, execute: Executor | None = None) -> str | None:
    """Why this sweep's rounds cannot be duets whatever the machine, or None."""
    if opts.layouts:
        return ("--layouts compares over layouts, and duets of layout replicates are not "
                "designed: its rounds are serial")
    if opts.metric == "instructions":
        return "instructions are counted, not timed: a duet has no shared moment to cancel"
    if execute is not None and launcher.together_of(execute) is None:
        return "this sweep's executor runs one workload at a time"
    return None


def prepare(opts: MeasureOptions, execute: Executor, say: Callable[[str], None]) -> None:
    """Before the builds: the sweep's CPU (options.chosen_cpu, said) and its duets' second
    (opts.partner_cpu, said), or why there is none (opts.partner_why); a forced duet that
    cannot be is refused."""
    chosen_cpu(opts, say)
    if opts.schedule == "serial" or opts.partner_cpu is not None:
        return
    why = no_duet(opts, execute)
    if why is None:
        got = placement.partner(opts.cpu)
        if isinstance(got, str):
            why = opts.partner_why = got
        else:
            opts.partner_cpu = got.cpu
            say(got.why)
    if why and opts.schedule == "duet":
        raise FlagsweepError(f"--schedule duet: no duets here: {why} (--schedule auto or "
                             "serial measures one run at a time)")


@contextmanager
def locked(what: str, opts: MeasureOptions, wait: bool, say: Callable[[str], None],
           kept: model.Schedule | dict | None = None) -> Iterator[None]:
    """The sweep's measurement locks: its CPU's (checked online), and its duets' second CPU's
    unless the schedule it kept (`kept`, a resumed sweep's) is serial."""
    chosen_cpu(opts)
    with ExitStack() as stack:
        stack.enter_context(MeasureLock(what, opts.cpu, wait=wait, say=say))
        second = opts.partner_cpu
        kept = model.Schedule.model_validate(kept) if kept else None
        if second is not None and (kept is None or kept.schedule == "duet"):
            _partners[second] = stack.enter_context(
                MeasureLock(f"{what} (duets)", second, wait=wait, say=say, own=(opts.cpu,)))
            stack.callback(_partners.pop, second, None)
        yield


def release(opts: MeasureOptions) -> None:
    """Let the second CPU go: the rounds are serial."""
    held = _partners.pop(opts.partner_cpu, None) if opts.partner_cpu is not None else None
    if held is not None:
        held.__exit__(None, None, None)


def serial(opts: MeasureOptions, why: str) -> model.Schedule:
    """The record of serial rounds chosen without a pilot."""
    return model.Schedule(asked=opts.schedule, schedule="serial", cpus=[opts.cpu],
                          reason=f"serial: {why}", design=None, pilot=None, warning=None)


def decided(run_id: str, opts: MeasureOptions, plan: rounds.Plan, sampler: Sampler,
            store: Store, say: Callable[[str], None], tick=None) -> model.Schedule:
    """The counted rounds' schedule, kept with the run (a resumed sweep's own), said, and set
    on the plan (plan.duet); the pilot runs first where the choice needs it."""
    kept = store.run(run_id).options.schedule
    record = kept or _decide(run_id, opts, plan, sampler, store, say, tick)
    if not kept:
        store.set_option(run_id, "schedule", record)
    if record.schedule == "duet":
        if sampler.together is None:       # a duet sweep resumed with a one-at-a-time executor
            raise FlagsweepError(f"run {run_id} measures in duets, and this executor runs one "
                                 "workload at a time")
        plan.duet = tuple(record.cpus)
    elif not opts.layouts:      # a layout sweep's serial rounds say nothing of a tune's others
        release(opts)
    say(f"schedule: {record.reason}")
    if record.warning:
        say(f"warning: {record.warning}")
    return record


def _decide(run_id: str, opts: MeasureOptions, plan: rounds.Plan, sampler: Sampler,
            store: Store, say: Callable[[str], None], tick) -> model.Schedule:
    before = model.Schedule.model_validate(opts.chosen_schedule) \
        if opts.chosen_schedule else None
    if before and not opts.layouts and not sampler.cachegrind and (
            before.schedule == "serial" or sampler.together):
        return before.model_copy(update={"reason": f"{before.reason} (as the pilot of this "
                                                   "tune's first batch found)"})
    why = ("--schedule serial" if opts.schedule == "serial" else
           no_duet(opts) or ("Cachegrind counts instructions, which a duet cannot make more "
                             "exact" if sampler.cachegrind else None)
           or (None if sampler.together else "this sweep's executor runs one workload at a time")
           or (None if opts.partner_cpu is not None else opts.partner_why or "no second CPU"))
    if why:
        return serial(opts, why)
    cpus = (opts.cpu, opts.partner_cpu)
    say(f"schedule: a pilot first, {pilot.PAIRS} pairs of each comparison back to back on CPU "
        f"{cpus[0]} and {pilot.PAIRS} at once on CPUs {cpus[0]} and {cpus[1]}, to choose "
        f"(after {pilot.EARLY}, none more where duet is {pilot.WIDER:g}x as wide)")
    began = time.monotonic()
    if plan.warmup:      # warm first, as the counted rounds would: the pilot measures warm runs
        rounds.rounds(replace(plan, max_runs=0), store.done(run_id), sampler, lambda: {}, tick)
        plan.warmup = 0
    def figures() -> model.Pilot:
        return pilot.figures(store.samples(run_id), lambda s: metric.metric_of(s, plan.metric))
    pilot.run(plan, cpus, sampler, sampler.duet, store.done(run_id), range(pilot.EARLY))
    fig = figures()
    if opts.schedule == "duet" or not pilot.clearly_wider(fig):
        pilot.run(plan, cpus, sampler, sampler.duet, store.done(run_id))
        fig = figures()
    fig.seconds = round(time.monotonic() - began, 3)
    if plan.budget_s is not None:       # the pilot is measuring too: it spends the budget
        plan.budget_s = max(0.0, plan.budget_s - fig.seconds)
    chosen, why, warning = pilot.choose(fig, opts.schedule)
    return model.Schedule(asked=opts.schedule, schedule=chosen,
                          cpus=list(cpus) if chosen == "duet" else [opts.cpu], reason=why,
                          design=DESIGN.format(*cpus) if chosen == "duet" else None,
                          pilot=fig, warning=warning)


def take(plan: rounds.Plan, sampler: Sampler) -> Callable[[str, int, int, int], object]:
    """What rounds.rounds calls for each unit of a round: one run, or in duet rounds the
    variant's duet with the baseline."""
    if not plan.duet:
        return sampler
    return lambda vid, rnd, pos, pad: sampler.duet(rounds.duet(plan, vid, rnd), rnd, pos)
