"""What a sweep is asked to measure (`flagsweep run`'s measuring options), and the CPU it pins to.

The options are kept with the run in the store as they are (`asdict`), so a resumed sweep
measures exactly as it started; their names are the store's and results.json's `measurement`
keys.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Literal

from pydantic import TypeAdapter, ValidationError

from flagsweep import stats
from flagsweep.errors import FlagsweepError
from flagsweep.experiment.strict import quoted
from flagsweep.host import placement, system

log = logging.getLogger("flagsweep.measure.options")
# How many layouts a tune's steps compare over by default (tune --layouts).
DEFAULT_LAYOUTS = 4
# At most this many faster/slower rows are measured again over layouts (--confirm-rows).
DEFAULT_CONFIRM_ROWS = 8


@dataclass
class MeasureOptions:
    runs: int | None = None
    min_runs: int = 5
    max_runs: int = 30
    budget: float | None = 1800.0
    # A wall-clock end (time.time()) the counted rounds must finish by, besides --budget: set by
    # a caller that cannot know how long the builds before them take (a tune's proof). A tune
    # sets it again when it resumes the sweep; `flagsweep run --resume` drops it.
    until: float | None = None
    warmup: int = 1
    cpu: int | None = None
    # Why that CPU (host.placement's Placement.doc), for results.json's machine block; set with
    # cpu when --cpu did not give it.
    cpu_choice: dict | None = None
    metric: str = "auto"            # auto: CPU time where it is right, else wall (flagsweep.measure.metric)
    precision_pct: float = 1.0
    quick: bool = False
    # --input-size auto: the size a pilot finds to buy the narrowest interval per minute
    # (measure.length), its choice kept in run_length once made; None: `quick` says which.
    input_size: str | None = None
    run_length: dict | None = None
    strict_check: bool = False
    seed: int | None = None
    counters: str = "auto"          # auto | hardware | software | none
    threshold_pct: float = stats.THRESHOLD_PCT  # smaller effects do not matter
    reference: str | None = None    # a binary, or an earlier run's folder: its baseline's binary
    no_reference: bool = False      # no kept reference arm (else the store's, once it has one)
    keep_scratch: bool = False      # keep the check and timing outputs of a complete run
    layouts: int = 0                # K >= 2: every variant built K times in seeded layouts
    explain: bool = False           # profile the baseline and each faster/slower variant
    # The faster/slower rows within layout luck's reach measured again over layouts before the
    # report calls them settled (results.confirmation): K layouts a side (0: sized by power),
    # at most confirm_rows rows.
    layout_confirm: bool = True
    confirm_layouts: int = 0
    confirm_rows: int = DEFAULT_CONFIRM_ROWS
    # The variants differ in data only (calibrate's plants): one code layout, no layout luck.
    same_layout: bool = False
    # Variants measured in every round whatever their verdict: a tune's base level, which every
    # candidate of a batch is compared with by round beside the batch's baseline.
    keep: list[str] = field(default_factory=list)
    # Rounds in duet (each variant at once with a run of the baseline, on two CPUs), serial, or
    # as the schedule's pilot finds (auto: `flagsweep run`'s default; serial is what a run kept
    # without this key measured). jobs.schedule decides; partner_cpu is the duets' second CPU,
    # or None with why (partner_why).
    schedule: Literal["auto", "duet", "serial"] = "serial"
    partner_cpu: int | None = None
    partner_why: str | None = None
    # A schedule chosen before (a tune's first batch's record), kept by the later sweeps of the
    # same program without a pilot of their own.
    chosen_schedule: dict | None = None


def from_store(doc: object, where: str) -> MeasureOptions:
    """The options as a run or a tune kept them (`asdict`), each of the type it has when typed:
    a row changed by hand (or by another user) is one line naming the key, not a TypeError deep
    in the rounds. Keys this flagsweep does not know (an older one's) are left out."""
    try:
        return TypeAdapter(MeasureOptions).validate_python(doc)
    except ValidationError as e:
        first = e.errors()[0]
        key = ".".join(map(str, first["loc"]))
        got = f", got {quoted(first['input'])}" if "input" in first else ""
        raise FlagsweepError(f"{where}: " + (f"key '{key}': " if key else "")
                             + f"{first['msg']}{got}") from None


def chosen_cpu(opts: MeasureOptions, say: Callable[[str], None] | None = None) -> int:
    """The CPU the sweep pins to: --cpu, else the quietest free one, measured now (said, and
    kept in opts for the machine block and for a resume)."""
    if opts.cpu is None:
        choice = placement.default()
        opts.cpu, opts.cpu_choice = choice.cpu, choice.doc()
        if say:
            say(choice.why)
        log.info("choosing the CPU took %.3f s", choice.cost_s)
    online = system.online_cpus()
    if opts.cpu not in online:
        raise FlagsweepError(f"--cpu {opts.cpu}: not an online CPU here (online: "
                             f"{', '.join(map(str, online))})")
    return opts.cpu
