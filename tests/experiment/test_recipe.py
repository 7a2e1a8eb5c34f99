"""Tests for flagsweep.experiment.recipe: the shipped recipes, axis levels, and strict validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagsweep import shipped
from flagsweep.errors import ConfigError
from flagsweep.experiment import recipe
from flagsweep.experiment.recipe import AxisLevel

SHIPPED = ["distro-campaign", "distro", "march", "olevels", "screen-f", "seed-2003", "simd"]


def _write(tmp_path: Path, text: str, name: str = "r.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _load(tmp_path: Path, text: str) -> recipe.Recipe:
    return recipe.load(str(_write(tmp_path, text)))


def _load_error(tmp_path: Path, text: str) -> tuple[str, Path]:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        recipe.load(str(path))
    return str(info.value), path


# --- shipped recipes ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_recipe_loads_by_name(name):
    r = recipe.load(name)
    assert r.name == name
    assert r.path == recipe.RECIPES_DIR / f"{name}.toml"
    assert r.spec.compilers == (["gcc", "clang"] if name == "distro" else ["gcc"])
    assert r.spec.summary


def test_available_lists_exactly_the_shipped_recipes():
    assert [r.name for r in recipe.available()] == SHIPPED


def test_shipped_recipe_contents():
    olevels = recipe.load("olevels")
    assert olevels.spec.baseline == {"opt": "-O2"}
    assert [lv.label for lv in olevels.axes()["opt"]] == ["-O0", "-O1", "-O2", "-O3", "-Os"]

    march = recipe.load("march").axes()
    assert march["opt"] == [AxisLevel("-O2", ("-O2",))]
    assert march["march"][-1] == AxisLevel("native", ("-march=native",))

    seed = recipe.load("seed-2003")
    assert seed.axes() == {}
    assert len(seed.spec.include) == 13
    assert seed.spec.baseline == {"row": "lame-default"}

    simd = recipe.load("simd")
    assert simd.axes()["fpmath"][0] == AxisLevel("default", ())
    assert simd.axes()["opt"] == [AxisLevel("-O2 -march=native", ("-O2", "-march=native"))]
    assert len(simd.spec.exclude) == 6


def test_load_by_path(tmp_path):
    path = _write(tmp_path, 'summary = "s"\nbaseline = { opt = "-O2" }\n[axes]\nopt = ["-O2"]\n',
                  name="my-sweep.toml")
    r = recipe.load(str(path))
    assert r.name == "my-sweep"
    assert r.path == path.resolve()
    assert r.spec.compilers == ["gcc"]   # the default


def test_unknown_recipe_name_lists_the_shipped_ones():
    with pytest.raises(ConfigError) as info:
        recipe.load("no-such-recipe")
    assert str(info.value) == ("no recipe 'no-such-recipe': not a file, and not a shipped "
                               f"recipe or one in {shipped.user_dir() / 'recipes'} "
                               "(distro-campaign, distro, march, olevels, screen-f, seed-2003, simd)")


# --- axes and levels ---------------------------------------------------------------------------

def test_axes_accept_bare_strings_and_labelled_tables(tmp_path):
    r = _load(tmp_path, """\
summary = "s"
baseline = { opt = "-O2" }
[axes]
opt = ["-O2", "  -O3 -funroll-loops ", { label = "fast", flags = "-O3 -ffast-math" }]
""")
    assert r.axes() == {"opt": [
        AxisLevel("-O2", ("-O2",)),
        AxisLevel("-O3 -funroll-loops", ("-O3", "-funroll-loops")),   # label is stripped
        AxisLevel("fast", ("-O3", "-ffast-math")),
    ]}


def test_level_flags_are_shell_split():
    assert recipe.level_of("-DNAME='a b' -O2") == AxisLevel("-DNAME='a b' -O2",
                                                            ("-DNAME=a b", "-O2"))


@pytest.mark.parametrize("value", ["", "   "])
def test_empty_level_is_labelled_none(value):
    assert recipe.level_of(value) == AxisLevel("none", ())


def test_empty_level_in_a_file(tmp_path):
    r = _load(tmp_path, 'summary = "s"\nbaseline = { lto = "none" }\n[axes]\nlto = ["", "-flto"]\n')
    assert r.axes()["lto"] == [AxisLevel("none", ()), AxisLevel("-flto", ("-flto",))]


def test_labelled_level_with_empty_flags(tmp_path):
    r = _load(tmp_path, 'summary = "s"\nbaseline = { v = "all" }\n'
                        '[axes]\nv = [{ label = "all", flags = "" }, "-mno-avx"]\n')
    assert r.axes()["v"][0] == AxisLevel("all", ())


def test_duplicate_labels_on_an_axis_are_rejected_naming_the_axis(tmp_path):
    msg, path = _load_error(tmp_path, """\
summary = "s"
baseline = { opt = "-O2" }
[axes]
opt = ["-O2", { label = "x", flags = "-O3" }, { label = "x", flags = "-O1" }]
""")
    assert msg == f"{path.resolve()}: key 'axes.opt': level labels must be unique, ['x'] repeat"


def test_empty_string_and_label_none_collide(tmp_path):
    msg, _ = _load_error(tmp_path, 'summary = "s"\nbaseline = { lto = "none" }\n'
                                   '[axes]\nlto = ["", { label = "none", flags = "-fno-lto" }]\n')
    assert "key 'axes.lto': level labels must be unique, ['none'] repeat" in msg


def test_same_label_on_different_axes_is_fine(tmp_path):
    r = _load(tmp_path, 'summary = "s"\nbaseline = { a = "x" }\n[axes]\n'
                        'a = [{ label = "x", flags = "-O2" }]\nb = [{ label = "x", flags = "-g" }]\n')
    assert [lv.label for lv in r.axes()["b"]] == ["x"]


def test_bad_label_is_rejected(tmp_path):
    msg, _ = _load_error(tmp_path, 'summary = "s"\nbaseline = { opt = "a" }\n'
                                   '[axes]\nopt = [{ label = "a b", flags = "-O3" }]\n')
    assert "a label is letters, digits and '._+=-', starting with a letter or digit" in msg
    assert "got 'a b'" in msg


def test_empty_axis_is_rejected(tmp_path):
    msg, _ = _load_error(tmp_path, 'summary = "s"\nbaseline = {}\n[axes]\nopt = []\n')
    assert "key 'axes.opt'" in msg and "at least 1 item" in msg


def test_empty_compiler_list_is_rejected(tmp_path):
    msg, _ = _load_error(tmp_path, 'summary = "s"\ncompilers = []\nbaseline = {}\n'
                                   '[axes]\nopt = ["-O2"]\n')
    assert "key 'compilers'" in msg and "at least 1 item" in msg


# --- consistency -------------------------------------------------------------------------------

def test_exclude_naming_unknown_axis_is_rejected(tmp_path):
    msg, path = _load_error(tmp_path, """\
summary = "s"
baseline = { opt = "-O2" }
exclude = [{ opt = "-O2" }, { otp = "-O3" }]
[axes]
opt = ["-O2", "-O3"]
""")
    assert msg.startswith(f"{path.resolve()}: ")
    assert ("exclude[1] names unknown axes ['otp']; expected some of ['opt'] or 'compiler'"
            in msg)


def test_exclude_may_name_compiler_and_include_factors(tmp_path):
    r = _load(tmp_path, """\
summary = "s"
baseline = { opt = "-O2" }
exclude = [{ compiler = "clang", opt = "-O3" }, { row = "extra" }]
[axes]
opt = ["-O2", "-O3"]
[[include]]
flags = "-O1"
factors = { row = "extra" }
""")
    assert r.spec.exclude == [{"compiler": "clang", "opt": "-O3"}, {"row": "extra"}]


def test_baseline_naming_unknown_axis_is_rejected(tmp_path):
    msg, path = _load_error(tmp_path, 'summary = "s"\nbaseline = { otp = "-O2" }\n'
                                      '[axes]\nopt = ["-O2"]\n')
    assert msg.startswith(f"{path.resolve()}: ")
    assert "baseline names unknown axes ['otp']; expected some of ['opt'] or 'compiler'" in msg


def test_recipe_needs_axes_or_include(tmp_path):
    msg, path = _load_error(tmp_path, 'summary = "s"\nbaseline = {}\n')
    assert msg.startswith(f"{path.resolve()}: ")
    assert "a recipe needs 'axes' or 'include' entries (or both)" in msg


def test_include_only_recipe_is_fine(tmp_path):
    r = _load(tmp_path, 'summary = "s"\nbaseline = { row = "a" }\n'
                        '[[include]]\nflags = "-O2"\nfactors = { row = "a" }\ncompiler = "gcc"\n')
    assert r.axes() == {}
    assert r.spec.include[0].compiler == "gcc"


def test_unknown_top_level_key_is_rejected_with_file_name(tmp_path):
    msg, path = _load_error(tmp_path, 'summary = "s"\nbaseline = { opt = "-O2" }\n'
                                      'compiler = ["gcc"]\n[axes]\nopt = ["-O2"]\n')
    assert msg == f"{path.resolve()}: unknown key 'compiler'"


def test_unknown_key_in_include_is_rejected(tmp_path):
    msg, _ = _load_error(tmp_path, 'summary = "s"\nbaseline = { row = "a" }\n'
                                   '[[include]]\nflag = "-O2"\nfactors = { row = "a" }\n')
    assert "unknown key 'include.0.flag'" in msg
    assert "missing key 'include.0.flags'" in msg


def test_missing_baseline_and_summary(tmp_path):
    # 'summary' is checked with the keys; 'baseline' (not needed by a screening design) after.
    msg, _ = _load_error(tmp_path, '[axes]\nopt = ["-O2"]\n')
    assert "missing key 'summary'" in msg
    msg, _ = _load_error(tmp_path, 'summary = "s"\n[axes]\nopt = ["-O2"]\n')
    assert "missing key 'baseline'" in msg


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no recipe"):
        recipe.load(str(tmp_path / "absent.toml"))


# --- recipes from --flags ----------------------------------------------------------------------

def test_from_flags_gives_include_rows_and_first_as_baseline():
    r = recipe.from_flags(["-O2", "-O3 -march=native"], ["gcc"])
    assert r.name == "cli-flags"
    assert r.axes() == {}
    assert r.spec.compilers == ["gcc"]
    assert [(inc.flags, inc.factors, inc.compiler) for inc in r.spec.include] == [
        ("-O2", {"flags": "-O2"}, None),
        ("-O3 -march=native", {"flags": "-O3 -march=native"}, None),
    ]
    assert r.spec.baseline == {"flags": "-O2"}


def test_from_flags_empty_first_set_is_the_none_baseline():
    r = recipe.from_flags(["", "-O2"], ["gcc", "clang"])
    assert r.spec.baseline == {"flags": "none"}
    assert r.spec.include[0].factors == {"flags": "none"}
    assert r.spec.compilers == ["gcc", "clang"]


def test_exclude_level_typo_and_empty_exclude_are_rejected(tmp_path):
    base = 'summary = "s"\nbaseline = { opt = "-O2" }\n[axes]\nopt = ["-O2", "-O3"]\n'
    (tmp_path / "typo.toml").write_text(base + '[[exclude]]\nopt = "-O9"\n')
    with pytest.raises(ConfigError) as info:
        recipe.load(str(tmp_path / "typo.toml"))
    assert str(info.value) == (f"{tmp_path / 'typo.toml'}: exclude[0] has opt = '-O9', which is "
                               "not one of its levels ['-O2', '-O3']")
    (tmp_path / "empty.toml").write_text(base + '[[exclude]]\n')
    with pytest.raises(ConfigError) as info:
        recipe.load(str(tmp_path / "empty.toml"))
    assert "exclude[0] is empty: it would exclude every variant" in str(info.value)


def test_wrong_level_type_names_the_level_not_pydantic_internals(tmp_path):
    (tmp_path / "r.toml").write_text('summary = "s"\nbaseline = { opt = "-O2" }\n[axes]\n'
                                     'opt = ["-O2", 3]\n')
    with pytest.raises(ConfigError) as info:
        recipe.load(str(tmp_path / "r.toml"))
    msg = str(info.value)
    assert "key 'axes.opt.1': expected a valid string or a valid dictionary, got 3" in msg
    assert ".str" not in msg and "LabelledLevel" not in msg


def test_recipe_name_with_toml_suffix_loads():
    assert recipe.load("olevels.toml").name == "olevels"


def test_from_flags_without_flag_sets_is_a_config_error():
    with pytest.raises(ConfigError):
        recipe.from_flags([], ["gcc"])


STUDY = '''
summary = "s"
baseline = { row = "a" }
[[include]]
factors = { row = "a" }
flags = "-O2"
[[include]]
factors = { row = "b" }
flags = "-O3"
[study]
title = "t"
question = "q?"
factor = "row"
baseline = "a"
'''


def test_seed_2003_carries_the_study_timings():
    study = recipe.load("seed-2003").spec.study
    p4 = study.machines[0]
    assert study.baseline == "lame-default" and p4.seconds["O0"] == 379
    assert p4.seconds["everything-tuned"] / p4.seconds["lame-default"] > 1.15


@pytest.mark.parametrize("machines, message", [
    ('[[study.machines]]\nname = "m"\nseconds = { a = 1, c = 2 }',
     "study.machines[0].seconds has row = 'c', which is not one of its levels ['a', 'b']"),
    ('[[study.machines]]\nname = "m"\nseconds = { b = 2 }',
     "study.machines[0].seconds has no time for the study's baseline 'a'"),
    ('', "key 'study.machines': expected at least 1 item(s)"),
])
def test_study_rows_must_be_levels_with_a_baseline_time(tmp_path, machines, message):
    path = tmp_path / "r.toml"
    path.write_text(STUDY + ("machines = []\n" if not machines else "") + machines)
    with pytest.raises(ConfigError) as e:
        recipe.load(str(path))
    assert message in str(e.value)


# --- flags are data: nothing between the recipe and the compiler may evaluate them -------------

PAYLOADS = ["-DPAYLOAD=$(shell touch {pwned})", "-DPAYLOAD=`touch {pwned}`",
            "-DPAYLOAD=${{shell touch {pwned}}}", "-Wl,-rpath,$ORIGIN", "-DX=a\nb"]


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("where", ["axes", "labelled", "include", "base"])
def test_a_flag_make_ninja_or_the_shell_would_evaluate_is_refused(tmp_path, payload, where):
    flag = payload.format(pwned=tmp_path / "pwned")
    # Quoted for the shell-like split of a level, then escaped for a TOML string.
    literal = f"'{flag}'".replace("\n", "\\n")
    text = {
        "axes": f'summary = "s"\nbaseline = {{ opt = "-O2" }}\n[axes]\nopt = ["-O2", "-O1 {literal}"]\n',
        "labelled": f'summary = "s"\nbaseline = {{ opt = "-O2" }}\n[axes]\n'
                    f'opt = ["-O2", {{ label = "evil", flags = "-O1 {literal}" }}]\n',
        "include": f'summary = "s"\nbaseline = {{ row = "a" }}\n[[include]]\n'
                   f'factors = {{ row = "a" }}\nflags = "-O2 {literal}"\n',
        "base": f'summary = "s"\ndesign = "plackett-burman"\nbase = "-O2 {literal}"\n'
                f'screen = ["-funroll-loops", "-fno-inline"]\n',
    }[where]
    message, path = _load_error(tmp_path, text)
    key = {"axes": "axes.opt[1]", "labelled": "axes.opt[1]", "include": "include[0].flags",
           "base": "base"}[where]
    assert message.startswith(f"{path}: {key}: flag {flag!r} contains ")
    assert "make, Ninja or the shell would evaluate" in message
    assert not (tmp_path / "pwned").exists()


def test_a_screened_flag_is_checked_too(tmp_path):
    message, path = _load_error(tmp_path, 'summary = "s"\ndesign = "plackett-burman"\n'
                                'base = "-O2"\nscreen = ["-funroll-loops", "-DX=$(id)"]\n')
    assert message.startswith(f"{path}: screen[1]: flag '-DX=$(id)' contains '$'")


@pytest.mark.parametrize("payload", PAYLOADS)
def test_flags_from_the_command_line_are_refused_naming_them(tmp_path, payload):
    flag = payload.format(pwned=tmp_path / "pwned")
    given = f"-O1 '{flag}'"
    with pytest.raises(ConfigError) as info:
        recipe.from_flags(["-O2", given], ["gcc"])
    assert str(info.value).startswith(f"--flags {given!r}: flag {flag!r} contains ")


def test_ordinary_flags_with_quotes_and_commas_are_data_and_pass():
    r = recipe.from_flags(["-O2 '-DNAME=\"a b\"' -Wl,-z,now -DX=#1"], ["gcc"])
    assert r.spec.include[0].flags.startswith("-O2")


def test_cli_refuses_a_command_in_a_flag_before_any_work(tmp_path):
    """The issue's case: a make-driven (autotools) target, where make would run it."""
    from procs import flagsweep

    pwned, out = tmp_path / "pwned", tmp_path / "out"
    run = flagsweep("build", "gzip", "--offline", "--flags", "-O2", "--flags",
                    f"-O2 -DPAYLOAD='$(shell touch {pwned})'", "--out", str(out), check=False)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"flagsweep: --flags \"-O2 -DPAYLOAD='$(shell touch {pwned})'\": "
                                 f"flag '-DPAYLOAD=$(shell touch {pwned})' contains '$'")
    assert not pwned.exists() and not out.exists()


def test_non_utf8_recipe_names_the_file(tmp_path):
    path = tmp_path / "r.toml"
    path.write_bytes(b'summary = "caf\xe9"\n')
    with pytest.raises(ConfigError) as info:
        recipe.load(str(path))
    assert str(info.value) == f"{path}: not UTF-8 text (TOML files are UTF-8): byte 0xe9 at offset 14"
