"""What configure or cmake said it left out (compilation.features), read from recorded output:
libjpeg-turbo 2.1.5's cmake without nasm (`flagsweep new` here), the same with nasm (its
simd/CMakeLists.txt's and CMake's messages for a found nasm in place of the failed ones), and
autoconf lines taken from lame 3.100's, gzip 1.12's and xz 5.4.1's configure runs here (gzip's
and xz's assembler lines are about code for other architectures and are not read as left
out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagsweep import model
from flagsweep.compilation import features, steps
from flagsweep.compilation.manifest import Manifest, Order, Template, Tools

RECORDED = Path(__file__).parent.parent / "fixtures" / "configure"


def _text(name: str) -> str:
    return (RECORDED / name).read_text()


def _path_with(tmp_path: Path, *programs: str) -> str:
    """A PATH of one folder holding these programs (none: an empty folder)."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name in programs:
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    return str(folder)


def test_cmake_without_nasm_is_built_without_simd_and_names_nasm(tmp_path):
    left = features.left_out(_text("libjpeg-turbo-cmake.log"), _path_with(tmp_path))
    # cmake's warning, wrapped over two lines, is read as one
    assert left == model.LeftOut(kind="SIMD", missing=["nasm"], said=[
        "Looking for a ASM_NASM compiler - NOTFOUND",
        "SIMD extensions disabled: could not find NASM compiler.  Performance will suffer."])
    line = features.sentence(left, "debhelper-compat (= 13), cmake, nasm [amd64 i386 x32]")
    assert line.startswith("built without SIMD: nasm missing; Debian builds it with nasm "
                           "(install nasm, then build again); configure said `Looking for a ")


def test_cmake_with_nasm_leaves_nothing_out(tmp_path):
    assert features.left_out(_text("libjpeg-turbo-cmake-nasm.log"),
                             _path_with(tmp_path, "nasm")) is None


def test_autoconf_names_the_assembler_it_did_not_find_not_the_toolchains_own(tmp_path):
    left = features.left_out(_text("autoconf-nasm-missing.log"), _path_with(tmp_path))
    assert left == model.LeftOut(kind="assembly", said=["checking for nasm... no"],
                                 missing=["nasm"])


def test_a_probe_of_the_assemblers_syntax_leaves_nothing_out():
    """nettle 3.8.1's configure, which then builds its x86_64 assembly."""
    assert features.said("configure: Looking for assembler files in x86_64/fat x86_64.\n"
                         "checking if .align assembly directive is logarithmic... no\n") == []


def test_one_assembler_found_is_enough(tmp_path):
    assert features.left_out(_text("yasm-found-autoconf.log"), _path_with(tmp_path)) is None


def test_an_assembler_that_is_there_is_not_said_missing(tmp_path):
    left = features.left_out("-- SIMD extensions: None (WITH_SIMD = 0)\n",
                             _path_with(tmp_path, "nasm"))
    assert left.missing == [] and features.sentence(left).startswith(
        "built without SIMD: configure left it out; configure said ")


@pytest.mark.parametrize("depends, debian", [
    ("cmake, nasm [amd64 i386 x32]", True), ("nasm (>= 2.13)", True), ("nasm:native", True),
    ("nasm [any-i386]", False), ("nasm [!amd64]", False), ("nasm-mozilla", False), ("", False)])
def test_debian_builds_it_with_the_assembler_only_where_build_depends_says_so_here(
        monkeypatch, depends, debian):
    monkeypatch.setattr(features, "ARCH", "amd64")
    left = model.LeftOut(kind="assembly", said=["checking for nasm... no"], missing=["nasm"])
    assert ("Debian builds it with nasm" in features.sentence(left, depends)) is debian


def _manifest(tmp_path: Path, system: str, configure_args: list[str] = ()) -> Manifest:
    log = tmp_path / "configure-gcc.log"
    return Manifest(system=system, source=tmp_path / "src", binary="cjpeg",
                    configure_args=list(configure_args), make_args=[], ccache_env={},
                    compilers={"gcc": Tools(cc="/w/cc", version="12")},
                    templates={"gcc": Template(compiler="gcc", dir=tmp_path / "t", log=log)},
                    variants={"gcc-O2": Order(compiler="gcc", template="gcc", flags=["-O2"],
                                              dir=tmp_path / "gcc-O2", jobs=1)})


def test_cmake_is_read_up_to_its_build_command(tmp_path):
    m = _manifest(tmp_path, "cmake")
    (tmp_path / "gcc-O2").mkdir()
    (tmp_path / "gcc-O2" / "build.log").write_text(
        "$ cmake -S src -B tree\n" + _text("libjpeg-turbo-cmake.log")
        + "$ cmake --build tree -j1 --target cjpeg\n[1/2] asm: none, SIMD: disabled\n")
    said = features.configured(m, "gcc-O2")
    assert "could not find NASM" in said and "asm: none" not in said
    assert features.found(m, "gcc-O2").kind == "SIMD"


def test_a_targets_own_configure_args_decide_it(tmp_path):
    m = _manifest(tmp_path, "autotools", ["--disable-nasm"])
    m.templates["gcc"].log.write_text(_text("autoconf-nasm-missing.log"))
    assert features.found(m, "gcc-O2") is None
    assert features.found(_manifest(tmp_path, "autotools"), "gcc-O2").kind == "assembly"


def test_a_configure_tree_reused_from_the_cache_still_says_what_configure_said(tmp_path):
    m = _manifest(tmp_path, "autotools")
    tree = m.templates["gcc"].dir
    tree.mkdir()
    (tree / steps.ORIGIN_FILE).write_text(str(tree))
    (tree / steps.OUTPUT_FILE).write_text(_text("autoconf-nasm-missing.log"))
    assert steps.template(m, "gcc") == 0
    said = m.templates["gcc"].log.read_text()
    assert said.startswith("configure tree reused from the cache") and "nasm... no" in said


def test_the_page_warns_once_for_the_variants_that_left_it_out():
    from report_fixture import model as fixture_model, results_doc

    from flagsweep.report import headline

    doc = results_doc()
    left = {"kind": "SIMD", "said": ["SIMD extensions: None (WITH_SIMD = 0)"],
            "missing": ["nasm"]}
    for v in doc["variants"]:
        v["build"]["left_out"] = left
    texts = [w.text for w in headline.warnings(fixture_model(doc)) if w.kind == "left-out"]
    assert texts == ["Built without SIMD: nasm missing (install nasm, then build again); "
                     "configure said `SIMD extensions: None (WITH_SIMD = 0)`."]


def test_what_configure_printed_is_kept_printable():
    # a target file's comment cannot hold a control character (TOML), nor a page a raw escape
    assert features.said("checking for nasm\x1b[31m... no\r\n") == ["checking for nasm?[31m... no"]
