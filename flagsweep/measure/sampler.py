"""The sampler: one sample (a timed run, or a Cachegrind count), taken and kept at once.

A sweep's rounds (measure.rounds) call it for each variant in each round, here or on a fleet
worker; what runs the workload is its executor (host.executor), so tests plant the timings.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from flagsweep import stats
from flagsweep.host import launcher, probes
from flagsweep.host.executor import Executor
from flagsweep.measure import disturbance
from flagsweep.measure.sample import Sample
from flagsweep.workload import check

log = logging.getLogger("flagsweep.measure.sampler")


class SampleSink(Protocol):
    """Where samples are kept as they are taken: the store (results.store.Store)."""

    def add_sample(self, run_id: str, sample: Sample) -> None: ...

    def add_attempt(self, run_id: str, sample: Sample) -> None: ...


class Busy(Exception):
    """Most runs stay disturbed after their retakes: the sweep stops early, with this reason."""


@dataclass
class Sampler:
    """Takes one sample (a timed run, or a Cachegrind count) and stores it at once.

    A counted run the machine disturbed (flagsweep.measure.disturbance, judged for `metric`) is set
    aside in the store's attempts and taken again at once, so it stays in its round and keeps
    the round's pairing; after MAX_RETAKES the last attempt counts, marked disturbed. Busy is
    raised once most runs stay disturbed. `execute` is the seam that runs one workload
    (launcher.run_once); tests give it recorded or synthetic executions."""

    run_id: str
    workload: check.Invocation
    binaries: dict[str, Path]
    perf: probes.Preflight | None
    cachegrind: bool
    store: SampleSink
    say: Callable[[str], None]
    worker: str | None = None       # who took it (a fleet worker), else this host
    metric: str = "wall_s"          # which metric disturbance is judged for
    threshold_pct: float = stats.THRESHOLD_PCT  # and how much inflation would matter
    execute: Executor = launcher.run_once
    counted: int = 0                # counted runs taken by this sampler, and of them those
    still_disturbed: int = 0        # that stayed disturbed after every retake

    def __call__(self, vid: str, rnd: int, pos: int, pad: int) -> Sample:
        scratch = self.workload.scratch
        argv = self.workload.argv(self.binaries[vid], scratch / f"timing-{vid}.out")
        env = launcher.padded_env(launcher.MINIMAL_ENV, pad)
        if self.cachegrind:
            count = probes.cachegrind_instructions(argv, env=env, cwd=None, out_dir=scratch,
                                                   timeout=self.workload.timeout * 100)
            sample = Sample(vid, rnd, pos, pad, counters={"instructions": count,
                                                          "instructions_source": "cachegrind"})
        else:
            sample = self._timed(vid, rnd, pos, pad, argv, env)
        sample.worker = self.worker
        self.store.add_sample(self.run_id, sample)
        if sample.failure:
            self.say(f"{vid} round {rnd}: {sample.failure}")
        if rnd >= 0 and sample.ok:
            self.counted += 1
            self.still_disturbed += sample.disturbed
            if disturbance.busy(self.counted, self.still_disturbed):
                raise Busy(disturbance.busy_reason(self.metric, self.counted,
                                                   self.still_disturbed, self.threshold_pct))
        return sample

    def _timed(self, vid: str, rnd: int, pos: int, pad: int, argv: list[str],
               env: dict[str, str]) -> Sample:
        scratch = self.workload.scratch
        for attempt in range(disturbance.MAX_RETAKES + 1):
            e = self.execute(argv, env=env, timeout=self.workload.timeout, perf=self.perf,
                             perf_csv=scratch / "perf.csv", stderr_path=scratch / "timing.stderr")
            sample = Sample(vid, rnd, pos, pad, e.wall_s, e.user_s, e.sys_s, e.maxrss_kb,
                            e.counters, e.multiplexed, e.failure, time.time(), self.worker)
            # Warmups are not counted, and a failed run is a failure, not a disturbance.
            sample.disturbed = rnd >= 0 and sample.ok and \
                disturbance.disturbed(self.metric, e.wall_s, e.counters, self.threshold_pct)
            if not sample.disturbed or attempt == disturbance.MAX_RETAKES:
                return sample
            log.debug("%s round %d disturbed (%s): taken again", vid, rnd,
                      disturbance.evidence(e.wall_s, e.counters).text())
            self.store.add_attempt(self.run_id, sample)
        return sample
