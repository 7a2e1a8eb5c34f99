"""A meson project built for real: tiny's C files under a meson.build of the test's own, two
flag sets through `meson setup --buildtype=plain`, Ninja, the wrapper and the audit, and the
package's own `meson test`; the record and the page name the build system."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import report_fixture as rf
from tiny_target import TINY_SRC

from flagsweep.compilation import meson, variants
from flagsweep.compilation.manifest import Manifest, Order, Tools
from flagsweep.experiment import matrix, recipe, target
from flagsweep.jobs import outputs
from flagsweep.report import method
from flagsweep.workload.inputs import Input

NO_MESON = shutil.which("meson") is None
# kernel.c as a static library: meson compiles it -fPIC (b_staticpic, its own default, kept as
# CMake's are), which the target tolerates as `new` would write. A test's program is built by
# default all the same (meson 1.0), with the variant's flags, and audited with the rest.
MESON_BUILD = """\
project('tinym', 'c')
m = meson.get_compiler('c').find_library('m', required: false)
kernel = static_library('kernel', 'kernel.c')
executable('tiny', 'main.c', link_with: kernel, dependencies: m)
selftest = executable('selftest', 'selftest.c', build_by_default: false)
test('selftest', selftest)
"""
TARGET = """\
summary = "tiny under meson"
version = "1.0"
[source]
path = "src"
[build]
system = "meson"
binary = "tiny"
tolerated_flags = ["-fPIC"]
tests = ["meson", "test", "--print-errorlogs"]
[inputs]
kind = "corpus"
megabytes = 0.25
quick_megabytes = 0.25
[run]
argv = ["{binary}", "{input}"]
stdout = "compared"
[check]
method = "tolerance"
rel_tolerance = 1e-5
"""


def meson_tiny(folder: Path) -> Path:
    """A target folder: tiny's source with the meson.build above, and its target file."""
    src = folder / "src"
    src.mkdir(parents=True)
    for name in ("main.c", "kernel.c", "kernel.h"):
        shutil.copy(TINY_SRC / name, src / name)
    (src / "selftest.c").write_text("int main(void) { return 0; }\n")
    (src / "meson.build").write_text(MESON_BUILD)
    (folder / "target.toml").write_text(TARGET)
    return folder


@pytest.fixture(scope="module")
def built(session_cache, tmp_path_factory):
    """-O1 and -O2 built once, with the package's own tests."""
    if NO_MESON:
        pytest.skip("meson is not installed (./setup.sh installs Debian's meson)")
    tmp = tmp_path_factory.mktemp("meson")
    t = target.load(str(meson_tiny(tmp / "tinym")))
    m = matrix.expand(recipe.from_flags(["-O1", "-O2"], ["gcc"]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLAGSWEEP_CACHE", str(session_cache))
        builds = variants.build_all(t, m, variants.Options(out_dir=tmp / "run", jobs=2,
                                                           package_tests=True, rebuild=True))
    return t, {" ".join(b.variant.flags): b for b in builds}


def _compiles(log: Path) -> list[list[str]]:
    return [r["argv"] for r in map(json.loads, log.read_text().splitlines()) if "-c" in r["argv"]]


@pytest.mark.integration
def test_both_flag_sets_build_verified_into_different_code(built):
    _, builds = built
    o1, o2 = builds["-O1"], builds["-O2"]
    assert (o1.status, o2.status) == ("ok", "ok") and o1.flags_verified and o2.flags_verified
    assert o1.code_sha256 != o2.code_sha256 and o2.identical_to is None
    assert o2.audit.tolerated_seen == ["-fPIC"]      # the static library's, meson's own
    for flags, b in builds.items():
        lines = _compiles(b.log.parent / "compile.jsonl")
        assert len(lines) == 3                       # main, kernel and the test's selftest
        # the build type plain: the variant's level is the only one, and no -g of meson's
        assert all([w for w in a if w.startswith("-O")] == [flags] and "-g" not in a
                   for a in lines)
        assert b.binary == b.log.parent / "tree" / "tiny"


@pytest.mark.integration
def test_meson_test_runs_in_the_variants_tree_on_what_its_build_compiled(built):
    _, builds = built
    for b in builds.values():
        tests = b.package_tests
        assert tests.status == "passed" and tests.command == ["meson", "test", "--print-errorlogs"]
        log = (b.log.parent / "tests.log").read_text()
        assert f"Entering directory `{b.log.parent / 'tree'}'" in log and "1/1 selftest OK" in log
        # its Ninja rebuild had nothing to compile: the test's program is the audited build's
        assert not (b.log.parent / "tests-compile.jsonl").exists()


def test_the_record_and_the_page_name_the_build_system(tmp_path):
    t = target.load(str(meson_tiny(tmp_path / "tinym")))
    given = Input(path=tmp_path / "in", sha256="0" * 64, size_bytes=1, description="corpus")
    assert outputs.workload_option(t, given)["build_system"] == "meson"
    doc = rf.results_doc()
    doc["workload"]["build_system"] = "meson"
    assert ("build system", "meson") in method.method_rows(rf.model(doc))
    # a results.json written before the key: no row, rather than an empty one
    assert "build system" not in dict(method.method_rows(rf.model(rf.results_doc())))


def test_the_setup_carries_the_flags_as_options_and_the_wrappers_as_cc(tmp_path):
    m = Manifest(system="meson", source=tmp_path / "src", binary="tiny",
                 configure_args=["-Ddocs=false"], make_args=["tiny"], ccache_env={},
                 compilers={"gcc": Tools(cc="/w/cc", cxx="/w/cxx", version="12")},
                 templates={}, variants={})
    v = Order(compiler="gcc", template="gcc", flags=["-O2", "-DX=a b"], dir=tmp_path / "v", jobs=3)
    tree = tmp_path / "v" / "tree"
    flags = "-O2 '-DX=a b'"        # meson splits an option's value as a shell does
    assert meson.setup(m, v, tree) == [
        "meson", "setup", str(tree), str(tmp_path / "src"), "--wrap-mode=nodownload",
        "--buildtype=plain", f"-Dc_args={flags}", f"-Dc_link_args={flags}",
        f"-Dcpp_args={flags}", f"-Dcpp_link_args={flags}", "-Ddocs=false"]
    assert meson.setup(m, v, tree, ["-O1"], wipe=True)[4:8] == [
        "--wrap-mode=nodownload", "--wipe", "--buildtype=plain", "-Dc_args=-O1"]
    own = Order(compiler="gcc", template="gcc", flags=[], dir=tmp_path / "o", jobs=1,
                own_flags=True)
    assert meson.setup(m, own, tree)[4:] == ["--wrap-mode=nodownload", "-Ddocs=false"]
    assert meson.compilers(m, v) == {"CC": "/w/cc", "CXX": "/w/cxx"}
    assert meson.build(v, tree, m.make_args) == ["ninja", "-C", str(tree), "-j3", "tiny"]
