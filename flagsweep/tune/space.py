"""The search space of `flagsweep tune`: which flags a candidate may add to its base.

A space is a list of dimensions, each a choice among flag texts whose first is "" (the base's
own default, which adds nothing). It comes from one of three places:

- `gcc-optimizers` for gcc: the compiler's own list of optimisation switches
  (`gcc -Q --help=optimizers <base>`), each turned the other way from the base's default; a
  curated set of its valued options (the vectoriser's cost model, multiply-add contraction, the
  register allocator's algorithm and regions, block reordering), each at the values the same
  listing names other than the base's; a curated set of `--param`s with values around the
  defaults the same gcc reports (`-Q --help=params`); the -march levels this CPU runs.
- `clang-switches` (or `gcc-optimizers` given a clang): clang lists no optimisers, so a curated
  list of its C code-generation switches, each turned the other way from the default its driver
  shows for the base (`-###`); the -march levels.
- a space file (TOML, read strictly like a recipe; recipes/spaces/ holds the shipped ones),
  whose every flag passes flags.py's check like a recipe's; at most MOST_FLAGS flags, and its
  longest set within a variant's flags (flags.SET_MAX), or it is refused before anything runs.

A switch is left out, with why, when flags.py refuses it, when it changes the ABI, the program's
meaning in ways an output check cannot be trusted to catch (overflow semantics, data races), or
the build's security hardening, when it needs profile files or a runtime, or when the compiler
ignores it here (its own warning says so). Fast-math pieces stay in: the output check judges them.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Callable, Iterable

from pydantic import Field, model_validator

from flagsweep import process, shipped
from flagsweep.errors import ConfigError
from flagsweep.experiment.flags import SET_MAX, abbreviated, check_flags, refusal, split_flags
from flagsweep.experiment.strict import Strict, read_toml, validate
from flagsweep.host import cpu, environment, toolchain

log = logging.getLogger("flagsweep.tune.space")

GCC_SPACE = "gcc-optimizers"
CLANG_SPACE = "clang-switches"
SPACES_DIR = shipped.RECIPES / "spaces"   # not recipes/ itself: every .toml there is a recipe
DEFAULT_BASE = "-O2"
MARCH = "march"
MARCH_LEVELS = ("x86-64-v2", "x86-64-v3", "x86-64-v4")
PROBE_TIMEOUT_S = 60.0
PROGRAM = "int main(void) { return 0; }\n"


@dataclass(frozen=True)
class Dimension:
    name: str                  # the switch as the compiler lists it, or a choice's name
    choices: tuple[str, ...]   # flag text of each choice; choices[0] == "" is the base's default


@dataclass(frozen=True)
class Space:
    base: str                  # the flags every candidate starts from, e.g. "-O2"
    compiler: str              # "gcc", "clang", "gcc-12" ... as the rest of flagsweep names them
    source: str                # "gcc-optimizers", "clang-switches", or the space file's path
    dimensions: tuple[Dimension, ...]
    excluded: tuple[str, ...] = ()   # "flag: why" for each switch left out

    def flags(self, chosen: dict[str, str]) -> tuple[str, ...]:
        """base words, then each chosen non-empty choice in dimension order (a dimension missing
        from chosen = its default)."""
        known = {d.name: d for d in self.dimensions}
        unknown = sorted(set(chosen) - set(known))
        if unknown:
            raise ValueError(f"no dimension {unknown[0]!r} in this space")
        words = list(split_flags(self.base))
        for d in self.dimensions:
            value = chosen.get(d.name, "")
            if value not in d.choices:
                raise ValueError(f"dimension {d.name!r} has no choice {value!r}; expected one of "
                                 f"{list(d.choices)}")
            words += split_flags(value)
        return tuple(words)

    def changes(self, flag_words: Iterable[str]) -> tuple[str, ...]:
        """The words of a flag set beyond the base (each base word taken away once)."""
        rest = list(flag_words)
        for word in split_flags(self.base):
            if word in rest:
                rest.remove(word)
        return tuple(rest)

    def switches(self) -> int:
        """How many dimensions are on/off switches (named by their flag, with one choice
        beside the default)."""
        return sum(1 for d in self.dimensions if is_switch(d))


def is_switch(d: Dimension) -> bool:
    """An on/off switch: one choice beside the default, the switch itself or its negation
    (not a param's or a valued option's value)."""
    return len(d.choices) == 2 and d.choices[1] in (d.name, negation(d.name))


def load(spec: str, compiler: str, base: str | None, host: cpu.Host | None = None,
         say: Callable[[str], None] | None = None) -> Space:
    """The space `spec` names for this compiler: "gcc-optimizers" (for clang, the curated clang
    list), "clang-switches", or a space file (a path, or a name under recipes/spaces/). base
    None means not given: the file's base, else -O2. host is the CPU the march choices must
    run on (None: this machine). say: where a long check of a file's choices says how far it
    is."""
    chain = toolchain.resolve(compiler)
    if spec in (GCC_SPACE, CLANG_SPACE):
        return _builtin(spec, chain, compiler, _checked_base(base or DEFAULT_BASE), host)
    return _from_file(resolve(spec), chain, compiler, base, host, say)


def _checked_base(base: str, where: str = "--base") -> str:
    try:
        return check_flags(base)
    except ValueError as e:
        raise ConfigError(f"{where} {abbreviated(base)}: {e}") from None


def _builtin(spec: str, chain: toolchain.Toolchain, compiler: str, base: str,
             host: cpu.Host | None) -> Space:
    if chain.family == "clang":
        dims, excluded = clang_dimensions(chain, base)
        source = CLANG_SPACE
    elif spec == CLANG_SPACE:
        raise ConfigError(f"space {CLANG_SPACE!r} is clang's, and {compiler!r} is gcc; "
                          f"use {GCC_SPACE!r} or a space file")
    else:
        dims, excluded = gcc_dimensions(chain, base)
        source = GCC_SPACE
    march, dropped = march_dimension(compiler, host)
    dims += [march] if len(march.choices) > 1 else []
    return Space(base=base, compiler=compiler, source=source, dimensions=tuple(dims),
                 excluded=tuple(excluded + dropped))


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
    listing = _ask(chain, ["-Q", "--help=optimizers", *words])
    dims, excluded = switch_dimensions(listing, _ignored(chain, words, listing))
    valued, unlisted = valued_dimensions(listing)
    params, skipped = param_dimensions(_ask(chain, ["-Q", "--help=params", *words]))
    return dims + valued + params, excluded + unlisted + skipped


def _ask(chain: toolchain.Toolchain, args: list[str]) -> str:
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
    cc1 = _cc1_arguments(chain, words)
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


def _cc1_arguments(chain: toolchain.Toolchain, base: tuple[str, ...]) -> tuple[str, ...]:
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


# --- the compiler's own level, as a set of the space ------------------------------------------

def level_choices(space: Space, level: str) -> dict[str, str]:
    """The choices that bring the space's base nearest to what `level` (e.g. -O3) does: each
    switch the level turns the other way from the base, turned; each valued option the level
    sets otherwise, the level's value; each param the level sets otherwise, the value nearest
    the level's (by ratio; none when the base's own is nearest). -march and choices of several
    words are left alone. gcc says what a level turns on (`-Q --help=optimizers`,
    `--help=params`); for clang, the cc1 arguments its driver shows (`-###`) answer for the
    curated switches. What gcc lists but the space does not hold makes the set near the level,
    not the level itself."""
    chain = toolchain.resolve(space.compiler)
    base = split_flags(space.base)
    at = (*base, *split_flags(level))
    if chain.family == "clang":
        was, now = _clang_states(chain, base), _clang_states(chain, at)
        params_was = params_now = {}
        valued = set()
    else:
        listed = _ask(chain, ["-Q", "--help=optimizers", *base])
        listed_at = _ask(chain, ["-Q", "--help=optimizers", *at])
        was, now = dict(parse_optimizers(listed)), dict(parse_optimizers(listed_at))
        valued_was = {name: value for name, (_, value) in parse_valued(listed).items()}
        valued = {f"{name}={value}" for name, (_, value) in parse_valued(listed_at).items()
                  if valued_was.get(name, value) != value}
        params_was = parse_params(_ask(chain, ["-Q", "--help=params", *base]))
        params_now = parse_params(_ask(chain, ["-Q", "--help=params", *at]))
    out = {}
    for d in space.dimensions:
        turned = [c for c in d.choices[1:] if _turns_to(c, was, now) or c in valued]
        if turned:
            out[d.name] = turned[0]
        elif (value := _param_nearest(d, params_was, params_now)) is not None:
            out[d.name] = value
    return out


def _clang_states(chain: toolchain.Toolchain, words: tuple[str, ...]) -> dict[str, bool]:
    cc1 = _cc1_arguments(chain, words)
    return {s.on: clang_default(s, cc1, words) for s in CLANG_SWITCHES}


def _turns_to(choice: str, was: dict[str, bool], now: dict[str, bool]) -> bool:
    """Whether the one-switch choice sets its switch the way `now` has it and `was` does not."""
    words = split_flags(choice)
    if len(words) != 1 or not words[0].startswith("-f"):
        return False
    on = not words[0].startswith("-fno-")
    positive = words[0] if on else negation(words[0])
    return positive in was and positive in now and now[positive] == on != was[positive]


def _param_nearest(d: Dimension, was: dict[str, Param], now: dict[str, Param]) -> str | None:
    """The choice of a --param dimension nearest the level's value, when the level changes it."""
    name = d.name.removeprefix("--param=")
    if not d.name.startswith("--param=") or name not in was or name not in now:
        return None
    target, default = now[name].default, was[name].default
    if target == default:
        return None
    values = {"": default} | {c: int(c.rsplit("=", 1)[1]) for c in d.choices[1:]}
    nearest = min(values, key=lambda c: abs(math.log((values[c] + 1) / (target + 1))))
    return nearest or None


# --- space files ------------------------------------------------------------------------------

CHOICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]*")
# The flags a space file may hold (a switch is one, a choice one per value it lists).
# gcc's own list (gcc-optimizers) is ~210 dimensions and ~240 flags with gcc 12, and a set of
# a space may hold a flag of every dimension, all within a variant's SET_MAX (8192) characters:
# even at the shortest flag and its space ("-fX ", 4 characters) no more than 2048 dimensions
# fit. Past it a space is generated, not written: loading it runs a compile per -m flag, and
# every trial of the tune writes a store row per dimension (a 10,000-switch space took minutes
# before its first build, saying nothing).
MOST_FLAGS = 2048
# -m flags of a space file checked against the CPU (a compile each, ~10 ms) between two lines
# saying how far the check is.
CHECKED_A_LINE = 200


class SpaceFile(Strict):
    summary: str
    base: str | None = None
    compilers: list[str] = []            # informative: the compilers the space was written for
    switches: list[str] = []             # each on (present) or off (absent)
    choices: dict[str, Annotated[list[str], Field(min_length=1)]] = {}

    @model_validator(mode="after")
    def _consistent(self) -> "SpaceFile":
        # Counted first: a space past the bound is refused before its flags are checked.
        flags = len(self.switches) + sum(len(v) for v in self.choices.values())
        if flags > MOST_FLAGS:
            raise ValueError(f"{flags} flags (switches and choices' values), more than the "
                             f"{MOST_FLAGS} a space may hold (gcc's own list, gcc-optimizers, "
                             f"is ~240, and a set of every dimension must fit in a variant's "
                             f"{SET_MAX} characters of flags)")
        for where, text in self._flag_texts():
            try:
                check_flags(text)
            except ValueError as e:
                raise ValueError(f"key '{where}': {e}") from None
        if not self.switches and not self.choices:
            raise ValueError("a space needs 'switches' or 'choices' (or both)")
        for i, switch in enumerate(self.switches):
            if len(split_flags(switch)) != 1:
                raise ValueError(f"key 'switches[{i}]': each switch is one flag, turned on or "
                                 f"off alone; got {abbreviated(switch)}")
        if len(set(self.switches)) != len(self.switches):
            raise ValueError("key 'switches' lists a flag twice")
        for name, values in self.choices.items():
            if not CHOICE_NAME.fullmatch(name):
                raise ValueError(f"key 'choices.{name}': a choice's name is letters, digits and "
                                 "'._+=-', starting with a letter or digit")
            if len(set(values)) != len(values):
                raise ValueError(f"key 'choices.{name}' lists a value twice")
        return self

    def _flag_texts(self) -> list[tuple[str, str]]:
        """Every flag text of the file with the key that holds it."""
        texts = [("base", self.base)] if self.base is not None else []
        texts += [(f"switches[{i}]", s) for i, s in enumerate(self.switches)]
        return texts + [(f"choices.{name}[{i}]", v) for name, values in self.choices.items()
                        for i, v in enumerate(values)]


def resolve(spec: str) -> Path:
    """A space file's path: spec itself when it is a file, else recipes/spaces/<spec>.toml."""
    candidate = Path(spec)
    if candidate.is_file():
        return candidate.resolve()
    named = SPACES_DIR / f"{spec.removesuffix('.toml')}.toml"
    if "/" not in spec and named.is_file():
        return named
    known = [GCC_SPACE, CLANG_SPACE] + sorted(p.stem for p in SPACES_DIR.glob("*.toml"))
    raise ConfigError(f"no space '{spec}': not a file, and not one of {', '.join(known)}")


def _from_file(path: Path, chain: toolchain.Toolchain, compiler: str, base: str | None,
               host: cpu.Host | None, say: Callable[[str], None] | None = None) -> Space:
    spec = validate(SpaceFile, read_toml(path), path)
    if spec.compilers and compiler not in spec.compilers:
        log.warning("%s was written for %s; searching it with %s", path,
                    ", ".join(spec.compilers), compiler)
    chosen = _checked_base(base) if base is not None else spec.base or DEFAULT_BASE
    dims = [Dimension(s, ("", s)) for s in spec.switches]
    dims += [Dimension(name, ("", *(v for v in values if v.strip())))
             for name, values in spec.choices.items()]
    _check_longest(path, chosen, dims)
    kept, excluded = runnable_dimensions(dims, compiler, host, say, path.name)
    return Space(base=chosen, compiler=compiler, source=str(path), dimensions=tuple(kept),
                 excluded=tuple(excluded))


def _check_longest(path: Path, base: str, dims: list[Dimension]) -> None:
    """Refuse a space one of whose sets would not fit in a variant's flags: the search may
    draw any set, and a tune stopped at the first too long one it drew."""
    longest = len(" ".join([base, *(max(d.choices, key=len) for d in dims)]))
    if longest > SET_MAX:
        raise ConfigError(f"{path}: its longest set (the base {abbreviated(base)} and every "
                          f"dimension's longest choice) is {longest} characters of flags, "
                          f"beyond the {SET_MAX} a variant's flags may hold; search fewer "
                          "dimensions, or split them between tunes")


def runnable_dimensions(dims: list[Dimension], compiler: str, host: cpu.Host | None,
                        say: Callable[[str], None] | None = None,
                        name: str = "the space") -> tuple[list[Dimension], list[str]]:
    """Each dimension without the choices whose target options (-m...) the host cannot run;
    a dimension left with only its default goes too. Each such choice is a compile: past
    CHECKED_A_LINE of them, `say` is told how far the check is, every CHECKED_A_LINE."""
    targeted = sum(1 for d in dims for c in d.choices[1:] if _targets(c))
    checked = 0
    kept, excluded = [], []
    for d in dims:
        choices = [""]
        for c in d.choices[1:]:
            why = None
            if _targets(c):
                why = unrunnable(split_flags(c), compiler, host)
                checked += 1
                if say and targeted > CHECKED_A_LINE and checked % CHECKED_A_LINE == 0:
                    say(f"{name}: {checked}/{targeted} -m choices checked against this CPU")
            if why:
                excluded.append(f"{c}: {why}")
            else:
                choices.append(c)
        if len(choices) > 1:
            kept.append(Dimension(d.name, tuple(choices)))
    return kept, excluded


def _targets(choice: str) -> bool:
    """Whether a choice holds a target option (-m...), which the host may not run."""
    return any(w.startswith("-m") for w in split_flags(choice))
