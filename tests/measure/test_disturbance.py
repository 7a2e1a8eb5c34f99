"""Disturbance: the kernel's evidence per run (the real launcher), the rule on synthetic
evidence, retakes through the sampler's executor seam and their storage, the busy stop, the
metric choice, and what results.json and samples.csv say of it. No assertion here depends on
how fast anything ran."""

from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

import pytest

from flagsweep.host import launcher
from flagsweep.host.executor import Execution, Executor
from flagsweep.measure import disturbance, metric
from flagsweep.measure.sampler import Busy, Sampler
from flagsweep.measure.sample import Sample
from flagsweep.results import writer
from flagsweep.results.store import Store
from flagsweep.experiment import target
from flagsweep.workload.check import Invocation

SPIN_AND_SLEEP = r"""
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void *spin(void *arg) { volatile unsigned long x = 0; for (unsigned long i = 0; i < 30000000UL; i++) x += i; return arg; }
int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "spin";
    if (!strcmp(mode, "sleep")) { usleep(150000); return 0; }
    if (!strcmp(mode, "thread")) { pthread_t t; pthread_create(&t, 0, spin, 0); spin(0); pthread_join(t, 0); return 0; }
    spin(0);
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("disturb")
    (d / "p.c").write_text(SPIN_AND_SLEEP)
    subprocess.run(["gcc", "-O1", "-pthread", "-o", str(d / "p"), str(d / "p.c")], check=True)
    return d / "p"


def _execute(program: Path, tmp_path: Path, mode: str) -> Execution:
    return launcher.run_once([str(program), mode], env=launcher.padded_env(launcher.MINIMAL_ENV, 0),
                           timeout=30, stderr_path=tmp_path / "err")


def _probe(vid: str, e: Execution) -> Sample:
    return Sample(vid, -1, 0, 0, e.wall_s, e.user_s, e.sys_s, e.maxrss_kb, e.counters)


# ---- the kernel's evidence, read by the real launcher ---------------------------------------

def test_the_launcher_reports_the_schedulers_figures(program, tmp_path):
    e = _execute(program, tmp_path, "spin")
    c = e.counters
    assert e.failure is None
    for key in ("run_delay_s", "on_cpu_s", "involuntary_switches", "cpu_migrations", "steal_s"):
        assert key in c and c[key] >= 0, key
    # Read from the zombie before reaping: the on-CPU time is the workload's own, and it
    # cannot exceed the wall time around it.
    assert 0 < c["on_cpu_s"] <= e.wall_s
    assert c["on_cpu_s"] + c["run_delay_s"] <= e.wall_s * 1.01 + 0.001


def test_the_metric_choice_reads_the_workloads_shape(program, tmp_path):
    """Spinning on one thread: CPU time. Sleeping: wall (CPU time would not see the sleep).
    Two threads: wall (CPU time sums them). Pinned to one CPU, as a sweep runs them."""
    with launcher.pinned(sorted(os.sched_getaffinity(0))[-1]):
        spin = _probe("spin", _execute(program, tmp_path, "spin"))
        sleep = _probe("sleep", _execute(program, tmp_path, "sleep"))
        thread = _probe("thread", _execute(program, tmp_path, "thread"))
    assert metric.choose([spin]).metric == "cpu"
    slept = metric.choose([spin, sleep])
    assert slept.metric == "wall" and "sleep" in slept.why and "neither running" in slept.why
    threaded = metric.choose([thread])
    # Either sign shows, depending on which thread finished first: CPU used beyond the main
    # thread's, or the main thread blocked in the join.
    assert threaded.metric == "wall"
    assert "other threads" in threaded.why or "another thread" in threaded.why


def test_without_scheduler_figures_the_metric_is_wall():
    s = Sample("v", -1, 0, 0, wall_s=1.0, user_s=1.0, sys_s=0.0, counters={})
    assert metric.choose([s]).metric == "wall"
    assert "schedstat" in metric.choose([s]).why
    assert metric.choose([]).metric == "wall"
    assert metric.column("auto") == "wall_s" and metric.column("cpu") == "cpu_s"


# ---- the rule ------------------------------------------------------------------------------

def test_the_rule_depends_on_the_metric_and_the_threshold():
    def waited(share, steal=0.0):
        return {"run_delay_s": share * 2.0, "steal_s": steal * 2.0}
    # Wall time grows with every moment spent waiting: past about 0.7% it moves it by 1%.
    assert not disturbance.disturbed("wall_s", 2.0, waited(0.005))
    assert disturbance.disturbed("wall_s", 2.0, waited(0.02))
    # A user who cares only about 3% effects tolerates three times the wait.
    assert not disturbance.disturbed("wall_s", 2.0, waited(0.015), threshold_pct=3.0)
    assert disturbance.limit("wall_s", 3.0) == pytest.approx(3 * disturbance.limit("wall_s", 1.0))
    # CPU time did not measurably grow with the wait up to the share that was measured; past
    # it, a run is disturbed.
    assert not disturbance.disturbed("cpu_s", 2.0, waited(0.30))
    assert disturbance.disturbed("cpu_s", 2.0, waited(0.45))
    # The host's steal is hidden from the guest's scheduler: it disturbs either metric; one
    # tick of it is the counter's resolution, not evidence.
    assert disturbance.disturbed("cpu_s", 2.0, waited(0.0, steal=0.05))
    assert not disturbance.disturbed("cpu_s", 0.5, {"run_delay_s": 0.0,
                                                    "steal_s": disturbance.STEAL_TICK_S})
    # Counts are per process; and no evidence is no disturbance.
    assert not disturbance.disturbed("instructions", 2.0, waited(0.9))
    assert not disturbance.disturbed("wall_s", 2.0, {})
    # A wait as long as a quiet machine's own wake-ups is no sign of another program, even
    # when it is a large share of a 5 ms run.
    assert not disturbance.disturbed("wall_s", 0.005, {"run_delay_s": 0.0008})
    assert disturbance.disturbed("wall_s", 0.005, {"run_delay_s": 0.002})
    assert not disturbance.disturbed("wall_s", None, waited(0.5))


def test_busy_needs_enough_runs_and_a_majority():
    assert not disturbance.busy(disturbance.BUSY_MIN_RUNS - 1, disturbance.BUSY_MIN_RUNS - 1)
    assert disturbance.busy(20, 11)
    assert not disturbance.busy(20, 10)
    assert "--metric cpu" in disturbance.busy_reason("wall_s", 20, 15)


# ---- retakes through the executor seam --------------------------------------------------------

class Recorded(Executor):
    """Stands in for launcher.run_once: hands out executions whose scheduler evidence says
    `delays` (off-CPU share per call, in order), then quiet ones."""

    def __init__(self, delays):
        self.delays = list(delays)
        self.calls = 0

    def __call__(self, argv, **kw):
        share = self.delays[self.calls] if self.calls < len(self.delays) else 0.001
        self.calls += 1
        wall = 1.0 + self.calls / 1000          # tells the attempts apart
        return Execution(wall, 0.9, 0.01, 1000,
                                {"run_delay_s": share * wall, "steal_s": 0.0, "on_cpu_s": 0.91},
                                False, None)


@pytest.fixture
def sampler(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    t = target.load("tiny")
    store.create_run("r", "tiny", "cli", tmp_path, {"target_path": str(t.path), "baseline": "a",
                                                    "measure": {"metric": "wall", "seed": 1}},
                     {"hostname": "h"})
    store.save_variants("r", [{"id": vid, "compiler": "gcc", "flags": [f"-O{i}"],
                              "factors": {"opt": f"-O{i}"},
                              "build": {"status": "ok", "identical_to": None}}
                             for i, vid in enumerate(("a", "b"))])
    (tmp_path / "scratch").mkdir()

    def make(delays, metric_name="wall_s"):
        return Sampler("r", Invocation(t, tmp_path / "in", tmp_path / "scratch"),
                       {"a": Path("/bin/true"), "b": Path("/bin/true")}, None, False, store,
                       lambda text: None, metric=metric_name, execute=Recorded(delays))
    return store, make


def test_a_disturbed_run_is_taken_again_in_its_round_and_kept(sampler):
    store, make = sampler
    s = make([0.30, 0.20, 0.001])           # two disturbed attempts, then a quiet one
    got = s("a", 3, 1, 17)
    assert not got.disturbed and got.round == 3 and got.position == 1 and got.env_pad == 17
    assert s.execute.calls == 3
    kept = store.attempts("r")
    assert [(a.variant_id, a.round, a.disturbed) for a in kept] == [("a", 3, True)] * 2
    assert [a.wall_s for a in kept] == [1.001, 1.002]       # every attempt, as measured
    assert [(x.variant_id, x.round, x.wall_s) for x in store.samples("r")] == [("a", 3, 1.003)]


def test_retakes_are_bounded_and_the_last_attempt_counts_marked(sampler):
    store, make = sampler
    s = make([0.5] * 10)
    got = s("b", 0, 0, 0)
    assert got.disturbed and s.execute.calls == disturbance.MAX_RETAKES + 1
    assert len(store.attempts("r")) == disturbance.MAX_RETAKES
    assert store.samples("r")[0].disturbed and s.still_disturbed == 1


def test_warmups_and_cpu_time_runs_below_its_limit_are_not_retaken(sampler):
    store, make = sampler
    s = make([0.5])
    assert not s("a", -1, 0, 0).disturbed          # a warmup: not counted, not judged
    cpu = make([0.30], metric_name="cpu_s")
    assert not cpu("a", 0, 0, 0).disturbed         # 30% waiting did not inflate CPU time
    assert store.attempts("r") == []


def test_a_machine_too_busy_stops_the_sweep_with_its_reason(sampler):
    _, make = sampler
    s = make([0.5] * 1000)
    with pytest.raises(Busy, match="the machine is busy"):
        for r in range(20):
            for pos, vid in enumerate(("a", "b")):
                s(vid, r, pos, 0)
    assert s.counted == disturbance.BUSY_MIN_RUNS


def test_results_count_disturbed_and_retaken_runs(sampler, tmp_path):
    store, make = sampler
    s = make([0.5, 0.5, 0.001] + [0.001] * 2 + [0.5] * 4)
    s("a", 0, 0, 0)          # two attempts set aside, then quiet
    s("b", 0, 1, 0)
    s("a", 1, 0, 0)
    s("b", 1, 1, 0)          # still disturbed after three retakes
    path = writer.write(tmp_path, store, "r")
    import json
    doc = json.loads(path.read_text())
    m = doc["measurement"]
    assert (m["disturbed"], m["retaken"], m["still_disturbed"]) == (6, 5, 1)
    assert m["disturbance_rule"]["off_cpu_share"] == disturbance.limit("wall_s", 1.0)
    by = {v["id"]: v["summary"] for v in doc["variants"]}
    assert (by["a"]["disturbed"], by["a"]["retaken"]) == (2, 2)
    assert (by["b"]["disturbed"], by["b"]["retaken"]) == (4, 3)
    rows = list(csv.DictReader(open(tmp_path / "samples.csv")))
    assert len(rows) == 4 + 5
    assert sum(r["retaken"] == "1" for r in rows) == 5
    assert sum(r["disturbed"] == "1" for r in rows) == 6
    assert all(r["run_delay_s"] for r in rows)
