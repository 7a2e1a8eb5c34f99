"""Tests for flagsweep.tune.space: the search space of `flagsweep tune`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flagsweep import process
from flagsweep.errors import ConfigError
from flagsweep.experiment import recipe
from flagsweep.experiment.flags import check_words, split_flags
from flagsweep.host import cpu, environment, toolchain
from flagsweep.tune import dimensions, space
from flagsweep.tune.dimensions import Dimension
from flagsweep.tune.space import Space
from tests.conftest import HOSTS

# An excerpt of gcc 12's `gcc -Q --help=optimizers -O2`, tabs as gcc prints them.
OPTIMIZERS = """\
The following options control optimizations:
  -O<number>                  \t\t
  -Ofast                      \t\t
  -faggressive-loop-optimizations \t[enabled]
  -falign-functions           \t\t[enabled]
  -falign-functions=          \t\t16
  -fallow-store-data-races    \t\t[disabled]
  -fassociative-math          \t\t[disabled]
  -fasynchronous-unwind-tables \t\t[enabled]
  -fdelete-null-pointer-checks \t\t
  -fexceptions                \t\t[available in Modula-2]
  -ffinite-math-only          \t\t[disabled]
  -ffold-simple-inlines       \t\t[available in C++, ObjC++]
  -ffp-contract=[off|on|fast] \t\tfast
  -fgcse                      \t\t[enabled]
  -fira-algorithm=[CB|priority] \tCB
  -fmath-errno                \t\t[enabled]
  -fno-threadsafe-statics     \t\t[available in C++, ObjC++]
  -fprofile-reorder-functions \t\t[disabled]
  -fsave-optimization-record  \t\t[disabled]
  -fsection-anchors           \t\t[disabled]
  -fshort-enums               \t\t[enabled]
  -fstack-reuse=[all|named_vars|none] \tall
  -fstack-protector-strong    \t\t[disabled]
  -ftrapv                     \t\t[disabled]
  -ftree-vectorize            \t\t[disabled]
  -funroll-loops              \t\t[disabled]
  -fvar-tracking              \t\t[disabled]
  -fvect-cost-model=[unlimited|dynamic|cheap|very-cheap] \tvery-cheap
  -fwrapv                     \t\t[disabled]
  -gstatement-frontiers       \t\t[disabled]
"""

# An excerpt of gcc 12's `gcc -Q --help=params -O2`.
PARAMS = """\
The following options control parameters:
  --param=align-threshold=<1,65536> \t\t100
  --param=early-inlining-insns= \t6
  --param=max-inline-insns-auto= \t15
  --param=max-unroll-times=   \t\t8
  --param=max-inline-insns-size= \t0
  --param=parloops-schedule=[static|dynamic|guided|auto|runtime] \tstatic
  --param=sched-spec-prob-cutoff=<0,100> \t\t40
  --param=unroll-jam-max-unroll= \t4
  --param=vect-epilogues-nomask=<0,1> \t1
  --param=max-sched-insn-conflict-delay=<1,10> \t3
"""

ZEN5 = HOSTS / "amd-zen5-vm-rdseed-hidden"


def _need(compiler: str) -> None:
    if shutil.which(compiler) is None:
        pytest.skip(f"needs {compiler}")


def _file(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- gcc's listing ----------------------------------------------------------------------------

def test_the_listing_gives_every_on_off_switch_with_its_state_at_the_base():
    found = dict(dimensions.parse_optimizers(OPTIMIZERS))
    assert found["-fgcse"] is True and found["-funroll-loops"] is False
    # other languages' switches, valued options, -O levels and -g options are not switches here
    for absent in ("-fexceptions", "-ffold-simple-inlines", "-fno-threadsafe-statics",
                   "-falign-functions=", "-ffp-contract=[off|on|fast]", "-O<number>",
                   "-fdelete-null-pointer-checks", "-gstatement-frontiers"):
        assert absent not in found
    assert len(found) == 18


def test_a_switch_off_at_the_base_is_turned_on_and_one_on_is_turned_off():
    assert dimensions.switch_dimension("-funroll-loops", False) == Dimension(
        "-funroll-loops", ("", "-funroll-loops"))
    assert dimensions.switch_dimension("-fgcse", True) == Dimension("-fgcse", ("", "-fno-gcse"))
    assert dimensions.switch_dimension("-fno-threadsafe-statics", True).choices == (
        "", "-fthreadsafe-statics")


def test_switches_that_change_meaning_abi_or_files_are_left_out_with_why():
    dims, excluded = dimensions.switch_dimensions(OPTIMIZERS,
                                                  {"-fsection-anchors": "gcc ignores it"})
    kept = {d.name: d.choices for d in dims}
    assert kept == {
        "-faggressive-loop-optimizations": ("", "-fno-aggressive-loop-optimizations"),
        "-falign-functions": ("", "-fno-align-functions"),
        "-fassociative-math": ("", "-fassociative-math"),       # fast-math pieces stay in
        "-ffinite-math-only": ("", "-ffinite-math-only"),
        "-fgcse": ("", "-fno-gcse"),
        "-fmath-errno": ("", "-fno-math-errno"),
        "-ftree-vectorize": ("", "-ftree-vectorize"),
        "-funroll-loops": ("", "-funroll-loops"),
    }
    why = dict(line.split(": ", 1) for line in excluded)
    assert set(why) == {"-fallow-store-data-races", "-fasynchronous-unwind-tables",
                        "-fprofile-reorder-functions", "-fsave-optimization-record",
                        "-fsection-anchors", "-fshort-enums", "-fstack-protector-strong",
                        "-ftrapv", "-fvar-tracking", "-fwrapv"}
    assert why["-fsave-optimization-record"].startswith("flags.py refuses")
    assert "overflow" in why["-ftrapv"] and "overflow" in why["-fwrapv"]
    assert "ABI" in why["-fshort-enums"] and "hardening" in why["-fstack-protector-strong"]
    assert "data races" in why["-fallow-store-data-races"]
    assert why["-fsection-anchors"] == "gcc ignores it"


@pytest.mark.parametrize("switch", [
    "-fexceptions", "-fnon-call-exceptions", "-funwind-tables", "-fpic", "-fPIC", "-fpie",
    "-fPIE", "-fsanitize=address", "-finstrument-functions", "-fprofile-arcs", "-fauto-profile",
    "-fsplit-stack", "-fstack-protector-all", "-ftrapv", "-fwrapv", "-fno-wrapv",
    "-fplugin=x.so", "-fdump-tree-all"])
def test_each_kind_of_unsearched_switch_has_a_reason(switch):
    assert dimensions.unsearched(switch)


@pytest.mark.parametrize("switch", ["-funroll-loops", "-fno-math-errno", "-fassociative-math",
                                    "-freciprocal-math", "-fno-signed-zeros", "-fipa-pta"])
def test_code_generation_switches_are_searched(switch):
    assert dimensions.unsearched(switch) is None


# --- valued options ---------------------------------------------------------------------------

def test_valued_options_are_read_with_their_values_and_the_bases():
    valued = dimensions.parse_valued(OPTIMIZERS)
    assert valued["-fvect-cost-model"] == (("unlimited", "dynamic", "cheap", "very-cheap"),
                                           "very-cheap")
    assert valued["-ffp-contract"] == (("off", "on", "fast"), "fast")
    assert "-falign-functions" not in valued            # a number, not named values


def test_the_curated_valued_options_offer_every_value_but_the_bases():
    dims, skipped = dimensions.valued_dimensions(OPTIMIZERS)
    assert {d.name: d.choices for d in dims} == {
        "-fvect-cost-model": ("", "-fvect-cost-model=unlimited", "-fvect-cost-model=dynamic",
                              "-fvect-cost-model=cheap"),
        "-ffp-contract": ("", "-ffp-contract=off", "-ffp-contract=on"),
        "-fira-algorithm": ("", "-fira-algorithm=priority"),
    }
    # not curated: listed, but neither searched nor called missing
    assert not any(line.startswith("-fstack-reuse") for line in skipped)
    assert skipped == ["-fira-region=: this gcc does not list it with its value at the base",
                       "-freorder-blocks-algorithm=: this gcc does not list it with its value "
                       "at the base"]
    check_words(tuple(c for d in dims for c in d.choices if c))
    # one value beside the base's is still not an on/off switch
    assert not any(dimensions.is_switch(d) for d in dims)


# --- params -----------------------------------------------------------------------------------

def test_params_are_read_with_their_defaults_and_ranges():
    params = dimensions.parse_params(PARAMS)
    assert params["max-unroll-times"] == dimensions.Param("max-unroll-times", 8, None, None)
    assert params["vect-epilogues-nomask"] == dimensions.Param("vect-epilogues-nomask", 1, 0, 1)
    assert params["align-threshold"].high == 65536
    assert "parloops-schedule" not in params        # an enum, not a number


def test_param_values_lie_around_the_default_inside_the_range():
    assert dimensions.param_values(
        dimensions.Param("max-unroll-times", 8, None, None)) == (4, 16, 32)
    assert dimensions.param_values(dimensions.Param("vect-epilogues-nomask", 1, 0, 1)) == (0,)
    assert dimensions.param_values(dimensions.Param("d", 3, 1, 10)) == (2, 6)


def test_param_dimensions_keep_the_curated_params_this_gcc_lists():
    dims, skipped = dimensions.param_dimensions(PARAMS)
    named = {d.name: d.choices for d in dims}
    assert named == {
        "--param=max-unroll-times": ("", "--param=max-unroll-times=4",
                                     "--param=max-unroll-times=16", "--param=max-unroll-times=32"),
        "--param=max-inline-insns-auto": ("", "--param=max-inline-insns-auto=8",
                                          "--param=max-inline-insns-auto=30",
                                          "--param=max-inline-insns-auto=60"),
        "--param=early-inlining-insns": ("", "--param=early-inlining-insns=3",
                                         "--param=early-inlining-insns=12",
                                         "--param=early-inlining-insns=24"),
        "--param=vect-epilogues-nomask": ("", "--param=vect-epilogues-nomask=0"),
    }
    assert "--param=inline-unit-growth: this gcc does not list it" in skipped
    check_words(tuple(c for d in dims for c in d.choices if c))


# --- -march -----------------------------------------------------------------------------------

def test_a_v2_only_host_drops_v3_v4_and_this_machines_native(monkeypatch):
    _need("gcc")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(ZEN5))   # -march=native means the recorded Zen 5
    march, dropped = dimensions.march_dimension("gcc", cpu.host_of_level("x86-64-v2"))
    assert march == Dimension("march", ("", "-march=x86-64-v2"))
    assert [d.split(":")[0] for d in dropped] == ["-march=x86-64-v3", "-march=x86-64-v4",
                                                  "-march=native"]
    assert "avx2" in dropped[0]


def test_a_recorded_host_runs_its_levels_and_its_own_native(monkeypatch):
    _need("gcc")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(ZEN5))
    march, dropped = dimensions.march_dimension("gcc")
    assert march.choices == ("", "-march=x86-64-v2", "-march=x86-64-v3", "-march=x86-64-v4",
                             "-march=native")
    assert dropped == []


def test_a_cpu_without_x86_64_levels_gets_no_level(monkeypatch):
    _need("gcc")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(ZEN5))
    arm = cpu.Host(cpu_model="", vendor="0x41", family="8", model="0xd0c", stepping="",
                   microcode="", flags=("asimd", "fp"), hypervisor=False, isa_levels=())
    march, dropped = dimensions.march_dimension("gcc", arm)
    assert march.choices == ("",)
    assert dropped[0] == "-march=x86-64-v2..v4: this CPU is not x86-64"


# --- the built-in spaces from the real compilers ----------------------------------------------

def test_gcc_optimizers_from_the_real_gcc(monkeypatch):
    _need("gcc")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(ZEN5))
    s = space.load("gcc-optimizers", "gcc", "-O2", cpu.host_of_level("x86-64-v3"))
    assert (s.base, s.compiler, s.source) == ("-O2", "gcc", "gcc-optimizers")
    named = {d.name: d.choices for d in s.dimensions}
    assert named["-funroll-loops"] == ("", "-funroll-loops")
    assert named["-fgcse"] == ("", "-fno-gcse")
    assert named["march"] == ("", "-march=x86-64-v2", "-march=x86-64-v3")
    assert named["--param=max-unroll-times"][0] == ""
    assert named["-fvect-cost-model"] == ("", "-fvect-cost-model=unlimited",
                                          "-fvect-cost-model=dynamic", "-fvect-cost-model=cheap")
    assert s.switches() > 100
    for d in s.dimensions:
        assert d.choices[0] == "" and len(d.choices) >= 2
    left_out = {line.split(":")[0] for line in s.excluded}
    assert {"-fwrapv", "-ftrapv", "-fasynchronous-unwind-tables",
            "-fstack-protector-strong"} <= left_out
    assert not left_out & set(named)
    check_words(tuple(c for d in s.dimensions for c in d.choices[1:]))
    # the param and valued options' values are ones this gcc takes
    params = tuple(c for d in s.dimensions if d.name.startswith("--param") for c in d.choices[1:])
    assert toolchain.rejects("gcc", params) is None
    for d in s.dimensions:
        if d.name in dimensions.VALUED:
            for c in d.choices[1:]:
                assert toolchain.rejects("gcc", ("-O2", c)) is None, c


def test_the_base_level_decides_each_switchs_direction():
    _need("gcc")
    o1 = {d.name: d.choices for d in dimensions.gcc_dimensions(toolchain.resolve("gcc"), "-O1")[0]}
    o2 = {d.name: d.choices for d in dimensions.gcc_dimensions(toolchain.resolve("gcc"), "-O2")[0]}
    assert o1["-fgcse"] == ("", "-fgcse") and o2["-fgcse"] == ("", "-fno-gcse")


@pytest.mark.integration
def test_no_searched_switch_is_one_gcc_warns_about_for_c():
    """Each switch alone on a C file: gcc says nothing about any of them (a switch of another
    language, or one this target ignores, is warned about; IGNORABLE and UNSEARCHED name them)."""
    _need("gcc")
    s = space.load("gcc-optimizers", "gcc", "-O2", cpu.host_of_level("x86-64"))
    cc = toolchain.resolve("gcc").cc
    for d in s.dimensions:
        if not dimensions.is_switch(d):
            continue
        out = process.run([cc, "-O2", d.choices[1], "-x", "c", "-c", "-o", "/dev/null", "-"],
                          input=dimensions.PROGRAM, env={**environment.clean(), "LC_ALL": "C"})
        assert out.ok and "warning" not in out.stderr or "take precedence" in out.stderr, (
            d.choices[1], out.stderr)


def test_clang_defaults_come_from_the_base_and_the_driver():
    o2 = ("-cc1", "-O2", "-vectorize-loops", "-vectorize-slp", "-mframe-pointer=none",
          "-fmath-errno")
    o1 = ("-cc1", "-O1", "-mframe-pointer=none", "-fmath-errno")
    unroll = dimensions.ClangSwitch("-funroll-loops", "O>1")
    vectorize = dimensions.ClangSwitch("-fvectorize", "-vectorize-loops")
    merge = dimensions.ClangSwitch("-fmerge-all-constants", "-fmerge-all-constants")
    assert dimensions.clang_default(unroll, o2) and not dimensions.clang_default(unroll, o1)
    assert dimensions.clang_default(vectorize, o2) and not dimensions.clang_default(vectorize, o1)
    assert not dimensions.clang_default(merge, o2)
    # the base's own word wins, the last one when it says both
    assert not dimensions.clang_default(unroll, o2, ("-O2", "-fno-unroll-loops"))
    assert dimensions.clang_default(unroll, o1, ("-fno-unroll-loops", "-funroll-loops"))


def test_clang_switches_from_the_real_clang(monkeypatch):
    _need("clang")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(ZEN5))
    v2 = cpu.host_of_level("x86-64-v2")
    for spec in ("gcc-optimizers", "clang-switches"):
        s = space.load(spec, "clang", None, v2)
        assert s.source == "clang-switches" and s.base == "-O2"
        choices = {c for d in s.dimensions for c in d.choices}
        assert {"-fno-vectorize", "-fno-slp-vectorize", "-fno-unroll-loops", "-fno-math-errno",
                "-fassociative-math", "-fno-strict-aliasing", "-march=x86-64-v2"} <= choices
        assert not any(c.startswith("-mllvm") for c in choices)
        assert "-mllvm: flags.py refuses it: it runs or loads another program" in s.excluded
    o1 = {c for d in space.load("clang-switches", "clang", "-O1", v2).dimensions
          for c in d.choices}
    assert {"-fvectorize", "-funroll-loops"} <= o1


def test_o3_as_a_set_of_the_gcc_space_turns_what_o3_turns_and_leaves_march(monkeypatch):
    """-O3's switches from gcc's own listings: what -O3 turns on beyond -O2, no switch -O2 has
    already, and params set to the choice nearest -O3's value."""
    _need("gcc")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(ZEN5))
    s = space.load("gcc-optimizers", "gcc", "-O2", cpu.host_of_level("x86-64-v3"))
    level = space.level_choices(s, "-O3")
    chain = toolchain.resolve("gcc")
    o2 = dict(dimensions.parse_optimizers(
        dimensions.ask(chain, ["-Q", "--help=optimizers", "-O2"])))
    o3 = dict(dimensions.parse_optimizers(
        dimensions.ask(chain, ["-Q", "--help=optimizers", "-O3"])))
    turned = {name for name in o3 if o3[name] != o2.get(name)}
    switches = {k for k in level if not k.startswith("--param") and k not in dimensions.VALUED}
    assert switches and switches <= turned
    assert {"-fipa-cp-clone", "-fpeel-loops", "-funswitch-loops"} <= switches
    assert all(level[k] == k for k in switches)          # each turned on, as -O3 does
    assert "march" not in level
    # -O3's vectoriser cost model, the valued option that sets its vectorising apart from -O2's
    assert level["-fvect-cost-model"] == "-fvect-cost-model=dynamic"
    named = {d.name: d.choices for d in s.dimensions}
    for k, v in level.items():
        assert v in named[k][1:]
    # the whole set is one the compiler takes, and at base -O3 there is nothing to turn
    assert toolchain.rejects("gcc", s.flags(level)) is None
    at_o3 = space.load("gcc-optimizers", "gcc", "-O3", cpu.host_of_level("x86-64-v3"))
    assert space.level_choices(at_o3, "-O3") == {}


KERNEL = """\
void axpy(float *restrict y, const float *restrict x, float a, int n)
{ for (int i = 0; i < n; i++) y[i] += a * x[i]; }
"""


def test_o3_as_a_set_of_the_gcc_space_compiles_a_loop_as_o3_does(monkeypatch, tmp_path):
    """A loop of unknown count: gcc 12's -O2 vectorises it only where that costs nothing, -O3
    whenever its cost model expects a gain. Turning -O3's switches alone leaves -O2's code;
    with -O3's cost model the set of the space is -O3's own assembly."""
    _need("gcc")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(ZEN5))
    s = space.load("gcc-optimizers", "gcc", "-O2", cpu.host_of_level("x86-64-v3"))
    level = space.level_choices(s, "-O3")
    source = _file(tmp_path, KERNEL, "k.c")
    cc = toolchain.resolve("gcc").cc

    def assembly(words) -> str:
        out = tmp_path / "k.s"
        done = process.run([cc, *words, "-S", "-o", str(out), str(source)],
                           env={**environment.clean(), "LC_ALL": "C"})
        assert done.ok, done.tail()
        return out.read_text()

    o2, o3 = assembly(["-O2"]), assembly(["-O3"])
    if o2 == o3:
        pytest.skip("this gcc vectorises the kernel alike at -O2 and -O3")
    assert assembly(s.flags(level)) == o3
    switches_alone = {k: v for k, v in level.items() if k != "-fvect-cost-model"}
    assert assembly(s.flags(switches_alone)) != o3


def test_a_param_takes_the_choice_nearest_the_levels_value_or_none():
    d = Dimension("--param=max-inline-insns-single",
                  ("", "--param=max-inline-insns-single=35", "--param=max-inline-insns-single=140",
                   "--param=max-inline-insns-single=280"))
    was = {"max-inline-insns-single": dimensions.Param("max-inline-insns-single", 70, None, None)}

    def at(value: int) -> dict:
        return {"max-inline-insns-single": dimensions.Param("max-inline-insns-single", value, None,
                                                       None)}

    assert space._param_nearest(d, was, at(200)) == "--param=max-inline-insns-single=280"
    assert space._param_nearest(d, was, at(130)) == "--param=max-inline-insns-single=140"
    assert space._param_nearest(d, was, at(75)) is None       # the base's own is nearest
    assert space._param_nearest(d, was, at(70)) is None       # the level does not change it


def test_o3_as_a_set_of_the_clang_space(monkeypatch):
    _need("clang")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(ZEN5))
    o1 = space.load("clang-switches", "clang", "-O1", cpu.host_of_level("x86-64-v2"))
    level = space.level_choices(o1, "-O3")
    # clang's -O3 vectorises and unrolls where its -O1 does not
    assert {level.get("-fvectorize"), level.get("-funroll-loops")} == {"-fvectorize",
                                                                       "-funroll-loops"}
    assert "-ffinite-math-only" not in level


def test_clang_switches_is_not_a_gcc_space():
    _need("gcc")
    with pytest.raises(ConfigError, match="'clang-switches' is clang's"):
        space.load("clang-switches", "gcc", None)


# --- Space --------------------------------------------------------------------------------------

SMALL = Space(base="-O2 -pipe", compiler="gcc", source="test",
              dimensions=(Dimension("-funroll-loops", ("", "-funroll-loops")),
                          Dimension("-fgcse", ("", "-fno-gcse")),
                          Dimension("march", ("", "-march=x86-64-v2", "-march=x86-64-v3")),
                          Dimension("both", ("", "-fipa-pta -fno-plt")),
                          Dimension("--param=vect-epilogues-nomask",
                                    ("", "--param=vect-epilogues-nomask=0"))))


def test_flags_are_the_base_then_each_chosen_choice_in_dimension_order():
    assert SMALL.flags({}) == ("-O2", "-pipe")
    chosen = {"march": "-march=x86-64-v3", "-funroll-loops": "-funroll-loops", "-fgcse": "",
              "both": "-fipa-pta -fno-plt"}
    assert SMALL.flags(chosen) == ("-O2", "-pipe", "-funroll-loops", "-march=x86-64-v3",
                                   "-fipa-pta", "-fno-plt")
    with pytest.raises(ValueError, match="no dimension 'nope'"):
        SMALL.flags({"nope": ""})
    with pytest.raises(ValueError, match="'-fgcse' has no choice '-fgcse'"):
        SMALL.flags({"-fgcse": "-fgcse"})


def test_changes_are_the_words_beyond_the_base():
    assert SMALL.changes(SMALL.flags({"-fgcse": "-fno-gcse"})) == ("-fno-gcse",)
    assert SMALL.changes(["-O2", "-pipe"]) == ()
    assert SMALL.changes(["-funroll-loops", "-O2", "-pipe"]) == ("-funroll-loops",)


def test_switches_count_the_on_off_dimensions_only():
    assert SMALL.switches() == 2
    valued = Space(base="-O2", compiler="gcc", source="test",
                   dimensions=(Dimension("-fira-algorithm", ("", "-fira-algorithm=priority")),))
    assert valued.switches() == 0


# --- space files ------------------------------------------------------------------------------

GOOD = """
summary = "two switches and a choice"
base = "-O3"
switches = ["-funroll-loops", "-fno-gcse"]
[choices]
unroll = ["", "--param=max-unroll-times=4", "--param=max-unroll-times=16"]
"""


def test_a_space_file_gives_its_switches_then_its_choices(tmp_path):
    _need("gcc")
    path = _file(tmp_path, GOOD)
    s = space.load(str(path), "gcc", None)
    assert (s.base, s.source) == ("-O3", str(path.resolve()))
    assert s.dimensions == (Dimension("-funroll-loops", ("", "-funroll-loops")),
                            Dimension("-fno-gcse", ("", "-fno-gcse")),
                            Dimension("unroll", ("", "--param=max-unroll-times=4",
                                                 "--param=max-unroll-times=16")))
    assert s.switches() == 2 and s.excluded == ()
    assert space.load(str(path), "gcc", "-O1").base == "-O1"     # --base wins


def test_a_choice_without_the_default_gets_it_first(tmp_path):
    _need("gcc")
    path = _file(tmp_path, 'summary = "x"\n[choices]\nvec = ["-fno-tree-vectorize", ""]\n')
    s = space.load(str(path), "gcc", None)
    assert s.base == "-O2"
    assert s.dimensions == (Dimension("vec", ("", "-fno-tree-vectorize")),)


@pytest.mark.parametrize("text, expected", [
    ("extra = 1\n" + GOOD, "unknown key 'extra'"),
    ('switches = ["-funroll-loops"]', "missing key 'summary'"),
    ('summary = "x"\nswitches = ["-fplugin=x.so"]',
     "key 'switches[0]': flag '-fplugin=x.so' runs or loads another program"),
    ('summary = "x"\n[choices]\nout = ["", "-o /tmp/x"]',
     "key 'choices.out[1]': flag '-o' names a file or folder"),
    ('summary = "x"\nbase = "-O2 -B/tmp"\nswitches = ["-funroll-loops"]', "key 'base': flag '-B/tmp'"),
    ('summary = "x"\n[choices]\nmarch = "-march=x86-64-v3"', "key 'choices.march': expected a valid list"),
    ('summary = "x"\n[choices]\nmarch = [1, 2]', "key 'choices.march.0': expected a valid string"),
    ('summary = "x"\n[choices]\nmarch = []', "key 'choices.march': expected at least 1 item"),
    ('summary = "x"', "a space needs 'switches' or 'choices'"),
    ('summary = "x"\nswitches = ["-fgcse", "-fgcse"]', "key 'switches' lists a flag twice"),
    ('summary = "x"\nswitches = ["-fgcse -fipa-pta"]', "key 'switches[0]': each switch is one flag"),
    ('summary = "x"\n[choices]\n"-bad" = ["", "-fgcse"]', "key 'choices.-bad': a choice's name"),
    ('summary = "x"\nswitches = ["-funroll-loops"', "not valid TOML"),
])
def test_space_file_errors_name_the_file_and_the_key(tmp_path, text, expected):
    _need("gcc")
    path = _file(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        space.load(str(path), "gcc", None)
    assert str(e.value).startswith(f"{path}: ") and expected in str(e.value), str(e.value)


def test_a_bad_base_option_is_named():
    _need("gcc")
    with pytest.raises(ConfigError, match="^--base '-O2 -o /tmp/x': flag '-o'"):
        space.load("gcc-optimizers", "gcc", "-O2 -o /tmp/x")


def test_march_choices_the_host_cannot_run_are_dropped_into_excluded(tmp_path, monkeypatch):
    _need("gcc")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(ZEN5))
    path = _file(tmp_path, 'summary = "x"\nswitches = ["-funroll-loops", "-mavx512f"]\n'
                           '[choices]\nmarch = ["", "-march=x86-64-v2", "-march=x86-64-v3"]\n'
                           'v4 = ["", "-march=x86-64-v4"]\n')
    s = space.load(str(path), "gcc", None, cpu.host_of_level("x86-64-v2"))
    assert s.dimensions == (Dimension("-funroll-loops", ("", "-funroll-loops")),
                            Dimension("march", ("", "-march=x86-64-v2")))
    assert [line.split(":")[0] for line in s.excluded] == ["-mavx512f", "-march=x86-64-v3",
                                                           "-march=x86-64-v4"]
    assert "(this CPU lacks" in s.excluded[1]


def test_the_shipped_example_is_small_and_found_by_name(monkeypatch):
    _need("gcc")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(ZEN5))
    s = space.load("example", "gcc", None)
    assert s.source == str(space.SPACES_DIR / "example.toml")
    assert s.switches() == 5
    names = [d.name for d in s.dimensions]
    assert "march" in names and len(names) == 7
    params = [d for d in s.dimensions if all(c.startswith("--param") for c in d.choices[1:])]
    assert len(params) == 1
    assert toolchain.rejects("gcc", tuple(w for d in s.dimensions for c in d.choices[1:]
                                          for w in split_flags(c))) is None


def test_spaces_are_not_recipes():
    assert space.SPACES_DIR.parent == recipe.RECIPES_DIR
    assert "example" not in [r.name for r in recipe.available()]
    with pytest.raises(ConfigError, match="no recipe 'example'"):
        recipe.load("example")


def test_an_unknown_space_lists_the_known_ones():
    _need("gcc")
    with pytest.raises(ConfigError, match="no space 'nope': not a file, and not one of "
                                          "gcc-optimizers, clang-switches, example"):
        space.load("nope", "gcc", None)


# --- a space's bound -------------------------------------------------------------------------

def _switches(tmp_path: Path, switches: list[str]) -> Path:
    quoted = ", ".join(f'"{s}"' for s in switches)
    return _file(tmp_path, f'summary = "generated"\nswitches = [{quoted}]\n')


def test_a_generated_10000_switch_space_is_refused_naming_the_bound(tmp_path):
    _need("gcc")
    # Every value of one option, as a script would write them; the last one a flag flags.py
    # refuses, which the count names first: the file is refused before its flags are checked.
    path = _switches(tmp_path, [f"-falign-functions={n}" for n in range(1, 10000)]
                     + ["-fplugin=x.so"])
    with pytest.raises(ConfigError) as e:
        space.load(str(path), "gcc", None)
    assert str(e.value) == (
        f"{path}: 10000 flags (switches and choices' values), more than the 2048 a space may "
        "hold (gcc's own list, gcc-optimizers, is ~240, and a set of every dimension must fit "
        "in a variant's 8192 characters of flags)")


def test_a_space_whose_longest_set_cannot_be_built_is_refused(tmp_path):
    _need("gcc")
    # Within the bound, but a set holding each switch would be 44896 characters of flags: the
    # tune stopped at the first such set it drew.
    path = _switches(tmp_path, [f"-falign-functions={n}" for n in range(1, 2001)])
    with pytest.raises(ConfigError) as e:
        space.load(str(path), "gcc", None)
    assert str(e.value) == (
        f"{path}: its longest set (the base '-O2' and every dimension's longest choice) is "
        "44896 characters of flags, beyond the 8192 a variant's flags may hold; search fewer "
        "dimensions, or split them between tunes")


def test_checking_many_target_choices_says_how_far_it_is(tmp_path, monkeypatch):
    _need("gcc")
    # Each -m choice is a compile against this CPU; a line every CHECKED_A_LINE (here 4).
    monkeypatch.setattr(space, "CHECKED_A_LINE", 4)
    values = ", ".join(f'"-mlarge-data-threshold={n}"' for n in range(1, 11))
    path = _file(tmp_path, f'summary = "x"\nswitches = ["-funroll-loops"]\n'
                           f'[choices]\nthreshold = ["", {values}]\n')
    said: list[str] = []
    s = space.load(str(path), "gcc", None, say=said.append)
    assert len(s.dimensions[1].choices) == 11
    assert said == ["s.toml: 4/10 -m choices checked against this CPU",
                    "s.toml: 8/10 -m choices checked against this CPU"]
