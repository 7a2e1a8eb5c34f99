"""Tests for flagsweep.host.cpu: cpuinfo parsing with fixtures, -march checks with the real compilers."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import shutil
from pathlib import Path

import pytest

from flagsweep.errors import ConfigError
from flagsweep.host import cpu, native
from tests.conftest import HOSTS

# Trimmed /proc/cpuinfo texts. Flags are real ones for each CPU, abridged of power-management
# and mitigation noise that the module does not look at.
SKYLAKE_SP = """\
processor	: 0
vendor_id	: GenuineIntel
cpu family	: 6
model		: 85
model name	: Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz
stepping	: 4
microcode	: 0x2006e05
flags		: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology cpuid pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch fsgsbase bmi1 hle avx2 smep bmi2 erms invpcid rtm mpx avx512f avx512dq rdseed adx smap clflushopt clwb avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves pku ospke
bogomips	: 4200.00

processor	: 1
vendor_id	: GenuineIntel
cpu family	: 6
model		: 85
model name	: Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz
flags		: fpu this-second-processor-must-be-ignored
"""

HASWELL = """\
processor	: 0
vendor_id	: GenuineIntel
cpu family	: 6
model		: 60
model name	: Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz
stepping	: 3
microcode	: 0x28
flags		: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm cpuid_fault epb invpcid_single pti fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid xsaveopt dtherm ida arat pln pts
"""

# Core 2 Duo E6600 (Merom): SSSE3 but no SSE4.1/4.2 and no POPCNT.
CORE2 = """\
processor	: 0
vendor_id	: GenuineIntel
cpu family	: 6
model		: 15
model name	: Intel(R) Core(TM)2 CPU          6600  @ 2.40GHz
stepping	: 6
flags		: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx lm constant_tsc arch_perfmon pebs bts rep_good nopl cpuid aperfmperf pni dtes64 monitor ds_cpl vmx est tm2 ssse3 cx16 xtpr pdcm lahf_lm dtherm
"""

AARCH64 = """\
processor	: 0
BogoMIPS	: 50.00
Features	: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs
CPU implementer	: 0x41
CPU architecture: 8
CPU variant	: 0x3
CPU part	: 0xd0c
CPU revision	: 1

processor	: 1
BogoMIPS	: 50.00
model name	: a key the first processor lacks must not leak in from the second
Features	: fp asimd
"""

AVX512_FOUR = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")


def _need(compiler: str) -> None:
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed on this machine")


# --- read_host -------------------------------------------------------------------------------

def test_read_host_avx512_fields_and_levels():
    host = cpu.read_host(SKYLAKE_SP)
    assert host.cpu_model == "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz"
    assert host.vendor == "GenuineIntel"
    assert (host.family, host.model, host.stepping, host.microcode) == ("6", "85", "4", "0x2006e05")
    assert host.hypervisor is True
    assert host.isa_levels == ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")
    assert host.flags == tuple(sorted(host.flags))
    assert "avx512vl" in host.flags and "sse4_2" in host.flags


def test_read_host_reads_only_the_first_processor():
    host = cpu.read_host(SKYLAKE_SP)
    assert "this-second-processor-must-be-ignored" not in host.flags
    assert len(host.flags) == 80


def test_read_host_haswell_stops_at_v3():
    host = cpu.read_host(HASWELL)
    assert host.isa_levels == ("x86-64", "x86-64-v2", "x86-64-v3")
    assert host.hypervisor is False
    assert host.microcode == "0x28"


def test_read_host_core2_is_baseline_only():
    host = cpu.read_host(CORE2)
    assert host.isa_levels == ("x86-64",)
    assert host.microcode == ""  # absent line -> ""
    assert host.stepping == "6"


def test_read_host_aarch64_uses_features_and_has_no_x86_levels():
    host = cpu.read_host(AARCH64)
    assert host.isa_levels == ()
    assert host.flags == tuple(sorted("fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp "
                                      "asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs".split()))
    assert host.cpu_model == ""
    assert (host.vendor, host.family, host.model, host.stepping) == ("0x41", "8", "0xd0c", "1")
    assert host.hypervisor is False


def test_read_host_defaults_to_proc_cpuinfo():
    host = cpu.read_host()
    assert isinstance(host, cpu.Host)
    assert host.flags, "this machine's /proc/cpuinfo should list some flags"


def test_isa_levels_need_every_flag_of_the_level():
    v3_flags = set(cpu.LEVELS["x86-64-v3"])
    assert cpu.isa_levels(frozenset(v3_flags)) == ("x86-64", "x86-64-v2", "x86-64-v3")
    assert cpu.isa_levels(frozenset(v3_flags - {"movbe"})) == ("x86-64", "x86-64-v2")
    assert cpu.isa_levels(frozenset()) == ()


# --- isa_macros / unchecked_macros (real gcc) ----------------------------------------------------

def test_isa_macros_for_baseline_are_exactly_the_baseline_isa():
    _need("gcc")
    assert cpu.isa_macros("gcc", "x86-64") == {"__MMX__", "__SSE__", "__SSE2__", "__FXSR__"}


def test_isa_macros_v3_has_avx2_not_avx512_nor_codegen_macros():
    _need("gcc")
    macros = cpu.isa_macros("gcc", "x86-64-v3")
    assert {"__AVX2__", "__FMA__", "__BMI2__", "__MOVBE__", "__SSE4_2__"} <= macros
    assert "__AVX512F__" not in macros
    assert not {"__SSE_MATH__", "__SSE2_MATH__", "__MMX_WITH_SSE__"} & macros


def test_isa_macros_is_cached():
    _need("gcc")
    assert cpu.isa_macros("gcc", "x86-64-v2") is cpu.isa_macros("gcc", "x86-64-v2")
    before = cpu._live_isa_macros.cache_info().hits
    cpu.isa_macros("gcc", "x86-64-v2")
    assert cpu._live_isa_macros.cache_info().hits == before + 1


def test_bad_march_raises_config_error_naming_it():
    _need("gcc")
    with pytest.raises(ConfigError) as caught:
        cpu.isa_macros("gcc", "no-such-cpu")
    message = str(caught.value)
    assert "-march=no-such-cpu" in message
    assert "gcc" in message
    assert "error" in message  # the compiler's own error line is quoted


def test_missing_compiler_raises_config_error():
    with pytest.raises(ConfigError, match="no-such-compiler-xyz"):
        cpu.isa_macros("no-such-compiler-xyz", "x86-64")


@pytest.mark.parametrize("march", ["x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"])
def test_levels_have_no_unchecked_macros(march):
    _need("gcc")
    assert cpu.unchecked_macros("gcc", march) == ()


@pytest.mark.parametrize("march", ["sapphirerapids", "alderlake", "knm", "bdver4", "znver3"])
def test_every_feature_macro_is_mapped_or_deliberately_unchecked(march):
    _need("gcc")
    unchecked = set(cpu.unchecked_macros("gcc", march))
    assert unchecked - cpu.NO_CPUINFO_FLAG == set()


@pytest.mark.parametrize("march", ["sapphirerapids", "knm", "znver3"])
def test_clang_feature_macros_are_mapped_or_deliberately_unchecked(march):
    # clang's sapphirerapids also adds __FLT16_HAS_DENORM__ & co.: type macros, not features
    _need("clang")
    assert set(cpu.unchecked_macros("clang", march)) - cpu.NO_CPUINFO_FLAG == set()


def test_sapphirerapids_reports_ptwrite_as_unchecked():
    _need("gcc")
    unchecked = cpu.unchecked_macros("gcc", "sapphirerapids")
    assert "__PTWRITE__" in unchecked
    assert "__AVX512FP16__" not in unchecked  # mapped to avx512_fp16
    assert "__AVX512FP16__" in cpu.isa_macros("gcc", "sapphirerapids")


# --- can_run ---------------------------------------------------------------------------------

def test_can_run_baseline_on_haswell():
    _need("gcc")
    assert cpu.can_run("x86-64", "gcc", cpu.read_host(HASWELL)) == cpu.Runnable(True, (), "")


def test_can_run_haswell_march_on_haswell():
    _need("gcc")
    assert cpu.can_run("haswell", "gcc", cpu.read_host(HASWELL)).ok


def test_can_run_v4_on_haswell_lists_avx512():
    _need("gcc")
    result = cpu.can_run("x86-64-v4", "gcc", cpu.read_host(HASWELL))
    assert result.ok is False
    assert result.missing == AVX512_FOUR
    assert result.reason == ("-march=x86-64-v4 needs avx512f, avx512bw, avx512cd, avx512dq, "
                             "avx512vl (this CPU lacks them)")


def test_can_run_v4_on_skylake_sp():
    _need("gcc")
    assert cpu.can_run("x86-64-v4", "gcc", cpu.read_host(SKYLAKE_SP)).ok


def test_can_run_v2_on_core2_lists_sse4():
    _need("gcc")
    result = cpu.can_run("x86-64-v2", "gcc", cpu.read_host(CORE2))
    assert result.ok is False
    assert result.missing == ("popcnt", "sse4_1", "sse4_2")
    assert result.reason == "-march=x86-64-v2 needs popcnt, sse4_1, sse4_2 (this CPU lacks them)"


def test_can_run_single_missing_flag_says_it():
    _need("gcc")
    # Haswell has everything -march=broadwell adds except ADX, RDSEED and PREFETCHW; RDSEED
    # comes only from intrinsics, so it is noted, not missing.
    result = cpu.can_run("broadwell", "gcc", cpu.read_host(HASWELL))
    assert result.missing == ("adx", "3dnowprefetch")
    haswell = cpu.read_host(HASWELL)
    no_adx = dataclasses.replace(haswell, flags=haswell.flags + ("3dnowprefetch",))
    single = cpu.can_run("broadwell", "gcc", no_adx)
    assert single.missing == ("adx",)
    assert single.reason == "-march=broadwell needs adx (this CPU lacks it)"


def test_can_run_tolerates_intrinsic_only_features_but_says_so():
    # Skylake-SP's -march enables SGX; a VM that hides sgx still runs compiler-generated code.
    _need("gcc")
    host = cpu.read_host(SKYLAKE_SP)
    no_sgx = dataclasses.replace(host, flags=tuple(f for f in host.flags if f != "sgx"))
    assert "__SGX__" in cpu.isa_macros("gcc", "skylake-avx512")
    result = cpu.can_run("skylake-avx512", "gcc", no_sgx)
    assert result.ok and result.missing == ()
    assert "sgx" in result.reason and "intrinsics" in result.reason
    # ...but a generated-code feature is still disqualifying.
    no_avx512 = dataclasses.replace(no_sgx, flags=tuple(f for f in no_sgx.flags if f != "avx512bw"))
    assert cpu.can_run("skylake-avx512", "gcc", no_avx512).missing == ("avx512bw",)


def test_can_run_flags_counts_every_target_option():
    _need("gcc")
    haswell = cpu.read_host(HASWELL)
    # -march=native on this host plus -mavx512f asks for AVX-512, which Haswell lacks.
    extra = cpu.can_run_flags(("-O2", "-march=haswell", "-mavx512f"), "gcc", haswell)
    assert not extra.ok and extra.missing == ("avx512f",)
    assert extra.reason == "-march=haswell -mavx512f needs avx512f (this CPU lacks it)"
    # The last -march wins, as in the compiler: v4 then x86-64 is baseline code.
    assert cpu.can_run_flags(("-march=x86-64-v4", "-march=x86-64"), "gcc", haswell).ok
    # No target option at all: nothing to check.
    assert cpu.can_run_flags(("-O3", "-funroll-loops"), "gcc", cpu.read_host(CORE2)).ok


def test_can_run_native_is_always_ok():
    # no compiler is consulted for native, so this holds even on the oldest fixture
    assert cpu.can_run("native", "gcc", cpu.read_host(CORE2)) == cpu.Runnable(True, (), "")


def test_can_run_bad_march_raises():
    _need("gcc")
    with pytest.raises(ConfigError, match="-march=pentium9000"):
        cpu.can_run("pentium9000", "gcc", cpu.read_host(HASWELL))


def test_can_run_with_clang():
    _need("clang")
    result = cpu.can_run("x86-64-v4", "clang", cpu.read_host(HASWELL))
    assert result.missing == AVX512_FOUR
    assert cpu.can_run("x86-64-v3", "clang", cpu.read_host(HASWELL)).ok


# --- march_native ----------------------------------------------------------------------------

def test_march_native_gcc_names_a_cpu_gcc_accepts():
    _need("gcc")
    value = cpu.march_native("gcc")
    assert isinstance(value, str) and value and value != "native"
    cpu.isa_macros("gcc", value)  # raises ConfigError if gcc did not report a real -march value


def test_march_native_clang_names_a_cpu_clang_accepts():
    _need("clang")
    value = cpu.march_native("clang")
    assert isinstance(value, str) and value and value != "native"
    cpu.isa_macros("clang", value)


def test_march_native_missing_compiler_is_none_and_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="flagsweep.host.cpu"):
        assert cpu.march_native("no-such-compiler-abc") is None
    assert "no-such-compiler-abc" in caplog.text


# --- describe --------------------------------------------------------------------------------

def test_describe_haswell():
    _need("gcc")
    summary = cpu.describe(cpu.read_host(HASWELL), ["gcc", "no-such-compiler-def"])
    doc = summary.dump()
    json.dumps(doc)  # `flagsweep cpus --json` prints it as it is
    assert set(doc) == {"cpu_model", "vendor", "family", "model", "stepping", "microcode",
                        "cpu_flags", "hypervisor", "isa_levels", "march_native", "levels"}
    assert summary.model == "60"
    assert summary.isa_levels == ["x86-64", "x86-64-v2", "x86-64-v3"]
    assert summary.cpu_flags == sorted(summary.cpu_flags) and "avx2" in summary.cpu_flags
    assert summary.march_native["no-such-compiler-def"] is None
    assert summary.march_native["gcc"] == cpu.march_native("gcc")
    assert doc["levels"] == [
        {"level": "x86-64", "runnable": True, "missing": []},
        {"level": "x86-64-v2", "runnable": True, "missing": []},
        {"level": "x86-64-v3", "runnable": True, "missing": []},
        {"level": "x86-64-v4", "runnable": False, "missing": list(AVX512_FOUR)},
    ]


def test_describe_core2_levels():
    summary = cpu.describe(cpu.read_host(CORE2), [])
    assert summary.march_native == {}
    assert summary.levels[1] == cpu.LevelSupport(level="x86-64-v2", runnable=False,
                                                 missing=["popcnt", "sse4_1", "sse4_2"])


# --- recorded hosts and the probe -----------------------------------------------------------

def _live_flags() -> set[str]:
    return set(cpu.read_host(Path("/proc/cpuinfo").read_text()).flags)


def _recorded_copy(tmp_path, monkeypatch, name: str, without: str) -> Path:
    """A recorded host whose kernel also hides `without`, read through $FLAGSWEEP_HOST."""
    folder = tmp_path / name
    shutil.copytree(HOSTS / name, folder)
    info = folder / "cpuinfo.txt"
    info.write_text(re.sub(rf" {without}(?= |$)", "", info.read_text(), flags=re.MULTILINE))
    monkeypatch.setenv("FLAGSWEEP_HOST", str(folder))
    assert without not in cpu.read_host().flags
    return folder


def test_a_recorded_host_answers_as_that_host(recorded_host):
    """cpuinfo, -march=native's value and its feature macros come from the recording: gcc asked
    about the options the recorded driver expanded native to defines that host's macros."""
    _need("gcc")
    assert cpu.read_host() == cpu.read_host((recorded_host / "cpuinfo.txt").read_text())
    listing = (recorded_host / "gcc-march-native-help-target.txt").read_text()
    assert cpu.march_native("gcc") == re.search(r"-march=\s+(\S+)\n", listing).group(1)
    recorded_macros = {line.split()[1] for line in
                       (recorded_host / "gcc-march-native-macros.txt").read_text().splitlines()
                       if line.endswith(" 1") and line.split()[1] in cpu.MACRO_FLAGS}
    native = cpu.isa_macros_for("gcc", ("-march=native",))
    assert {m for m in native if m in cpu.MACRO_FLAGS} == recorded_macros
    assert cpu.can_run_flags(("-O2", "-march=native"), "gcc").ok


def test_a_recorded_host_folder_that_is_not_one_is_a_clear_error(tmp_path, monkeypatch):
    (tmp_path / "cpuinfo.txt").write_text("processor : 0\n")
    monkeypatch.setenv("FLAGSWEEP_HOST", str(tmp_path))
    with pytest.raises(ConfigError) as e:
        cpu.read_host()
    assert str(e.value) == (
        f"FLAGSWEEP_HOST={tmp_path}: expected a recorded host folder with cpuinfo.txt, "
        "gcc-march-native-help-target.txt, gcc-march-native-driver.txt, "
        "gcc-march-native-macros.txt, clang-march-native-macros.txt; missing "
        "gcc-march-native-help-target.txt, gcc-march-native-driver.txt, "
        "gcc-march-native-macros.txt, clang-march-native-macros.txt")


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_random_number_features_the_kernel_hides_do_not_block_native(compiler, tmp_path,
                                                                     monkeypatch):
    """Zen 5's kernel hides rdseed while CPUID has it; rdrand hidden too changes nothing:
    compilers emit RDRAND/RDSEED only for intrinsics."""
    _need(compiler)
    _recorded_copy(tmp_path, monkeypatch, "amd-zen5-vm-rdseed-hidden", "rdrand")
    result = cpu.can_run_flags(("-O3", "-march=native"), compiler)
    assert result.ok and result.missing == ()
    assert result.reason == ("-march=native also enables rdrand, rdseed, which this CPU lacks; "
                             "compilers emit those only for explicit intrinsics")


def test_the_probe_runs_what_this_cpu_has_and_dies_of_sigill_otherwise():
    """Live: the probe needs this CPU. It answers by running code built with the options."""
    _need("gcc")
    if "avx512f" in _live_flags():
        pytest.skip("needs a live CPU without AVX-512 (to see SIGILL)")
    assert native.probe_runs("gcc", ("-march=x86-64",)) is True
    assert native.probe_runs("gcc", ("-march=x86-64-v4",)) is False
    assert native.probe_runs("gcc", ("-mno-such-option",)) is None


def test_a_feature_in_doubt_is_kept_when_the_probe_runs(tmp_path, monkeypatch):
    """avx2 missing from cpuinfo while gcc's native enables it is a doubt (the compiler does emit
    AVX2): without a probe it is missing; the real probe, run on this CPU, settles it."""
    _need("gcc")
    _recorded_copy(tmp_path, monkeypatch, "amd-epyc-v3-dev", "avx2")
    assert cpu.can_run_flags(("-march=native",), "gcc").missing == ("avx2",)
    needed = set(cpu._needed_flags(cpu.isa_macros_for("gcc", ("-march=native",))))
    if not needed - cpu.INTRINSIC_ONLY <= _live_flags():
        pytest.skip("needs a live CPU with the recorded Zen 3's features")
    result = cpu.can_run_flags(("-march=native",), "gcc", probe=native.probe_runs)
    assert result.ok and result.reason.endswith(
        "cpuinfo does not list avx2, but a probe built with -march=native ran here")
    assert "-mavx2" in cpu.target_options("gcc", ("-march=native",))   # the recorded CPU's


def test_a_feature_in_doubt_is_missing_when_the_probe_dies_of_sigill(tmp_path, monkeypatch):
    _need("gcc")
    if "avx512f" in _live_flags():
        pytest.skip("needs a live CPU without AVX-512 (the probe must die of SIGILL)")
    _recorded_copy(tmp_path, monkeypatch, "amd-zen5-vm-rdseed-hidden", "avx512f")
    result = cpu.can_run_flags(("-march=native",), "gcc", probe=native.probe_runs)
    assert not result.ok and result.missing == ("avx512f",)
    assert result.reason == ("-march=native needs avx512f (this CPU lacks it: a probe built with "
                             "these flags died of SIGILL)")
