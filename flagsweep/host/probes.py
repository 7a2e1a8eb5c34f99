"""What this machine can measure: perf counters (hardware or software), and cachegrind.

`preflight()` asks perf once what works here and says why in plain words; the measurement
runner then starts each sample as ``[*perf_prefix(pre, csv), *workload_argv]`` and reads the
CSV that perf wrote with `parse_perf_csv` and `sample_metrics`.

perf's CSV output (``perf stat -x,``) is described in perf-stat(1), section "CSV FORMAT"
(tools/perf/Documentation/perf-stat.txt; checked against perf 6.1). Without -I/-A/-r the
fields of one counter line are, in order::

    counter value, unit (or empty), event name, run time of counter (ns),
    percentage of measurement time the counter was running, [metric value, metric unit]

"Commas in the output are not put into quotes", so an event name that itself contains commas
(``cpu/event=0x3c,umask=0/``) spreads over several fields; the parser reads the fixed fields
from both ends. Metric-only continuation lines have every earlier field empty and are skipped.
perf 6.1 prints e.g. (measured on a VM without PMU)::

    1765212,ns,duration_time,1765212,100.00,2.686,G/sec
    0.66,msec,task-clock,657302,100.00,0.372,CPUs utilized
    <not supported>,,cycles,0,100.00,,

Values are scaled by perf when a counter did not run the whole time (multiplexing); the
percentage tells by how much. The same man page ("INTEL HYBRID SUPPORT") explains that on
hybrid CPUs one ``-e cycles`` becomes two events, ``cpu_core/cycles/`` and ``cpu_atom/cycles/``,
each scaled by its own running time, i.e. the share of time the task spent on that core type.
Those percentages are not multiplexing, and the scaled values must not simply be added: see
`parse_perf_csv` for how the plain name ``cycles`` is combined from them.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from flagsweep import model, process
from flagsweep.errors import FlagsweepError

HARDWARE_EVENTS = ("cycles", "instructions", "branch-misses", "cache-misses")  # at most 4: no multiplexing on typical PMUs
SOFTWARE_EVENTS = ("task-clock", "context-switches", "cpu-migrations", "page-faults")
DURATION_EVENT = "duration_time"  # perf's tool event: wall time of the workload alone, in ns

PARANOID_PATH = Path("/proc/sys/kernel/perf_event_paranoid")
PROBE_TIMEOUT = 30.0

# ---------------------------------------------------------------------------------------------
# preflight


@dataclass(frozen=True)
class Preflight:
    perf: str | None  # path of perf, or None
    mode: str  # "hardware" | "software" | "none"
    events: tuple[str, ...]  # what perf_prefix will ask for (includes "duration_time" when supported)
    paranoid: int | None  # /proc/sys/kernel/perf_event_paranoid
    hw_counters: bool
    reasons: tuple[str, ...]  # plain words: why not hardware / why none, and what to do

    def to_json(self) -> dict:
        """As the run keeps it: its options' `counters` (model.CounterSetup)."""
        return model.CounterSetup.model_validate(asdict(self)).dump()


def _find_perf() -> str | None:
    """Where perf is (monkeypatch this, or shutil.which, to pretend it is missing)."""
    return shutil.which("perf")


def _read_paranoid() -> int | None:
    """The kernel's perf_event_paranoid level, or None when it cannot be read."""
    try:
        return int(PARANOID_PATH.read_text().strip())
    except (OSError, ValueError):
        return None


def _is_vm() -> bool:
    """True when the CPU says it runs under a hypervisor (x86 'hypervisor' cpuinfo flag)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return False
    return any(line.startswith("flags") and " hypervisor" in line for line in text.splitlines())


def _cpu_pmus() -> list[str]:
    """Names of the core PMUs the kernel exports (cpu, cpu_core, cpu_atom, armv8_pmuv3_0 ...)."""
    try:
        names = sorted(p.name for p in Path("/sys/bus/event_source/devices").iterdir())
    except OSError:
        return []
    return [n for n in names if n == "cpu" or n.startswith(("cpu_", "armv", "arm_", "riscv"))]


@dataclass(frozen=True)
class _Probe:
    ok: bool  # perf ran and exited 0
    counters: dict[str, Counter]
    tail: str  # what perf said when it failed


def _stat(perf: str, events: tuple[str, ...]) -> _Probe:
    """``perf stat -x, -o <tmp> -e <events> -- true``, exactly the way samples are taken."""
    true = shutil.which("true") or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="flagsweep-perf-") as tmp:
        csv = Path(tmp) / "probe.csv"
        try:
            res = process.run([perf, "stat", "-x,", "-o", str(csv), "-e", ",".join(events), "--", true],
                              timeout=PROBE_TIMEOUT)
        except FileNotFoundError:
            return _Probe(False, {}, f"{perf}: no such program")
        except process.TimeoutExpired:
            return _Probe(False, {}, f"perf stat did not finish within {PROBE_TIMEOUT:.0f} s")
        except OSError as exc:
            return _Probe(False, {}, f"{perf}: {exc}")
        try:
            text = csv.read_text(errors="replace")
        except OSError:
            text = ""
    return _Probe(res.ok, parse_perf_csv(text), res.tail(8))


def _permission_problem(tail: str) -> bool:
    t = tail.lower()
    return "paranoid" in t or "permission" in t or "access to performance monitoring" in t


@functools.lru_cache(maxsize=1)
def preflight() -> Preflight:
    """Probe once (cached; `preflight.cache_clear()` to probe again) and decide. Never raises.

    Runs ``perf stat -x, -e <hardware events> -- true``, then the software events with
    ``duration_time``, and picks "hardware" when cycles and instructions are counted,
    "software" when task-clock is, else "none". In hardware mode the software events are
    asked for too: they cost no PMU counter, so they cannot cause multiplexing.
    """
    paranoid = None
    try:
        paranoid = _read_paranoid()
        return _decide(_find_perf(), paranoid)
    except Exception as exc:  # noqa: BLE001 - a probe must never take flagsweep down
        return Preflight(None, "none", (), paranoid, False,
                         (f"perf probe failed unexpectedly: {type(exc).__name__}: {exc}; wall time only",))


def _paranoid_reason(paranoid: int | None, *, worked: bool) -> str | None:
    if paranoid is None or paranoid < 3:
        return None
    fix = "allow it with: sudo sysctl kernel.perf_event_paranoid=1 (keep it in /etc/sysctl.d/)"
    if worked:
        return (f"perf_event_paranoid is {paranoid}: Debian kernels then refuse perf to unprivileged "
                f"users; it worked here (running as root or with CAP_PERFMON, or a kernel that treats "
                f"{paranoid} like 2), but other users get no counters: {fix}")
    return (f"perf_event_paranoid is {paranoid}: unprivileged programs may not use perf at all "
            f"(Debian's default); {fix}, or run with CAP_PERFMON")


def _decide(perf: str | None, paranoid: int | None) -> Preflight:
    if perf is None:
        return Preflight(None, "none", (), paranoid, False,
                         ("perf not installed: apt-get install linux-perf (Debian) or linux-tools-generic "
                          "(Ubuntu); wall time only",))

    hw = _stat(perf, HARDWARE_EVENTS)
    sw_events = (*SOFTWARE_EVENTS, DURATION_EVENT)
    sw = _stat(perf, sw_events)
    if not (sw.ok and _status(sw.counters, "task-clock") == "ok"):
        # an older perf without the duration_time tool event rejects the whole list
        sw_events = SOFTWARE_EVENTS
        sw = _stat(perf, sw_events)
    sw_ok = sw.ok and _status(sw.counters, "task-clock") == "ok"

    if not hw.ok and not sw.ok and "no such program" in (hw.tail + sw.tail):
        return Preflight(None, "none", (), paranoid, False,
                         (f"perf not installed ({perf} is missing): apt-get install linux-perf; wall time only",))

    hw_ok = hw.ok and all(_status(hw.counters, e) == "ok" for e in ("cycles", "instructions"))
    reasons: list[str] = []
    events: list[str] = []
    if hw_ok:
        hw_events = [e for e in HARDWARE_EVENTS if _status(hw.counters, e) == "ok"]
        dropped = [e for e in HARDWARE_EVENTS if e not in hw_events]
        if dropped:
            reasons.append(f"some hardware events unavailable: {', '.join(dropped)} "
                           f"({', '.join(_status(hw.counters, e) for e in dropped)}); left out")
        events += hw_events
        if any(c.event.endswith((":u", "/u")) or ":u/" in c.event for c in hw.counters.values()):
            reasons.append(f"user space only: perf counts cycles:u etc. (perf_event_paranoid is {paranoid}, "
                           f"not root); to include kernel time: sudo sysctl kernel.perf_event_paranoid=1")
    elif hw.ok:
        statuses = {e: _status(hw.counters, e) for e in HARDWARE_EVENTS}
        if all(s in ("not-supported", "missing") for s in statuses.values()):
            pmus = _cpu_pmus()
            if _is_vm():
                reasons.append("no PMU (virtual machine?): the CPU reports a hypervisor and perf says "
                               "cycles/instructions are <not supported>; software events only. Enable a "
                               "virtual PMU (KVM/libvirt <pmu state='on'/>, VMware 'virtualize CPU performance "
                               "counters') or measure on bare metal")
            else:
                where = f"kernel PMUs: {', '.join(pmus)}" if pmus else "the kernel exports no CPU PMU"
                reasons.append(f"no PMU: perf says cycles/instructions are <not supported> ({where}); "
                               f"software events only")
        else:
            shown = ", ".join(f"{e} {s}" for e, s in statuses.items())
            reasons.append(f"hardware counters not usable: {shown}; they may be held by another profiler "
                           f"or the NMI watchdog (sudo sysctl kernel.nmi_watchdog=0); software events only")
    else:
        reasons.append(f"perf stat failed for hardware events: {_one_line(hw.tail)}")

    if sw_ok:
        events += [e for e in SOFTWARE_EVENTS]
        if _status(sw.counters, DURATION_EVENT) == "ok":
            events.append(DURATION_EVENT)
        else:
            reasons.append("this perf has no duration_time event (only informational: wall time comes from flagsweep's launcher)")
    else:
        why = _one_line(sw.tail) if not sw.ok else f"task-clock is {_status(sw.counters, 'task-clock')}"
        reasons.append(f"perf stat failed for software events: {why}"
                       + ("" if hw_ok else "; wall time only"))

    mode = "hardware" if hw_ok else "software" if sw_ok else "none"
    p_reason = _paranoid_reason(paranoid, worked=mode != "none")
    if p_reason:
        if mode == "none":
            reasons.insert(0, p_reason)
        else:
            reasons.append(p_reason)
    if mode == "none" and not reasons:
        reasons.append("perf could not count anything here; wall time only")
    return Preflight(perf, mode, tuple(events) if mode != "none" else (), paranoid, hw_ok, tuple(reasons))


def _status(counters: dict[str, Counter], event: str) -> str:
    c = counters.get(event)
    return c.status if c is not None else "missing"


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " / ".join(lines[-3:]) if lines else "no output"


def perf_prefix(pre: Preflight, csv_path: Path) -> list[str]:
    """``[perf, "stat", "-x,", "-o", csv, "-e", "ev1,ev2,...", "--"]``; [] when mode == "none".

    perf stat writes the CSV to csv_path (truncating it), so the workload's own stdout/stderr
    stay untouched. Its own exit status is not the workload's to trust: perf 6.1 on a busy
    machine exits 0 for a workload that exited 1 in about one run of ten, counts and all, so
    the launcher it runs reports the workload's status (host.launcher).
    """
    if pre.mode == "none" or not pre.perf or not pre.events:
        return []
    return [pre.perf, "stat", "-x,", "-o", str(csv_path), "-e", ",".join(pre.events), "--"]


# ---------------------------------------------------------------------------------------------
# parsing


@dataclass(frozen=True)
class Counter:
    event: str
    value: float | None  # None when <not counted> / <not supported>
    unit: str
    run_pct: float | None  # percentage of time the counter ran (100.00 when not multiplexed)
    status: str  # "ok" | "not-counted" | "not-supported"


_STATUS = {"<not counted>": "not-counted", "<not supported>": "not-supported"}
# perf's event modifiers (perf-list(1), "EVENT MODIFIERS"): u k h I G H p P a S D W e b
_MODIFIERS = re.compile(r":[ukhIGHpPaSDWeb]+$")
_PMU_EVENT = re.compile(r"^([A-Za-z0-9_.\-]+)/([^/]+)/([A-Za-z]*)$")


def plain_event_name(printed: str) -> str:
    """``cycles:u`` -> ``cycles``; ``cpu_core/cycles/`` and ``cpu_core/cycles:u/`` or
    ``cpu_core/cycles/u`` -> ``cycles``. Raw terms (``cpu/event=0x3c/``) are left as printed."""
    name = printed.strip()
    m = _PMU_EVENT.match(name)
    if m:
        inner = m.group(2)
        if "=" in inner or "," in inner:
            return name
        name = inner
    return _MODIFIERS.sub("", name)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _parse_line(line: str) -> Counter | None:
    fields = line.split(",")
    if len(fields) < 3:
        return None
    if len(fields) >= 7:  # value,unit,event...,run,pct,metric_value,metric_unit
        extra = len(fields) - 7  # commas inside the event name
        event = ",".join(fields[2:3 + extra])
        run_pct = fields[4 + extra]
    else:  # older perf: no metric fields (value,unit,event,run,pct) or fewer
        event = fields[2]
        run_pct = fields[4] if len(fields) > 4 else ""
    event = event.strip()
    raw = fields[0].strip()
    if not event or not raw:
        return None  # metric-only continuation line
    status = _STATUS.get(raw, "ok")
    value = None
    if status == "ok":
        value = _float(raw)
        if value is None:
            return None  # not a counter line (a warning that happens to contain commas)
    pct = _float(run_pct.strip().rstrip("%")) if run_pct.strip() else None
    return Counter(event=event, value=value, unit=fields[1].strip(), run_pct=pct, status=status)


def _run_time(line: str) -> float | None:
    fields = line.split(",")
    if len(fields) >= 7:
        return _float(fields[3 + len(fields) - 7].strip())
    return _float(fields[3].strip()) if len(fields) > 3 else None


def _combine(event: str, parts: list[tuple[Counter, float | None]]) -> Counter:
    """One counter from several that count the same thing on disjoint CPUs (hybrid core types).

    perf scales each part to the whole measurement (value / share of time it ran), and the
    parts share the enabled time, so the combined estimate is the run-time-weighted mean of the
    scaled values, and the combined share is the sum of the shares (100 when the task was always
    counted on one core type or another).
    """
    ok = [(c, rt) for c, rt in parts if c.status == "ok"]
    if not ok:
        status = "not-counted" if any(c.status == "not-counted" for c, _ in parts) else "not-supported"
        return Counter(event, None, parts[0][0].unit, None, status)
    use_rt = all(rt is not None for _, rt in ok) and sum(rt for _, rt in ok) > 0
    weights = [rt if use_rt else (c.run_pct or 0.0) for c, rt in ok]
    total = sum(weights)
    if total > 0:
        value = sum(c.value * w for (c, _), w in zip(ok, weights)) / total
    else:
        value = sum(c.value for c, _ in ok)
    pcts = [c.run_pct for c, _ in ok]
    pct = None
    if all(p is not None for p in pcts):
        pct = sum(pcts)
        if pct > 100.0 - 0.005 * len(pcts) - 1e-9:  # each share is rounded to 0.01
            pct = 100.0
    return Counter(event, value, ok[0][0].unit, pct, "ok")


def parse_perf_csv(text: str) -> dict[str, Counter]:
    """Parse ``perf stat -x,`` output into {event name: Counter}.

    Keys are the event names exactly as perf printed them (``cycles:u``, ``cpu_core/cycles/``).
    The plain name (modifiers and hybrid PMU prefix removed, see `plain_event_name`) is added as
    a further key when perf did not print it itself:

    * one printed name maps to it (``cycles:u``): the plain key is the same Counter (its
      ``event`` still says what perf printed);
    * several names differing only in PMU (``cpu_core/cycles/`` + ``cpu_atom/cycles/``): the
      plain key is their combination, ``event`` = the plain name (see `_combine`);
    * several names with different modifiers (``cycles:u`` + ``cycles:k``): no plain key, since
      picking one would be a guess.

    Comment lines (``#``, e.g. "# started on ...") and blank lines are skipped, and so are
    metric-only lines. ``<not counted>``/``<not supported>`` give value None and that status.
    """
    printed: dict[str, Counter] = {}
    run_times: dict[str, float | None] = {}
    order: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        c = _parse_line(s)
        if c is None:
            continue
        if c.event in printed:  # the same name twice: combine like hybrid parts
            prev = printed[c.event]
            printed[c.event] = _combine(c.event, [(prev, run_times[c.event]), (c, _run_time(s))])
            run_times[c.event] = None
            continue
        printed[c.event] = c
        run_times[c.event] = _run_time(s)
        order.append(c.event)

    out = dict(printed)
    groups: dict[str, list[str]] = {}
    for name in order:
        plain = plain_event_name(name)
        if plain != name:
            groups.setdefault(plain, []).append(name)
    for plain, names in groups.items():
        if plain in printed:
            continue
        if len(names) == 1:
            out[plain] = printed[names[0]]
            continue
        modifiers = {_modifier_part(n) for n in names}
        if len(modifiers) != 1:
            continue  # cycles:u and cycles:k: different things, no single plain value
        out[plain] = _combine(plain, [(printed[n], run_times[n]) for n in names])
    return out


def _modifier_part(printed: str) -> str:
    m = _PMU_EVENT.match(printed)
    if m:
        inner_mod = _MODIFIERS.search(m.group(2))
        return (inner_mod.group(0) if inner_mod else "") + ":" + m.group(3)
    mod = _MODIFIERS.search(printed)
    return mod.group(0) if mod else ""


# ---------------------------------------------------------------------------------------------
# metrics

_COUNT_METRICS = {
    "cycles": "cycles",
    "instructions": "instructions",
    "branch_misses": "branch-misses",
    "cache_misses": "cache-misses",
    "context_switches": "context-switches",
    "cpu_migrations": "cpu-migrations",
    "page_faults": "page-faults",
}
_TIME_UNITS = {"s": 1.0, "sec": 1.0, "msec": 1e-3, "ms": 1e-3, "usec": 1e-6, "us": 1e-6, "nsec": 1e-9, "ns": 1e-9}


def _seconds(c: Counter | None, default_unit: str) -> float | None:
    if c is None or c.status != "ok" or c.value is None:
        return None
    return c.value * _TIME_UNITS.get(c.unit or default_unit, _TIME_UNITS[default_unit])


def _duration_plausible(duration_s: float | None, task_clock_s: float | None) -> bool:
    """False when duration_time is provably too short: less wall time than CPU time / CPUs.

    perf 6.1 starts its duration_time clock only after it has released the workload, so when
    perf is descheduled right then (seen on a 2-vCPU VM in ~5% of runs of a 6 ms program) the
    clock starts late and duration_time comes out short, down to a microsecond for /bin/true.
    Only the impossible cases can be caught here; a late start of a fraction of the run cannot.
    """
    if duration_s is None or task_clock_s is None:
        return True
    return duration_s * (os.cpu_count() or 1) >= task_clock_s


def sample_metrics(counters: dict[str, Counter]) -> tuple[dict[str, float | None], bool]:
    """The sample's metrics from parsed counters, and whether any counter was multiplexed.

    Metrics: cycles, instructions, branch_misses, cache_misses, task_clock_s, context_switches,
    cpu_migrations, page_faults, duration_s (None when not measured, or when it is impossibly
    short next to task_clock_s: see `_duration_plausible`). multiplexed is True when
    an ok counter ran < 100% of the time; for hybrid CPUs the combined plain-name counter is
    judged, not the per-core-type parts (a part running 0.43% of the time only means the task
    sat on the other core type).
    """
    metrics: dict[str, float | None] = {}
    for metric, event in _COUNT_METRICS.items():
        c = counters.get(event)
        metrics[metric] = c.value if c is not None and c.status == "ok" else None
    metrics["task_clock_s"] = _seconds(counters.get("task-clock"), "msec")
    metrics["duration_s"] = _seconds(counters.get(DURATION_EVENT), "ns")
    if not _duration_plausible(metrics["duration_s"], metrics["task_clock_s"]):
        metrics["duration_s"] = None  # impossible (perf started its clock late): not recorded

    by_plain: dict[str, list[str]] = {}
    for key in counters:
        by_plain.setdefault(plain_event_name(key), []).append(key)
    multiplexed = False
    for plain, keys in by_plain.items():
        judged = [counters[plain]] if plain in counters else [counters[k] for k in keys]
        for c in judged:
            if c.status == "ok" and c.run_pct is not None and c.run_pct < 100.0:
                multiplexed = True
    return metrics, multiplexed


# ---------------------------------------------------------------------------------------------
# cachegrind

_SUMMARY = re.compile(r"^summary:\s+(\d+)", re.MULTILINE)


def cachegrind_instructions(argv: list[str], *, env: dict[str, str], cwd: Path | None, timeout: float,
                            out_dir: Path) -> int:
    """Instructions executed by one run of argv under cachegrind (Ir): a change detector.

    ``valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=<out_dir/...> -- argv``;
    deterministic for the same binary, input, environment and cwd (both shift the count a
    little: /bin/true gave 110121 in /tmp and 110135 in /work/main), not a speed. Only the first process is counted (no
    --trace-children). Raises FlagsweepError with the stderr tail when valgrind is missing or
    fails, the program exits nonzero, or no summary is written.
    """
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise FlagsweepError("valgrind not installed (needed for instruction counts): apt-get install valgrind")
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="cachegrind.", suffix=".out", dir=out_dir)
    os.close(fd)
    out_file = Path(name)
    cmd = [valgrind, "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out_file}", "--", *argv]
    try:
        res = process.run(cmd, env=env, cwd=cwd, timeout=timeout, guard=True)
    except process.TimeoutExpired:
        raise FlagsweepError(f"cachegrind run of {argv[0]} timed out after {timeout:g} s") from None
    except OSError as exc:
        raise FlagsweepError(f"cannot run valgrind for {argv[0]}: {exc}") from None
    if not res.ok:
        raise FlagsweepError(f"cachegrind run of {' '.join(argv)} failed (exit {res.returncode}):\n{res.tail()}")
    try:
        m = _SUMMARY.search(out_file.read_text(errors="replace"))
    except OSError:
        m = None
    if m is None:
        raise FlagsweepError(f"cachegrind wrote no summary to {out_file} for {argv[0]}:\n{res.tail()}")
    return int(m.group(1))


# ---------------------------------------------------------------------------------------------
# terminal


def counters_available_text(pre: Preflight) -> str:
    """One line for the terminal, e.g.
    'counters: software events only (task-clock, ...): no PMU (virtual machine?)'."""
    why = pre.reasons[0].split(": ", 1)[0] if pre.reasons else ""
    if pre.mode == "hardware":
        text = f"counters: hardware ({', '.join(pre.events)})"
    elif pre.mode == "software":
        text = f"counters: software events only ({', '.join(pre.events)})"
    else:
        text = "counters: none, wall time only"
    return f"{text}: {why}" if why else text
