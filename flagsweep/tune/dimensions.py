"""The dimensions a compiler offers a tune's search, each a choice among flag texts whose first
is "" (the base's own default):

- gcc's own list of optimisation switches (`gcc -Q --help=optimizers <base>`), each turned the
  other way from the base's default; a curated set of its valued options (the vectoriser's cost
  model, multiply-add contraction, the register allocator's algorithm and regions, block
  reordering), each at the values the same listing names other than the base's; a curated set
  of `--param`s with values around the defaults the same gcc reports (`-Q --help=params`);
- clang lists no optimisers: a curated list of its C code-generation switches, each turned the
  other way from the default its driver shows for the base (`-###`);
- the -march levels this CPU runs, then -march=native.

A switch is left out, with why, when flags.py refuses it, when it changes the ABI, the program's
meaning in ways an output check cannot be trusted to catch (overflow semantics, data races), or
the build's security hardening, when it needs profile files or a runtime, or when the compiler
ignores it here (its own warning says so). Fast-math pieces stay in: the output check judges them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flagsweep import process
from flagsweep.errors import ConfigError
from flagsweep.experiment.flags import refusal, split_flags
from flagsweep.host import cpu, environment, toolchain

MARCH = "march"
MARCH_LEVELS = ("x86-64-v2", "x86-64-v3", "x86-64-v4")
PROBE_TIMEOUT_S = 60.0
PROGRAM = "int main(void) { return 0; }\n"


@dataclass(frozen=True)
class Dimension:
    name: str                  # the switch as the compiler lists it, or a choice's name
    choices: tuple[str, ...]   # flag text of each choice; choices[0] == "" is the base's default



def is_switch(d: Dimension) -> bool:
    """An on/off switch: one choice beside the default, the switch itself or its negation
    (not a param's or a valued option's value)."""
    return len(d.choices) == 2 and d.choices[1] in (d.name, negation(d.name))


# --- gcc: its own list of optimisers ----------------------------------------------------------

# "  -fgcse      [enabled]": a switch and its state at the base. The "[available in C++]" lines
# (switches of other languages) and the valued options ("-falign-loops=  16:11:8") do not match.
OPTIMIZER_LINE = re.compile(r"^\s+(-f[A-Za-z0-9][A-Za-z0-9_+.-]*)\s+\[(enabled|disabled)\]\s*$")

ABI = "changes the ABI: the program could no longer call, or be called by, code built without it"
EXCEPTIONS = "exception handling and unwind tables: ABI and debuggability, not the speed of C code"
PROFILE = "acts only with profile feedback, whose files flagsweep names itself (build = \"pgo\")"
HARDENING = "security hardening: whether to have it is the build's decision, not a speed search's"
OVERFLOW = ("defines what signed or pointer overflow does: a program relying on either "
            "meaning breaks silently on inputs the output check does not cover")
# (prefix, why): the switches a speed search must not turn either way, beyond what flags.py
# refuses. Matched on the switch's -f spelling.
UNSEARCHED: tuple[tuple[str, str], ...] = (
    ("-fexceptions", EXCEPTIONS), ("-fnon-call-exceptions", EXCEPTIONS),
    ("-fdelete-dead-exceptions", EXCEPTIONS), ("-fasynchronous-unwind-tables", EXCEPTIONS),
    ("-funwind-tables", EXCEPTIONS),
    ("-fpic", "position independence follows the link mode the build chose (-pie, -no-pie)"),
    ("-fPIC", "position independence follows the link mode the build chose (-pie, -no-pie)"),
    ("-fpie", "position independence follows the link mode the build chose (-pie, -no-pie)"),
    ("-fPIE", "position independence follows the link mode the build chose (-pie, -no-pie)"),
    ("-fshort-enums", ABI), ("-fshort-wchar", ABI), ("-fpack-struct", ABI),
    ("-freg-struct-return", ABI), ("-fpcc-struct-return", ABI),
    ("-fsanitize", "instrumentation: checks the program and changes what it does on an error"),
    ("-finstrument", "instrumentation: calls hooks at every function entry and exit"),
    ("-fprofile", PROFILE), ("-fauto-profile", PROFILE), ("-fbranch-probabilities", PROFILE),
    ("-fvpt", PROFILE),
    ("-fsplit-stack", "split stacks need every library built for them, and a runtime"),
    ("-fstack-protector", HARDENING), ("-fstack-clash-protection", HARDENING),
    ("-fstack-check", HARDENING), ("-fharden-", HARDENING), ("-fcf-protection", HARDENING),
    ("-ftrapv", OVERFLOW), ("-fwrapv", OVERFLOW),
    ("-fallow-store-data-races", "may add data races to threaded code, which an output check "
                                 "of one run cannot be trusted to catch"),
    ("-fvar-tracking", "debug information only: changes no code"),
    ("-fopt-info", "prints optimisation notes: changes no code"),
    ("-fdevirtualize", "C++ virtual calls only: no effect on C"),
)

# Switches gcc lists but may ignore on this target or for C, each with the text of the warning
# that says so (-fdelayed-branch's warning does not name it). One compile with them all asks.
IGNORABLE = {"-fsection-anchors": "-fsection-anchors",
             "-fdelayed-branch": "delayed branches",
             "-funroll-completely-grow-size": "-funroll-completely-grow-size"}


def parse_optimizers(text: str) -> list[tuple[str, bool]]:
    """Each on/off switch of a `-Q --help=optimizers` listing, with whether the base enables it."""
    found = (OPTIMIZER_LINE.match(line) for line in text.splitlines())
    return [(m.group(1), m.group(2) == "enabled") for m in found if m]


def negation(switch: str) -> str:
    """-fX -> -fno-X, and -fno-X -> -fX."""
    if switch.startswith("-fno-"):
        return "-f" + switch.removeprefix("-fno-")
    return "-fno-" + switch.removeprefix("-f")


def switch_dimension(switch: str, enabled: bool) -> Dimension:
    """A switch off at the base can be turned on; one on can be turned off."""
    return Dimension(switch, ("", negation(switch) if enabled else switch))


def unsearched(switch: str) -> str | None:
    """Why a switch stays out of the search, or None."""
    positive = switch if not switch.startswith("-fno-") else negation(switch)
    for form in (positive, negation(positive)):
        if why := refusal(form):
            return f"flags.py refuses {form}: it {why}"
    return next((why for prefix, why in UNSEARCHED if positive.startswith(prefix)), None)


def switch_dimensions(listing: str, ignored: dict[str, str]) -> tuple[list[Dimension], list[str]]:
    """The dimensions of a `--help=optimizers` listing and the "flag: why" of those left out."""
    dims, excluded = [], []
    for switch, enabled in parse_optimizers(listing):
        why = unsearched(switch) or ignored.get(switch)
        if why:
            excluded.append(f"{switch}: {why}")
        else:
            dims.append(switch_dimension(switch, enabled))
    return dims, excluded


def gcc_dimensions(chain: toolchain.Toolchain, base: str) -> tuple[list[Dimension], list[str]]:
    """gcc's switches at the base, then the curated params."""
    words = split_flags(base)
    listing = ask(chain, ["-Q", "--help=optimizers", *words])
    dims, excluded = switch_dimensions(listing, _ignored(chain, words, listing))
    valued, unlisted = valued_dimensions(listing)
    params, skipped = param_dimensions(ask(chain, ["-Q", "--help=params", *words]))
    return dims + valued + params, excluded + unlisted + skipped


def ask(chain: toolchain.Toolchain, args: list[str]) -> str:
    """What the compiler prints for a listing option, in one language (the states are
    translated)."""
    out = _run(chain, args)
    if not out.ok:
        raise ConfigError(f"{chain.name} {' '.join(args)} failed (exit {out.returncode}): "
                          f"{out.tail(3)[:300]}")
    return out.stdout


def _run(chain: toolchain.Toolchain, args: list[str], program: str | None = None) -> process.Result:
    try:
        return process.run([chain.cc, *args], input=program, timeout=PROBE_TIMEOUT_S,
                           env=environment.clean())
    except process.TimeoutExpired:
        raise ConfigError(f"{chain.name} {' '.join(args)} did not finish in "
                          f"{PROBE_TIMEOUT_S:.0f} s") from None


def _ignored(chain: toolchain.Toolchain, base: tuple[str, ...], listing: str) -> dict[str, str]:
    """The IGNORABLE switches this gcc warns it ignores here: switch -> its warning."""
    listed = {s for s, _ in parse_optimizers(listing)} & set(IGNORABLE)
    if not listed:
        return {}
    out = _run(chain, [*base, *sorted(listed), "-x", "c", "-c", "-o", "/dev/null", "-"], PROGRAM)
    lines = (out.stderr or "").splitlines()
    found = {}
    for switch in listed:
        said = next((line for line in lines if IGNORABLE[switch] in line), None)
        if said is not None:
            found[switch] = f"{chain.name} ignores it here ({said.strip()[:160]})"
    return found


# --- gcc: the curated valued options ---------------------------------------------------------

# Options with a few named values, which the listing prints with the value at the base:
# "  -fvect-cost-model=[unlimited|dynamic|cheap|very-cheap]   very-cheap". The vectoriser's cost
# model is what separates gcc 12's -O2 vectorising from -O3's beyond the switches: -O2 keeps
# a vectorised loop only where it costs nothing (very-cheap), -O3 where the model expects a gain
# (dynamic; GCC 12 release notes, "-ftree-vectorize at -O2"). The others choose among
# algorithms of one pass each: contraction of a*b+c into fused multiply-adds (its results
# differ in the last bits: the output check judges them), the register allocator's colouring
# and regions, and basic-block reordering. Left out: options of hardening, ABI, threads or
# debugging that the listing also prints (-fstack-check, -ftrivial-auto-var-init,
# -fpack-struct, -ftree-parallelize-loops, -flive-patching), and x87-only -fexcess-precision.
VALUED = ("-fvect-cost-model", "-ffp-contract", "-fira-algorithm", "-fira-region",
          "-freorder-blocks-algorithm")
VALUED_LINE = re.compile(r"^\s+(-f[A-Za-z0-9-]+)=\[([A-Za-z0-9_|-]+)\]\s+(\S+)\s*$")


def parse_valued(text: str) -> dict[str, tuple[tuple[str, ...], str]]:
    """Each valued option of a `-Q --help=optimizers` listing: its values and the base's."""
    found = (VALUED_LINE.match(line) for line in text.splitlines())
    return {m.group(1): (tuple(m.group(2).split("|")), m.group(3)) for m in found if m}


def valued_dimensions(listing: str) -> tuple[list[Dimension], list[str]]:
    """The curated valued options, each at the values other than the base's; those this gcc
    does not list with a value at the base, with why."""
    options = parse_valued(listing)
    dims, skipped = [], []
    for name in VALUED:
        values, current = options.get(name, ((), ""))
        if current not in values:
            skipped.append(f"{name}=: this gcc does not list it with its value at the base")
        else:
            dims.append(Dimension(name, ("", *(f"{name}={v}" for v in values if v != current))))
    return dims, skipped


# --- gcc: the curated params ------------------------------------------------------------------

# The params flag-tuning work varies beside the switches, each given 2-3 values around this
# gcc's default. Unrolling, peeling and inlining limits: the parameters OpenTuner's gcc example
# tunes (Ansel et al., "OpenTuner: an extensible framework for program autotuning", PACT 2014),
# and the "inlining vector" (max-inline-insns-single/-auto, inline-unit-growth,
# large-function-insns/-growth, early-inlining-insns) that Cammarota et al. ("On the
# determination of inlining vectors for program optimization", CC 2013) found worth 2-9% over
# -O3 on SPEC CINT2006; Pérez Cáceres et al. ("Automatic configuration of GCC using irace",
# EA 2017) tuned gcc's switches and numeric params together, finding up to 40% over -O2/-O3.
# vect-epilogues-nomask: whether the vectoriser also vectorises a loop's remainder.
PARAMS = ("max-unroll-times", "max-unrolled-insns", "max-average-unrolled-insns",
          "max-completely-peeled-insns", "max-completely-peel-times", "max-peeled-insns",
          "max-inline-insns-auto", "max-inline-insns-single", "inline-unit-growth",
          "early-inlining-insns", "large-function-insns", "large-function-growth",
          "vect-epilogues-nomask")
# "  --param=max-unroll-times=   8" or "  --param=align-threshold=<1,65536>   100".
PARAM_LINE = re.compile(r"^\s+--param=([A-Za-z0-9_-]+)=(?:<(-?\d+),(-?\d+)>)?\s+(-?\d+)\s*$")
SCALES = (0.5, 2, 4)           # the values tried: half, twice and four times the default


@dataclass(frozen=True)
class Param:
    name: str
    default: int
    low: int | None            # the range gcc lists, when it lists one
    high: int | None


def parse_params(text: str) -> dict[str, Param]:
    """Each numeric param of a `-Q --help=params` listing, with its default at the base."""
    found = (PARAM_LINE.match(line) for line in text.splitlines())
    return {m.group(1): Param(m.group(1), int(m.group(4)),
                              None if m.group(2) is None else int(m.group(2)),
                              None if m.group(3) is None else int(m.group(3)))
            for m in found if m}


def param_values(p: Param) -> tuple[int, ...]:
    """Values around the default inside gcc's range: the other one of a 0/1 param, else
    SCALES times the default."""
    if (p.low, p.high) == (0, 1):
        return (1 - p.default,)
    low = 0 if p.low is None else p.low
    high = p.high
    values = (round(p.default * s) for s in SCALES)
    inside = (v for v in values if v >= low and (high is None or v <= high))
    return tuple(sorted(set(inside) - {p.default}))


def param_dimensions(listing: str) -> tuple[list[Dimension], list[str]]:
    """The curated params this gcc lists, and the "param: why" of those it does not."""
    params = parse_params(listing)
    dims, skipped = [], []
    for name in PARAMS:
        flag = f"--param={name}"
        p = params.get(name)
        if p is None:
            skipped.append(f"{flag}: this gcc does not list it")
        elif p.default <= 0 and (p.low, p.high) != (0, 1):
            skipped.append(f"{flag}: its default is {p.default}, with no scale to vary around")
        else:
            dims.append(Dimension(flag, ("", *(f"{flag}={v}" for v in param_values(p)))))
    return dims, skipped


# --- clang: a curated list --------------------------------------------------------------------

@dataclass(frozen=True)
class ClangSwitch:
    on: str                    # the switch's positive spelling
    default_on: str            # when the base enables it: "" never, "*" always, or a cc1
                               # argument of the driver's `-###` that shows it on, or "O>1"


# clang's C code-generation switches worth searching, each turned the other way from its default
# at the base. Left out: -mllvm options (flags.py refuses them: they load and write files),
# -ftrapping-math (off by default; turning it on only slows), and C++-only switches.
CLANG_SWITCHES = (
    ClangSwitch("-funroll-loops", "O>1"),           # cc1's default: optimisation level above 1
    ClangSwitch("-fvectorize", "-vectorize-loops"),
    ClangSwitch("-fslp-vectorize", "-vectorize-slp"),
    ClangSwitch("-finline-functions", "O>1"),
    ClangSwitch("-fomit-frame-pointer", "-mframe-pointer=none"),
    ClangSwitch("-fstrict-aliasing", "*"),
    ClangSwitch("-fmerge-all-constants", "-fmerge-all-constants"),
    ClangSwitch("-fplt", "*"),
    # -fno-: -fPIC code (a target's own shared libraries) may inline and call its own functions
    # directly; clang does not promise that by default.
    ClangSwitch("-fsemantic-interposition", "*"),
    ClangSwitch("-fjump-tables", "*"),
    ClangSwitch("-fstrict-float-cast-overflow", "*"),
    ClangSwitch("-fmath-errno", "-fmath-errno"),
    ClangSwitch("-ffinite-math-only", ""),
    ClangSwitch("-fsigned-zeros", "*"),
    ClangSwitch("-fassociative-math", ""),
    ClangSwitch("-freciprocal-math", ""),
    ClangSwitch("-fapprox-func", ""),
    ClangSwitch("-ffunction-sections", ""),
    ClangSwitch("-fdata-sections", ""),
)


def clang_dimensions(chain: toolchain.Toolchain, base: str) -> tuple[list[Dimension], list[str]]:
    """The curated switches, each turned the other way from the base's default; those this
    clang refuses (or ignores) left out with its words."""
    words = split_flags(base)
    cc1 = cc1_arguments(chain, words)
    dims = [switch_dimension(s.on, clang_default(s, cc1, words)) for s in CLANG_SWITCHES]
    excluded = ["-mllvm: flags.py refuses it: it runs or loads another program"]
    if toolchain.rejects(chain.name, (*words, *(d.choices[1] for d in dims))) is None:
        return dims, excluded        # one compile answers for all (the usual case)
    kept = []
    for d in dims:
        if why := toolchain.rejects(chain.name, (*words, d.choices[1])):
            excluded.append(f"{d.choices[1]}: {chain.name} refuses it ({why[:160]})")
        else:
            kept.append(d)
    return kept, excluded


def clang_default(s: ClangSwitch, cc1: tuple[str, ...], base: tuple[str, ...] = ()) -> bool:
    """Whether the switch is on at the base: the base's own last word on it, else the default
    the arguments clang's driver passes cc1 show."""
    said = [w for w in base if w in (s.on, negation(s.on))]
    if said:
        return said[-1] == s.on
    if s.default_on == "O>1":
        level = next((a for a in reversed(cc1) if a.startswith("-O")), "-O0")
        return level not in ("-O0", "-O1", "-O")
    return s.default_on == "*" or (s.default_on != "" and s.default_on in cc1)


def cc1_arguments(chain: toolchain.Toolchain, base: tuple[str, ...]) -> tuple[str, ...]:
    """The arguments clang's driver gives cc1 for the base (`-###` runs nothing)."""
    out = _run(chain, [*base, "-###", "-x", "c", "-c", "-o", "/dev/null", "/dev/null"])
    line = next((line for line in reversed(out.stderr.splitlines()) if '"-cc1"' in line), None)
    if line is None:
        raise ConfigError(f"{chain.name} -### printed no cc1 command: {out.tail(3)[:300]}")
    return tuple(split_flags(line))


# --- -march -----------------------------------------------------------------------------------

def march_dimension(compiler: str, host: cpu.Host | None = None) -> tuple[Dimension, list[str]]:
    """The -march levels this CPU (or the given host) runs, then -march=native; the others
    with why. On a CPU without x86-64 levels (Arm) only -march=native is offered."""
    x86 = bool((host or cpu.read_host()).isa_levels)
    levels = MARCH_LEVELS if x86 else ()
    kept = [""]
    dropped = [] if x86 else ["-march=x86-64-v2..v4: this CPU is not x86-64"]
    for choice in [f"-march={level}" for level in levels] + ["-march=native"]:
        why = unrunnable((choice,), compiler, host)
        if why:
            dropped.append(f"{choice}: {why}")
        else:
            kept.append(choice)
    return Dimension(MARCH, tuple(kept)), dropped


def unrunnable(words: tuple[str, ...], compiler: str, host: cpu.Host | None) -> str | None:
    """Why code built with these flags would not run on the host, or None. -march=native on
    this machine is its own CPU; for a given host it is this machine's CPU, checked there."""
    if host is None and words == ("-march=native",):
        verdict = cpu.can_run("native", compiler)
    else:
        try:
            verdict = cpu.can_run_flags(words, compiler, host)
        except ConfigError as e:          # the compiler does not know the -march value
            return str(e)
    return None if verdict.ok else verdict.reason

