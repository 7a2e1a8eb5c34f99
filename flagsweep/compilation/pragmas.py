"""Optimisation and targets set in the code itself: the pragmas and attributes that set them,
and what their arguments stand for as flags (an optimize setting as -O or -f, a target setting
as the -m flag and the variant's flag it overrides)."""

from __future__ import annotations

import re


# `#pragma GCC optimize (...)` and `#pragma GCC target (...)` (the preprocessor writes
# `_Pragma("...")` out as one): the rest of the line is read.
GCC_PRAGMA = re.compile(r'^[ \t]*#[ \t]*pragma[ \t]+GCC[ \t]+optimize\b([^\n]*)', re.M)
TARGET_PRAGMA = re.compile(r'^[ \t]*#[ \t]*pragma[ \t]+GCC[ \t]+target\b([^\n]*)', re.M)
CLANG_OFF = re.compile(r'^[ \t]*#[ \t]*pragma[ \t]+clang[ \t]+optimize[ \t]+off\b', re.M)
ATTRIBUTE = re.compile(r"__attribute(?:__)?\s*\(\(|\[\[")   # GNU's, and C23/C++'s
OPTIMIZE_ATTR = re.compile(r"\b(?:gnu::|__gnu__::)?(?:__optimize__|optimize)\s*\(")
# target, target_clones (each clone's settings are read alike: the one the CPU runs is picked
# at run time, over the default clone compiled with the variant's flags)
TARGET_ATTR = re.compile(r"\b(?:gnu::|__gnu__::)?(__target__|target|__target_clones__|"
                         r"target_clones)\s*\(")
OPTNONE = re.compile(r"\b(?:clang::)?(?:__optnone__|optnone)\b")


# A string or character literal, which keeps what is in it, or a comment.
LEXEME = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)


def worth_reading(code: str) -> bool:
    return "optimize" in code or "optnone" in code or "target" in code


def uncommented(code: str) -> str:
    """The text with each comment blanked, its line breaks kept (so lines still count): gcc's
    snapshots keep comments when fall-through warnings are on (wrapper.c), and a pragma or
    attribute in one sets nothing."""
    return LEXEME.sub(lambda m: m.group() if m.group()[0] in "\"'" else
                      re.sub(r"[^\n]", " ", m.group()), code)


def pragma_args(found: re.Match) -> str:
    args = found.group(1).strip()
    return balanced(args, 1) if args.startswith("(") else args


def target_settings(args: str) -> list[str] | None:
    """The settings of a target pragma's or attribute's arguments ("arch=x86-64,avx2" is two);
    None when an argument is not a string literal."""
    settings = []
    for arg in _split_args(args):
        text = _literal(arg)
        if text is None:
            return None
        settings += [part.strip() for part in text.split(",") if part.strip()]
    return settings


def target_override(setting: str, want: list[str]) -> tuple[str, str] | None:
    """The flag a target setting stands for ("arch=x86-64" is -march=x86-64, "no-avx2"
    -mno-avx2, "avx2" -mavx2) and the variant's flag it overrides, or None when it overrides
    none. A setting that only adds an instruction set the variant does not turn off passes:
    it is how programs pick code at run time for the CPU they find (zstd's BMI2 paths, xz's
    CLMUL CRC), and the code compiled with the variant's flags is still there for the others.
    What it overrides: arch= the variant's -march; tune= its -mtune (else the tuning its
    -march implies); any other name=value its -mname=; a no- feature the variant's -mfeature
    or its -march (which may enable it); an added feature the variant's -mno-feature."""
    setting = setting.strip()
    if not setting or setting == "default":   # target_clones' clone of the variant's own flags
        return None
    flag = f"-m{setting}"
    name, has_value, value = setting.partition("=")
    if has_value:
        mine = [f for f in want if f.startswith(f"-m{name}=")]
        if name == "tune" and not mine:
            mine = [f for f in want if f.startswith("-march=")]
        if mine and mine[-1].split("=", 1)[1] != value:
            return flag, mine[-1]
        return None
    if setting.startswith("no-"):
        over = [f for f in want if f == f"-m{setting[3:]}" or f.startswith("-march=")]
    else:
        over = [f for f in want if f == f"-mno-{setting}"]
    return (flag, over[-1]) if over else None


def optimize_flags(args: str) -> list[str]:
    """The flags an optimize pragma's or attribute's arguments stand for, as gcc reads them:
    a number is -O<n>; each comma-separated part of a string is an option if it starts with
    '-', -O<...> if it starts with 'O', else -f<part>. [] when an argument is not a literal."""
    flags = []
    for arg in (a.strip() for a in _split_args(args)):
        if arg.isdigit():
            flags.append(f"-O{arg}")
        elif (text := _literal(arg)) is not None:
            for part in filter(None, (p.strip() for p in text.split(","))):
                flags.append(part if part.startswith("-") else
                             f"-{part}" if part.startswith("O") else f"-f{part}")
        else:
            return []
    return flags


STRING = re.compile(r'\s*"((?:\\.|[^"\\])*)"')


def _literal(arg: str) -> str | None:
    """The text of an argument made of string literals only ("O" "0" is "O0", as the compiler
    joins them), or None."""
    parts, at = [], 0
    while (found := STRING.match(arg, at)) is not None:
        parts.append(found.group(1))
        at = found.end()
    return "".join(parts) if parts and not arg[at:].strip() else None


def _split_args(text: str) -> list[str]:
    """Top-level comma-separated arguments, commas inside string literals kept."""
    parts = re.findall(r'"(?:\\.|[^"\\])*"|[^"]+', text)
    args, current = [], ""
    for part in parts:
        if part.startswith('"'):
            current += part
        else:
            pieces = part.split(",")
            current += pieces[0]
            for piece in pieces[1:]:
                args.append(current)
                current = piece
    args.append(current)
    return [a for a in args if a.strip()] if text.strip() else [""]


def balanced(text: str, start: int, pair: str = "()") -> str:
    """text from start up to the bracket that closes the one just before start."""
    depth, i = 1, start
    while i < len(text) and depth:
        depth += {pair[0]: 1, pair[1]: -1}.get(text[i], 0)
        i += 1
    return text[start:i - 1] if depth == 0 else text[start:]
