"""The CPU a sweep measures on without --cpu (host.placement), the load it is chosen from
(host.load), what `flagsweep system` shows of it and the advice that names CPUs. Every load here
is a recorded /proc/stat (this project's 2-vCPU VM) moved on by made-up ticks, fed through the
snapshot seam: nothing depends on how busy the machine running the tests is."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from flagsweep.cli import cli
from flagsweep.host import advice, load, lock, placement

# /proc/stat as recorded on the project's VM (first lines; the rest is not per-CPU).
RECORDED = """\
cpu  2158460 327740 412571 1498213 19763 0 4936 19909 0 0
cpu0 854664 139100 187659 1022695 4513 0 471 10114 0 0
cpu1 1303796 188639 224912 475517 15249 0 4465 9795 0 0
intr 14328467 0 0 0 0
ctxt 123456
"""
# /proc/PID/stat lines as recorded there: init, a kernel thread, and a user process on CPU 1.
INIT = ("1 (process_api) S 0 0 0 0 -1 4194560 168096 461020055 0 64302 2292 12334 2462094 "
        "356287 20 0 13 0 30 46899200 3912 18446744073709551615 1 1 0 0 0 0 0 4096 1256 0 0 0 "
        "17 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
KTHREAD = ("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 1 0 0 20 0 1 0 30 0 0 "
           "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
LAME = ("3225 (lame) R 3224 3224 28277 0 -1 4194304 607 0 2 0 302 3 0 0 20 0 1 0 2226466 "
        "7753728 1193 18446744073709551615 93893173276672 93893173752257 140721766573824 0 0 0 0 "
        "16781319 0 0 0 0 17 1 0 0 0 0 0 93893173862984 93893173867144 93893220548608 "
        "140721766578652 140721766578965 140721766578965 140721766580120 0")
WINDOW_TICKS = 50            # 0.5 s at USER_HZ 100


def moved(text: str, busy: dict[int, int], cpus: int | None = None) -> str:
    """The /proc/stat `text` one window later: CPU n spent busy[n] of WINDOW_TICKS ticks in user
    time, the rest idle. `cpus` > the recorded two adds CPUs, cloned from cpu1, before moving."""
    lines = text.splitlines()
    per_cpu = [line for line in lines if line.startswith("cpu") and line[3].isdigit()]
    while cpus and len(per_cpu) < cpus:
        per_cpu.append(f"cpu{len(per_cpu)}" + per_cpu[1][4:])
    out = [lines[0]]
    for line in per_cpu:
        name, *ticks = line.split()
        n, ticks = int(name[3:]), [int(t) for t in ticks]
        ticks[0] += busy.get(n, 0)
        ticks[3] += WINDOW_TICKS - busy.get(n, 0)
        out.append(" ".join([name, *map(str, ticks)]))
    return "\n".join(out + [line for line in lines if not line.startswith("cpu")]) + "\n"


def feed(*snapshots: load.Snapshot):
    """The seam: each call takes the next recorded snapshot."""
    return iter(snapshots).__next__


def window(busy: dict[int, int], cpus: int = 2, before_tasks=(), after_tasks=()) -> load.Load:
    """A recorded window: /proc/stat before, then moved on by `busy` ticks per CPU."""
    start = moved(RECORDED, {}, cpus)
    return load.measure(0.5, feed(
        load.Snapshot(load.parse_stat(start), {t.pid: t for t in before_tasks}, 100.0),
        load.Snapshot(load.parse_stat(moved(start, busy)), {t.pid: t for t in after_tasks},
                      100.5)), sleep=lambda s: None)


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """A machine of `cpus` CPUs (all this process's, all online, `isolated` isolated) whose next
    load window is the recorded /proc/stat moved on by `busy` ticks: returns the CPU a sweep
    without --cpu pins to (measure.options.chosen_cpu, the entry every sweep goes through) and
    what it said."""
    from flagsweep.measure.options import MeasureOptions, chosen_cpu

    monkeypatch.setenv("FLAGSWEEP_LOCK_DIR", str(tmp_path))

    def pinned(busy: dict[int, int], cpus: int = 2, isolated=(), tasks=()):
        start = moved(RECORDED, {}, cpus)
        recorded = [load.Snapshot(load.parse_stat(start), {t.pid: t for t in tasks}, 1.0),
                    load.Snapshot(load.parse_stat(moved(start, busy)), {t.pid: t for t in tasks},
                                  1.5)]
        monkeypatch.setattr(load, "snapshot", lambda *a, **k: recorded.pop(0))
        monkeypatch.setattr(os, "sched_getaffinity",
                            lambda pid: set(range(cpus)) - set(isolated))
        monkeypatch.setattr(placement.system, "online_cpus", lambda *root: list(range(cpus)))
        monkeypatch.setattr(placement.system, "isolated_cpus", lambda *root: list(isolated))
        said: list[str] = []
        opts = MeasureOptions()
        cpu = chosen_cpu(opts, said.append)
        assert said == [opts.cpu_choice["why"]] and opts.cpu == cpu
        return cpu, said[0]
    return pinned


def test_a_busy_last_cpu_sends_the_sweep_to_cpu_0(machine):
    assert machine({0: 2, 1: 20}) == (
        0, "measuring on CPU 0: 96% idle over 0.5 s, no other sweep; CPU 1 was 40% busy")


def test_the_quieter_cpu_held_by_another_sweep_is_passed_over(machine):
    with lock.MeasureLock("gzip other", 0):
        cpu, why = machine({0: 15, 1: 25, 2: 45}, cpus=3)     # 30%, 50% and 90% busy
    assert cpu == 1
    assert why == (f"measuring on CPU 1: 50% idle over 0.5 s, no other sweep; CPU 0 is held by "
                   f"another sweep (pid {os.getpid()}); CPU 2 was 90% busy")


def test_a_free_isolated_cpu_wins_over_idle_ones(machine):
    with lock.MeasureLock("lame night", 1):
        cpu, why = machine({0: 0, 1: 0, 2: 5, 3: 0}, cpus=4, isolated=[1, 2])
    assert cpu == 2
    assert why == (f"measuring on CPU 2: isolated, 90% idle over 0.5 s, no other sweep; CPU 1 is "
                   f"held by another sweep (pid {os.getpid()})")


def test_the_choice_keeps_what_it_saw_of_each_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGSWEEP_LOCK_DIR", str(tmp_path))
    measured = window({0: 15, 1: 25}, cpus=2)
    with lock.MeasureLock("gzip other", 0):
        doc = placement.choose(measured, [0, 1], [], lock.holders()).doc()
    assert (doc["cpu"], doc["how"], doc["window_s"]) == (1, "quietest", 0.5)
    assert [(c["cpu"], c["idle_pct"], c["isolated"]) for c in doc["cpus"]] == [
        (0, 70.0, False), (1, 50.0, False)]
    assert doc["cpus"][0]["held_by"].startswith(f"pid {os.getpid()}: gzip other")
    assert doc["cpus"][1]["held_by"] is None


def test_work_pinned_to_a_cpu_counts_though_it_sleeps_now(machine):
    """The issue's machine: a job pinned to the last CPU, between bursts when the sweep starts."""
    pinned = load.parse_task(LAME.replace(" R ", " S "), pinned_to=1)
    assert window({0: 1, 1: 1}, before_tasks=[pinned], after_tasks=[pinned]).cpus[1].pinned == 1
    assert machine({0: 1, 1: 1}, tasks=[pinned]) == (
        0, "measuring on CPU 0: 98% idle over 0.5 s, no other sweep; CPU 1 as quiet but 1 task "
           "pinned there")


def test_equally_quiet_cpus_keep_the_last_one_and_say_why(machine):
    assert machine({0: 1, 1: 2}) == (
        1, "measuring on CPU 1: 96% idle over 0.5 s, no other sweep; CPU 0 as quiet: the "
           "highest-numbered quiet CPU is taken, as CPU 0 takes most interrupts")


def test_every_cpu_held_still_names_one_for_the_lock_to_refuse_or_wait_on():
    chosen = placement.choose(window({0: 5, 1: 40}), [0, 1], [], {0: "pid 5: a", 1: "pid 6: b"})
    assert chosen.cpu == 0 and "held by another sweep (pid 5): no CPU is free" in chosen.why


def test_tasks_parse_with_any_name_and_kernel_threads_are_never_pinned():
    odd = load.parse_task(LAME.replace("(lame)", "(we (ird) x)"), pinned_to=1)
    assert (odd.pid, odd.name, odd.ticks, odd.cpu, odd.runnable, odd.pinned_to) == (
        3225, "we (ird) x", 305, 1, True, 1)
    assert load.parse_task(KTHREAD, pinned_to=0).pinned_to is None
    assert load.parse_task("garbage") is None


def test_busiest_processes_are_shares_of_one_cpu_over_the_window():
    lame0, init0 = load.parse_task(LAME), load.parse_task(INIT)
    lame1 = load.Task(lame0.pid, "lame", lame0.ticks + 45, 1, True, None)
    init1 = load.Task(init0.pid, "process_api", init0.ticks + 5, 0, False, None)
    measured = window({0: 5, 1: 45}, before_tasks=[lame0, init0], after_tasks=[lame1, init1])
    assert [(p.pid, p.name, p.cpu_pct, p.cpu) for p in measured.busiest] == [
        (3225, "lame", 90.0, 1), (1, "process_api", 10.0, 0)]
    assert measured.cpus[1].runnable == 1 and measured.cpus[0].runnable == 0


def test_after_a_busy_stop_the_advice_names_the_cpu_used_and_one_free_now():
    said = placement.instead(1, window({0: 2, 1: 40}), [0, 1], [], {})
    assert said == ("CPU 1, where it measured, was 80% busy over 0.5 s after it stopped; CPU 0 "
                    "is free now (96% idle, no other sweep): run again with --cpu 0")
    held = placement.instead(1, window({0: 2, 1: 40}), [0, 1], [], {0: "pid 9: x"})
    assert held.endswith("no other CPU is free and idle (at least 90% idle): measure when the "
                         "machine is quieter")


def test_after_a_busy_stop_the_advice_never_names_a_cpu_that_is_not_idle():
    """Every CPU loaded: the ranking still has a first (here CPU 0, as busy as CPU 1 but with
    no task pinned there), and the advice once sent the user to it, "CPU 0 is free now (0%
    idle)". A CPU is named only when it is idle."""
    pinned = load.Task(77, "other", 10, 1, True, 1)
    both = window({0: 50, 1: 50}, before_tasks=[pinned], after_tasks=[pinned])
    assert placement.choose(both, [0, 1], [], {}).cpu == 0       # the ranking's first ...
    said = placement.instead(1, both, [0, 1], [], {})
    assert "CPU 0" not in said and "--cpu" not in said          # ... is not advised
    assert said.endswith("no other CPU is free and idle (at least 90% idle): measure when the "
                         "machine is quieter")
    half = placement.instead(1, window({0: 10, 1: 50}), [0, 1], [], {})     # 80% idle
    assert "--cpu" not in half
    idle = placement.instead(1, window({0: 4, 1: 50}), [0, 1], [], {})      # 92% idle
    assert idle.endswith("CPU 0 is free now (92% idle, no other sweep): run again with --cpu 0")


def test_advice_names_the_measured_cpu_and_a_free_isolated_one():
    state = {"cpu_count": 4, "isolated_cpus": [], "pinned_cpu": 2}
    (line,) = advice.warnings(state)
    assert "the measured CPU 2" in line and "isolcpus=2" in line and "pass --cpu" not in line
    (line,) = advice.warnings(dict(state, pinned_cpu=0))
    assert "the measured CPU 0" in line and "isolcpus=3" in line   # never CPU 0
    choice = {"cpu": 5, "how": "quietest", "why": "CPU 5: the quietest free one",
              "cpus": [{"cpu": 3, "idle_pct": 99.0, "held_by": "pid 7: lame"},
                       {"cpu": 5, "idle_pct": 97.0, "held_by": None}]}
    state = {"cpu_count": 8, "isolated_cpus": [3, 5], "nohz_full": [3, 5], "pinned_cpu": 0,
             "cpu_choice": choice}
    (line,) = advice.warnings(state)
    assert line.endswith("other processes share it; pass --cpu 5.")


def test_system_shows_each_cpus_load_and_the_busiest_processes(monkeypatch, tmp_path):
    monkeypatch.setenv("FLAGSWEEP_LOCK_DIR", str(tmp_path))
    lame0 = load.parse_task(LAME)
    lame1 = load.Task(lame0.pid, "lame", lame0.ticks + 40, 1, True, 1)
    start = moved(RECORDED, {})
    snapshots = iter([load.Snapshot(load.parse_stat(start), {lame0.pid: lame0}, 1.0),
                      load.Snapshot(load.parse_stat(moved(start, {0: 3, 1: 40})),
                                    {lame1.pid: lame1}, 1.5)])
    monkeypatch.setattr(load, "snapshot", lambda *a, **k: next(snapshots))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(placement.system, "online_cpus", lambda *root: [0, 1])
    monkeypatch.setattr(placement.system, "isolated_cpus", lambda *root: [])
    result = CliRunner().invoke(cli, ["system"])
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    assert out[out.index("CPU load over 0.5 s:") + 1].split() == [
        "cpu", "idle", "runnable", "pinned", "note"]
    assert out[out.index("CPU load over 0.5 s:") + 3].split() == ["1", "20%", "1", "1"]
    assert out[out.index("busiest processes:") + 2].split() == ["3225", "lame", "80%", "1"]
    assert ("a sweep would measure on CPU 0: 94% idle over 0.5 s, no other sweep; CPU 1 was 80% "
            "busy") in out


@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1")
def test_a_sweeps_results_say_which_cpu_and_why(tmp_path, monkeypatch):
    """A real sweep of tiny (timed through the executor seam) on a machine whose CPU 1 is busy:
    it measures on CPU 0, says so, and results.json's machine block keeps the choice."""
    from synthetic import Synthetic

    from flagsweep.jobs import sweep
    from flagsweep.results.store import Store

    t, r, m, build_opts = _tiny_on_a_recorded_machine(tmp_path, monkeypatch, cpu1_ticks=35)
    opts = sweep.MeasureOptions(runs=2, min_runs=2, max_runs=2, seed=1, quick=True, metric="cpu")
    said: list[str] = []
    path = sweep.start(t, r, m, build_opts, opts, Store(), said.append,
                       execute=Synthetic({}))
    doc = json.loads(path.read_text())
    assert doc["machine"]["pinned_cpu"] == 0 == doc["measurement"]["cpu"]
    choice = doc["machine"]["cpu_choice"]
    assert (choice["cpu"], choice["how"], choice["window_s"]) == (0, "quietest", 0.5)
    assert choice["why"].startswith("measuring on CPU 0: 98% idle over 0.5 s, no other sweep; "
                                    "CPU 1 was 70% busy")
    assert choice["why"] in said and choice["cost_s"] >= 0
    assert [(c["cpu"], c["idle_pct"]) for c in choice["cpus"]][:2] == [(0, 98.0), (1, 30.0)]


@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1")
def test_a_sweep_stopped_as_busy_names_its_cpu_and_one_free_now(tmp_path, monkeypatch):
    """--cpu 1, every run waiting for the CPU half its time (the executor seam), and CPU 1 busy,
    CPU 0 idle in the window taken when it stops: the stop reason says to run on CPU 0."""
    from flagsweep.jobs import sweep
    from flagsweep.host.executor import Execution
    from flagsweep.results.store import Store

    def waiting(argv, **kw) -> Execution:
        return Execution(1.0, 0.49, 0.01, 1000, {"run_delay_s": 0.5, "steal_s": 0.0,
                                                 "on_cpu_s": 0.5}, False, None)

    t, r, m, build_opts = _tiny_on_a_recorded_machine(tmp_path, monkeypatch, cpu1_ticks=40)
    opts = sweep.MeasureOptions(runs=10, min_runs=10, max_runs=10, seed=1, quick=True,
                                metric="wall", cpu=1)
    said: list[str] = []
    doc = json.loads(sweep.start(t, r, m, build_opts, opts, Store(), said.append,
                                 execute=waiting).read_text())
    assert doc["status"] == "busy" and doc["stop_reason"].startswith("the machine is busy")
    assert doc["stop_reason"].endswith(
        "; CPU 1, where it measured, was 80% busy over 0.5 s after it stopped; CPU 0 is free "
        "now (98% idle, no other sweep): run again with --cpu 0")
    assert doc["machine"]["cpu_choice"] == {"cpu": 1, "how": "given",
                                            "why": "measuring on CPU 1: --cpu 1",
                                            "window_s": None, "cost_s": 0.0, "cpus": []}
    assert any("continues it on CPU 1" in line for line in said)


def test_the_noise_advice_names_an_isolated_cpu_no_sweep_held():
    from flagsweep import model
    from flagsweep.results import analysis

    choice = {"cpu": 3, "how": "isolated", "why": "CPU 3: isolated, free",
              "cpus": [{"cpu": 1, "idle_pct": 99.0, "held_by": "pid 7: lame"},
                       {"cpu": 3, "idle_pct": 98.0, "held_by": None}]}
    machine = {"cpu_count": 4, "isolated_cpus": [1, 3], "pinned_cpu": 0, "cpu_choice": choice}
    ways = analysis._machine_ways(model.Machine.model_validate(machine), 1.0)
    assert ways == ["`--cpu 3`, a CPU the kernel keeps other tasks off"]


def test_a_cpu_beyond_the_quietest_by_more_than_a_tie_is_called_busy():
    """CPU 0 is the quietest but has a job pinned to it; CPU 1, 4 points busier, is as quiet
    and taken; CPU 2, 8 points past the quietest, is busier, not as quiet."""
    pinned = load.parse_task(LAME.replace(" R ", " S "), pinned_to=0)
    measured = window({0: 0, 1: 2, 2: 4}, cpus=3, before_tasks=[pinned], after_tasks=[pinned])
    chosen = placement.choose(measured, [0, 1, 2], [], {})
    assert chosen.cpu == 1
    assert chosen.why == ("measuring on CPU 1: 96% idle over 0.5 s, no other sweep; CPU 0 as "
                          "quiet but 1 task pinned there; CPU 2 was 8% busy")


def test_the_report_says_why_the_sweep_measured_on_its_cpu():
    from flagsweep.report import method
    from flagsweep.model import Machine

    why = "measuring on CPU 0: 96% idle over 0.5 s, no other sweep; CPU 1 was 40% busy"
    machine = {"pinned_cpu": 0, "cpu_choice": {"cpu": 0, "how": "quietest", "why": why}}
    rows = dict(method.machine_rows(Machine.model_validate(machine), []))
    assert rows["pinned to CPU"] == "0 (96% idle over 0.5 s, no other sweep; CPU 1 was 40% busy)"
    assert dict(method.machine_rows(Machine(pinned_cpu=1), []))["pinned to CPU"] == "1"


def _tiny_on_a_recorded_machine(tmp_path, monkeypatch, cpu1_ticks: int):
    """tiny, prepared for a sweep, on a machine whose every /proc window is the recorded one
    with CPU 1 busy for cpu1_ticks of it (CPU 0 for 1)."""
    from tiny_target import write_tiny_target

    from flagsweep.compilation import selection

    start = moved(RECORDED, {})
    recorded = [load.Snapshot(load.parse_stat(start), {}, 1.0),
                load.Snapshot(load.parse_stat(moved(start, {0: 1, 1: cpu1_ticks})), {}, 1.5)]
    monkeypatch.setattr(load, "snapshot", lambda *a, **k: recorded.pop(0))
    tiny = write_tiny_target(tmp_path / "tiny", version="1.0", megabytes=1, quick_megabytes=1,
                             repeats=1, timeout=60)
    return selection.prepare(selection.Selection(
        str(tiny), flag_sets=("-O2",), out_dir=tmp_path / "out"), lambda _: None)


@pytest.fixture
def partner(monkeypatch, tmp_path):
    """The duets' second CPU beside `cpu` (host.placement.partner) on a machine of `cpus` CPUs
    whose next window is the recorded /proc/stat moved on by `busy`; `siblings`: CPU -> its SMT
    siblings, as /sys says them."""
    monkeypatch.setenv("FLAGSWEEP_LOCK_DIR", str(tmp_path))

    def second(cpu: int, busy: dict[int, int], cpus: int = 2, siblings=None):
        start = moved(RECORDED, {}, cpus)
        recorded = [load.Snapshot(load.parse_stat(start), {}, 1.0),
                    load.Snapshot(load.parse_stat(moved(start, busy)), {}, 1.5)]
        monkeypatch.setattr(load, "snapshot", lambda *a, **k: recorded.pop(0))
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
        monkeypatch.setattr(placement.system, "online_cpus", lambda *root: list(range(cpus)))
        monkeypatch.setattr(placement.system, "isolated_cpus", lambda *root: [])
        monkeypatch.setattr(placement.system, "smt_siblings",
                            lambda c, *root: (siblings or {}).get(c, [c]))
        return placement.partner(cpu, sleep=lambda s: None)
    return second


def test_the_duets_second_cpu_is_the_quietest_other_one_and_not_a_sibling_if_it_can(partner):
    got = partner(1, {0: 5, 2: 20, 3: 2}, cpus=4, siblings={1: [0, 1]})
    assert got.cpu == 3 and got.how == "duet partner"
    assert got.why.startswith("the duet's second CPU is 3: 96% idle over 0.5 s")
    # only the sibling left: taken, and said
    got = partner(1, {0: 5}, cpus=2, siblings={1: [0, 1]})
    assert got.cpu == 0 and got.why.endswith(
        "it is CPU 1's SMT sibling (no other is free), which the pilot weighs")


def test_no_second_cpu_says_why(partner):
    assert partner(0, {}, cpus=1) == "this sweep may use one CPU only (CPU 0)"
    with lock.MeasureLock("gzip other", 1):
        assert partner(0, {}, cpus=2) == ("every other CPU this sweep may use is held by "
                                          "another sweep (CPU 1)")
