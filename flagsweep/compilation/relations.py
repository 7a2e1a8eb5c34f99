"""Debian's relation fields (Build-Depends, Build-Depends-Arch), read as Debian Policy 7.1
writes them: relations separated by commas, each a choice of alternatives separated by `|`,
each alternative a package name with an optional `:any`/`:native` qualifier, a version
constraint `(>= 1.2)`, an architecture restriction `[amd64 i386]` or `[!hurd-any]` and build
profile restrictions `<!nocheck> <stage1 cross>`.

The text comes from a mirror's Sources index: untrusted. A name is kept only if it has the
grammar of a Debian package name (Policy 5.6.1), so it can never be read as an option of the
program it is given to; a part that does not parse is returned as unread, never guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Policy 5.6.1: lowercase letters, digits, + - . ; at least two; starting alphanumeric.
NAME = re.compile(r"[a-z0-9][a-z0-9+.-]+")
# Policy 5.6.12: an optional epoch, the upstream version, an optional revision.
VERSION = re.compile(r"(?:[0-9]+:)?[A-Za-z0-9.+~-]+(?::[A-Za-z0-9.+~-]+)*")
# `<` and `>` are the obsolete spellings of `<=` and `>=` (dpkg still reads them so).
OPERATORS = {"<<": "<<", "<=": "<=", "=": "=", ">=": ">=", ">>": ">>", "<": "<=", ">": ">="}
_ALTERNATIVE = re.compile(
    r"(?P<name>[^\s:(\[<]+)(?::(?P<qualifier>[a-z0-9-]+))?\s*"
    r"(?:\(\s*(?P<op><<|<=|>=|>>|=|<|>)\s*(?P<version>[^\s)]+)\s*\))?\s*"
    r"(?:\[(?P<arches>[^\]]*)\])?\s*"
    r"(?P<profiles>(?:<[^<>]*>\s*)*)")
# The CPU of the architectures whose name is not their CPU's (dpkg's cputable and tupletable).
_CPU = {"armhf": "arm", "armel": "arm", "x32": "amd64", "arm64ilp32": "arm64"}


@dataclass(frozen=True)
class Alternative:
    """One package of a relation, as written."""

    name: str
    qualifier: str = ""          # "any" or "native": both mean a package installable here
    op: str = ""                 # "", "<<", "<=", "=", ">=", ">>"
    version: str = ""
    arches: tuple[str, ...] = ()                 # [amd64 i386] or [!hurd-any]
    profiles: tuple[tuple[str, ...], ...] = ()   # <!nocheck> <stage1 cross>: OR of ANDs

    def __str__(self) -> str:
        return self.name + (f" ({self.op} {self.version})" if self.op else "")


@dataclass(frozen=True)
class Field:
    """A relation field read: the relations that apply here (each its alternatives, in the
    order written) and the parts that could not be read."""

    relations: tuple[tuple[Alternative, ...], ...]
    unread: tuple[str, ...] = ()


def read(text: str, arch: str, profiles: frozenset[str] = frozenset()) -> Field:
    """The relations of a field that apply to a build on arch with these build profiles
    active: an alternative restricted to other architectures or profiles is dropped, and a
    relation left with none is not one (Policy 7.1)."""
    relations, unread = [], []
    for part in " ".join(text.split()).split(","):
        if not part.strip():
            continue
        try:
            alternatives = [parse(alt) for alt in part.split("|")]
        except ValueError as e:
            unread.append(f"{part.strip()!r}: {e}")
            continue
        kept = tuple(a for a in alternatives if applies(a, arch, profiles))
        if kept:
            relations.append(kept)
    return Field(tuple(relations), tuple(unread))


def parse(text: str) -> Alternative:
    """One alternative; ValueError naming what is wrong with it."""
    m = _ALTERNATIVE.fullmatch(text.strip())
    if not m:
        raise ValueError("expected NAME[:any] [(OP VERSION)] [[ARCH ...]] [<PROFILE ...>]")
    name, version = m["name"], m["version"] or ""
    if not NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a Debian package name ([a-z0-9][a-z0-9+.-]+)")
    if m["qualifier"] and m["qualifier"] not in ("any", "native"):
        raise ValueError(f"qualifier :{m['qualifier']}: expected :any or :native")
    if version and not VERSION.fullmatch(version):
        raise ValueError(f"version {version!r} is not a Debian version")
    arches = tuple(m["arches"].split()) if m["arches"] is not None else ()
    negated = {a.startswith("!") for a in arches}
    if len(negated) > 1:
        raise ValueError(f"[{m['arches']}] mixes architectures and negated ones")
    groups = tuple(tuple(g.split()) for g in re.findall(r"<([^<>]*)>", m["profiles"] or ""))
    if any(not g for g in groups):
        raise ValueError("an empty <> build profile restriction")
    return Alternative(name, m["qualifier"] or "", OPERATORS.get(m["op"] or "", ""), version,
                       arches, groups)


def applies(alt: Alternative, arch: str, profiles: frozenset[str] = frozenset()) -> bool:
    """Whether an alternative's architecture and build profile restrictions keep it on arch
    with these profiles active."""
    if alt.arches:
        listed = any(matches(a.lstrip("!"), arch) for a in alt.arches)
        if listed == alt.arches[0].startswith("!"):
            return False
    if alt.profiles:
        return any(all((t[1:] not in profiles) if t.startswith("!") else (t in profiles)
                       for t in group) for group in alt.profiles)
    return True


def matches(wildcard: str, arch: str) -> bool:
    """dpkg's architecture match of a name or wildcard (`any`, `linux-any`, `any-amd64`)
    against a Debian architecture such as `amd64` or `hurd-i386`."""
    if wildcard in (arch, "any"):
        return True
    os_name, cpu = arch.split("-", 1) if "-" in arch else ("linux", _CPU.get(arch, arch))
    parts = wildcard.split("-")
    if len(parts) != 2 or "any" not in parts:
        return False
    return parts[0] in ("any", os_name) and parts[1] in ("any", cpu)
