"""What this CPU is and which -march values it can execute.

A variant built with -march=X only means something if it runs here: code for a CPU level this
machine lacks dies with SIGILL, or worse, only in the code path that uses the missing
instruction. So before a sweep flagsweep asks the compiler which ISA feature macros -march=X
turns on (__AVX2__, __AVX512F__, ...), translates each into the flag Linux prints in
/proc/cpuinfo for that feature, and checks the flags against this CPU.

The check is deliberately strict: a macro means the compiler may use (or the program may call
intrinsics for) those instructions, so every one must be backed by a cpuinfo flag. Macros the
table does not know are not guessed at; `unchecked_macros` lists them so a report can say what
was not verified.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from flagsweep import process
from flagsweep.errors import ConfigError
from flagsweep.host import environment, native, recorded

log = logging.getLogger("flagsweep.host.cpu")

CPUINFO = Path("/proc/cpuinfo")

# Compiler feature macro -> the /proc/cpuinfo flag for the same CPUID bit. The cpuinfo names
# are the quoted names in the Linux kernel's arch/x86/include/asm/cpufeatures.h. Order matters
# only for messages: older, more basic features first.
MACRO_FLAGS: dict[str, str] = {
    # x86-64 baseline
    "__MMX__": "mmx",
    "__SSE__": "sse",
    "__SSE2__": "sse2",
    "__FXSR__": "fxsr",
    # x86-64-v2
    "__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16": "cx16",  # gcc and clang: CMPXCHG16B usable
    "__LAHF_SAHF__": "lahf_lm",
    "__POPCNT__": "popcnt",
    "__SSE3__": "pni",  # "Prescott New Instructions", the kernel's name for SSE3
    "__SSSE3__": "ssse3",
    "__SSE4_1__": "sse4_1",
    "__SSE4_2__": "sse4_2",
    "__CRC32__": "sse4_2",  # the CRC32 instruction is part of SSE4.2
    # x86-64-v3
    "__AVX__": "avx",
    "__AVX2__": "avx2",
    "__BMI__": "bmi1",
    "__BMI2__": "bmi2",
    "__F16C__": "f16c",
    "__FMA__": "fma",
    "__LZCNT__": "abm",  # CPUID 0x80000001 ECX bit 5, "ABM" on AMD, "LZCNT" on Intel
    "__ABM__": "abm",
    "__MOVBE__": "movbe",
    "__XSAVE__": "xsave",
    # x86-64-v4 and the rest of AVX-512
    "__AVX512F__": "avx512f",
    "__AVX512BW__": "avx512bw",
    "__AVX512CD__": "avx512cd",
    "__AVX512DQ__": "avx512dq",
    "__AVX512VL__": "avx512vl",
    "__AVX512IFMA__": "avx512ifma",
    "__AVX512VBMI__": "avx512vbmi",
    "__AVX512VBMI2__": "avx512_vbmi2",
    "__AVX512VNNI__": "avx512_vnni",
    "__AVX512BITALG__": "avx512_bitalg",
    "__AVX512VPOPCNTDQ__": "avx512_vpopcntdq",
    "__AVX512BF16__": "avx512_bf16",
    "__AVX512FP16__": "avx512_fp16",
    "__AVX512VP2INTERSECT__": "avx512_vp2intersect",
    "__AVX512ER__": "avx512er",  # Xeon Phi (knl, knm)
    "__AVX512PF__": "avx512pf",
    "__AVX5124FMAPS__": "avx512_4fmaps",
    "__AVX5124VNNIW__": "avx512_4vnniw",
    "__AVXVNNI__": "avx_vnni",
    # AMX: gcc spells the macros __AMX_TILE__, clang 14 __AMXTILE__
    "__AMX_TILE__": "amx_tile",
    "__AMXTILE__": "amx_tile",
    "__AMX_INT8__": "amx_int8",
    "__AMXINT8__": "amx_int8",
    "__AMX_BF16__": "amx_bf16",
    "__AMXBF16__": "amx_bf16",
    # crypto, random numbers, arithmetic
    "__AES__": "aes",
    "__PCLMUL__": "pclmulqdq",
    "__VAES__": "vaes",
    "__VPCLMULQDQ__": "vpclmulqdq",
    "__GFNI__": "gfni",
    "__SHA__": "sha_ni",
    "__RDRND__": "rdrand",
    "__RDSEED__": "rdseed",
    "__ADX__": "adx",
    # state saving
    "__XSAVEOPT__": "xsaveopt",
    "__XSAVEC__": "xsavec",
    "__XSAVES__": "xsaves",
    "__FSGSBASE__": "fsgsbase",
    # cache and memory
    "__CLFLUSHOPT__": "clflushopt",
    "__CLWB__": "clwb",
    "__CLDEMOTE__": "cldemote",
    "__MOVDIRI__": "movdiri",
    "__MOVDIR64B__": "movdir64b",
    "__PRFCHW__": "3dnowprefetch",  # PREFETCHW: CPUID 0x80000001 ECX bit 8, "3DNowPrefetch"
    "__WBNOINVD__": "wbnoinvd",
    "__CLZERO__": "clzero",
    "__MWAITX__": "mwaitx",
    "__WAITPKG__": "waitpkg",
    # transactional memory, serialisation, system
    "__RTM__": "rtm",
    "__HLE__": "hle",
    "__TSXLDTRK__": "tsxldtrk",
    "__SERIALIZE__": "serialize",
    "__RDPID__": "rdpid",
    "__RDPRU__": "rdpru",
    # RDPKRU/WRPKRU fault unless the OS set CR4.PKE; "ospke" says it did ("pku" only that the
    # CPU could).
    "__PKU__": "ospke",
    "__SGX__": "sgx",
    "__PCONFIG__": "pconfig",
    "__ENQCMD__": "enqcmd",
    "__INVPCID__": "invpcid",
    # AMD only
    "__SSE4A__": "sse4a",
    "__FMA4__": "fma4",
    "__XOP__": "xop",
    "__TBM__": "tbm",
    "__LWP__": "lwp",
    "__3dNOW__": "3dnow",
    "__3dNOW_A__": "3dnowext",
}

# Feature macros deliberately left out of MACRO_FLAGS: the kernel does not print a cpuinfo
# flag for them (AMX_FP16, AVX-IFMA, CMPCCXADD, SHA512, SM3, SM4, PREFETCHWT1, Key Locker,
# PTWRITE, HRESET, UINTR), or its flag means something else (for SHSTK it prints only
# "user_shstk": OS support for user shadow stacks, not the instructions). They are reported
# by `unchecked_macros`, never guessed at; this set documents that the omission is on purpose.
NO_CPUINFO_FLAG = frozenset({
    "__AMX_FP16__", "__AVXIFMA__", "__CMPCCXADD__", "__SHA512__", "__SM3__", "__SM4__",
    "__PREFETCHWT1__", "__KL__", "__WIDEKL__", "__PTWRITE__", "__HRESET__", "__UINTR__",
    "__SHSTK__",
})

# The x86-64 micro-architecture levels, as cpuinfo flags, from the x86-64 psABI
# (System V Application Binary Interface, AMD64 Architecture Processor Supplement, chapter
# "Low Level System Information", table "Micro-Architecture Levels";
# https://gitlab.com/x86-psABIs/x86-64-ABI). Each level includes the ones before it.
# The psABI's OSFXSR and OSXSAVE have no cpuinfo flag of their own (the kernel hides
# X86_FEATURE_OSXSAVE and drops "xsave" when it does not enable XSAVE), so "fxsr" and "xsave"
# stand for them; LZCNT is "abm" and SSE3 is "pni" in cpuinfo.
_BASELINE = ("lm", "cmov", "cx8", "fpu", "fxsr", "mmx", "syscall", "sse", "sse2")
_V2 = _BASELINE + ("cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3")
_V3 = _V2 + ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")
_V4 = _V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
LEVELS: dict[str, tuple[str, ...]] = {
    "x86-64": _BASELINE,
    "x86-64-v2": _V2,
    "x86-64-v3": _V3,
    "x86-64-v4": _V4,
}

# What a feature macro looks like: x86 compilers spell them __AVX2__ (and gcc/clang
# __3dNOW__), Arm compilers __ARM_FEATURE_SVE. Lower-case macros (__code_model_small__,
# __tune_haswell__) and ones without the trailing underscores (__SEG_FS) never are.
_FEATURE_SHAPE = re.compile(r"__(?:[0-9A-Z][0-9A-Za-z_]*__|ARM_FEATURE_[0-9A-Z_]+)")
_DEFINE = re.compile(r"#define (\S+) (.*)")


@dataclass(frozen=True)
class Host:
    cpu_model: str  # "model name" from /proc/cpuinfo
    vendor: str  # vendor_id, e.g. "GenuineIntel"
    family: str
    model: str
    stepping: str
    microcode: str  # strings as in /proc/cpuinfo ("" when absent)
    flags: tuple[str, ...]  # the cpuinfo "flags" of the first processor, sorted
    hypervisor: bool  # "hypervisor" in flags
    isa_levels: tuple[str, ...]  # every x86-64 level whose required flags are all present


@dataclass(frozen=True)
class Runnable:
    ok: bool
    missing: tuple[str, ...]  # cpuinfo flags the code would need that this CPU lacks
    reason: str  # why not; when ok, a note on intrinsic-only features this CPU lacks (or "")


# Host field -> cpuinfo keys to try, x86 name first, then the aarch64 equivalent, so a machine
# block from an Arm host still says what it ran on.
_FIELDS = {
    "cpu_model": ("model name",),
    "vendor": ("vendor_id", "CPU implementer"),
    "family": ("cpu family", "CPU architecture"),
    "model": ("model", "CPU part"),
    "stepping": ("stepping", "CPU revision"),
    "microcode": ("microcode",),
}


def read_host(cpuinfo: str | None = None) -> Host:
    """Parse /proc/cpuinfo (or the given text, for tests).

    Only the first processor is read: flagsweep assumes a homogeneous machine. x86 lists its
    features under "flags"; Arm under "Features", which are kept as flags, but x86-64 levels
    are only worked out from a real x86 "flags" line (isa_levels is () elsewhere).
    """
    if cpuinfo is None:
        recording = recorded.active()
        cpuinfo = (recording.text("cpuinfo.txt") if recording
                   else CPUINFO.read_text(errors="replace"))
    fields = _first_processor(cpuinfo)
    flags = tuple(sorted(set((fields.get("flags") or fields.get("Features", "")).split())))
    values = {name: next((fields[k] for k in keys if k in fields), "")
              for name, keys in _FIELDS.items()}
    return Host(
        **values,
        flags=flags,
        hypervisor="hypervisor" in flags,
        isa_levels=isa_levels(flags) if "flags" in fields else (),
    )


def host_from_machine(machine: dict) -> Host:
    """The CPU a results.json's machine block describes (merge and pick judge other machines)."""
    flags = tuple(sorted(machine.get("cpu_flags") or ()))
    return Host(**{name: str(machine.get(name) or "") for name in _FIELDS}, flags=flags,
                hypervisor=bool(machine.get("hypervisor")), isa_levels=isa_levels(flags))


def host_of_level(level: str) -> Host:
    """The least CPU of an x86-64 level: exactly the flags the level requires."""
    if level not in LEVELS:
        raise ConfigError(f"unknown x86-64 level {level!r}; expected one of {', '.join(LEVELS)}")
    flags = tuple(sorted(LEVELS[level]))
    return Host(cpu_model=f"any {level} CPU", vendor="", family="", model="", stepping="",
                microcode="", flags=flags, hypervisor=False, isa_levels=isa_levels(flags))


def _first_processor(cpuinfo: str) -> dict[str, str]:
    """The "key : value" pairs up to the second "processor" entry (first occurrence wins)."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or not key:
            continue
        if key == "processor" and key in fields:
            break
        fields.setdefault(key, value.strip())
    return fields


def isa_levels(flags: tuple[str, ...] | frozenset[str]) -> tuple[str, ...]:
    """The x86-64 levels (in order) whose psABI-required flags are all among `flags`."""
    have = set(flags)
    return tuple(level for level, needed in LEVELS.items() if have.issuperset(needed))


def march_native(compiler: str = "gcc") -> str | None:
    """What -march=native resolves to for that compiler, or None (the reason is logged).

    On a recorded host ($FLAGSWEEP_HOST) gcc's answer is the recorded listing; clang's driver
    output is not recorded, so its answer there is None.
    """
    recording = recorded.active()
    if recording is None:
        return _live_march_native(compiler)
    if _is_clang(compiler):
        return None
    return recorded.march_value(recording.text("gcc-march-native-help-target.txt"))


@functools.lru_cache(maxsize=None)
def _live_march_native(compiler: str) -> str | None:
    """What -march=native resolves to on this machine.

    gcc reports it in `-Q --help=target`; clang has no such listing, but its driver passes
    the resolved CPU to cc1 as "-target-cpu", which `-###` prints without running anything.
    """
    try:
        if _is_clang(compiler):
            return _clang_native(compiler)
        return _gcc_native(compiler)
    except FileNotFoundError:
        log.warning("cannot resolve -march=native: compiler %r not found", compiler)
        return None


def _is_clang(compiler: str) -> bool:
    """Whether the compiler is clang (including a `cc` or `c++` that is really clang)."""
    if "clang" in os.path.basename(compiler):
        return True
    result = process.run([compiler, "--version"], env=environment.clean())
    return "clang" in result.stdout.lower()


def _gcc_native(compiler: str) -> str | None:
    result = process.run([compiler, "-march=native", "-Q", "--help=target"], env=environment.clean())
    for line in result.stdout.splitlines():
        parts = line.split()
        # the setting line is "-march=  <value>"; the later "Known valid arguments for
        # -march= option:" line does not start with -march=
        if len(parts) == 2 and parts[0] == "-march=":
            return parts[1]
    log.warning("%s -march=native -Q --help=target printed no -march= value: %s",
                compiler, result.tail(3) or "(no output)")
    return None


def _clang_native(compiler: str) -> str | None:
    result = process.run([compiler, "-march=native", "-###", "-c", "-x", "c", os.devnull],
                         env=environment.clean())
    found = re.search(r'"-target-cpu" "([^"]+)"', result.stderr)
    if found:
        return found.group(1)
    log.warning("%s -march=native -### printed no -target-cpu: %s",
                compiler, result.tail(3) or "(no output)")
    return None


def isa_macros(compiler: str, march: str) -> frozenset[str]:
    """The ISA feature macros (__AVX2__, __SSE4_2__, ...) the compiler defines for -march=march."""
    return isa_macros_for(compiler, (f"-march={march}",))


def isa_macros_for(compiler: str, options: tuple[str, ...]) -> frozenset[str]:
    """The ISA feature macros the compiler defines with these target options (-march, -mavx2...).

    -march=native means the host's CPU: on a recorded host ($FLAGSWEEP_HOST) gcc is asked about
    the options its driver expanded -march=native to there, and clang's recorded macros stand
    for it (with those of the other options added).
    """
    recording = recorded.active()
    if recording is None or "-march=native" not in options:
        return _live_isa_macros(compiler, options)
    if not _is_clang(compiler):
        return _live_isa_macros(compiler, target_options(compiler, options))
    others = tuple(option for option in options if option != "-march=native")
    defined = _macros_of(recording.native_macros("clang"))
    if others:
        defined |= _macros_set_to_one(compiler, others)
    return _feature_macros(compiler, defined)


def target_options(compiler: str, options: tuple[str, ...]) -> tuple[str, ...]:
    """The options with -march=native spelled out as the recorded host's gcc driver did
    ($FLAGSWEEP_HOST), so the local gcc compiles for that CPU; unchanged on the live machine
    and for clang, whose driver expansion is not recorded."""
    recording = recorded.active()
    if recording is None or "-march=native" not in options or _is_clang(compiler):
        return options
    expanded = recording.gcc_native_options()
    return tuple(word for option in options
                 for word in (expanded if option == "-march=native" else (option,)))


@functools.lru_cache(maxsize=None)
def _live_isa_macros(compiler: str, options: tuple[str, ...]) -> frozenset[str]:
    """The ISA feature macros the local compiler defines with these target options.

    A macro counts when the table knows it, or when it has the feature shape, is defined to 1,
    does not describe a C type (__FLT16_HAS_DENORM__ appears once a -march enables _Float16),
    and is absent when the compiler runs without any option. That last test is the rule that
    keeps out __STDC__, __ELF__, __SSE_MATH__, __SSE2_MATH__, __MMX_WITH_SSE__ and the like:
    they describe the language or how the compiler uses SSE, and the options did not add them.
    Raises ConfigError when the compiler rejects an option or does not exist.
    """
    return _feature_macros(compiler, _macros_set_to_one(compiler, options))


def _feature_macros(compiler: str, defined: frozenset[str]) -> frozenset[str]:
    """The ISA feature macros among `defined` (see `_live_isa_macros` for the rule)."""
    added = defined - _macros_set_to_one(compiler, ())
    feature_like = {m for m in added if _FEATURE_SHAPE.fullmatch(m) and "_HAS_" not in m}
    return frozenset({m for m in defined if m in MACRO_FLAGS} | feature_like)


@functools.lru_cache(maxsize=None)
def _macros_set_to_one(compiler: str, options: tuple[str, ...]) -> frozenset[str]:
    """Names of the macros the compiler predefines as 1 with these options."""
    argv = [compiler, *options, "-dM", "-E", "-x", "c", os.devnull]
    what = " ".join(options) or "its defaults"
    try:
        result = process.run(argv, input="", env=environment.clean())
    except FileNotFoundError:
        raise ConfigError(f"compiler {compiler!r} not found (needed to check {what})") from None
    if not result.ok:
        raise ConfigError(f"{compiler} rejects {what}: {_error_line(result)}")
    return _macros_of(result.stdout)


def _macros_of(listing: str) -> frozenset[str]:
    """Names of the macros a `-dM -E` listing defines as 1."""
    matches = (_DEFINE.match(line) for line in listing.splitlines())
    return frozenset(m.group(1) for m in matches if m and m.group(2).strip() == "1")


def _error_line(result: process.Result) -> str:
    """The compiler's first "error" line (gcc follows it with a page of valid -march values)."""
    lines = (result.stderr or result.stdout).splitlines()
    return next((line.strip() for line in lines if "error" in line), result.tail(1))


def unchecked_macros(compiler: str, march: str) -> tuple[str, ...]:
    """ISA feature macros for -march=march that have no cpuinfo mapping, sorted.

    These are what `can_run` could not verify; a report should show them rather than let
    "runnable" sound more certain than it is.
    """
    return tuple(sorted(m for m in isa_macros(compiler, march) if m not in MACRO_FLAGS))


# Features that compilers never use on their own: their instructions are only reachable through
# intrinsics or inline assembly (gcc and clang have no pattern that emits them from plain C), so
# code built with them enabled runs on a CPU without them as long as the program itself does not
# call those intrinsics; their absence is reported, not disqualifying. Grouped by why:
# - random numbers (RDRAND, RDSEED): a program asks for them. Kernels hide them on CPUs with
#   broken implementations (AMD's Zen 5 RDSEED erratum) while CPUID still reports them, so
#   gcc's -march=native enables -mrdseed there; a strict check would drop -march=native.
# - OS or firmware state (SGX enclaves, PCONFIG, protection keys, ENQCMD, user wait, FSGSBASE,
#   INVPCID, PTWRITE, LWP): need the OS to enable them, and hypervisors often hide them (this
#   project's own CI VM reports a Rocket Lake without pku/sgx).
# - cache, memory-ordering and transaction instructions (CLFLUSHOPT, CLWB, CLDEMOTE, MOVDIRI,
#   MOVDIR64B, WBNOINVD, CLZERO, MONITORX, SERIALIZE, TSXLDTRK, RTM, HLE) and RDPID/RDPRU.
# - XSAVEOPT/XSAVEC/XSAVES: state saving for context switches and the dynamic linker.
# - AVX512_VP2INTERSECT: only the VP2INTERSECT intrinsics; no vectoriser pattern uses it.
# Everything else a kernel does not list is in doubt, and `can_run_flags` answers by a probe.
INTRINSIC_ONLY = frozenset({
    "rdrand", "rdseed",
    "sgx", "pconfig", "ospke", "pku", "enqcmd", "waitpkg", "fsgsbase", "invpcid", "lwp",
    "clflushopt", "clwb", "cldemote", "movdiri", "movdir64b", "wbnoinvd", "clzero", "mwaitx",
    "serialize", "tsxldtrk", "rtm", "hle", "rdpid", "rdpru",
    "xsaveopt", "xsavec", "xsaves",
    "avx512_vp2intersect",
})

# How `can_run_flags` settles a doubt: (compiler, target options) -> True when a probe built
# with them ran here, False when it died of SIGILL, None when it could not tell.
Probe = Callable[[str, tuple[str, ...]], "bool | None"]


def can_run(march: str, compiler: str = "gcc", host: Host | None = None) -> Runnable:
    """Whether this CPU executes code built with -march=march by that compiler.

    Every ISA macro the compiler defines for it must map to a flag the CPU has. "native" is
    always runnable. Unmapped macros are ignored (see `unchecked_macros`); so for a non-x86
    compiler, whose macros are all unmapped, the answer is ok=True with nothing verified.
    Raises ConfigError when the compiler rejects the -march value.
    """
    if march == "native":
        return Runnable(ok=True, missing=(), reason="")
    return can_run_flags((f"-march={march}",), compiler, host)


def can_run_flags(flags: tuple[str, ...], compiler: str = "gcc",
                  host: Host | None = None, probe: Probe | None = None) -> Runnable:
    """Whether this CPU executes code built with these flags: all their target options count.

    -march=native -mavx512f asks for more than the host has, and -march=x86-64-v4
    -march=x86-64 for less than its first -march says, so the compiler is asked about the whole
    set of -m options (the last -march wins, as the compiler decides) rather than one -march.

    A feature the compiler may emit that cpuinfo lacks, but that the compiler's own -march=native
    turns on (CPUID says yes, the kernel does not list it), is in doubt: `probe` builds a small
    program with the options and runs it, and SIGILL decides. Without a probe (the default for a
    given or recorded host: nothing can run on that CPU) the doubt counts as missing.
    """
    options = tuple(f for f in flags if f.startswith("-m"))
    if not options:
        return Runnable(ok=True, missing=(), reason="")
    if host is None:
        host = read_host()
        probe = probe if probe is not None or recorded.active() else native.probe_runs
    have = set(host.flags)
    lacking = [flag for flag in _needed_flags(isa_macros_for(compiler, options)) if flag not in have]
    missing = tuple(flag for flag in lacking if flag not in INTRINSIC_ONLY)
    what = " ".join(options)
    notes = []
    unused = [flag for flag in lacking if flag in INTRINSIC_ONLY]
    if unused:
        notes.append(f"{what} also enables {', '.join(unused)}, which this CPU lacks; "
                     "compilers emit those only for explicit intrinsics")
    doubted = _doubted(missing, compiler)
    if doubted and probe is not None:
        ran = probe(compiler, target_options(compiler, options))
        if ran:
            missing = tuple(flag for flag in missing if flag not in doubted)
            notes.append(f"cpuinfo does not list {', '.join(doubted)}, but a probe built with "
                         f"{what} ran here")
        elif ran is False:
            them = "it" if len(missing) == 1 else "them"
            return Runnable(ok=False, missing=missing,
                            reason=f"{what} needs {', '.join(missing)} (this CPU lacks {them}: "
                                   "a probe built with these flags died of SIGILL)")
    if not missing:
        return Runnable(ok=True, missing=(), reason="; ".join(notes))
    them = "it" if len(missing) == 1 else "them"
    return Runnable(ok=False, missing=missing,
                    reason=f"{what} needs {', '.join(missing)} (this CPU lacks {them})")


def _doubted(missing: tuple[str, ...], compiler: str) -> tuple[str, ...]:
    """The missing flags the compiler's -march=native turns on: CPUID reports them there."""
    if not missing:
        return ()
    try:
        claimed = set(_needed_flags(isa_macros_for(compiler, ("-march=native",))))
    except ConfigError:
        return ()
    return tuple(flag for flag in missing if flag in claimed)


def _needed_flags(macros: frozenset[str]) -> tuple[str, ...]:
    """The cpuinfo flags behind `macros`, once each, in table order (basic features first)."""
    return tuple(dict.fromkeys(flag for macro, flag in MACRO_FLAGS.items() if macro in macros))


@dataclass(frozen=True)
class LevelSupport:
    """Whether this CPU runs code built for one x86-64 level, and what it lacks for it."""
    level: str
    runnable: bool
    missing: list[str]


@dataclass(frozen=True)
class CpuSummary:
    """This CPU as `flagsweep cpus` shows it and results.json's machine block takes it."""
    cpu_model: str
    vendor: str
    family: str
    model: str
    stepping: str
    microcode: str
    cpu_flags: list[str]
    hypervisor: bool
    isa_levels: list[str]
    march_native: dict[str, str | None]      # compiler -> its -march=native (None: unknown)
    levels: list[LevelSupport]

    def dump(self) -> dict:
        """As JSON (`flagsweep cpus --json`)."""
        return asdict(self)


def describe(host: Host, compilers: list[str]) -> CpuSummary:
    """This CPU, with each compiler's -march=native and the x86-64 levels it runs.

    The level entries come from the psABI table, not from a compiler, so they are the same
    whichever compilers are installed.
    """
    have = set(host.flags)
    return CpuSummary(
        cpu_model=host.cpu_model,
        vendor=host.vendor,
        family=host.family,
        model=host.model,
        stepping=host.stepping,
        microcode=host.microcode,
        cpu_flags=list(host.flags),
        hypervisor=host.hypervisor,
        isa_levels=list(host.isa_levels),
        march_native={compiler: march_native(compiler) for compiler in compilers},
        levels=[
            LevelSupport(level=level, runnable=have.issuperset(needed),
                         missing=[flag for flag in needed if flag not in have])
            for level, needed in LEVELS.items()
        ],
    )
