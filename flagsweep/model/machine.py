"""The machine a sweep ran on: its CPU, kernel and settings, the CPU the sweep measured on,
the compilers and a distribution's flags (host, compilation).
"""

from __future__ import annotations

from flagsweep.model.values import Bool, Num, Record, Str


class CpuLoad(Record):
    """One CPU as the choice saw it over its window (host.load)."""
    cpu: Num
    idle_pct: Num = None                     # null: not measured
    runnable: Num = None                     # tasks running or waiting there at the window's end
    pinned: Num = None                       # user tasks whose affinity is this CPU alone
    isolated: Bool | None = None
    held_by: Str | None = None               # the other sweep holding it, null when free


class CpuChoice(Record):
    """Which CPU the sweep measured on and why (host.placement)."""
    cpu: Num
    how: Str                                 # given (--cpu) | isolated | quietest
    why: Str                                 # the line the sweep printed
    window_s: Num = None                     # the load window; null when --cpu gave the CPU
    cost_s: Num = None                       # what the choice took, the window included
    cpus: list[CpuLoad] | None = None


class Environment(Record):
    """The software a sweep ran in beside the kernel and the microcode (host.image): what can
    move a nightly series without the program or a compiler changing. Untrusted text, kept
    printable and short."""
    distro_id: Str | None = None             # os-release ID (debian, ubuntu)
    distro_version: Str | None = None        # os-release VERSION_ID
    distro: Str | None = None                # os-release PRETTY_NAME
    ci: Str | None = None                    # github | gitlab; null: not in CI
    image: Str | None = None                 # GitHub ImageOS ImageVersion; GitLab CI_JOB_IMAGE
    runner: Str | None = None                # the runner's kind, OS and arch, or its version


class Machine(Record):
    hostname: Str | None = None
    cpu_model: Str | None = None
    cpu_flags: list[Str] | None = None
    march_native: Str | None = None
    isa_levels: list[Str] | None = None
    kernel: Str | None = None
    hypervisor: Bool | None = None
    governor: Str | None = None
    aslr: Num = None
    perf_event_paranoid: Num = None
    hw_counters: Bool | None = None
    pinned_cpu: Num = None
    cpu_choice: CpuChoice | None = None
    # The rest of host.system.machine_state: what decides how noisy timings are.
    march_native_by_compiler: dict[str, Str | None] | None = None
    vendor: Str | None = None
    family: Str | None = None                 # strings as /proc/cpuinfo has them
    model: Str | None = None
    stepping: Str | None = None
    microcode: Str | None = None
    boost: Bool | None = None                 # turbo boost; null: not exposed
    isolated_cpus: list[Num] | None = None
    nohz_full: list[Num] | None = None
    cpu_count: Num = None
    smt: Bool | None = None                   # null: the kernel does not say
    load_avg: list[Num] | None = None
    nmi_watchdog: Num = None
    python: Str | None = None
    environment: Environment | None = None    # null: recorded before flagsweep read it


class Compiler(Record):
    name: Str
    path: Str | None = None
    version: Str | None = None


class Distro(Record):
    name: Str
    source: Str                              # how the flags were read (dpkg-buildflags ...)
    flags: list[Str]                         # what every variant starts from
    parts: dict[str, list[Str]] | None = None    # each variable as read (CPPFLAGS, CFLAGS, ...)
