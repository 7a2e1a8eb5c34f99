"""A distribution's own build flags, as its package builds would pass them on this machine.

A distribution decides its flags as changes to what it already passes (frame pointers on top of
the hardening it has, -O3 instead of its -O2), so a study of those decisions starts from that
set, read where it is defined rather than copied into a recipe: on Debian and its derivatives
`dpkg-buildflags`, with `DEB_BUILD_MAINT_OPTIONS=hardening=+all` (what Debian's packaging
policy asks new packages to use). CPPFLAGS, CFLAGS and LDFLAGS become one flag list: a
variant's flags reach compile lines (CPPFLAGS and CFLAGS) and, through CFLAGS, the link line
(LDFLAGS; the audit checks that each -Wl flag is on the binary's link).

Left out: `-ffile-prefix-map=...`, which names the directory dpkg-buildflags ran in; it changes
debug paths and __FILE__ strings, not code generation, and would make every build tree's flags
differ. docs/distro.md sets a Fedora-style set beside Debian's.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass

from flagsweep import process
from flagsweep.errors import ConfigError
from flagsweep.host import environment

KNOWN = ("debian",)                 # as spec.recipe.DISTROS
MAINT_OPTIONS = "hardening=+all"
PARTS = ("CPPFLAGS", "CFLAGS", "LDFLAGS")
PATH_DEPENDENT = ("-ffile-prefix-map=", "-fdebug-prefix-map=", "-fmacro-prefix-map=")


@dataclass(frozen=True)
class Base:
    name: str                       # "debian"
    flags: tuple[str, ...]          # CPPFLAGS + CFLAGS + LDFLAGS, path-dependent ones left out
    source: str                     # how they were read, for results.json and the page
    parts: dict[str, list[str]]     # each variable as read


def read(name: str) -> Base:
    """The named distribution's flags on this machine; ConfigError when they cannot be read."""
    if name not in KNOWN:
        raise ConfigError(f"distro {name!r}: flagsweep reads the flags of {', '.join(KNOWN)} "
                          "(dpkg-buildflags); give one of those")
    tool = shutil.which("dpkg-buildflags")
    if tool is None:
        raise ConfigError("distro 'debian' reads its flags with dpkg-buildflags, which is not "
                          "installed here (Debian's dpkg-dev package has it)")
    # A build's own environment (environment.clean): the user's DEB_* overrides would make it
    # not Debian's set, and dpkg-buildflags is a Perl program that PERL5OPT would add code to.
    # Its user configuration (XDG_CONFIG_HOME/dpkg/buildflags.conf) is still read: it holds
    # flags only, which are checked as a recipe's are.
    env = {**environment.clean(), "DEB_BUILD_MAINT_OPTIONS": MAINT_OPTIONS}
    if xdg := os.environ.get("XDG_CONFIG_HOME"):
        env["XDG_CONFIG_HOME"] = xdg
    parts = {}
    for part in PARTS:
        done = process.run([tool, "--get", part], env=env)
        if done.returncode != 0:
            raise ConfigError(f"dpkg-buildflags --get {part} failed: {done.stderr.strip()}")
        parts[part] = shlex.split(done.stdout.strip())
    flags = tuple(f for part in PARTS for f in parts[part] if not f.startswith(PATH_DEPENDENT))
    return Base(name, flags, f"DEB_BUILD_MAINT_OPTIONS={MAINT_OPTIONS} dpkg-buildflags", parts)
