"""A source package's Build-Depends read as Debian Policy 7.1 writes them, each relation met
here or the alternative to install chosen (a planted package lookup stands in for dpkg and
apt), and the install's command line (through a seam: nothing is installed)."""

from __future__ import annotations

import pytest

from flagsweep import process
from flagsweep.compilation import dependencies, relations

# Recorded from bookworm's Sources index (apt-cache showsrc).
JQ = ("debhelper-compat (= 13), bison, flex, libonig-dev, libtool, rake, ruby-ronn:native, "
      "valgrind [amd64 i386]")
OPUS_TOOLS = ("debhelper-compat (= 13), libflac-dev, libogg-dev, libopus-dev (>= 1.1~beta), "
              "libopusenc-dev, libopusfile-dev, libpcap0.8-dev, libssl-dev, pkg-config")
# Every form the policy allows, folded over lines as the index writes a long field.
MIXED = """debhelper-compat (= 12), libsystemd-dev [linux-any],
 libbsd-dev [!linux-any], nasm [any-amd64 any-i386] | yasm,
 python3:any <!nodoc>, check <!nocheck>, gcc-multilib <stage1 cross> <pkg.x.foo>,
 libfoo-dev (>> 1:2.0-1~bpo12+1) | libfoo2-dev (<< 2) , zlib1g-dev:native"""


def names(field: relations.Field) -> list[str]:
    return [" | ".join(str(a) for a in relation) for relation in field.relations]


def test_a_recorded_field_is_read_with_its_versions_and_qualifiers():
    field = relations.read(JQ, "amd64")
    assert names(field) == ["debhelper-compat (= 13)", "bison", "flex", "libonig-dev",
                            "libtool", "rake", "ruby-ronn", "valgrind"]
    assert field.relations[6][0].qualifier == "native" and not field.unread
    # valgrind is for amd64 and i386 only
    assert "valgrind" not in names(relations.read(JQ, "arm64"))
    assert relations.read(OPUS_TOOLS, "amd64").relations[3] == (
        relations.Alternative("libopus-dev", op=">=", version="1.1~beta"),)


def test_architecture_and_build_profile_restrictions_choose_what_applies():
    assert names(relations.read(MIXED, "amd64")) == [
        "debhelper-compat (= 12)", "libsystemd-dev", "nasm | yasm", "python3",
        "check", "libfoo-dev (>> 1:2.0-1~bpo12+1) | libfoo2-dev (<< 2)", "zlib1g-dev"]
    # another CPU: nasm's alternative goes, yasm stays; another OS: the negation applies
    assert "yasm" in names(relations.read(MIXED, "arm64"))
    assert "libbsd-dev" in names(relations.read(MIXED, "hurd-i386"))
    assert "libsystemd-dev" not in names(relations.read(MIXED, "hurd-i386"))
    # build profiles: <!nocheck> goes when nocheck is active; <stage1 cross> needs both
    assert "check" not in names(relations.read(MIXED, "amd64", frozenset({"nocheck"})))
    assert "gcc-multilib" in names(relations.read(MIXED, "amd64",
                                                  frozenset({"stage1", "cross"})))
    assert relations.matches("any-arm", "armhf") and not relations.matches("linux-any", "hurd-i386")


@pytest.mark.parametrize("part, why", [
    ("-oDir=/tmp", "is not a Debian package name"),
    ("Bad_Name", "is not a Debian package name"),
    ("libfoo:amd64", "expected :any or :native"),
    ("libfoo (>= 1.0;id)", "is not a Debian version"),
    ("libfoo [amd64 !i386]", "mixes architectures and negated ones"),
    ("libfoo <>", "an empty <> build profile restriction"),
    ("libfoo (>= 1", "expected NAME"),
])
def test_a_part_that_does_not_parse_is_left_unread_never_guessed(part, why):
    field = relations.read(f"bison, {part}, flex", "amd64")
    assert names(field) == ["bison", "flex"]
    assert len(field.unread) == 1 and why in field.unread[0]


class Planted:
    """The system as a test says: installed versions, candidates, virtual providers; versions
    compared as tuples of numbers (enough for these)."""

    def __init__(self, installed=None, candidates=None, providers=None):
        self._installed = installed or {}
        self._candidates = candidates or {}
        self._providers = providers or {}

    def installed(self, name):
        return self._installed.get(name)

    def candidate(self, name):
        return self._candidates.get(name)

    def providers(self, name):
        return self._providers.get(name, [])

    def satisfies(self, version, op, wanted):
        a, b = (tuple(int(x) for x in v.split(".")) for v in (version, wanted))
        return {"<<": a < b, "<=": a <= b, "=": a == b, ">=": a >= b, ">>": a > b}[op]


def test_each_relation_is_met_here_or_its_first_installable_alternative_chosen():
    field = relations.read("debhelper-compat (= 13), gcc | clang, libold-dev (>= 2.0), "
                           "yacc | bison, libnone-dev | libnada-dev, awk, nasm (>= 2.15)",
                           "amd64")
    lookup = Planted(
        installed={"clang": "14.0", "libold-dev": "1.9", "mawk": "1.3", "nasm": "2.14"},
        candidates={"debhelper": "13.11", "libold-dev": "2.1", "bison": "3.8", "nasm": "2.15"},
        providers={"debhelper-compat": [("debhelper", "13")], "awk": [("mawk", "")],
                   "yacc": [("byacc", "")]})
    needs = dependencies.needs(field, lookup)
    # gcc | clang met by clang; awk by its installed provider mawk
    assert needs.met == ["gcc | clang", "awk"]
    # a virtual package's provider; an installed package too old gets its candidate; yacc's
    # provider has no candidate here, so bison
    assert needs.install == ["debhelper", "libold-dev", "bison", "nasm"]
    assert needs.chosen["yacc | bison"] == "bison"
    assert needs.unavailable == ["libnone-dev | libnada-dev"]
    assert needs.command() == ["apt-get", "install", "-y", "--no-install-recommends",
                               "--no-remove", "debhelper", "libold-dev", "bison", "nasm"]


def test_a_virtual_package_asked_at_a_version_needs_a_provider_of_that_version():
    field = relations.read("debhelper-compat (= 14)", "amd64")
    lookup = Planted(candidates={"debhelper": "13.11"},
                     providers={"debhelper-compat": [("debhelper", "13")]})
    assert dependencies.needs(field, lookup).unavailable == ["debhelper-compat (= 14)"]


def test_the_install_runs_apt_get_noninteractive_and_says_a_failure():
    calls = []

    def run(argv, **kwargs):
        calls.append((argv, kwargs["env"]))
        if argv[:2] == ["apt-get", "update"]:
            return process.Result(argv, 0, "", "")
        failed = len([c for c in calls if "install" in c[0]]) == 1
        stale = "E: Failed to fetch http://deb.debian.org/x.deb  404"
        return process.Result(argv, 100 if failed else 0, "", stale if failed else "")

    needs = dependencies.Needs(install=["liblzo2-dev"])
    said: list[str] = []
    assert dependencies.install(needs, said.append, run=run)
    # a stale list's 404: the lists updated, the install once more
    waiting = ["apt-get", "-o", "DPkg::Lock::Timeout=600", *needs.command()[1:]]
    assert [c[0] for c in calls] == [waiting, ["apt-get", "update"], waiting]
    assert calls[0][1]["DEBIAN_FRONTEND"] == "noninteractive" and "APT_CONFIG" not in calls[0][1]
    assert said == ["build dependencies: installing liblzo2-dev"]

    def broken(argv, **kwargs):
        return process.Result(argv, 100, "", "E: Unmet dependencies.\nE: held broken packages")

    said.clear()
    assert not dependencies.install(needs, said.append, run=broken)
    assert said[1].startswith("build dependencies: `apt-get install -y --no-install-recommends "
                              "--no-remove liblzo2-dev` failed (exit 100); going on")
    assert said[-1] == "  E: held broken packages"
