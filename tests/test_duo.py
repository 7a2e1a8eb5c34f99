"""duo, tune's known answer, holds the facts its space file claims, built by flagsweep's own
machinery: -fversion-loops-for-strides and -fipa-cp-clone each change the code of their hot
function (and only that kernel's), the switches said not to matter leave the code byte for byte
the same, and every build prints the same checksum. Code facts only, never timing."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from flagsweep.compilation import variants
from flagsweep.experiment import matrix, recipe, target
from flagsweep.explain.disassembly import listing
from flagsweep.workload.corpus import corpus_bytes

pytestmark = pytest.mark.integration

STRIDES = "-fversion-loops-for-strides"   # versions duo_walk's loop for stride 1
CLONE = "-fipa-cp-clone"                  # clones cells_apply per callback
_TARGET = re.compile(r"\b[0-9a-f]+ <")
_RIP = re.compile(r"-?0x[0-9a-f]+\(%rip\)")


def _placeless(lines: list[str]) -> list[str]:
    """A function's listing without the addresses in its operands (jump targets, RIP-relative
    offsets): code moved whole by a change elsewhere in the binary is the same code."""
    return [_RIP.sub("(%rip)", _TARGET.sub("<", line)) for line in lines]


def _space() -> dict:
    return tomllib.loads((target.load("duo").folder / "space.toml").read_text())


def _neutral() -> list[str]:
    """The space's 50 switches said not to matter."""
    return [s for s in _space()["switches"] if s not in (STRIDES, CLONE)]


def _built(flag_sets: list[str], folder: Path, cache: Path) -> dict[str, variants.VariantBuild]:
    """duo built with each flag set by flagsweep's own machinery, in the session's cache as
    conftest's isolated_cache sets it up (a module's fixture is made before that per-test one)."""
    m = matrix.expand(recipe.from_flags(flag_sets, ["gcc"]), filter_cpu=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLAGSWEEP_CACHE", str(cache))
        mp.setenv("XDG_CONFIG_HOME", str(cache / "config"))
        mp.delenv("CCACHE_DIR", raising=False)
        built = variants.build_all(target.load("duo"), m,
                                   variants.Options(out_dir=folder / "run", jobs=2))
    return {" ".join(b.variant.flags): b for b in built}


@pytest.fixture(scope="module")
def builds(tmp_path_factory, session_cache) -> dict[str, variants.VariantBuild]:
    """duo at -O2, with each switch, with both, and with all 50 neutral switches on each of -O2
    and both: built once for the module."""
    flag_sets = ["-O2", f"-O2 {STRIDES}", f"-O2 {CLONE}", f"-O2 {STRIDES} {CLONE}",
                 " ".join(["-O2", *_neutral()]),
                 " ".join(["-O2", STRIDES, CLONE, *_neutral()])]
    return _built(flag_sets, tmp_path_factory.mktemp("duo"), session_cache)


def test_the_space_file_holds_the_two_among_fifty():
    space = _space()
    switches = space["switches"]
    assert space["base"] == "-O2" and space["compilers"] == ["gcc"]
    assert len(switches) == 52 and len(set(switches)) == 52
    assert STRIDES in switches and CLONE in switches
    assert switches.index(STRIDES) > 0 and switches.index(CLONE) > 0    # not given away first


def test_every_build_is_verified(builds):
    assert {b.status for b in builds.values()} == {"ok"}
    assert all(b.flags_verified for b in builds.values())


def test_the_two_switches_change_only_their_own_kernel(builds):
    def code(flags: str, function: str) -> list[str]:
        return _placeless(listing(builds[flags].binary, function))

    base = {f: code("-O2", f) for f in ("duo_walk", "cells_apply")}
    assert base["duo_walk"] and base["cells_apply"]
    # Versioning adds the stride-1 copy of the loop: duo_walk changes, the cells do not.
    assert code(f"-O2 {STRIDES}", "duo_walk") != base["duo_walk"]
    assert code(f"-O2 {STRIDES}", "cells_apply") == base["cells_apply"]
    # Cloning gives cells_apply a copy per callback: more symbols; duo_walk does not change.
    assert code(f"-O2 {CLONE}", "cells_apply") != base["cells_apply"]
    assert sum(line.startswith("<") for line in code(f"-O2 {CLONE}", "cells_apply")) == 2
    assert code(f"-O2 {CLONE}", "duo_walk") == base["duo_walk"]


def test_the_neutral_switches_leave_the_code_byte_for_byte_the_same(builds):
    """All 50 at once, on -O2 and on the two: identical code either way (one build each, so the
    test stays quick; together they are the stronger claim, and a tune proposes them together)."""
    base, both = builds["-O2"], builds[f"-O2 {STRIDES} {CLONE}"]
    assert base.code_sha256 and both.code_sha256 and base.code_sha256 != both.code_sha256
    assert builds[" ".join(["-O2", *_neutral()])].code_sha256 == base.code_sha256
    assert builds[" ".join(["-O2", STRIDES, CLONE, *_neutral()])].code_sha256 == both.code_sha256


def test_the_switches_do_not_change_the_output(builds, tmp_path):
    corpus = tmp_path / "corpus.bin"
    corpus.write_bytes(corpus_bytes(20_000, target.load("duo").spec.inputs.seed))

    def output(flags: str) -> str:
        binary: Path = builds[flags].binary
        return subprocess.run([str(binary), str(corpus)], capture_output=True, text=True,
                              check=True, timeout=30).stdout

    base = output("-O2")
    assert base.startswith("bytes 20000 ")
    assert output(f"-O2 {STRIDES} {CLONE}") == base


# ---- decoys.toml: the harder known answer, with decoys that change the code ---------------------

HOT = ("duo_walk", "cells_apply", "duo_cells")


def _decoys() -> tuple[list[str], list[str]]:
    """decoys.toml's 50 switches said not to matter: those that change the code, the rest."""
    spec = tomllib.loads((target.load("duo").folder / "decoys.toml").read_text())
    assert spec["base"] == "-O2" and len(spec["switches"]) == 52
    assert STRIDES in spec["switches"] and CLONE in spec["switches"]
    neutral = set(_neutral())
    rest = [s for s in spec["switches"] if s not in (STRIDES, CLONE)]
    return [s for s in rest if s not in neutral], [s for s in rest if s in neutral]


@pytest.fixture(scope="module")
def decoy_builds(tmp_path_factory, session_cache) -> dict[str, variants.VariantBuild]:
    """-O2 and the two, each alone with every code-changing decoy, and with all 50 decoys."""
    changing, same = _decoys()
    flag_sets = ["-O2", f"-O2 {STRIDES} {CLONE}", *(f"-O2 {d}" for d in changing),
                 " ".join(["-O2", *changing, *same]),
                 " ".join(["-O2", STRIDES, CLONE, *changing, *same])]
    return _built(flag_sets, tmp_path_factory.mktemp("decoys"), session_cache)


def test_the_decoys_change_the_code_but_never_the_kernels(decoy_builds):
    changing, same = _decoys()
    assert len(changing) == 17 and len(same) == 33
    assert {b.status for b in decoy_builds.values()} == {"ok"}
    base, both = decoy_builds["-O2"], decoy_builds[f"-O2 {STRIDES} {CLONE}"]

    def kernels(b) -> list[list[str]]:
        return [_placeless(listing(b.binary, f)) for f in HOT]

    # each code-changing decoy alone gives another binary...
    for d in changing:
        assert decoy_builds[f"-O2 {d}"].code_sha256 != base.code_sha256, d
    # ...and all 50 together, on -O2 and on the two, another binary with the same kernels
    every = decoy_builds[" ".join(["-O2", *changing, *same])]
    on_two = decoy_builds[" ".join(["-O2", STRIDES, CLONE, *changing, *same])]
    assert every.code_sha256 != base.code_sha256 and on_two.code_sha256 != both.code_sha256
    assert all(kernels(base)) and kernels(every) == kernels(base)
    assert kernels(on_two) == kernels(both)
