"""Which results compare: the keys whose values must agree before numbers from two sweeps are
put side by side, pooled or merged, and the one refusal that names both files and the key.

pyperf refuses to combine runs whose metadata differ for the same reason: a ratio measured on
another input, metric or baseline is another quantity, however alike the tables look.
"""

from __future__ import annotations

from pathlib import Path

from flagsweep.across import history
from flagsweep.errors import FlagsweepError
from flagsweep.model import Results


def baseline_flags(doc: Results) -> str | None:
    """The baseline's compiler and flags, as one string."""
    return next((v.compiler + " " + " ".join(v.flags)
                 for v in doc.variants if v.id == doc.baseline), None)


# key -> how to read it from a results.json
KEYS = {
    "target": lambda d: d.target,
    "target version": lambda d: d.target_version,
    "input (sha256)": lambda d: d.workload.input_sha256 if d.workload else None,
    # with the microcode: one machine, for `suite`, as it was before history moved the
    # microcode to the environment (across.history)
    "machine (CPU identity)": lambda d: history.machine_key(d.machine, microcode=True),
    "metric": lambda d: d.metric,
    "baseline flags": baseline_flags,
}
# One program on several machines (merge, pick within a target): the same program, version,
# input, metric and baseline; the machines differ by design.
ACROSS_MACHINES = ("target", "target version", "input (sha256)", "metric", "baseline flags")
# Several programs on one machine (suite): the programs differ by design, and so may their times
# (suite.TIMES): each program's ratio is to its own baseline in its own metric.
ONE_MACHINE = ("machine (CPU identity)", "baseline flags")
# Two sweeps of one program (compare): anything else may have changed, and compare says what.
TWO_SWEEPS = ("target", "metric")


def check(docs: list[tuple[Path, Results]], what: str, keys: tuple[str, ...]) -> None:
    """Refuse, naming both files and the key, results whose numbers do not compare."""
    first_path, first = docs[0]
    for path, doc in docs[1:]:
        for key in keys:
            mine, theirs = KEYS[key](doc), KEYS[key](first)
            if mine != theirs:
                raise FlagsweepError(f"{path} and {first_path} differ in {key} ({mine!r} vs "
                                     f"{theirs!r}): their numbers do not compare, so they "
                                     f"are not {what}")


# A sweep stopped early because the machine was busy (timing.timed) is kept as `busy`: a few
# rounds of a disturbed machine, not a measurement to pool, merge or pick from unless asked.
PARTIAL = ("busy",)


def partial(doc: Results) -> str:
    """Why a results file is a partial sweep that must be asked for (--partial), else ""."""
    if doc.status not in PARTIAL:
        return ""
    return (f"its sweep stopped early, status {doc.status} ({doc.stop_reason or '?'}); "
            "--partial takes it anyway")


def refuse_partial(docs: list[tuple[Path, Results]], allowed: bool) -> None:
    """Refuse, naming the file, a busy sweep unless --partial allows it."""
    for path, doc in docs:
        why = partial(doc)
        if why and not allowed:
            raise FlagsweepError(f"{path}: {why}")
