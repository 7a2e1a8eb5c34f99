"""The search phase: batches of candidates asked of the study, repeats and known code told at no
run, the rest built and raced in one sweep on the quick input whose baseline is the best set so
far, failed builds halved down to the flags that break them, every trial told."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from flagsweep.measure.options import from_store
from flagsweep.model.tune import BrokenFlags, RecordedBatch, Remeasurement
from flagsweep.tune import batch, budget, cost, culprit, document, ranking, search, sweeps
from flagsweep.tune.batch import Proposal
from flagsweep.tune.record import Tuning, trial_record


REDUCE_SHARE = 0.2           # of the search's time, to reduce flags that fail only together

# A batch whose candidates were all proposed before, this many times in a row: the sampler has
# nothing new to try in this space.
STALE_BATCHES = 3

BATCH_LEAST_S = 30.0         # the least a batch's sweep is given for its rounds


def race(tune: Tuning, say: Callable[[str], None]) -> None:
    """The search phase: a batch at a time while the search's share of the budget lasts, the
    trials asked last, or the sampler proposes something new."""
    end = tune.opts.budget_s * cost.SHARES.search
    stale = 0
    while tune.elapsed() < end and stale < STALE_BATCHES and not _enough(tune):
        n = _batch_size(tune, end, say)
        if not n:
            break
        number, todo = _asked_batch(tune, n, say)
        fresh = _batch(tune, number, todo, say)
        stale = 0 if fresh else stale + 1
        cost.save_clock(tune)
        document.write(tune, "running")
    if stale >= STALE_BATCHES:
        say(f"search: {STALE_BATCHES} batches in a row proposed only sets tried before; the "
            "space is exhausted for this sampler")


def _batch_size(tune: Tuning, end: float, say: Callable[[str], None]) -> int:
    """The next batch's candidates: --batch, within the trials left and what fits in time."""
    n = tune.opts.batch
    if tune.opts.trials is not None:
        n = min(n, tune.opts.trials - len(_asked(tune)))
    # the budget is a promise: a batch begun near the search's end builds only what fits
    n, why = budget.batch_fit(n, end - tune.elapsed(), cost.search_pace(tune), BATCH_LEAST_S)
    if why:
        say(f"search: {why}")
    return n


def _asked_batch(tune: Tuning, n: int, say: Callable[[str], None]
                 ) -> tuple[int, list[Proposal]]:
    """n candidates asked of the study, near the best set so far where the sampler draws
    near it; kept with the record as the next batch."""
    best = ranking.best(tune)
    near = search.choices(tune.study, best[0]) if best else None
    asked = search.ask_batch(tune.study, tune.space, n, set(tune.state.dropped),
                             tune.opts.sampler, tune.opts.seed, near, tune.state.starts, say)
    todo = [Proposal(trial.number, tune.space.flags(chosen)) for trial, chosen in asked]
    number = len(tune.state.batches)
    # Each trial's flags first, then the batch: killed in between, its trials are told
    # "not measured" on resume (finish_open_batch), never left without their flags.
    for c in todo:
        search.note(tune.study, c.number, {"flags": list(c.flags), "batch": number,
                                           "state": "pending"})
    tune.state.batches.append(RecordedBatch(batch=number, trials=[c.number for c in todo],
                                            best=best[0] if best else None))
    tune.save()
    return number, todo


def _enough(tune: Tuning) -> bool:
    return tune.opts.trials is not None and len(_asked(tune)) >= tune.opts.trials


def _asked(tune: Tuning) -> list:
    return search.trials(tune.study)


def finish_open_batch(tune: Tuning, say: Callable[[str], None]) -> None:
    """A batch a kill interrupted: its trials measured (its sweep resumed, or started if it
    had not begun) and told, before anything new is asked."""
    open_ = {t.number: t for t in search.running(tune.study)}
    if not open_:
        return
    noted = {n: trial_record(t).flags for n, t in open_.items()}
    for entry in tune.state.batches:
        todo = [Proposal(n, tuple(noted[n])) for n in entry.trials
                if n in open_ and noted[n] is not None]
        if todo:
            say(f"batch {entry.batch}: finishing {len(todo)} trials interrupted before")
            _batch(tune, entry.batch, todo, say)
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
    known = ranking.known_flags(tune)
    told, left = {}, []
    for c in todo:
        held = _holds_broken(tune.state.broken, None, c.flags[len(s.base):])
        if held:
            told[c.number] = batch.Judged(f"failed-{held.kind}", batch.vid(s, c.flags),
                                          detail=f"holds {held.flag}, which broke the "
                                                 f"{held.kind} of trial {held.trial}")
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
    cost.count(tune, f"batch {number}", builds=made, build_s=time.monotonic() - began)
    codes = tune.state.codes
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
    for c in todo:
        j, b = out[c.number], builds[c.number]
        if j.state == "measured" and j.ratio is not None and b.code_sha256:
            tune.state.codes.setdefault(b.code_sha256, (c.number, j.ratio))
    tune.save()
    return out


def _named(first) -> str:
    return "the base" if first == batch.BASE else f"trial {first}"


def _swept(tune: Tuning, number: int, todo: list[Proposal],
           say: Callable[[str], None]) -> dict[int, batch.Judged]:
    """The batch's sweep, resumed if it began before; its candidates judged."""
    s = tune.setting
    out = tune.out / "batches" / f"{number:03d}"
    best = ranking.best(tune)
    incumbent = tuple(best[1]) if best else s.base
    found = s.store.find_run(str(out))
    remaining = tune.opts.budget_s * cost.SHARES.search - tune.elapsed()
    budget = max(BATCH_LEAST_S, min(remaining, tune.opts.budget_s * cost.SHARES.search / 4))
    if found != str(out):
        path = batch.resume(s, found)
    else:
        path = batch.start(s, f"{tune.name}-b{number:03d}", out, incumbent, todo,
                           seed=tune.opts.seed + number, budget=budget)
    path = sweeps.through_busy(tune, path, say)
    _fix_metric(tune, batch.run_id(s, path))
    rid = batch.run_id(s, path)
    # the candidates were built before the sweep; it builds the base the first time only
    cost.count(tune, rid, runs=len(s.store.samples(rid)), builds=batch.made(path))
    told = [trial_record(t) for t in search.trials(tune.study)]
    known = {batch.vid(s, tuple(r.flags)): r.ratio for r in told if r.ratio is not None}
    got = batch.judged(s, path, todo, known)
    _remeasured(tune, number, path, incumbent, best)
    for c in todo:
        got[c.number].run_id = batch.run_id(s, path)
    return got


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
    again = tune.state.again
    entries = [e for e in again.get(str(best[0]), []) if ranking.estimate(e)[0] != number]
    again[str(best[0])] = entries + [Remeasurement(batch=number, ratio=got.ratio,
                                                   ci95=got.ci95)]
    tune.save()


def _fix_metric(tune: Tuning, run_id: str) -> None:
    """The metric the first batch chose (--metric auto) is every later batch's: ratios of one
    tune must be of one metric. So is its schedule (--schedule, jobs.schedule): one pilot."""
    options = tune.setting.store.run(run_id).options
    chosen = from_store(options.measure, f"run {run_id}, key 'options.measure'").metric
    kept = options.schedule and options.schedule.dump()
    m = tune.setting.measure
    if m.metric != chosen or (kept and not m.chosen_schedule):
        tune.setting.measure = replace(m, metric=chosen,
                                       chosen_schedule=m.chosen_schedule or kept)
        tune.opts.measure.update(metric=chosen, chosen_schedule=m.chosen_schedule or kept)
        tune.save()


def _bisect(tune: Tuning, c: Proposal, j: batch.Judged, say: Callable[[str], None]) -> None:
    """The flag that breaks a failed candidate, dropped from the search, or the flags that
    break it only together, kept so that no later set holding them all is built."""
    s = tune.setting
    changes = tuple(f for f in c.flags[len(s.base):])
    kind = "build" if j.state == "failed-build" else "check"
    broken = tune.state.broken
    # A batch proposes its candidates before any is judged, so several can hold a flag that
    # one of them has just been found to break: halving again would only find it again.
    known = _holds_broken(broken, kind, changes)
    if known:
        say(f"trial {c.number}: holds {known.flag}, which broke the {kind} of trial "
            f"{known.trial}; not halved again")
        return
    probe = culprit.Probe(s, tune.out / "probes" / f"trial-{c.number}", kind)
    # A failing set is one candidate of many: reducing flags that fail only together may take
    # a fifth of the search's time, all such sets together, so that they cannot eat the search
    # (a sampler can propose sets that fail alike many times before its model learns).
    left = REDUCE_SHARE * tune.opts.budget_s * cost.SHARES.search - cost.spent(tune, "probe_s")
    began = time.monotonic()
    until = began + max(0.0, min(left, cost.phase_left(tune, "search")))
    found = culprit.culprit(changes, probe, lambda: time.monotonic() < until)
    cost.count(tune, f"probe {c.number}", builds=probe.builds, probe_s=time.monotonic() - began)
    broken.append(BrokenFlags(flag=" ".join(found.flags), flags=list(found.flags), kind=kind,
                              minimal=found.minimal, detail=j.detail, trial=c.number))
    tune.save()
    _kept_out(tune, c, kind, found, len(changes), probe, say)


def _kept_out(tune: Tuning, c: Proposal, kind: str, found: culprit.Found, changes: int,
              probe: culprit.Probe, say: Callable[[str], None]) -> None:
    """A flag that breaks alone: its dimension never proposed again. Flags that break only
    together: said, their sets put down to them (_holds_broken) before any build."""
    if len(found.flags) == 1:
        dims = {d.name for d in tune.space.dimensions
                if found.flags[0] in d.choices}
        tune.state.dropped = sorted(set(tune.state.dropped) | dims)
        tune.save()
        say(f"trial {c.number}: {found.flags[0]} breaks the {kind}; never proposed again")
    else:
        cut = "" if found.minimal else \
            f" (of its {changes} changes, after {probe.n} probes: not reduced further in time)"
        say(f"trial {c.number}: its {kind} fails only with {' '.join(found.flags)} "
            f"together{cut}; no set holding them all is built again")


def _holds_broken(broken: list[BrokenFlags], kind: str | None, changes: tuple[str, ...]
                  ) -> BrokenFlags | None:
    """The first recorded flag, or combination, that `changes` holds all of (of `kind`, or
    of either kind)."""
    held = set(changes)
    return next((b for b in broken if kind in (None, b.kind)
                 and set(b.flags or [b.flag]) <= held), None)


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
    best = ranking.best(tune)
    where = "none yet"
    if best:
        number_, flags, ratio = best
        changes = " ".join(flags[len(tune.setting.base):]) or "(the base)"
        where = f"{ranking.pct(ratio)} (trial {number_}: {ranking.short(changes)})"
    end = tune.opts.budget_s * cost.SHARES.search
    more = budget.candidates_left(end - tune.elapsed(), tune.elapsed(), len(_asked(tune)))
    pace = f"; about {more} more candidates fit in the search at this pace" \
        if more is not None and tune.state.phase == "search" else ""
    say(f"batch {number}: {len(todo)} candidates ("
        + ", ".join(f"{n} {k}" for k, n in sorted(states.items()))
        + f"); best so far {where}; {tune.elapsed():.0f} s of {tune.opts.budget_s:g}{pace}")
