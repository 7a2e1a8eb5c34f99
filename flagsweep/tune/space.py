"""The search space of `flagsweep tune`: which flags a candidate may add to its base.

A space is a list of dimensions (tune.dimensions), each a choice among flag texts whose first is
"" (the base's own default, which adds nothing). It comes from one of three places:

- `gcc-optimizers` for gcc: the compiler's own list of optimisation switches, a curated set of
  its valued options and of its `--param`s, and the -march levels this CPU runs;
- `clang-switches` (or `gcc-optimizers` given a clang): a curated list of clang's C
  code-generation switches, and the -march levels;
- a space file (TOML, read strictly like a recipe; recipes/spaces/ holds the shipped ones),
  whose every flag passes flags.py's check like a recipe's; at most MOST_FLAGS flags, and its
  longest set within a variant's flags (flags.SET_MAX), or it is refused before anything runs.

Here too: the compiler's own level (-O3) as a set of the space (`level_choices`), the set the
proof compares every set with.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Callable, Iterable

from pydantic import Field, model_validator

from flagsweep import shipped
from flagsweep.errors import ConfigError
from flagsweep.experiment.flags import SET_MAX, abbreviated, check_flags, split_flags
from flagsweep.experiment.strict import Strict, read_toml, validate
from flagsweep.host import cpu, toolchain
from flagsweep.tune.dimensions import (CLANG_SWITCHES, Dimension, Param, ask,
                                       cc1_arguments, clang_default, clang_dimensions,
                                       gcc_dimensions, is_switch, march_dimension, negation,
                                       parse_optimizers, parse_params, parse_valued, unrunnable)

log = logging.getLogger("flagsweep.tune.space")

GCC_SPACE = "gcc-optimizers"
CLANG_SPACE = "clang-switches"
SPACES_DIR = shipped.RECIPES / "spaces"   # not recipes/ itself: every .toml there is a recipe
DEFAULT_BASE = "-O2"


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
        listed = ask(chain, ["-Q", "--help=optimizers", *base])
        listed_at = ask(chain, ["-Q", "--help=optimizers", *at])
        was, now = dict(parse_optimizers(listed)), dict(parse_optimizers(listed_at))
        valued_was = {name: value for name, (_, value) in parse_valued(listed).items()}
        valued = {f"{name}={value}" for name, (_, value) in parse_valued(listed_at).items()
                  if valued_was.get(name, value) != value}
        params_was = parse_params(ask(chain, ["-Q", "--help=params", *base]))
        params_now = parse_params(ask(chain, ["-Q", "--help=params", *at]))
    out = {}
    for d in space.dimensions:
        turned = [c for c in d.choices[1:] if _turns_to(c, was, now) or c in valued]
        if turned:
            out[d.name] = turned[0]
        elif (value := _param_nearest(d, params_was, params_now)) is not None:
            out[d.name] = value
    return out


def _clang_states(chain: toolchain.Toolchain, words: tuple[str, ...]) -> dict[str, bool]:
    cc1 = cc1_arguments(chain, words)
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
