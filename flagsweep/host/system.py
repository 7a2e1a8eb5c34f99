"""The machine as a source of noise: what it is, what disturbs timings, and how to quiet it.

`machine_state` records the results contract's `machine` block plus the settings that decide how
noisy a measurement will be; `warnings` turns that record into plain-words advice. `show`,
`tune` and `reset` follow pyperf's `system show | tune | reset`: a list of small `Operation`
classes, each reading one setting, saying what would be better, applying it and undoing it.
`tune` saves every value it replaces in a state file so that `reset` puts back exactly what was
there, however many times `tune` ran in between.

Every path is taken under `root`, so tests can point the module at a fake /sys and /proc tree.
Missing files are normal: a VM has no cpufreq (governor and turbo are the host's business),
containers may hide /proc/sys. Such settings read as None and are neither advised nor tuned.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from flagsweep.errors import FlagsweepError
from flagsweep.files import cache_dir, write_atomic
from flagsweep.host import cpu, image

log = logging.getLogger("flagsweep.host.system")

CPU_DIR = "sys/devices/system/cpu"
from flagsweep.host.advice import TUNE_COMMAND

STATE_VERSION = 1


# --- reading the tree -------------------------------------------------------------------------

def _read(path: Path) -> str | None:
    """The first line of a sysfs/procfs file, stripped; None when it cannot be read."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.readline().strip()
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _write(path: Path, value: str) -> None:
    """A plain write, as `echo value > path` would do (sysfs ignores O_TRUNC, and the kernel
    accepts the value without a trailing newline)."""
    log.debug("write %r to %s", value, path)
    with open(path, "w", encoding="ascii") as f:
        f.write(value)


def parse_cpu_list(text: str | None) -> list[int]:
    """Kernel CPU-list syntax ("0-3,8,10-11") to a sorted list; "" or "(null)" (what
    /sys/devices/system/cpu/nohz_full prints when nohz_full is not set) give []."""
    cpus: set[int] = set()
    for part in (text or "").split(","):
        part = part.strip()
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            continue
        cpus.update(range(int(first), int(last or first) + 1))
    return sorted(cpus)


def isolated_cpus(root: Path = Path("/")) -> list[int]:
    """CPUs the kernel keeps other tasks off (isolcpus=), from /sys/devices/system/cpu/isolated."""
    return parse_cpu_list(_read(Path(root) / CPU_DIR / "isolated"))


def online_cpus(root: Path = Path("/")) -> list[int]:
    return parse_cpu_list(_read(Path(root) / CPU_DIR / "online"))


def smt_siblings(cpu: int, root: Path = Path("/")) -> list[int]:
    """The CPUs sharing a core with this one (itself included); [] where the kernel does not say."""
    return parse_cpu_list(_read(Path(root) / CPU_DIR / f"cpu{cpu}/topology/thread_siblings_list"))


def _cpu_dirs(root: Path) -> dict[int, Path]:
    """cpuN directories under root, by N."""
    base = root / CPU_DIR
    try:
        entries = list(base.iterdir())
    except OSError:
        return {}
    found = (re.fullmatch(r"cpu(\d+)", e.name) for e in entries)
    return dict(sorted((int(m.group(1)), base / m.group(0)) for m in found if m))


# --- operations -------------------------------------------------------------------------------

class Operation:
    """One inspectable, tunable setting of the machine.

    Subclasses implement `read`, `advice`, `paths` and `_apply`; `tune` and `reset` are built
    on them. `read()` returns a value that `reset()` accepts, so "previous" is always what
    `read()` said before `tune`.
    """

    name: str = ""
    target: str | None = None  # the benchmark value; None: inspect only

    def __init__(self, root: Path = Path("/")) -> None:
        self.root = Path(root)

    def read(self) -> str | None:
        """The current value, None when the setting does not exist on this machine."""
        raise NotImplementedError

    def advice(self) -> str | None:
        """What would be better and why, or None when the setting is fine (or absent)."""
        raise NotImplementedError

    def paths(self) -> list[Path]:
        """The files tune and reset write (those that exist)."""
        raise NotImplementedError

    def wants_tune(self) -> bool:
        """Whether `tune` would change anything."""
        value = self.read()
        return self.target is not None and value is not None and value != self.target

    def tune(self) -> str | None:
        """Apply the benchmark value; return the previous value, or None if nothing changed."""
        if not self.wants_tune():
            return None
        previous = self.read()
        self._apply(self.target)
        return previous

    def reset(self, previous: str) -> None:
        """Put back a value `read()` returned."""
        if self.read() != previous:
            self._apply(previous)

    def _apply(self, value: str) -> None:
        raise NotImplementedError


class CPUGovernor(Operation):
    """cpufreq's scaling governor on every CPU: "performance" keeps the clock at its top instead
    of following load, which otherwise makes a benchmark's speed depend on what ran before it.

    Values: the governor when every CPU has the same one, else "cpu0=powersave cpu1=..." (so
    reset restores a mixed setting exactly)."""

    name = "CPU governor"
    target = "performance"

    def _files(self) -> dict[int, Path]:
        files = {n: d / "cpufreq" / "scaling_governor" for n, d in _cpu_dirs(self.root).items()}
        return {n: f for n, f in files.items() if f.exists()}

    def per_cpu(self) -> dict[int, str]:
        values = {n: _read(f) for n, f in self._files().items()}
        return {n: v for n, v in values.items() if v}

    def read(self) -> str | None:
        values = self.per_cpu()
        if not values:
            return None
        if len(set(values.values())) == 1:
            return next(iter(values.values()))
        return " ".join(f"cpu{n}={v}" for n, v in values.items())

    def _available(self) -> set[str] | None:
        """Governors the driver offers (None when it does not say)."""
        for n, f in self._files().items():
            text = _read(f.with_name("scaling_available_governors"))
            if text is not None:
                return set(text.split())
        return None

    def wants_tune(self) -> bool:
        offered = self._available()
        return (any(v != self.target for v in self.per_cpu().values())
                and (offered is None or self.target in offered))

    def advice(self) -> str | None:
        values = self.per_cpu()
        slow = sorted({v for v in values.values() if v != self.target})
        if not slow:
            return None
        offered = self._available()
        if offered is not None and self.target not in offered:
            return (f"governor {', '.join(slow)}: timings follow the clock's response to load, "
                    f"but this cpufreq driver offers no 'performance' governor "
                    f"(only {', '.join(sorted(offered))})")
        return (f"use 'performance' instead of {', '.join(repr(v) for v in slow)}: other "
                "governors move the clock with load, so timings drift; "
                f"{TUNE_COMMAND} sets it")

    def paths(self) -> list[Path]:
        return list(self._files().values())

    def _apply(self, value: str) -> None:
        files = self._files()
        if "=" in value:  # per-CPU form from read()
            wanted = {int(k.removeprefix("cpu")): v
                      for k, v in (item.split("=", 1) for item in value.split())}
        else:
            wanted = {n: value for n in files}
        for n, governor in wanted.items():
            if n in files and _read(files[n]) != governor:
                _write(files[n], governor)


class TurboBoost(Operation):
    """Turbo (boost) frequencies: the clock a core gets above its base depends on temperature
    and on how many other cores are busy, so with turbo on a run's speed depends on history.

    intel_pstate exposes it inverted as intel_pstate/no_turbo; acpi-cpufreq and amd-pstate as
    cpufreq/boost. Values: "on" or "off" (a file holding anything else reads as its raw text)."""

    name = "Turbo boost"
    target = "off"

    def _file(self) -> tuple[Path, bool] | None:
        """(file, inverted) for the interface this machine has."""
        no_turbo = self.root / CPU_DIR / "intel_pstate" / "no_turbo"
        if no_turbo.exists():
            return no_turbo, True
        boost = self.root / CPU_DIR / "cpufreq" / "boost"
        if boost.exists():
            return boost, False
        return None

    def read(self) -> str | None:
        found = self._file()
        if found is None:
            return None
        path, inverted = found
        raw = _read(path)
        if raw not in ("0", "1"):
            return raw
        on = (raw == "0") if inverted else (raw == "1")
        return "on" if on else "off"

    def wants_tune(self) -> bool:
        return self.read() == "on"

    def advice(self) -> str | None:
        if self.read() != "on":
            return None
        return ("turn it off: the turbo clock depends on temperature and on what other cores "
                f"do, so timings drift; {TUNE_COMMAND} turns it off")

    def paths(self) -> list[Path]:
        found = self._file()
        return [found[0]] if found else []

    def _apply(self, value: str) -> None:
        found = self._file()
        if found is None or value not in ("on", "off"):
            return
        path, inverted = found
        on = value == "on"
        _write(path, ("0" if on else "1") if inverted else ("1" if on else "0"))


class _Sysctl(Operation):
    """A single /proc/sys value."""

    relpath = ""

    @property
    def path(self) -> Path:
        return self.root / self.relpath

    def read(self) -> str | None:
        return _read(self.path)

    def paths(self) -> list[Path]:
        return [self.path] if self.path.exists() else []

    def _apply(self, value: str) -> None:
        _write(self.path, value)


class NMIWatchdog(_Sysctl):
    """The hard-lockup detector: a periodic NMI on every CPU, driven by a hardware counter that
    it keeps for itself (leaving one fewer for `perf stat`, which then multiplexes)."""

    name = "NMI watchdog"
    relpath = "proc/sys/kernel/nmi_watchdog"
    target = "0"

    def wants_tune(self) -> bool:
        return self.read() not in (None, "0")

    def advice(self) -> str | None:
        if not self.wants_tune():
            return None
        return ("turn it off: it interrupts every CPU periodically and holds a hardware "
                f"counter; {TUNE_COMMAND} writes 0")


class PerfEventParanoid(_Sysctl):
    """Who may use perf_event_open: -1 anyone anything, 0/1 per-process counters including the
    kernel side, 2 (the usual default) user space only, 3 and 4 (Debian and Android patches)
    nothing for unprivileged processes. flagsweep wants 1: per-process counters, kernel time
    included, for a non-root user; system-wide (per-CPU) counting stays root-only."""

    name = "perf_event_paranoid"
    relpath = "proc/sys/kernel/perf_event_paranoid"
    target = "1"

    def _level(self) -> int | None:
        return _read_int(self.path)

    def wants_tune(self) -> bool:
        level = self._level()
        return level is not None and level > 1

    def advice(self) -> str | None:
        level = self._level()
        if level is None or level <= 1:
            return None
        if level == 2:
            what = "unprivileged counters see user space only (kernel time is not counted)"
        else:
            what = "unprivileged processes cannot open hardware counters at all"
        return f"level {level}: {what}; {TUNE_COMMAND} sets 1"


class ASLR(_Sysctl):
    """Address-space layout randomisation. Inspect only, and `tune` leaves it on on purpose:
    code and stack placement shift timings by a few percent, and with ASLR on every run gets a
    different layout, so layout luck averages out instead of being frozen into one arbitrary
    layout that might favour one variant. flagsweep wants 2 (full randomisation)."""

    name = "ASLR"
    relpath = "proc/sys/kernel/randomize_va_space"
    target = None  # never tuned

    def advice(self) -> str | None:
        value = self.read()
        if value in (None, "2"):
            return None
        return (f"randomize_va_space={value}: layout effects are frozen into one arbitrary "
                "layout; flagsweep expects 2 (`sudo sysctl kernel.randomize_va_space=2`); "
                "--tune leaves ASLR alone")

    def note(self) -> str | None:
        """What tune says about ASLR, since it deliberately does nothing to it."""
        value = self.read()
        if value is None:
            return None
        if value == "2":
            return ("ASLR: left on (randomize_va_space=2): flagsweep wants layouts randomised, "
                    "so layout luck averages out over runs")
        return (f"ASLR: not changed (randomize_va_space={value}); flagsweep expects 2: "
                "run `sudo sysctl kernel.randomize_va_space=2`")


# The order matters. On intel_pstate, writing scaling_governor re-applies the driver's policy
# and resets no_turbo, so the governor must be set before turbo (pyperf learnt this the hard
# way, see its _system.py). reset() uses the same order for the same reason: restoring the
# governor last could silently undo the restored no_turbo. The sysctls are independent; ASLR
# comes last because it is only inspected.
OPERATIONS: list[type[Operation]] = [CPUGovernor, TurboBoost, NMIWatchdog, PerfEventParanoid, ASLR]


def _operations(root: Path) -> list[Operation]:
    return [op(root) for op in OPERATIONS]


# --- machine state and warnings ---------------------------------------------------------------

def machine_state(compilers: list[str], pinned_cpu: int | None = None,
                  root: Path = Path("/")) -> dict:
    """The results-contract `machine` block plus the settings that decide how noisy timings are.

    Keys: hostname, cpu_model, cpu_flags, march_native (the first compiler's -march=native, as
    the contract has it) and march_native_by_compiler, isa_levels, vendor, family, model,
    stepping, microcode, kernel, hypervisor, governor (of the pinned CPU, else of all CPUs;
    None without cpufreq), boost (None | bool), isolated_cpus, nohz_full, cpu_count, smt
    (None when the kernel does not say), load_avg, aslr, perf_event_paranoid, nmi_watchdog,
    pinned_cpu, python, environment (the distribution, the CI runner's image: host.image). Take
    it before building, not after: load_avg would count the build. hw_counters is not here:
    whether counters work is a probe, not a file to read.
    """
    root = Path(root)
    cpuinfo = read_all(root / "proc/cpuinfo")
    host = cpu.read_host(cpuinfo or "")
    by_compiler = cpu.describe(host, list(compilers)).march_native

    governor_op = CPUGovernor(root)
    per_cpu = governor_op.per_cpu()
    governor = per_cpu.get(pinned_cpu) if pinned_cpu is not None else governor_op.read()
    boost = {"on": True, "off": False}.get(TurboBoost(root).read() or "")

    cpu_dir = root / CPU_DIR
    online = parse_cpu_list(_read(cpu_dir / "online"))
    smt_active = _read(cpu_dir / "smt" / "active")
    uname = platform.uname()
    return {
        "hostname": socket.gethostname(),
        "cpu_model": host.cpu_model,
        "cpu_flags": list(host.flags),
        "march_native": by_compiler.get(compilers[0]) if compilers else None,
        "march_native_by_compiler": by_compiler,
        "isa_levels": list(host.isa_levels),
        "vendor": host.vendor,
        "family": host.family,
        "model": host.model,
        "stepping": host.stepping,
        "microcode": host.microcode,
        "kernel": f"{uname.release} {uname.version}",
        "hypervisor": host.hypervisor,
        "governor": governor,
        "boost": boost,
        "isolated_cpus": isolated_cpus(root),
        "nohz_full": parse_cpu_list(_read(cpu_dir / "nohz_full")),
        "cpu_count": len(online) or os.cpu_count() or 1,
        "smt": {"1": True, "0": False}.get(smt_active or ""),
        "load_avg": _load_avg(root),
        "aslr": _read_int(root / ASLR.relpath),
        "perf_event_paranoid": _read_int(root / PerfEventParanoid.relpath),
        "nmi_watchdog": _read_int(root / NMIWatchdog.relpath),
        "pinned_cpu": pinned_cpu,
        "python": platform.python_version(),
        "environment": image.environment(_os_release(root), os.environ),
    }


def read_all(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _os_release(root: Path) -> str | None:
    """/etc/os-release, else /usr/lib/os-release (os-release(5): /etc's may be absent)."""
    return read_all(root / "etc/os-release") or read_all(root / "usr/lib/os-release")


def _load_avg(root: Path) -> list[float]:
    fields = (_read(root / "proc/loadavg") or "").split()
    try:
        return [float(x) for x in fields[:3]] if len(fields) >= 3 else list(os.getloadavg())
    except (ValueError, OSError):
        return [0.0, 0.0, 0.0]


# --- show / tune / reset ----------------------------------------------------------------------

@dataclass(frozen=True)
class SettingState:
    """One setting as `flagsweep system` shows it: its value (None: not available here) and
    advice (None: fine)."""
    name: str
    value: str | None
    advice: str | None


def show(root: Path = Path("/")) -> list[SettingState]:
    """Every operation's current value and advice."""
    return [SettingState(op.name, op.read(), op.advice()) for op in _operations(Path(root))]


def _state_file(state_file: Path | None) -> Path:
    return Path(state_file) if state_file is not None else cache_dir() / "system-tune.json"


def _load_saved(path: Path, root: Path) -> dict[str, str]:
    """Previously saved values ({} when none); refuses a file written for another root."""
    try:
        data = json.loads(path.read_text())
        saved = data["saved"]
        saved_root = data["root"]
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FlagsweepError(f"cannot read the saved system settings in {path} ({exc}); "
                             "restore them by hand and delete the file") from None
    if Path(saved_root) != root:
        raise FlagsweepError(f"{path} holds settings saved for root {saved_root}, not {root}")
    return dict(saved)


def _save(path: Path, root: Path, saved: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps({"version": STATE_VERSION, "root": str(root), "saved": saved},
                                  indent=2) + "\n")


def _require_root(action: str, paths: list[Path]) -> None:
    """Raise before any write when this process cannot make all of them."""
    denied = [p for p in paths if not os.access(p, os.W_OK)]
    if os.geteuid() != 0 or denied:
        detail = f" (cannot write {', '.join(map(str, denied))})" if denied else ""
        raise FlagsweepError(f"{action} needs root{detail}: run `sudo flagsweep system --{action}`")


def tune(root: Path = Path("/"), state_file: Path | None = None) -> list[str]:
    """Set every operation to its benchmark value; one line per change.

    Each replaced value is saved to state_file (default <cache>/system-tune.json) unless a
    value for that setting is already saved: after tune, tune, reset the machine is as it was
    before the first tune. Needs root, checked before anything is written; a machine with
    nothing to change needs nothing. If a write fails halfway, what was already changed is
    saved first, so reset can still undo it.
    """
    root = Path(root)
    path = _state_file(state_file)
    ops = _operations(root)
    todo = [op for op in ops if op.wants_tune()]
    saved = _load_saved(path, root)
    lines: list[str] = []
    if todo:
        _require_root("tune", [p for op in todo for p in op.paths()])
    changed = False
    try:
        for op in todo:
            try:
                previous = op.tune()
            except OSError as exc:
                raise FlagsweepError(f"{op.name}: cannot set {op.target!r}: {exc}"
                                     f"{_hint(op)}") from None
            if previous is None:
                continue
            changed = True
            saved.setdefault(op.name, previous)
            lines.append(f"{op.name}: {previous} -> {op.read()}")
    finally:
        if changed:
            _save(path, root, saved)
    if not lines:
        lines.append("Nothing to change: every setting flagsweep tunes is already at its "
                     "benchmark value (or absent on this machine).")
    note = ASLR(root).note()
    if note:
        lines.append(note)
    return lines


def _hint(op: Operation) -> str:
    if isinstance(op, TurboBoost) and os.geteuid() == 0:
        return (" (as root this usually means turbo is disabled in the firmware, or "
                "intel_pstate runs in passive mode)")
    return ""


def reset(root: Path = Path("/"), state_file: Path | None = None) -> list[str]:
    """Restore what `tune` saved, in OPERATIONS order, then delete the state file.

    A setting that fails to restore stays in the file (and the error says which), so a
    second reset can retry.
    """
    root = Path(root)
    path = _state_file(state_file)
    saved = _load_saved(path, root)
    if not saved:
        return [f"Nothing to reset: no saved settings in {path}."]
    ops = [op for op in _operations(root) if op.name in saved]
    unknown = sorted(set(saved) - {op.name for op in ops})
    todo = [op for op in ops if op.read() is not None and op.read() != saved[op.name]]
    if todo:
        _require_root("reset", [p for op in todo for p in op.paths()])
    lines: list[str] = []
    left: dict[str, str] = {}
    failures: list[str] = []
    for op in ops:
        previous = saved[op.name]
        current = op.read()
        if current is None:
            lines.append(f"{op.name}: no longer present, {previous} not restored")
            continue
        if current == previous:
            lines.append(f"{op.name}: already {previous}")
            continue
        try:
            op.reset(previous)
        except OSError as exc:
            left[op.name] = previous
            failures.append(f"{op.name}: cannot restore {previous!r}: {exc}")
            continue
        lines.append(f"{op.name}: {current} -> {op.read()} (restored)")
    for name in unknown:
        lines.append(f"{name}: saved as {saved[name]!r}, but flagsweep no longer manages it")
    if failures:
        _save(path, root, left)
        raise FlagsweepError("; ".join(failures) + f" (still saved in {path})")
    path.unlink(missing_ok=True)
    return lines
