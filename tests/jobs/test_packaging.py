"""What `flagsweep new` takes from Debian's packaging: the build dependencies installed (as root)
or named (not), autoreconf where the package's own build runs it, and the executable chosen
among those Debian's binary packages ship. The system's apt is stood in for throughout."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from flagsweep.compilation import contents, debian, dependencies, fetch, patches
from flagsweep.errors import FetchError
from flagsweep.experiment.source import Source
from flagsweep.jobs import packaging, project, scaffold, target_file, trial
import tarballs

RELEASE = debian.DebianRelease(
    "lzop", "1.04-2", "lzop_1.04.orig.tar.gz", "0" * 64,
    build_depends="debhelper-compat (= 13), liblzo2-dev, libnone-dev",
    package_list="\n lzop deb utils optional arch=any\n", binary="lzop")


def draft(release=RELEASE, binary="lzop", **kw) -> target_file.Draft:
    return target_file.Draft(name="lzop", package=release.package, release=release,
                             upstream="1.04", urls=[], system="autotools", binary=binary, **kw)


class Planted:
    def __init__(self, installed, candidates, providers):
        self.i, self.c, self.p = installed, candidates, providers

    def installed(self, name):
        return self.i.get(name)

    def candidate(self, name):
        return self.c.get(name)

    def providers(self, name):
        return self.p.get(name, [])

    def satisfies(self, version, op, wanted):
        return version == wanted


LOOKUP = Planted({"debhelper": "13.11"}, {"debhelper": "13.11", "liblzo2-dev": "2.10-2"},
                 {"debhelper-compat": [("debhelper", "13")]})


def test_not_root_the_missing_build_dependencies_are_named_in_one_line(monkeypatch):
    monkeypatch.setattr(dependencies, "root", lambda: False)
    monkeypatch.setattr(dependencies, "install", lambda *a: pytest.fail("installed as non-root"))
    d, said = draft(), []
    packaging.build_dependencies(d, said.append, LOOKUP)
    line = "apt-get install -y --no-install-recommends --no-remove liblzo2-dev"
    assert said == [
        "build dependencies: lzop 1.04-2: 3 relation(s) here, 1 met",
        "build dependencies: no package here meets: libnone-dev",
        f"build dependencies: not root, so not installed; as root run: {line} (going on: the "
        "build may still work)"]
    assert d.depends_command[-1] == "liblzo2-dev"
    # in the target file's comments, and in the advice of a failed build (no build-dep)
    text = target_file.render(d)
    assert f"# not installed (not root): {line}" in text
    assert "# no package here meets: libnone-dev" in text
    advice = scaffold._build_deps(d)
    assert f"as root, `{line}`" in advice and "build-dep" not in advice


def test_as_root_they_are_installed_and_recorded(monkeypatch):
    monkeypatch.setattr(dependencies, "root", lambda: True)
    monkeypatch.setattr(dependencies, "update", lambda *a: True)
    installed = []
    monkeypatch.setattr(dependencies, "install",
                        lambda needs, say: installed.append(needs.install) or True)
    d, said = draft(), []
    packaging.build_dependencies(d, said.append, LOOKUP)
    assert installed == [["liblzo2-dev"]] and not d.depends_command
    assert said[-1] == "build dependencies: installed liblzo2-dev"
    assert "# installed by `flagsweep new`: liblzo2-dev" in target_file.render(d)


def tree(tmp_path: Path, *names: str) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for name in names:
        (root / name).write_text("")
    return root


CONFIGURE_AC = [patches.Patch("01.patch", 1, ("Makefile.am",))]


@pytest.mark.parametrize("members, applied, runs", [
    (("configure.ac", "Makefile.am"), [], "no configure"),
    (("configure.in",), [], "no configure"),
    (("configure.ac", "configure", "Makefile.am"), CONFIGURE_AC, "01.patch changes Makefile.am"),
    (("configure.ac", "configure"), [patches.Patch("01.patch", 1, ("src/a.c",)),
                                     patches.Patch("02.patch", 1, ("configure.ac", "m4/x.m4"))],
     "patch 02.patch changes configure.ac and 1 more of configure's inputs, so configure is "
     "made again"),
    # what dh_autoreconf would do is not the reason: indent's shipped configure is kept
    (("configure.ac", "configure", "Makefile.am"), [], None),
    (("CMakeLists.txt",), CONFIGURE_AC, None),
])
def test_autoreconf_where_the_tree_needs_it(tmp_path, members, applied, runs):
    why = packaging.autoreconf_reason(tree(tmp_path, *members), applied)
    assert (why is None) if runs is None else (runs in why)


def elf(path: Path, size: int) -> None:
    # an ELF executable's header (e_type 2 at byte 16), as project.executables reads it
    path.write_bytes(b"\x7fELF" + b"\0" * 12 + b"\x02\0" + b"\0" * size)
    path.chmod(0o755)


def test_the_executable_is_one_debian_ships_named_like_its_package(tmp_path):
    root = tmp_path / "tree"
    (root / "tests").mkdir(parents=True)
    elf(root / "tests" / "fuzz-driver", 9000)     # the largest: today's rule would take it
    elf(root / "opusinfo", 300)
    elf(root / "opusenc", 200)
    d = draft(binary="opus-tools")
    d.shipped = {"opusenc": "opusenc", "opusinfo": "opus-tools", "opusdec": "opus-tools"}
    assert trial.found_binary(d, root)
    assert d.binary == "opusenc"       # named like the binary package that ships it
    assert "Debian ships opusinfo, opusenc (in opus-tools, opusenc)" in d.binary_note
    # no package name fits: the largest Debian ships, never the test driver
    d = draft(binary="opus-tools")
    d.shipped = {"opusenc": "opus-tools", "opusinfo": "opus-tools"}
    assert trial.found_binary(d, root) and d.binary == "opusinfo"
    # the lists could not be had: today's rule, said
    d = draft(binary="opus-tools", shipped_note="Debian's file lists could not be read: x")
    assert trial.found_binary(d, root) and d.binary == "tests/fuzz-driver"
    assert d.binary_note.endswith("not checked against Debian's: Debian's file lists could "
                                  "not be read: x")


def test_the_file_lists_read_or_why_not(monkeypatch):
    d, said = draft(), []
    got = contents.Shipped({"lzop": "lzop"}, ["lzop"], [])
    packaging.shipped_programs(d, said.append, read=lambda names, version: got)
    assert d.shipped == {"lzop": "lzop"}
    assert said == ["executable: Debian's lzop ship 1 program(s): lzop"]
    d = draft()
    packaging.shipped_programs(d, said.append,
                               read=lambda names, version: contents.Shipped(missed=["lzop: 404"]))
    assert d.shipped is None and d.shipped_note.endswith("could not be read: lzop: 404")
    # read at the source's version, or the note says it was not
    asked = []
    packaging.shipped_programs(draft(), said.append, read=lambda names, version: (
        asked.append(version) or contents.Shipped({"lzop": "lzop"}, ["lzop"], [], ["lzop"])))
    assert asked == [RELEASE.version]
    assert said[-1].endswith(f"(lzop read at apt's version, not {RELEASE.version}: gone from "
                             "the archive)")


# A project without the configure its configure.ac makes (autoconf alone: the cheapest run).
AUTOCONF = {
    "configure.ac": "AC_INIT([hello], [1.0])\nAC_CONFIG_FILES([Makefile])\nAC_OUTPUT\n",
    "Makefile.in": "all:\n",
}


AUTORECONF = pytest.mark.skipif(not shutil.which("autoreconf"), reason="autoconf is not installed")


def cached(cache: Path, members: dict[str, str]) -> str:
    """An orig tarball of these files in the cache, as if fetched; its sha256."""
    return tarballs.cached(cache, "hello_1.0.orig.tar.gz", members, "hello-1.0/", 0o755)


def test_a_failing_autoreconf_keeps_the_shipped_configure_or_stops_without_one(isolated_cache,
                                                                              monkeypatch):
    def fails(tree, name):
        raise FetchError(f"target {name!r}: autoreconf -fi failed (exit 1) in its unpacked "
                         "source:\nconfigure.ac:1: error: end of file in argument list")

    monkeypatch.setattr(fetch, "autoreconf", fails)
    broken = {"configure.ac": "AC_INIT([hello], [1.0])\n", "Makefile.am": "",
              "configure": "#! /bin/sh\n# Generated by GNU Autoconf 2.71\n"}
    release = debian.DebianRelease("hello", "1.0-1", "hello_1.0.orig.tar.gz",
                                   cached(isolated_cache, broken))
    d, said = draft(release), []
    tree = fetch.prepare(scaffold._source(d))
    assert scaffold._regenerated(d, tree, CONFIGURE_AC, said.append) == tree
    assert not d.autoreconf
    assert d.autoreconf_note.startswith("not autoreconf'd, though Debian's patch 01.patch "
                                        "changes Makefile.am")
    assert "autoreconf = true" not in target_file.render(d)
    del broken["configure"]
    release = debian.DebianRelease("hello", "1.0-1", "hello_1.0.orig.tar.gz",
                                   cached(isolated_cache, broken))
    d = draft(release)
    with pytest.raises(FetchError, match="autoreconf -fi failed"):
        scaffold._regenerated(d, fetch.prepare(scaffold._source(d)), [], said.append)


@pytest.mark.integration
@AUTORECONF
def test_an_autoreconf_source_is_regenerated_into_a_tree_of_its_own(isolated_cache):
    digest = cached(isolated_cache, AUTOCONF)
    plain = fetch.prepare(Source("hello", "1.0", (), digest, None))
    made = fetch.prepare(Source("hello", "1.0", (), digest, None, autoreconf=True))
    assert not (plain / "configure").exists()
    assert made != plain and made.name.endswith("-autoreconf")
    assert (made / "configure").is_file()
    assert not (made / "autom4te.cache").exists()
    # once: the second prepare is the cached tree
    assert fetch.prepare(Source("hello", "1.0", (), digest, None, autoreconf=True)) == made


# jq 1.6's trial build, as its log said: a rule writes into src/, which an out-of-tree build
# without dependency tracking never made.
JQ_LOG = """build exited 2; trial/1/builds/gcc-O2/build.log
$ make -j2 CFLAGS=-O2 CXXFLAGS=-O2 FLAGSWEEP_LDFLAGS=
  GEN      src/builtin.inc
/bin/bash: line 1: src/builtin.inc: No such file or directory
make: *** [Makefile:1827: src/builtin.inc] Error 1"""


def test_a_rule_writing_into_a_folder_only_tracking_makes_turns_tracking_on(tmp_path):
    d = draft(configure_args=["--disable-dependency-tracking", "--disable-shared"])
    d.source = tree(tmp_path)
    assert not project.tracking_needed(d, JQ_LOG)      # the source has no src/: not this
    (d.source / "src").mkdir()
    # a compiler's missing header is another failure
    header = "main.c:1:10: fatal error: src/lzo.h: No such file or directory"
    assert not project.tracking_needed(d, header)
    assert project.tracking_needed(d, JQ_LOG)
    assert d.configure_args == ["--disable-shared"]
    assert "# with dependency tracking: the build writes src/builtin.inc" in target_file.render(d)
    assert not project.tracking_needed(d, JQ_LOG)      # once


def test_an_autotools_build_failing_after_making_the_program_builds_its_goal_next(tmp_path):
    # indent: regression/ has a Makefile of its own and no Makefile.in, so the out-of-tree
    # build stops there after src/indent is made
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    elf(root / "src" / "indent", 300)
    failed = SimpleNamespace(detail="build exited 2; build.log\n"
                                    "/bin/bash: line 21: cd: regression: No such file or directory\n"
                                    "make[1]: *** [Makefile:468: all-recursive] Error 1")
    d, said = draft(binary="indent"), []
    d.shipped = {"indent": "indent"}
    assert trial._made_anyway(d, failed, root, said.append)
    assert (d.binary, d.goal, d.goal_dir) == ("src/indent", "indent", "src")
    assert said[-1].startswith("goal: the whole build failed (")
    assert said[-1].endswith("after making src/indent: only its goal is built, "
                             "`make -C src indent`")
    assert not trial._made_anyway(d, failed, root, said.append)       # once
    d = draft(binary="indent")
    d.system = "cmake"                      # cmake's and meson's trees: not this rule
    assert not trial._made_anyway(d, failed, root, said.append)
