"""A Debian source package's build dependencies on this machine: each relation of its
Build-Depends (and Build-Depends-Arch) met by a package installed here, or the first
alternative the system's apt has a candidate for, installed with apt-get when flagsweep runs
as root.

`apt-get build-dep` would do this, but it needs deb-src lines in the system's apt sources,
which flagsweep never edits (its own deb-src entries live in a private apt tree, debian.py).
Here the relations come from the Sources index stanza flagsweep read already, and the system's
dpkg and apt only answer what is installed and what can be: `dpkg-query`, `apt-cache policy`
and `apt-cache showpkg` (a virtual package's providers), once each for every name. The names
have a Debian package name's grammar (relations.py), so none can be an option; the install
is `apt-get install -y --no-install-recommends --no-remove`, which stops rather than remove a
package to make room.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Callable, Protocol

from flagsweep import process
from flagsweep.compilation.relations import Alternative, Field
from flagsweep.host import environment

log = logging.getLogger("flagsweep.compilation.dependencies")

INSTALL_TIMEOUT = 1800      # seconds for one apt-get install (debhelper pulls in dozens)
QUERY_TIMEOUT = 120
LOCK_WAIT = 600             # seconds an install waits for dpkg's lock


class Lookup(Protocol):
    """What the choice asks of the system's package manager (a test plants its own)."""

    def installed(self, name: str) -> str | None: ...
    def candidate(self, name: str) -> str | None: ...
    def providers(self, name: str) -> list[tuple[str, str]]: ...   # (package, provided version)
    def satisfies(self, version: str, op: str, wanted: str) -> bool: ...


@dataclass
class Needs:
    """What a field's relations need here."""

    met: list[str] = field(default_factory=list)           # relations already met
    install: list[str] = field(default_factory=list)       # packages to install, one a relation
    chosen: dict[str, str] = field(default_factory=dict)   # relation -> the package chosen
    unavailable: list[str] = field(default_factory=list)   # relations apt cannot meet here
    unread: list[str] = field(default_factory=list)        # the field's parts not read

    def command(self) -> list[str]:
        return ["apt-get", "install", "-y", "--no-install-recommends", "--no-remove",
                *self.install]


def needs(read: Field, lookup: Lookup) -> Needs:
    """Each relation met by what is installed, else by its first alternative apt can install."""
    p = Needs(unread=list(read.unread))
    for relation in read.relations:
        written = " | ".join(str(a) for a in relation)
        if any(_installed(a, lookup) for a in relation):
            p.met.append(written)
            continue
        name = next((n for a in relation if (n := _installable(a, lookup))), None)
        if name is None:
            p.unavailable.append(written)
        else:
            if name not in p.install:
                p.install.append(name)
            p.chosen[written] = name
    return p


def _installed(a: Alternative, lookup: Lookup) -> bool:
    version = lookup.installed(a.name)
    if version is not None and _fits(version, a, lookup):
        return True
    # a virtual package: met by an installed provider (of the version asked, if one is)
    return any(lookup.installed(p) is not None and (not a.op or (v and _fits(v, a, lookup)))
               for p, v in lookup.providers(a.name))


def _installable(a: Alternative, lookup: Lookup) -> str | None:
    """The package that installs this alternative: itself, or a virtual one's provider."""
    version = lookup.candidate(a.name)
    if version is not None and _fits(version, a, lookup):
        return a.name
    for p, v in lookup.providers(a.name):
        if lookup.candidate(p) is not None and (not a.op or (v and _fits(v, a, lookup))):
            return p
    return None


def _fits(version: str, a: Alternative, lookup: Lookup) -> bool:
    return not a.op or lookup.satisfies(version, a.op, a.version)


class Apt:
    """The system's dpkg and apt, asked once for every name of a field (and its providers)."""

    def __init__(self, read: Field):
        names = sorted({a.name for relation in read.relations for a in relation})
        self._versions = _dpkg_installed(names)
        self._candidates = _apt_candidates(names)
        virtual = [n for n in names if n not in self._versions and n not in self._candidates]
        self._providers = _apt_providers(virtual)
        others = sorted({p for ps in self._providers.values() for p, _ in ps} - set(names))
        self._versions.update(_dpkg_installed(others))
        self._candidates.update(_apt_candidates(others))

    def installed(self, name: str) -> str | None:
        return self._versions.get(name)

    def candidate(self, name: str) -> str | None:
        return self._candidates.get(name)

    def providers(self, name: str) -> list[tuple[str, str]]:
        return self._providers.get(name, [])

    @functools.lru_cache(maxsize=None)
    def satisfies(self, version: str, op: str, wanted: str) -> bool:
        dpkg_op = {"<<": "lt", "<=": "le", "=": "eq", ">=": "ge", ">>": "gt"}[op]
        return _query(["dpkg", "--compare-versions", version, dpkg_op, wanted]).ok


def _query(argv: list[str]) -> process.Result:
    try:
        return process.run(argv, env=environment.apt(), timeout=QUERY_TIMEOUT)
    except (FileNotFoundError, process.TimeoutExpired) as e:
        log.info("%s: %s", argv[0], e)
        return process.Result(argv, 127, "", str(e))


def _dpkg_installed(names: list[str]) -> dict[str, str]:
    """Each name's installed version (a name dpkg does not know is left out)."""
    if not names:
        return {}
    done = _query(["dpkg-query", "-W", "-f", "${Package}\t${db:Status-Status}\t${Version}\n",
                   "--", *names])
    found = {}
    for line in done.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[1] == "installed":
            found[parts[0]] = parts[2]
    return found


def _apt_candidates(names: list[str]) -> dict[str, str]:
    """Each name's candidate version in the system's apt lists."""
    if not names:
        return {}
    found, name = {}, None
    for line in _query(["apt-cache", "policy", *names]).stdout.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            name = line[:-1].split(":")[0]
        elif name and line.strip().startswith("Candidate:"):
            version = line.split(":", 1)[1].strip()
            if version != "(none)":
                found[name] = version
    return found


def _apt_providers(names: list[str]) -> dict[str, list[tuple[str, str]]]:
    """The packages that provide each virtual name (with the version they provide, if any),
    from `apt-cache showpkg`'s Reverse Provides."""
    if not names:
        return {}
    found: dict[str, list[tuple[str, str]]] = {}
    name, providing = None, False
    for line in _query(["apt-cache", "showpkg", *names]).stdout.splitlines():
        if line.startswith("Package: "):
            name, providing = line.split(":", 1)[1].strip(), False
        elif line.startswith("Reverse Provides:"):
            providing = True
        elif providing and name and (m := re.fullmatch(r"(\S+) \S+(?: \(= (\S+)\))?\s*", line)):
            found.setdefault(name, []).append((m[1].split(":")[0], m[2] or ""))
    return found


def root() -> bool:
    return os.geteuid() == 0


def arch() -> str:
    """This machine's Debian architecture (amd64 when dpkg cannot say)."""
    done = _query(["dpkg", "--print-architecture"])
    return done.stdout.strip() if done.ok and done.stdout.strip() else "amd64"


def update(run: Callable[..., process.Result] = process.run) -> bool:
    """apt-get update of the system's lists (as root): stale lists name versions the mirror
    has dropped, and lack packages added since."""
    try:
        return run(["apt-get", "update"], env=environment.apt(), timeout=INSTALL_TIMEOUT,
                   guard=True).ok
    except (FileNotFoundError, process.TimeoutExpired):
        return False


def install(p: Needs, say: Callable[[str], None],
            run: Callable[..., process.Result] = process.run) -> bool:
    """apt-get install the plan's packages (as root); True when it went through. A failure
    is said with apt's last lines: the build goes on, and may still work."""
    env = {**environment.apt(), "DEBIAN_FRONTEND": "noninteractive"}
    # another install on the machine (a campaign beside a person) is waited for, not failed on
    argv = ["apt-get", "-o", f"DPkg::Lock::Timeout={LOCK_WAIT}", *p.command()[1:]]
    say(f"build dependencies: installing {' '.join(p.install)}")
    try:
        done = run(argv, env=env, timeout=INSTALL_TIMEOUT, guard=True)
    except FileNotFoundError as e:
        say(f"build dependencies: apt-get is not installed ({e}); going on without them")
        return False
    except process.TimeoutExpired:
        say(f"build dependencies: `{shlex.join(p.command())}` ran over {INSTALL_TIMEOUT} s; "
            "going on without them")
        return False
    if not done.ok and "Failed to fetch" in done.stdout + done.stderr and update(run):
        # the lists named a version the mirror no longer has: once more with fresh lists
        done = run(argv, env=env, timeout=INSTALL_TIMEOUT, guard=True)
    if not done.ok:
        say(f"build dependencies: `{shlex.join(p.command())}` failed (exit {done.returncode}); "
            "going on without them:")
        for line in done.tail(5).splitlines():
            say(f"  {line}")
        return False
    return True
