"""A target built for its goal alone (build.goal): the command each build system is given, and
what a package's own tests get to build the rest."""

from __future__ import annotations

from pathlib import Path

from flagsweep.compilation import steps
from flagsweep.compilation.manifest import Manifest, Order, Template, Tools


def _manifest(tmp_path: Path, system: str, goal: str | None, goal_dir: str | None = None,
              make_args: list[str] = ()) -> Manifest:
    orders = {vid: Order(compiler="gcc", template="gcc", flags=["-O2"], dir=tmp_path / vid,
                         jobs=2, own_flags=vid.startswith("own")) for vid in ("gcc-O2", "own")}
    return Manifest(system=system, source=tmp_path / "src", binary="src/prog",
                    configure_args=[], make_args=list(make_args), ccache_env={},
                    compilers={"gcc": Tools(cc="/w/cc", version="12")},
                    templates={"gcc": Template(compiler="gcc", dir=tmp_path / "t",
                                               log=tmp_path / "t.log")},
                    variants=orders, goal=goal, goal_dir=goal_dir)


def _argv(m: Manifest, vid: str = "gcc-O2") -> list[str]:
    return steps._build_argv(m, m.variants[vid], m.variants[vid].dir / "tree")


def test_cmake_builds_the_goal_as_a_target(tmp_path):
    m = _manifest(tmp_path, "cmake", "cjpeg", make_args=["--", "-k0"])
    assert _argv(m) == ["cmake", "--build", str(tmp_path / "gcc-O2" / "tree"), "-j2",
                        "--target", "cjpeg", "--", "-k0"]
    # ctest's programs: the rest, built as the variant was, before the suite
    assert steps.whole_build(m, "gcc-O2") == ["cmake", "--build",
                                              str(tmp_path / "gcc-O2" / "tree"), "-j2", "--",
                                              "-k0"]


def test_a_recursive_make_tree_builds_the_goal_in_its_folder(tmp_path):
    m = _manifest(tmp_path, "autotools", "prog", "src", make_args=["V=1"])
    argv = _argv(m)
    assert argv[:3] == ["make", "-C", "src"] and argv[-2:] == ["V=1", "prog"]
    assert "CFLAGS=-O2" in argv
    # the project's own build makes the same goal, with its own flags
    own = _argv(m, "own")
    assert own[:3] == ["make", "-C", "src"] and own[-1] == "prog"
    assert not any(a.startswith("CFLAGS=") for a in own)
    # `make check` is given the variables alone, and builds the rest itself
    assert steps.make_variables(m, "gcc-O2") == [a for a in argv if "=" in a]
    assert steps.whole_build(m, "gcc-O2") is None


def test_without_a_goal_everything_is_built_as_before(tmp_path):
    m = _manifest(tmp_path, "make", None)
    assert _argv(m)[:2] == ["make", "-j2"] and _argv(m)[-1].startswith("CC=")
    assert steps.whole_build(_manifest(tmp_path, "cmake", None), "gcc-O2") is None
