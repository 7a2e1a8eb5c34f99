"""Tests for flagsweep.experiment.matrix: expansion, variant ids, exclude/include, baseline, -march filtering."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from flagsweep.errors import ConfigError
from flagsweep.host import cpu
from flagsweep.experiment import matrix, recipe
from flagsweep.experiment.matrix import variant_id
from tests.conftest import HOSTS

SAFE_ID = re.compile(r"[A-Za-z0-9._+-]+")


def _recipe(tmp_path: Path, text: str, name: str = "r.toml") -> recipe.Recipe:
    path = tmp_path / name
    path.write_text(text)
    return recipe.load(str(path))


def _ids(m: matrix.Matrix) -> list[str]:
    return [v.id for v in m.variants]


@pytest.fixture
def v4_unrunnable(monkeypatch):
    """Run on the recorded Zen 3 host (AVX2, no AVX-512): the real check then rejects x86-64-v4."""
    monkeypatch.setenv("FLAGSWEEP_HOST", str(HOSTS / "amd-epyc-v3-dev"))
    return cpu.read_host()


# --- variant ids -------------------------------------------------------------------------------

def test_variant_id_examples():
    assert variant_id("gcc", ("-O2", "-march=x86-64-v3")) == "gcc-O2-march-x86-64-v3"
    assert variant_id("gcc", ()) == "gcc-default"
    assert variant_id("clang", ("-O3",)) == "clang-O3"
    assert variant_id("gcc", ("-O3", "-ffast-math", "-funroll-loops")) == \
        "gcc-O3-ffast-math-funroll-loops"


def test_long_variant_id_is_truncated_with_a_hash():
    flags = tuple(f"-fno-some-long-option-{i}" for i in range(20))
    vid = variant_id("gcc", flags)
    assert len(vid) <= matrix.ID_MAX == 80
    assert re.fullmatch(r".*-[0-9a-f]{10}", vid), vid
    assert vid.startswith("gcc-fno-some-long-option-0-fno-some-long-option-1-")
    # a different long flag list with the same prefix gets a different id
    other = variant_id("gcc", flags[:-1] + ("-fno-something-else",))
    assert other != vid
    assert other[:-10] == vid[:-10]
    assert variant_id("gcc", flags) == vid   # and the hash is stable


def test_id_of_exactly_max_length_is_not_hashed():
    flag = "-f" + "x" * (matrix.ID_MAX - len("gcc-f"))
    vid = variant_id("gcc", (flag,))
    assert len(vid) == matrix.ID_MAX
    assert vid == "gcc-f" + "x" * (matrix.ID_MAX - len("gcc-f"))


@pytest.mark.parametrize("compiler, flags", [
    ("gcc", ("-DNAME=\"a b\"", "-I/usr/include/x y", "-O2")),
    ("/usr/bin/gcc-12", ("-O2",)),
    ("gcc", ("-fprofile-use=/tmp/p*q?", "-Wl,--as-needed", "-mtune=native")),
    ("clang++", ("-std=c++17", "-O3")),
    ("gcc", tuple(f"-DX{i}=$(y)/{i}" for i in range(30))),
])
def test_variant_ids_are_filename_safe(compiler, flags):
    vid = variant_id(compiler, flags)
    assert SAFE_ID.fullmatch(vid), vid
    assert len(vid) <= matrix.ID_MAX


def test_same_flags_give_same_id_whatever_the_labels(tmp_path):
    a = _recipe(tmp_path, """\
summary = "a"
baseline = { opt = "-O2" }
[axes]
opt = ["-O2"]
march = [{ label = "three", flags = "-march=x86-64-v3" }]
""", name="a.toml")
    b = _recipe(tmp_path, """\
summary = "b"
baseline = { row = "mine" }
[[include]]
flags = "-O2 -march=x86-64-v3"
factors = { row = "mine" }
""", name="b.toml")
    va = matrix.expand(a, filter_cpu=False).baseline
    vb = matrix.expand(b, filter_cpu=False).baseline
    assert va.id == vb.id == "gcc-O2-march-x86-64-v3"
    assert va == vb                       # factors do not take part in equality
    assert va.factors == {"opt": "-O2", "march": "three"}
    assert vb.factors == {"row": "mine"}


# --- expansion ---------------------------------------------------------------------------------

def test_olevels_expands_to_five_with_baseline_first():
    m = matrix.expand(recipe.load("olevels"))
    assert _ids(m) == ["gcc-O2", "gcc-O0", "gcc-O1", "gcc-O3", "gcc-Os"]
    assert m.baseline is m.variants[0]
    assert m.baseline.id == "gcc-O2"
    assert m.baseline.flags == ("-O2",)
    assert m.baseline.factors == {"opt": "-O2"}
    assert m.skipped == []
    assert m.design == "full-factorial"


def test_seed_2003_is_explicit_with_its_baseline_first():
    m = matrix.expand(recipe.load("seed-2003"), filter_cpu=False)
    assert m.design == "explicit"
    assert len(m.variants) == 13
    assert m.baseline.factors == {"row": "lame-default"}
    assert m.baseline.id == "gcc-O3-fomit-frame-pointer-ffast-math-funroll-loops-Wall-pipe"
    assert _ids(m)[1:4] == ["gcc-O0", "gcc-O1", "gcc-O2"]


def test_simd_excludes_leave_six(monkeypatch):
    m = matrix.expand(recipe.load("simd"), filter_cpu=False)
    assert m.baseline.id == "gcc-O2-march-native"
    assert sorted((v.factors["fpmath"], v.factors["vector"]) for v in m.variants) == [
        ("387", "all"), ("default", "all"), ("default", "no-avx"), ("default", "no-avx2"),
        ("default", "no-avx512"), ("sse", "all")]


TWO_BY_THREE = """\
summary = "2x3"
baseline = {{ opt = "-O2", lto = "none" }}
{exclude}
[axes]
opt = ["-O2", "-O3"]
lto = ["", "-flto", {{ label = "thin", flags = "-flto=thin" }}]
"""


def test_full_factorial_order_and_flags(tmp_path):
    m = matrix.expand(_recipe(tmp_path, TWO_BY_THREE.format(exclude="")), filter_cpu=False)
    assert _ids(m) == ["gcc-O2", "gcc-O2-flto", "gcc-O2-flto-thin",
                       "gcc-O3", "gcc-O3-flto", "gcc-O3-flto-thin"]
    assert m.variants[2].flags == ("-O2", "-flto=thin")
    assert m.variants[2].factors == {"opt": "-O2", "lto": "thin"}


def test_exclude_drops_exactly_the_matching_combination(tmp_path):
    r = _recipe(tmp_path, TWO_BY_THREE.format(exclude='exclude = [{ opt = "-O3", lto = "thin" }]'))
    m = matrix.expand(r, filter_cpu=False)
    assert len(m.variants) == 5
    assert _ids(m) == ["gcc-O2", "gcc-O2-flto", "gcc-O2-flto-thin", "gcc-O3", "gcc-O3-flto"]
    assert m.design == "full-factorial"


def test_exclude_on_one_axis_drops_a_whole_row(tmp_path):
    r = _recipe(tmp_path, TWO_BY_THREE.format(exclude='exclude = [{ lto = "-flto" }]'))
    assert _ids(matrix.expand(r, filter_cpu=False)) == [
        "gcc-O2", "gcc-O2-flto-thin", "gcc-O3", "gcc-O3-flto-thin"]


def test_exclude_by_compiler(tmp_path):
    r = _recipe(tmp_path, TWO_BY_THREE.format(
        exclude='compilers = ["gcc", "clang"]\nexclude = [{ compiler = "clang", lto = "thin" }]'))
    m = matrix.expand(r, filter_cpu=False)
    assert len(m.variants) == 10
    assert "clang-O2-flto-thin" not in _ids(m)
    assert "gcc-O2-flto-thin" in _ids(m)


def test_include_rows_are_added(tmp_path):
    r = _recipe(tmp_path, """\
summary = "s"
baseline = { opt = "-O2" }
[axes]
opt = ["-O2", "-O3"]
[[include]]
flags = "-O3 -march=native -ffast-math"
factors = { opt = "-O3", extra = "fast" }
[[include]]
flags = "-Os"
factors = { opt = "-Os" }
compiler = "gcc"
[[include]]
flags = "-Oz"
factors = { opt = "-Oz" }
compiler = "clang"
""")
    m = matrix.expand(r, filter_cpu=False)
    # the clang-only row is dropped: clang is not among the compilers
    assert _ids(m) == ["gcc-O2", "gcc-O3", "gcc-O3-march-native-ffast-math", "gcc-Os"]
    assert m.variants[2].flags == ("-O3", "-march=native", "-ffast-math")
    assert m.variants[2].factors == {"opt": "-O3", "extra": "fast"}
    assert m.design == "factorial+explicit"


def test_include_rows_follow_the_compilers(tmp_path):
    r = _recipe(tmp_path, """\
summary = "s"
compilers = ["gcc", "clang"]
baseline = { row = "a" }
[[include]]
flags = "-O2"
factors = { row = "a" }
[[include]]
flags = "-Oz"
factors = { row = "z" }
compiler = "clang"
""")
    m = matrix.expand(r, filter_cpu=False)
    assert _ids(m) == ["gcc-O2", "clang-O2", "clang-Oz"]


def test_same_flags_twice_are_one_variant(tmp_path):
    r = _recipe(tmp_path, 'summary = "s"\nbaseline = { opt = "-O2" }\n'
                          '[axes]\nopt = ["-O2", "-O3", { label = "two", flags = " -O2 " }]\n')
    assert _ids(matrix.expand(r, filter_cpu=False)) == ["gcc-O2", "gcc-O3"]


def test_different_flags_with_one_id_are_an_error(tmp_path):
    r = _recipe(tmp_path, 'summary = "s"\nbaseline = { opt = "-O2" }\n'
                          '[axes]\nopt = ["-march=x86-64", "-march-x86-64", "-O2"]\n')
    with pytest.raises(ConfigError) as info:
        matrix.expand(r, filter_cpu=False)
    assert str(info.value) == (f"{r.path}: variants ('-march=x86-64',) and ('-march-x86-64',) "
                               "map to the same id 'gcc-march-x86-64'; change one flag spelling")


@pytest.mark.skipif(not Path("/usr/bin/clang").exists(), reason="needs /usr/bin/clang")
def test_two_compilers_double_the_factorial_and_baseline_is_the_first(tmp_path):
    r = _recipe(tmp_path, TWO_BY_THREE.format(exclude='compilers = ["gcc", "clang"]'))
    m = matrix.expand(r)
    # gcc has no -flto=thin (clang's ThinLTO): those two are skipped in gcc's own words.
    assert len(m.variants) == 10
    assert [s.variant.id for s in m.skipped] == ["gcc-O2-flto-thin", "gcc-O3-flto-thin"]
    assert "unrecognized argument to" in m.skipped[0].reason
    assert m.baseline.id == "gcc-O2"
    assert m.baseline.compiler == "gcc"
    assert _ids(m)[:5] == ["gcc-O2", "gcc-O2-flto", "gcc-O3", "gcc-O3-flto", "clang-O2"]
    assert sum(v.compiler == "clang" for v in m.variants) == 6

    # the compilers argument overrides the recipe's, and its first is the baseline's compiler
    m2 = matrix.expand(recipe.load("olevels"), compilers=["clang", "gcc"])
    assert len(m2.variants) == 10
    assert m2.baseline.id == "clang-O2"
    # with two compilers the compiler is a factor of every variant; with one it is not
    assert {v.factors["compiler"] for v in m2.variants} == {"gcc", "clang"}
    assert all(v.factors["compiler"] == v.compiler for v in m.variants)
    assert "compiler" not in matrix.expand(recipe.load("olevels")).baseline.factors


def test_compiler_is_not_an_axis_name(tmp_path):
    with pytest.raises(ConfigError, match="'compiler' is not an axis"):
        _recipe(tmp_path, 'summary = "s"\nbaseline = { compiler = "gcc" }\n[axes]\n'
                          'compiler = ["-O2", "-O3"]\n')


def test_screen_takes_at_most_two_compilers():
    with pytest.raises(ConfigError, match="one or two compilers"):
        matrix.expand(recipe.load("screen-f"), compilers=["gcc", "clang", "cc"], filter_cpu=False)


def test_baseline_may_name_the_compiler(tmp_path):
    r = _recipe(tmp_path, 'summary = "s"\ncompilers = ["gcc", "clang"]\n'
                          'baseline = { opt = "-O2", compiler = "clang" }\n[axes]\nopt = ["-O2", "-O3"]\n')
    m = matrix.expand(r, filter_cpu=False)
    assert m.baseline.id == "clang-O2"
    assert _ids(m) == ["clang-O2", "gcc-O2", "gcc-O3", "clang-O3"]


# --- baseline errors ---------------------------------------------------------------------------

def test_baseline_matching_nothing_is_an_error(tmp_path):
    # The baseline is a real level, but an exclude rule removes it.
    r = _recipe(tmp_path, 'summary = "s"\nbaseline = { opt = "-O2" }\n[axes]\nopt = ["-O2", "-O3"]\n'
                          '[[exclude]]\nopt = "-O2"\n')
    with pytest.raises(ConfigError) as info:
        matrix.expand(r, filter_cpu=False)
    assert str(info.value) == (f"{r.path}: key 'baseline': {{'opt': '-O2', 'compiler': 'gcc'}} "
                               "matches no runnable variant; expected exactly one")


def test_baseline_level_typo_is_caught_when_the_recipe_loads(tmp_path):
    with pytest.raises(ConfigError) as info:
        _recipe(tmp_path, 'summary = "s"\nbaseline = { opt = "-O9" }\n[axes]\nopt = ["-O2", "-O3"]\n')
    assert "baseline has opt = '-O9', which is not one of its levels ['-O2', '-O3']" in str(info.value)


def test_baseline_matching_several_is_an_error(tmp_path):
    r = _recipe(tmp_path, 'summary = "s"\nbaseline = { opt = "-O2" }\n'
                          '[axes]\nopt = ["-O2", "-O3"]\nlto = ["", "-flto"]\n')
    with pytest.raises(ConfigError) as info:
        matrix.expand(r, filter_cpu=False)
    assert str(info.value) == (f"{r.path}: key 'baseline': {{'opt': '-O2', 'compiler': 'gcc'}} "
                               "matches 2 variants (gcc-O2, gcc-O2-flto); expected exactly one")


def test_excluded_baseline_is_an_error(tmp_path):
    r = _recipe(tmp_path, 'summary = "s"\nbaseline = { opt = "-O2" }\nexclude = [{ opt = "-O2" }]\n'
                          '[axes]\nopt = ["-O2", "-O3"]\n')
    with pytest.raises(ConfigError, match="key 'baseline'.*matches no runnable variant"):
        matrix.expand(r, filter_cpu=False)


# --- -march filtering --------------------------------------------------------------------------

MARCH = """\
summary = "m"
baseline = {{ march = "{baseline}" }}
[axes]
opt = ["-O2"]
march = [
  {{ label = "v3", flags = "-march=x86-64-v3" }},
  {{ label = "v4", flags = "-march=x86-64-v4" }},
  {{ label = "plain", flags = "" }},
]
"""


def test_unrunnable_march_is_skipped_with_its_reason(tmp_path, v4_unrunnable):
    m = matrix.expand(_recipe(tmp_path, MARCH.format(baseline="v3")))
    assert _ids(m) == ["gcc-O2-march-x86-64-v3", "gcc-O2"]
    assert len(m.skipped) == 1
    skipped = m.skipped[0]
    assert skipped.variant.id == "gcc-O2-march-x86-64-v4"
    assert skipped.variant.factors == {"opt": "-O2", "march": "v4"}
    assert skipped.reason == ("-march=x86-64-v4 needs avx512f, avx512bw, avx512cd, avx512dq, "
                              "avx512vl (this CPU lacks them)")
    # only variants with a -march flag are asked about, with the value after '='


def test_filter_cpu_false_keeps_everything(tmp_path, v4_unrunnable):
    m = matrix.expand(_recipe(tmp_path, MARCH.format(baseline="v4")), filter_cpu=False)
    assert len(m.variants) == 3
    assert m.baseline.id == "gcc-O2-march-x86-64-v4"
    assert m.skipped == []


def test_skipped_baseline_is_a_clear_error(tmp_path, v4_unrunnable):
    r = _recipe(tmp_path, MARCH.format(baseline="v4"))
    with pytest.raises(ConfigError) as info:
        matrix.expand(r)
    msg = str(info.value)
    assert msg.startswith(f"{r.path}: key 'baseline': ")
    assert "the baseline gcc-O2-march-x86-64-v4 cannot run on this CPU (-march=x86-64-v4 needs" in msg
    assert msg.endswith("; pick another baseline")


def test_march_recipe_with_v4_unrunnable(v4_unrunnable):
    m = matrix.expand(recipe.load("march"))
    # (-march=native is this real machine's CPU, not the pretended Haswell, so it is left out.)
    kept = [v.factors["march"] for v in m.variants]
    assert kept[:3] == ["x86-64", "x86-64-v2", "x86-64-v3"] and "x86-64-v4" not in kept
    assert "x86-64-v4" in [s.variant.factors["march"] for s in m.skipped]
    assert m.baseline.id == "gcc-O2-march-x86-64"


def test_march_recipe_on_a_recorded_host(recorded_host):
    """With the real cpu.can_run_flags: the levels the host has (per the psABI table) are kept,
    the others skipped with the flags they need, and -march=native always kept."""
    _need("gcc")
    host = cpu.read_host()
    m = matrix.expand(recipe.load("march"))
    kept = [v.factors["march"] for v in m.variants]
    skipped = {s.variant.factors["march"]: s.reason for s in m.skipped}
    assert kept[0] == "x86-64" and m.baseline.factors["march"] == "x86-64"
    assert sorted(kept + list(skipped)) == sorted(["x86-64", "x86-64-v2", "x86-64-v3",
                                                   "x86-64-v4", "native"])
    assert set(kept) == {*host.isa_levels, "native"}
    for level, reason in skipped.items():
        assert reason.startswith(f"-march={level} needs ") and reason.endswith("lacks them)")


def test_the_zen5_host_that_hides_rdseed_keeps_every_native_variant(monkeypatch):
    """The kernel hides rdseed, gcc's -march=native enables -mrdseed (CPUID has it): compilers
    emit RDSEED only for intrinsics, so the march and seed-2003 recipes keep -march=native."""
    _need("gcc")
    zen5 = HOSTS / "amd-zen5-vm-rdseed-hidden"
    monkeypatch.setenv("FLAGSWEEP_HOST", str(zen5))
    assert "rdseed" not in cpu.read_host().flags
    assert "-mrdseed" in (zen5 / "gcc-march-native-driver.txt").read_text()
    march = matrix.expand(recipe.load("march"))
    assert march.skipped == [] and "native" in [v.factors["march"] for v in march.variants]
    seed = matrix.expand(recipe.load("seed-2003"))
    every = matrix.expand(recipe.load("seed-2003"), filter_cpu=False)
    assert seed.skipped == [] and _ids(seed) == _ids(every)
    natives = [v.id for v in seed.variants if "-march=native" in v.flags]
    assert len(natives) == 4 and "gcc-O3-march-native" in natives


def test_a_v1_only_host_drops_the_later_levels_and_keeps_native(monkeypatch):
    _need("gcc")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(HOSTS / "x86-64-v1-vm"))
    m = matrix.expand(recipe.load("march"))
    assert [v.factors["march"] for v in m.variants] == ["x86-64", "native"]
    assert [s.variant.factors["march"] for s in m.skipped] == ["x86-64-v2", "x86-64-v3",
                                                               "x86-64-v4"]
    assert m.skipped[0].reason == ("-march=x86-64-v2 needs cx16, lahf_lm, popcnt, pni, ssse3, "
                                   "sse4_1, sse4_2 (this CPU lacks them)")
    # -march=native -mavx2 asks for more than this host's native: skipped, with what it lacks.
    seed = {s.variant.id: s.reason for s in matrix.expand(recipe.load("seed-2003")).skipped}
    native_avx2 = [r for i, r in seed.items() if "march-native" in i]
    assert native_avx2 and all("avx2" in r and "fma" in r for r in native_avx2)


def test_flags_a_compiler_refuses_or_ignores_are_skipped_with_its_words(recorded_host):
    _need("gcc")
    _need("clang")
    m = matrix.expand(recipe.load("seed-2003"), compilers=["gcc", "clang"])
    skipped = {s.variant.id: s.reason for s in m.skipped}
    x87 = "clang-O3-march-native-fomit-frame-pointer-funroll-loops-mfpmath-387"
    assert x87 in skipped and "clang does not take" in skipped[x87]
    assert "'387' unit is not supported" in skipped[x87]
    assert "gcc-O3-march-native-fomit-frame-pointer-funroll-loops-mfpmath-387" in _ids(m)
    # clang only warns about an -f option it ignores; flagsweep treats that as a refusal too.
    screen = matrix.expand(recipe.load("screen-f"), compilers=["clang"])
    assert any("is not supported" in s.reason or "unknown argument" in s.reason
               for s in screen.skipped)


def _need(compiler: str) -> None:
    if shutil.which(compiler) is None:
        pytest.skip(f"needs {compiler}")


def test_preparing_a_sweep_says_each_skipped_variant_and_why(tmp_path, v4_unrunnable):
    """`run` and `build` both prepare through selection.prepare: the count and, per skipped variant,
    the reason (run once said only "1 skipped")."""
    from flagsweep.compilation import selection
    from tests.tiny_target import write_tiny_target

    folder = write_tiny_target(tmp_path / "tiny")
    said = []
    selection.prepare(selection.Selection(str(folder), flag_sets=("-O2", "-O2 -march=x86-64-v4"),
                                          out_dir=tmp_path / "out"), said.append)
    assert said[0].endswith("1 skipped")
    assert said[1] == ("skipped gcc-O2-march-x86-64-v4: -march=x86-64-v4 needs avx512f, "
                       "avx512bw, avx512cd, avx512dq, avx512vl (this CPU lacks them)")


# ---- a distribution's flags as the base ------------------------------------------------------

def test_a_distro_recipe_starts_every_variant_from_dpkg_buildflags(tmp_path):
    from flagsweep.host import distro

    base = distro.read("debian")
    assert "-O2" in base.flags and "-Wl,-z,relro" in base.flags
    assert not any(f.startswith("-ffile-prefix-map=") for f in base.flags)   # names a folder
    assert base.parts["LDFLAGS"] == [f for f in base.flags if f.startswith("-Wl,")]
    r = _recipe(tmp_path, 'summary = "s"\ndistro = "debian"\nbaseline = { change = "debian" }\n'
                '[axes]\nchange = [{ label = "debian", flags = "" }, '
                '{ label = "O3", flags = "-O3" }]\n')
    m = matrix.expand(r, ["gcc"])
    assert m.base == base and m.baseline.flags == base.flags
    o3 = next(v for v in m.variants if v.factors["change"] == "O3")
    assert o3.flags == base.flags + ("-O3",)                 # the change after the base
    assert o3.id.startswith("gcc-debian-O3-") and m.baseline.id.startswith("gcc-debian-")


def test_a_distro_is_named_or_refused(tmp_path, monkeypatch):
    from flagsweep.host import distro

    with pytest.raises(ConfigError, match=r"distro is 'fedora'; expected one of \['debian'\]"):
        _recipe(tmp_path, 'summary = "s"\ndistro = "fedora"\nbaseline = { o = "-O2" }\n'
                '[axes]\no = ["-O2"]\n')
    monkeypatch.setattr(distro.shutil, "which", lambda _: None)
    with pytest.raises(ConfigError, match="dpkg-buildflags, which is not installed here"):
        distro.read("debian")
