"""The sampler: one sample (a timed run, or a Cachegrind count), taken and kept at once.

A sweep's rounds (measure.rounds) call it for each variant in each round, here or on a fleet
worker, or for each duet (two runs at once, `duet`); what runs the workloads is its executor
(host.executor), so tests plant the timings.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from flagsweep import stats
from flagsweep.host import launcher, probes
from flagsweep.host.executor import Execution, Executor, Launch, Together
from flagsweep.measure import disturbance
from flagsweep.measure.rounds import Duet
from flagsweep.measure.sample import Sample
from flagsweep.workload import check

log = logging.getLogger("flagsweep.measure.sampler")


class SampleSink(Protocol):
    """Where samples are kept as they are taken: the store (results.store.Store)."""

    def add_sample(self, run_id: str, sample: Sample) -> None: ...

    def add_attempt(self, run_id: str, sample: Sample) -> None: ...

    def add_pair(self, run_id: str, pair: list[Sample]) -> None: ...


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
    cpu: int | None = None          # the CPU its one-at-a-time runs are pinned to, when known
    together: Together | None = None   # what runs a duet's two workloads at once

    def __call__(self, vid: str, rnd: int, pos: int, pad: int, pair: str | None = None) -> Sample:
        """One run, stored at once; `pair`: the pair it belongs to (the schedule's pilot runs
        the two of a pair back to back)."""
        scratch = self.workload.scratch
        argv = self.workload.argv(self.binaries[vid], scratch / f"timing-{vid}.out")
        env = launcher.padded_env(launcher.MINIMAL_ENV, pad)
        if self.cachegrind:
            count = probes.cachegrind_instructions(argv, env=env, cwd=None, out_dir=scratch,
                                                   timeout=self.workload.timeout * 100)
            sample = Sample(vid, rnd, pos, pad, counters={"instructions": count,
                                                          "instructions_source": "cachegrind"})
        else:
            sample = self._timed(vid, rnd, pos, pad, argv, env, pair)
        sample.worker, sample.pair, sample.cpu = self.worker, pair, self.cpu
        self.store.add_sample(self.run_id, sample)
        self._kept(sample)
        return sample

    def duet(self, d: Duet, rnd: int, pos: int) -> list[Sample]:
        """A duet's two runs, started together, each on its CPU, stored together (the
        variant's first). When the machine disturbed either run, both are set aside and the
        pair is taken again: a pair's ratio is of two runs that shared one moment. After
        MAX_RETAKES the last pair counts, its disturbed runs marked."""
        scratch = self.workload.scratch
        ids = (d.variant, d.hub)
        launches = [Launch(self.workload.argv(self.binaries[vid], scratch / f"timing-{vid}.out"),
                           launcher.padded_env(launcher.MINIMAL_ENV, pad), cpu,
                           scratch / f"timing-{side}.stderr", scratch / f"perf-{side}.csv")
                    for side, (vid, cpu, pad) in enumerate(zip(ids, d.cpus, d.pads))]
        for attempt in range(disturbance.MAX_RETAKES + 1):
            got = self.together(launches, timeout=self.workload.timeout, perf=self.perf)
            pair = [self._sample(vid, rnd, pos, pad, e, d.variant, cpu)
                    for vid, pad, cpu, e in zip(ids, d.pads, d.cpus, got)]
            if not any(s.disturbed for s in pair) or attempt == disturbance.MAX_RETAKES:
                break
            log.debug("%s's duet, round %d, disturbed: taken again", d.variant, rnd)
            for s in pair:
                self.store.add_attempt(self.run_id, s)
        self.store.add_pair(self.run_id, pair)
        for s in pair:
            self._kept(s)
        return pair

    def _sample(self, vid: str, rnd: int, pos: int, pad: int, e: Execution,
                pair: str | None = None, cpu: int | None = None) -> Sample:
        """An execution as a sample, judged disturbed or not (warmups are not counted, and a
        failed run is a failure, not a disturbance)."""
        sample = Sample(vid, rnd, pos, pad, e.wall_s, e.user_s, e.sys_s, e.maxrss_kb,
                        e.counters, e.multiplexed, e.failure, time.time(), self.worker,
                        pair=pair, cpu=cpu)
        sample.disturbed = rnd >= 0 and sample.ok and \
            disturbance.disturbed(self.metric, e.wall_s, e.counters, self.threshold_pct)
        return sample

    def _kept(self, sample: Sample) -> None:
        """A stored sample told (its failure) and counted: Busy once most runs stay disturbed."""
        if sample.failure:
            self.say(f"{sample.variant_id} round {sample.round}: {sample.failure}")
        if sample.round >= 0 and sample.ok:
            self.counted += 1
            self.still_disturbed += sample.disturbed
            if disturbance.busy(self.counted, self.still_disturbed):
                raise Busy(disturbance.busy_reason(self.metric, self.counted,
                                                   self.still_disturbed, self.threshold_pct))

    def _timed(self, vid: str, rnd: int, pos: int, pad: int, argv: list[str],
               env: dict[str, str], pair: str | None = None) -> Sample:
        scratch = self.workload.scratch
        for attempt in range(disturbance.MAX_RETAKES + 1):
            e = self.execute(argv, env=env, timeout=self.workload.timeout, perf=self.perf,
                             perf_csv=scratch / "perf.csv", stderr_path=scratch / "timing.stderr")
            sample = self._sample(vid, rnd, pos, pad, e, pair, self.cpu)
            if not sample.disturbed or attempt == disturbance.MAX_RETAKES:
                return sample
            log.debug("%s round %d disturbed (%s): taken again", vid, rnd,
                      disturbance.evidence(e.wall_s, e.counters).text())
            self.store.add_attempt(self.run_id, sample)
        return sample
