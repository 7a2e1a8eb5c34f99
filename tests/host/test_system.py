"""Tests for flagsweep.host.system: the real machine's state, warnings on hand-made states, and
show/tune/reset on a fake /sys + /proc tree (never the real one)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from flagsweep.errors import FlagsweepError
from flagsweep.host import advice, system

CPU = "sys/devices/system/cpu"
FAKE_FILES = {
    f"{CPU}/cpu0/cpufreq/scaling_governor": "powersave",
    f"{CPU}/cpu1/cpufreq/scaling_governor": "powersave",
    f"{CPU}/intel_pstate/no_turbo": "0",
    "proc/sys/kernel/nmi_watchdog": "1",
    "proc/sys/kernel/perf_event_paranoid": "2",
    "proc/sys/kernel/randomize_va_space": "2",
}


def contents(root: Path) -> dict[str, str]:
    return {rel: (root / rel).read_text() for rel in FAKE_FILES}


@pytest.fixture
def fake_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for rel, value in FAKE_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(value)
    return root


@pytest.fixture
def state_file(tmp_path: Path) -> Path:
    return tmp_path / "state" / "system-tune.json"


@pytest.fixture
def as_root(monkeypatch):
    """Tune the fake tree as if root, whoever runs the tests (the tree is ours to write)."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)


# --- machine_state on this machine ------------------------------------------------------------

TYPES = {
    "hostname": str, "cpu_model": str, "cpu_flags": list, "march_native_by_compiler": dict,
    "isa_levels": list, "vendor": str, "family": str, "model": str, "stepping": str,
    "microcode": str, "kernel": str, "hypervisor": bool, "isolated_cpus": list,
    "nohz_full": list, "cpu_count": int, "load_avg": list, "aslr": int, "python": str,
    "environment": dict,
}
OPTIONAL = {"march_native": str, "governor": str, "boost": bool, "smt": bool,
            "perf_event_paranoid": int, "nmi_watchdog": int, "pinned_cpu": int}


def test_machine_state_real_machine():
    state = system.machine_state(["gcc"])
    assert set(state) == set(TYPES) | set(OPTIONAL)
    for key, kind in TYPES.items():
        assert isinstance(state[key], kind), key
    for key, kind in OPTIONAL.items():
        assert state[key] is None or isinstance(state[key], kind), key
    assert state["cpu_model"]
    assert state["cpu_count"] >= 1
    assert len(state["load_avg"]) == 3 and all(isinstance(x, float) for x in state["load_avg"])
    assert all(isinstance(c, int) for c in state["isolated_cpus"] + state["nohz_full"])
    assert state["pinned_cpu"] is None
    json.dumps(state)  # goes into results.json as it is
    governor = Path(f"/{CPU}/cpu0/cpufreq/scaling_governor")
    assert (state["governor"] is None) == (not governor.exists())
    boost_files = [Path(f"/{CPU}/intel_pstate/no_turbo"), Path(f"/{CPU}/cpufreq/boost")]
    assert (state["boost"] is None) == (not any(p.exists() for p in boost_files))


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_machine_state_march_native_is_first_compilers():
    state = system.machine_state(["gcc"], pinned_cpu=0)
    assert state["march_native"] == state["march_native_by_compiler"]["gcc"]
    assert state["march_native"]
    assert state["pinned_cpu"] == 0


def test_machine_state_fake_tree(fake_root: Path):
    (fake_root / CPU / "cpu1/cpufreq/scaling_governor").write_text("performance")
    (fake_root / CPU / "isolated").write_text("1\n")
    (fake_root / CPU / "nohz_full").write_text("(null)\n")
    (fake_root / CPU / "online").write_text("0-1\n")
    (fake_root / CPU / "smt").mkdir()
    (fake_root / CPU / "smt/active").write_text("1\n")
    (fake_root / "proc/loadavg").write_text("0.50 0.25 0.10 1/100 42\n")
    state = system.machine_state([], pinned_cpu=1, root=fake_root)
    assert state["governor"] == "performance"  # the pinned CPU's, not cpu0's
    assert system.machine_state([], root=fake_root)["governor"] == (
        "cpu0=powersave cpu1=performance")
    assert state["boost"] is True  # no_turbo=0
    assert state["isolated_cpus"] == [1] and state["nohz_full"] == []
    assert system.isolated_cpus(fake_root) == [1]
    assert state["smt"] is True and state["cpu_count"] == 2
    assert state["load_avg"] == [0.5, 0.25, 0.1]
    assert (state["aslr"], state["perf_event_paranoid"], state["nmi_watchdog"]) == (2, 2, 1)
    assert state["march_native"] is None and state["march_native_by_compiler"] == {}


@pytest.mark.parametrize("text, cpus", [("", []), ("(null)", []), ("3", [3]),
                                        ("0-2,8,10-11", [0, 1, 2, 8, 10, 11])])
def test_parse_cpu_list(text, cpus):
    assert system.parse_cpu_list(text) == cpus


# --- warnings ---------------------------------------------------------------------------------

IDEAL = {
    "governor": "performance", "boost": False, "isolated_cpus": [3], "nohz_full": [3],
    "pinned_cpu": 3, "cpu_count": 4, "smt": False, "load_avg": [0.0, 0.01, 0.05],
    "hypervisor": False, "aslr": 2, "perf_event_paranoid": 1, "nmi_watchdog": 0,
}


def test_ideal_state_gives_no_warning():
    assert advice.warnings(IDEAL) == []


def test_absent_settings_give_no_warning():
    # a VM: no cpufreq, nothing known about SMT or the sysctls
    state = dict(IDEAL, governor=None, boost=None, smt=None, aslr=None,
                 perf_event_paranoid=None, nmi_watchdog=None)
    assert advice.warnings(state) == []


@pytest.mark.parametrize("change, words", [
    ({"governor": "powersave"}, ["governor is 'powersave' on CPU 3", "--tune", "performance"]),
    ({"boost": True}, ["Turbo boost is on", "--tune"]),
    ({"isolated_cpus": []}, ["No isolated CPU", "measured CPU 3", "isolcpus=3", "nohz_full=3",
                             "without --cpu"]),
    ({"pinned_cpu": 0}, ["CPU 0 is not isolated", "--cpu 3"]),
    ({"pinned_cpu": None}, ["isolated but the run is not pinned", "--cpu 3"]),
    ({"nohz_full": []}, ["scheduler tick", "nohz_full=3"]),
    ({"load_avg": [1.7, 1.0, 0.5], "cpu_count": 2}, ["Load average is 1.7 on 2 CPUs", "idle"]),
    ({"smt": True}, ["SMT", "smt/control"]),
    ({"hypervisor": True}, ["hypervisor", "counters"]),
    ({"aslr": 0}, ["ASLR is off (randomize_va_space=0)", "randomize_va_space=2"]),
    ({"aslr": 1}, ["ASLR is partial (randomize_va_space=1)"]),
    ({"nmi_watchdog": 1}, ["NMI watchdog is on", "--tune"]),
    ({"perf_event_paranoid": 3}, ["perf_event_paranoid is 3", "sets 1"]),
])
def test_each_warning_only_when_its_condition_holds(change, words):
    found = advice.warnings(dict(IDEAL, **change))
    assert len(found) == 1, found
    for word in words:
        assert word in found[0]


def test_load_tolerance_follows_threshold():
    busy = dict(IDEAL, load_avg=[0.4, 0.4, 0.4], cpu_count=2)  # 0.2 per CPU
    assert any("Load average" in w for w in advice.warnings(busy, threshold_pct=1.0))
    assert not any("Load average" in w for w in advice.warnings(busy, threshold_pct=5.0))


def test_single_cpu_machine_says_so():
    found = advice.warnings(dict(IDEAL, cpu_count=1, isolated_cpus=[], pinned_cpu=None))
    assert found == [found[0]] and "Only one CPU" in found[0]


def test_warnings_on_this_machine_are_strings():
    assert all(isinstance(w, str) and w for w in advice.warnings(system.machine_state([])))


# --- show / tune / reset on a fake tree -------------------------------------------------------

def test_show_fake_tree(fake_root: Path):
    rows = {row.name: row for row in system.show(fake_root)}
    assert [row.name for row in system.show(fake_root)] == [
        "CPU governor", "Turbo boost", "NMI watchdog", "perf_event_paranoid", "ASLR"]
    assert rows["CPU governor"].value == "powersave"
    assert "performance" in rows["CPU governor"].advice
    assert rows["Turbo boost"].value == "on" and rows["Turbo boost"].advice
    assert rows["NMI watchdog"].value == "1" and rows["NMI watchdog"].advice
    assert rows["perf_event_paranoid"].value == "2" and rows["perf_event_paranoid"].advice
    assert rows["ASLR"] == system.SettingState("ASLR", "2", None)


def test_show_empty_tree(tmp_path: Path):
    assert all(row.value is None and row.advice is None for row in system.show(tmp_path))


def test_tune_then_reset_restores_exact_originals(fake_root, state_file, as_root):
    before = contents(fake_root)
    lines = system.tune(fake_root, state_file)
    assert contents(fake_root) == {
        f"{CPU}/cpu0/cpufreq/scaling_governor": "performance",
        f"{CPU}/cpu1/cpufreq/scaling_governor": "performance",
        f"{CPU}/intel_pstate/no_turbo": "1",
        "proc/sys/kernel/nmi_watchdog": "0",
        "proc/sys/kernel/perf_event_paranoid": "1",
        "proc/sys/kernel/randomize_va_space": "2",  # ASLR left on
    }
    assert "CPU governor: powersave -> performance" in lines
    assert "Turbo boost: on -> off" in lines
    assert "NMI watchdog: 1 -> 0" in lines
    assert "perf_event_paranoid: 2 -> 1" in lines
    assert any(line.startswith("ASLR: left on") for line in lines)
    saved = json.loads(state_file.read_text())
    assert saved["saved"] == {"CPU governor": "powersave", "Turbo boost": "on",
                              "NMI watchdog": "1", "perf_event_paranoid": "2"}
    assert all(row.advice is None for row in system.show(fake_root))

    lines = system.reset(fake_root, state_file)
    assert contents(fake_root) == before
    assert not state_file.exists()
    assert "Turbo boost: off -> on (restored)" in lines


def test_second_tune_is_idempotent(fake_root, state_file, as_root):
    before = contents(fake_root)
    system.tune(fake_root, state_file)
    saved = state_file.read_text()
    lines = system.tune(fake_root, state_file)
    assert not any("->" in line for line in lines)
    assert lines[0].startswith("Nothing to change")
    assert state_file.read_text() == saved  # originals not overwritten by tuned values
    system.reset(fake_root, state_file)
    assert contents(fake_root) == before


def test_tune_keeps_first_originals_when_something_drifted_back(fake_root, state_file, as_root):
    before = contents(fake_root)
    system.tune(fake_root, state_file)
    (fake_root / "proc/sys/kernel/nmi_watchdog").write_text("1")  # someone turned it back on
    assert system.tune(fake_root, state_file)[0] == "NMI watchdog: 1 -> 0"
    system.reset(fake_root, state_file)
    assert contents(fake_root) == before


def test_reset_restores_mixed_governors_per_cpu(fake_root, state_file, as_root):
    (fake_root / CPU / "cpu1/cpufreq/scaling_governor").write_text("ondemand")
    before = contents(fake_root)
    system.tune(fake_root, state_file)
    assert json.loads(state_file.read_text())["saved"]["CPU governor"] == (
        "cpu0=powersave cpu1=ondemand")
    system.reset(fake_root, state_file)
    assert contents(fake_root) == before


def test_governor_not_offered_is_not_tuned(fake_root, state_file, as_root):
    for n in (0, 1):
        (fake_root / CPU / f"cpu{n}/cpufreq/scaling_available_governors").write_text(
            "powersave schedutil\n")
    system.tune(fake_root, state_file)
    assert (fake_root / CPU / "cpu0/cpufreq/scaling_governor").read_text() == "powersave"
    row = system.show(fake_root)[0]
    assert "no 'performance' governor" in row.advice


def test_cpufreq_boost_interface(tmp_path, state_file, as_root):
    boost = tmp_path / CPU / "cpufreq/boost"
    boost.parent.mkdir(parents=True)
    boost.write_text("1")
    assert system.show(tmp_path)[1].value == "on"
    system.tune(tmp_path, state_file)
    assert boost.read_text() == "0"
    system.reset(tmp_path, state_file)
    assert boost.read_text() == "1"


def test_aslr_off_is_never_tuned(fake_root, state_file, as_root):
    aslr = fake_root / "proc/sys/kernel/randomize_va_space"
    aslr.write_text("0")
    lines = system.tune(fake_root, state_file)
    assert aslr.read_text() == "0"
    assert any("ASLR: not changed (randomize_va_space=0)" in line for line in lines)
    assert "randomize_va_space=0" in system.show(fake_root)[4].advice


def test_tune_without_root_changes_nothing(fake_root, state_file, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    before = contents(fake_root)
    with pytest.raises(FlagsweepError, match=r"needs root.*sudo flagsweep system --tune"):
        system.tune(fake_root, state_file)
    assert contents(fake_root) == before
    assert not state_file.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files anyway")
def test_tune_with_read_only_file_changes_nothing(fake_root, state_file, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)  # pretend root, but a file refuses writes
    (fake_root / "proc/sys/kernel/perf_event_paranoid").chmod(0o444)
    before = contents(fake_root)
    with pytest.raises(FlagsweepError, match="perf_event_paranoid"):
        system.tune(fake_root, state_file)
    assert contents(fake_root) == before


def test_tune_needs_no_root_when_nothing_to_change(tmp_path, state_file, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert system.tune(tmp_path, state_file)[0].startswith("Nothing to change")
    assert not state_file.exists()


def test_failed_write_saves_what_changed_so_far(fake_root, state_file, as_root, monkeypatch):
    before = contents(fake_root)
    real_write = system._write

    def flaky(path, value):
        if path.name == "no_turbo":
            raise PermissionError(1, "Operation not permitted")
        real_write(path, value)

    monkeypatch.setattr(system, "_write", flaky)
    with pytest.raises(FlagsweepError, match="Turbo boost: cannot set 'off'"):
        system.tune(fake_root, state_file)
    assert json.loads(state_file.read_text())["saved"] == {"CPU governor": "powersave"}
    monkeypatch.setattr(system, "_write", real_write)
    system.reset(fake_root, state_file)
    assert contents(fake_root) == before


def test_reset_with_nothing_saved(fake_root, state_file):
    lines = system.reset(fake_root, state_file)
    assert len(lines) == 1 and lines[0].startswith("Nothing to reset")


def test_reset_without_root_changes_nothing(fake_root, state_file, as_root, monkeypatch):
    system.tune(fake_root, state_file)
    tuned = contents(fake_root)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(FlagsweepError, match="sudo flagsweep system --reset"):
        system.reset(fake_root, state_file)
    assert contents(fake_root) == tuned and state_file.exists()


def test_reset_refuses_another_roots_state(fake_root, state_file, tmp_path, as_root):
    system.tune(fake_root, state_file)
    with pytest.raises(FlagsweepError, match="saved for root"):
        system.reset(tmp_path / "elsewhere", state_file)


def test_default_state_file_is_in_cache(fake_root, isolated_cache, as_root):
    system.tune(fake_root)
    default = isolated_cache / "system-tune.json"
    assert default.exists()
    system.reset(fake_root)
    assert not default.exists()
