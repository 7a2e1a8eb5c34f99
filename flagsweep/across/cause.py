"""Whose a step of a nightly series was: what changed in the machine's environment that night,
and what the reference arm says about it (across.history names both on the step).

A night's environment is the kernel, the microcode, the distribution and, in CI, the runner's
image and kind (model.machine.Environment). A step that comes with a change of one of them may
be the program's or the machine's, and the nights alone cannot tell: a hosted runner's new image
moves every timing on it. The reference arm can (jobs.controls.kept_reference): the same binary
every night, measured in the same rounds. If its own raw level moved at that night, the machine
moved under the program too, and the change is the environment's; if it held, the machine ran
an unchanged program as before, and the step is not the machine's (the program's, or its own
response to the new environment). Without a reference arm it cannot be told, and the step says
so.

The reference arm "moved" by the rule the history's first nights use for a step (across.history
_judge, before MIN_SPREAD_RUNS): beyond the threshold and beyond SPREAD_Z standard deviations
of its levels on the segment's earlier nights (the modified z-score's cut-off, Iglewicz &
Hoaglin, How to Detect and Handle Outliers, ASQC 1993). The step detector itself is unchanged:
this only words a step it found.
"""

from __future__ import annotations

import math

import numpy as np

from flagsweep import stats
from flagsweep.host import image
from flagsweep.model import Machine

KEYS = ("kernel", "microcode", "distro", "image", "runner")


def environment(machine: Machine) -> dict[str, str | None]:
    """A night's environment as the history keeps it on each point. The kernel and microcode
    are in every machine block (a VM may not show its microcode: then no key); the
    distribution and the runner only in those recorded since flagsweep reads them, so an older
    night has no such keys, and no change of them is named against it: "not recorded" is not
    "changed". Recorded as none (not in CI) is a value."""
    found: dict[str, str | None] = {k: v for k, v in (("kernel", machine.kernel),
                                                      ("microcode", machine.microcode)) if v}
    e = machine.environment
    if e is not None:
        distro = e.distro or " ".join(x for x in (e.distro_id, e.distro_version) if x)
        found.update(distro=distro or None, image=e.image, runner=e.runner)
    # A store row is anyone's to write: kept as a sweep would have recorded it
    return {key: image.text(value) for key, value in found.items()}


def changes(before: dict[str, str | None], after: dict[str, str | None]) -> list[str]:
    """"kernel A -> B" for each key both nights recorded whose value differs, in KEYS order."""
    out = []
    for key in KEYS:
        if key in before and key in after and before[key] != after[key]:
            a, b = _shown(key, before[key], after[key])
            out.append(f"{key} {a} -> {b}")
    return out


def _shown(key: str, a: str | None, b: str | None) -> tuple[str, str]:
    """The two values as a step names them: a kernel by its release ("6.8.0-1017-azure") when
    the releases differ, whole when only its build (#20 SMP ...) does; nothing as "none"."""
    if key == "kernel" and a and b and a.split()[0] != b.split()[0]:
        return a.split()[0], b.split()[0]
    return a or "none", b or "none"


def reference_word(levels: list[float], level: float | None, threshold_pct: float,
                   spread_z: float, referenced: bool) -> str:
    """What the reference arm says of a step at a night: `level` its raw median that night,
    `levels` its raw medians on the segment's earlier nights; `referenced`: the series has a
    reference arm at all (module docstring)."""
    if not referenced:
        return ("no reference arm: whether the machine or the program moved cannot be told "
                "(docs/history.md, \"Environment changes\")")
    known = [x for x in levels if x and x > 0]
    if level is None or level <= 0 or not known:
        return "the reference arm has no earlier night in this segment: cannot be told"
    logs = np.log(known)
    shift = math.log(level) - float(np.mean(logs))
    sd = float(np.std(logs, ddof=1)) if len(logs) >= 2 else 0.0
    pct = f"{math.expm1(shift) * 100:+.1f}%"
    if abs(shift) > max(math.log1p(stats.fraction(threshold_pct)), spread_z * sd):
        return f"the reference arm moved {pct} too: the environment's"
    return f"the reference arm held ({pct}): not the machine's"


def text(changed: list[str], word: str) -> str:
    """The step's entry for its environment changes: "environment: kernel A -> B; <word>"."""
    return f"environment: {', '.join(changed)}; {word}"
