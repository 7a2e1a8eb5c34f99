"""One execution of one binary in one round: what the launcher and perf saw."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The measured columns every Sample has (counters are extra, by name).
SAMPLE_METRICS = ("wall_s", "user_s", "sys_s", "maxrss_kb")


@dataclass
class Sample:
    variant_id: str
    round: int
    position: int
    env_pad: int
    wall_s: float | None = None
    user_s: float | None = None
    sys_s: float | None = None
    maxrss_kb: int | None = None
    counters: dict[str, Any] | None = None
    multiplexed: bool = False
    failure: str | None = None
    taken_at: float = 0.0
    worker: str | None = None     # None: add_sample stores this machine's hostname
    disturbed: bool = False       # the machine took part of this run (flagsweep.measure.disturbance)
    # The pair this run belongs to, named by the variant it compares with the baseline: set in
    # duet rounds and the schedule's pilot, where the baseline runs once per comparison and
    # each of its runs pairs with one variant's (flagsweep.measure.pairs); None in serial
    # rounds, where a round's one baseline run pairs with every variant's.
    pair: str | None = None
    cpu: int | None = None        # the CPU it was pinned to, where the sampler knew it

    @property
    def ok(self) -> bool:
        return self.failure is None
