"""A sweep's parts (Sweep), and the binaries it times: which of its builds it runs, their
output checks against the baseline's, and that each is still the program its build recorded
(when a run is resumed, and after its rounds)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from flagsweep.compilation import fingerprint, package_tests, variants
from flagsweep.errors import FlagsweepError
from flagsweep.host import launcher
from flagsweep.host.executor import Executor
from flagsweep.measure.options import MeasureOptions
from flagsweep import model
from flagsweep.results import analysis, stored
from flagsweep.results.store import Store
from flagsweep.workload import check


@dataclass
class Sweep:
    """What a sweep is made of, whether started now or resumed."""

    run_id: str
    target: target.Target
    recipe_name: str
    out: Path
    opts: MeasureOptions
    builds: list[model.Variant]  # each binary's id, compiler, flags, factors and build
    baseline: str
    # What runs one workload (the executor): the real launcher, or in tests a stand-in that
    # replays or synthesises executions, so the decisions above it are tested without timing.
    execute: Executor = launcher.run_once
    # How its variants were built, for the confirmation's relinks (a resumed sweep: defaults).
    build_opts: variants.Options | None = None


def same_binaries(sweep: Sweep) -> None:
    """A resumed sweep times the programs it started with, or none: each binary it will run
    must still be in the run's builds folder with the code its build recorded
    (results.stored.binary). A binary removed or rebuilt since (a cleaned folder, another sweep
    writing into the same --out) would otherwise be timed as if it were the variant, or
    recorded as the variant's own failures; one a row names elsewhere, or without its hash,
    could be any program."""
    chosen = set(runnable(sweep.builds))
    for d in sweep.builds:
        if d.id in chosen:
            stored.binary(d, sweep.out, f"cannot resume run {sweep.run_id}")


def replaced(sweep: Sweep, store: Store, say: Callable[[str], None]) -> None:
    """After the rounds: each timed binary against its build's record. A workload can replace
    its own binary, or another variant's (it runs as the user, in the run's folder), and the
    samples after that time another program: such a variant gets no verdict and is never
    recommended. Kept with the run (option `replaced`), so every later rewrite of results.json
    says so, and a resumed run adds to it."""
    builds = {d.id: d.build for d in sweep.builds}
    found = {vid: r.dump() for vid, r in store.run(sweep.run_id).options.replaced.items()}
    for vid, path in runnable(sweep.builds).items():
        changed = fingerprint.recheck(builds[vid].dump(), path)
        if changed is not None and vid not in found:
            found[vid] = changed.to_json()
            say(f"warning: {vid}: {changed.text()}; it was replaced during the sweep, so it "
                "gets no verdict")
    if found:
        store.set_option(sweep.run_id, "replaced", found)


def checked(sweep: Sweep, workload: check.Invocation | None, store: Store,
             say: Callable[[str], None], run_checks=None) -> list[str]:
    """Check every distinct binary not checked yet; return the ids that will be timed.
    `run_checks(binaries, baseline)` runs them elsewhere (a fleet worker); default: here."""
    run_checks = run_checks or (lambda todo, base: check.check_all(workload, todo, base))
    stored = {v.id: v.check for v in store.variants(sweep.run_id)}
    baseline_built(sweep)
    distinct = runnable(sweep.builds)
    todo = {vid: path for vid, path in distinct.items() if stored.get(vid) is None}
    if todo:
        if sweep.baseline not in todo and sweep.baseline in distinct:
            todo[sweep.baseline] = distinct[sweep.baseline]  # the reference must be at hand
        for vid, result in run_checks(todo, sweep.baseline).items():
            stored[vid] = model.Check.model_validate(result)
            store.save_check(sweep.run_id, vid, result)
    for d in sweep.builds:  # identical code has the representative's output by construction
        rep = d.build.identical_to
        if rep and stored.get(d.id) is None and stored.get(rep):
            why = f": {stored[rep].detail}" if stored[rep].detail else ""
            stored[d.id] = model.Check.model_validate(
                {**stored[rep].dump(), "detail": f"identical code to {rep}{why}"})
            store.save_check(sweep.run_id, d.id, stored[d.id].dump())
    for vid, c in stored.items():
        if c and c.status != "ok":
            say(f"check {vid}: {c.status}: {c.detail}")
    allowed = set(analysis.PASSED) | (set() if sweep.opts.strict_check else {"differs"})
    broken = own_tests_failed(sweep.builds, sweep.baseline, say)
    measured = [vid for vid in distinct if stored[vid].status in allowed and vid not in broken]
    if not measured:
        raise FlagsweepError("nothing to measure: every distinct binary failed to build or "
                             "failed its output check (see above and builds/*/build.log)")
    return measured


def own_tests_failed(builds: list[model.Variant], baseline: str,
                     say: Callable[[str], None]) -> set[str]:
    """The variants whose own test suite fails where the baseline's passes: not timed, as a
    failed output check is not (a flag that breaks the package is the finding, not its speed).
    A baseline whose suite fails is said loudly and leaves nothing out on that ground."""
    base = next((d.build.package_tests for d in builds if d.id == baseline), None)
    if base is not None and base.status in ("failed", "timeout"):
        say(f"warning: the package's own tests fail at the baseline {baseline} too "
            f"({base.status}, see {base.log}): the test suite itself is broken here, so no "
            "variant is left out for failing it")
        return set()
    broken = {d.id for d in builds if package_tests.fails(d.build.package_tests, base)}
    for vid in sorted(broken):
        say(f"{vid}: fails its own tests, not timed")
    return broken


def runnable(builds: list[model.Variant]) -> dict[str, Path]:
    """variant id -> binary, for the builds a sweep runs: each good, distinct one. A failed or
    flags-mismatch build has no binary worth running, and identical code is its
    representative's, so neither is checked or timed; both stay in results.json as they are."""
    return {d.id: Path(d.build.binary) for d in builds
            if d.build.status == "ok" and not d.build.identical_to}


def baseline_built(sweep: Sweep) -> None:
    """Every comparison is against the baseline: without its binary nothing can be judged."""
    b = next(d for d in sweep.builds if d.id == sweep.baseline).build
    if b.status != "ok":
        raise FlagsweepError(f"the baseline {sweep.baseline} did not build ({b.status}: "
                             f"{analysis.build_reason(getattr(b, 'detail', None))}); every "
                             "variant is compared with it, "
                             "so nothing can be measured. Fix its flags, or give a flag set "
                             "that builds first")


def layouts_of(docs: list[model.Variant]) -> dict[str, str]:
    """binary id -> the variant it is a layout of, for a sweep with --layouts (else empty)."""
    return {d.id: d.layout_of for d in docs if d.layout_of}
