"""A program whose code is partly in a shared library of its own build tree, and partly in a
system library: the tree's library is the variant's code (hashed and sized with the binary),
the system one is named as not the variant's; what copies the binary alone (the A/A twin, a
fleet, the kept reference) keeps to its library or refuses. Built for real (gcc, CMake), the
build step alone: two variants whose executables are the same and whose libraries are not."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest
from report_fixture import results_doc

from flagsweep.compilation import binaries, fingerprint, variants
from flagsweep.errors import FlagsweepError
from flagsweep.experiment import matrix, recipe, target
from flagsweep.explain import attribution, symbols
from flagsweep.explain.profile import Profile
from flagsweep.jobs import controls, worker
from flagsweep.model import Variant

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not Path("/usr/include/zlib.h").exists(),
                                 reason="zlib's headers (zlib1g-dev) are not installed")]

# The library reads LIBK: a flag that changes the library's code and nothing of the program's.
SOURCES = {
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.18)\nproject(p C)\n"
                      "set(CMAKE_BUILD_RPATH_USE_ORIGIN ON)\n"      # the program finds it by $ORIGIN
                      "find_package(ZLIB REQUIRED)\n"
                      "add_library(work SHARED work.c)\n"
                      "add_executable(prog main.c)\n"
                      "target_link_libraries(prog work ZLIB::ZLIB)\n",
    "work.c": "int work(int x) {\n#ifdef LIBK\n  return x * LIBK;\n#else\n  return x + 1;\n"
              "#endif\n}\n",
    "main.c": "#include <zlib.h>\nint work(int);\n"
              "int main(void) { return (work(2) + (int)crc32(0, 0, 0)) & 1; }\n",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict[str, variants.VariantBuild]]:
    folder = tmp_path_factory.mktemp("shared")
    src = folder / "p" / "src"
    src.mkdir(parents=True)
    for name, text in SOURCES.items():
        (src / name).write_text(text)
    (folder / "p" / "target.toml").write_text(
        'summary = "a program and its shared library"\nversion = "1"\n[source]\npath = "src"\n'
        '[build]\nsystem = "cmake"\nbinary = "prog"\ntolerated_flags = ["-fPIC"]\n'
        '[inputs]\nkind = "file"\npath = "x"\n[run]\nargv = ["{binary}"]\n'
        '[check]\nmethod = "exact"\n')
    t = target.load(str(folder / "p"))
    m = matrix.expand(recipe.from_flags(["-O2", "-O2 -DLIBK=3"], ["gcc"]))
    out = folder / "run"
    builds = variants.build_all(t, m, variants.Options(out_dir=out, jobs=2))
    return out, {" ".join(b.variant.flags): b for b in builds}


def test_a_flag_that_changes_only_the_tree_library_is_another_variant(built):
    out, builds = built
    base, other = builds["-O2"], builds["-O2 -DLIBK=3"]
    assert [base.status, other.status] == ["ok", "ok"], [base.detail, other.detail]
    # the executables are the same code; the library each loads is not
    assert fingerprint.code_hash(base.binary) == fingerprint.code_hash(other.binary)
    assert other.identical_to is None and base.code_sha256 != other.code_sha256
    lib = out / "builds" / base.variant.id / "tree" / "libwork.so"
    assert base.libraries == [str(lib.resolve())]
    assert base.size_bytes == base.binary.stat().st_size + lib.stat().st_size
    assert base.sizes["text"] > fingerprint.sizes(base.binary)["text"]
    # each binary loads its own variant's library, as the loader finds it
    assert other.libraries[0].startswith(str((out / "builds" / other.variant.id).resolve()))
    # a build with a tree library is kept out of the build cache, which holds the binary alone
    assert not base.reused and not other.reused


def test_the_system_library_is_named_and_the_runtime_marked(built):
    _, builds = built
    external = {lib.name: lib for lib in builds["-O2"].external}
    assert external["libz.so.1"].path and not external["libz.so.1"].runtime
    assert external["libc.so.6"].runtime
    assert "libwork.so" not in external
    # said once for the sweep, in the terminal after the build (and by `new` after its trial)
    (line,) = variants.foreign(list(builds.values()))
    assert line == (f"prog loads libz.so.1 from {external['libz.so.1'].path}: its code is the "
                    "system's, not built with the variant's flags; `flagsweep explain` profiles "
                    "a run, its functions included")


def test_recheck_reads_the_recorded_libraries(built, tmp_path):
    out, builds = built
    b = builds["-O2 -DLIBK=3"]
    record = b.contract(out)
    assert fingerprint.recheck(record, b.binary) is None
    # the other variant's library in its place is other code
    swapped = {**record, "libraries": builds["-O2"].libraries}
    assert fingerprint.recheck(swapped, b.binary) is not None
    # nor is a copy of its own library that it does not load
    copy = tmp_path / "libwork.so"
    copy.write_bytes(Path(record["libraries"][0]).read_bytes())
    moved = fingerprint.recheck({**record, "libraries": [str(copy)]}, b.binary)
    assert moved.state == f"no longer loads its recorded library {copy}"
    # a recorded path that is no shared object is never taken for the library
    (tmp_path / "not.so").write_text("text")
    assert fingerprint.recheck({**record, "libraries": [str(tmp_path / "not.so")]},
                               b.binary) is not None


def test_the_aa_twin_loads_the_baselines_own_library(built):
    """The twin is a copy of the baseline's binary found by $ORIGIN: a copy alone would find no
    library (or another one); the twin's folder holds the baseline's library at its place."""
    out, builds = built
    b = builds["-O2"]
    base = Variant.model_validate(b.doc(out))
    (twin,) = controls.aa_twin([base], base.id, out)
    copy = Path(twin.build.binary)
    (lib,) = twin.build.libraries
    assert Path(lib).is_relative_to(out.resolve() / "builds" / twin.id)
    assert Path(lib).read_bytes() == Path(b.libraries[0]).read_bytes()
    assert binaries.loaded(copy, out / "builds").inside == [Path(lib)]
    assert fingerprint.recheck(twin.build.dump(), copy) is None
    # it runs the baseline's library: work(2) is 3 there, 6 in the other variant's
    assert subprocess.run([copy], check=False).returncode == 1
    assert subprocess.run([builds["-O2 -DLIBK=3"].binary], check=False).returncode == 0


def test_a_fleet_refuses_to_ship_a_binary_without_its_library(built):
    """A fleet ships the binary's bytes alone to the workers that time it; there its run path
    finds another build's library, the system's or none."""
    _, builds = built
    copies = [dataclasses.replace(b) for b in builds.values()]
    blobs, logs = worker.shipment(copies)
    assert blobs == {} and len(logs) == 2
    assert [b.status for b in copies] == ["failed", "failed"]
    assert copies[0].detail.startswith("prog loads libwork.so from its build tree, and a fleet "
                                       "ships the binary alone: build the program static")


def test_explain_gives_the_share_of_the_run_in_the_system_library(built):
    """A profile names functions, not objects: the functions libz exports are its share, the
    tree library's own (`work`) are the variant's code."""
    out, builds = built
    b = builds["-O2"]
    v = Variant.model_validate(b.doc(out))
    profile = Profile("cachegrind", "Ir", ["Ir"], {"main": {"Ir": 100.0}, "work": {"Ir": 100.0},
                                                   "crc32": {"Ir": 300.0}}, {})
    sizes = symbols.function_sizes(b.binary)
    assert attribution.library_shares(v, profile, sizes) == {"libz.so.1": 60.0}
    (line,) = binaries.foreign([("prog", lib) for lib in b.external], {"libz.so.1": 60.0})
    assert line.endswith("not built with the variant's flags; at least 60.0% of the baseline's "
                         "profiled run is in it (flagsweep explain)")


def test_a_binary_that_needs_its_tree_library_is_not_kept_as_the_reference(built):
    """A kept reference is the binary alone, timed by later sweeps without its library."""
    out, builds = built
    base = Variant.model_validate(builds["-O2"].doc(out))
    said = []
    controls.keep_reference(None, "run", "p", [base], base.id, said.append)
    assert said == [f"reference arm: {base.id}'s binary not kept: it loads libwork.so from its "
                    "build tree"]


def test_a_run_whose_baseline_needs_its_tree_library_is_refused_as_reference(built, tmp_path):
    out, builds = built
    b = builds["-O2"]
    run = tmp_path / "earlier"
    run.mkdir()
    doc = results_doc()
    (base,) = [v for v in doc["variants"] if v["id"] == doc["baseline"]]
    base["build"] = {**base["build"], "binary": str(b.binary), "libraries": b.libraries}
    (run / "results.json").write_text(json.dumps(doc))
    with pytest.raises(FlagsweepError) as e:
        controls.reference_binary(run)
    assert str(e.value) == (f"--reference {run}: its baseline's binary loads libwork.so from its "
                            "build tree (key 'build.libraries'), and the reference arm is the "
                            "binary alone; expected a program built static")
