"""The command line as a user runs it: the installed `flagsweep` script, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from procs import flagsweep

from flagsweep import __version__


def test_version():
    assert flagsweep("--version").stdout.strip() == f"flagsweep, version {__version__}"


@pytest.mark.parametrize("command", [[], ["list"], ["build"], ["cpus"]])
def test_every_command_has_help(command):
    out = flagsweep(*command, "--help").stdout
    assert out.startswith("Usage: ")


def test_list_names_targets_and_recipes_with_summaries():
    out = flagsweep("list").stdout
    first = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert first[0] == "targets" and "recipes" in first
    for name in ("tiny", "gzip", "lame", "olevels", "march", "simd", "seed-2003"):
        assert name in first
    assert "DEFLATE" in out


def test_system_json_is_the_machine_state_alone():
    state = json.loads(flagsweep("system", "--json").stdout)
    assert state["isa_levels"][0] == "x86-64" and state["cpu_count"] >= 1


HEAVY = ("statsmodels", "matplotlib", "sqlalchemy", "scipy", "numpy")


def _imported_after(args: list[str], heavy: tuple[str, ...]) -> tuple[str, list[str]]:
    """The CLI's output for args in a fresh interpreter, and which of the heavy packages that
    command left imported."""
    code = ("import sys; from flagsweep.cli import cli\n"
            f"try:\n    cli({args!r})\nexcept SystemExit:\n    pass\n"
            f"print(*sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})), "
            "file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout, out.stderr.split()


def test_help_imports_no_command_module():
    """--help names every command from the group alone: the heavy libraries behind the
    commands (statsmodels, matplotlib, SQLAlchemy, scipy, numpy) are imported on use."""
    stdout, heavy = _imported_after(["--help"], HEAVY + ("pydantic",))
    assert heavy == []
    commands = stdout.split("Commands:")[1].split()
    for name in ("build", "run", "list", "cpus", "system", "report", "compare", "suite",
                 "history", "dashboard", "merge", "pick", "distro", "worker", "calibrate",
                 "schema"):
        assert name in commands


@pytest.mark.parametrize("command", ["list", "cpus", "cache"])
def test_a_listing_imports_no_statistics_nor_store(command):
    """Before: every table went through the terminal's report module, which imports the
    statistics (scipy) and the store (SQLAlchemy), so `flagsweep list` took seconds."""
    stdout, heavy = _imported_after([command], HEAVY)
    assert heavy == []
    assert stdout.strip()


def test_cpus_json_describes_this_machine():
    info = json.loads(flagsweep("cpus", "--json").stdout)
    assert info["isa_levels"][0] == "x86-64"
    assert [lv["level"] for lv in info["levels"]] == ["x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"]
    assert info["march_native"]["gcc"]


def test_cpus_on_a_recorded_host_says_it_is_not_this_machine(recorded_host, monkeypatch):
    """FLAGSWEEP_HOST: the recorded CPU, its -march=native and levels, and a first line that
    says whose they are; a folder that is not a recording is one line and status 2."""
    text = flagsweep("cpus").stdout
    assert text.splitlines()[0].split() == ["recorded", "host", str(recorded_host),
                                            "($FLAGSWEEP_HOST),", "not", "this", "machine"]
    info = json.loads(flagsweep("cpus", "--json").stdout)
    flags = next(line for line in (recorded_host / "cpuinfo.txt").read_text().splitlines()
                 if line.startswith("flags"))
    assert info["cpu_flags"] == sorted(flags.partition(":")[2].split())
    listing = (recorded_host / "gcc-march-native-help-target.txt").read_text()
    assert f"-march=                     \t\t{info['march_native']['gcc']}\n" in listing
    monkeypatch.setenv("FLAGSWEEP_HOST", str(recorded_host / "cpuinfo.txt"))
    out = flagsweep("cpus", check=False)
    assert out.returncode == 2 and out.stdout == "" and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"flagsweep: FLAGSWEEP_HOST={recorded_host / 'cpuinfo.txt'}: "
                                 "expected a recorded host folder with cpuinfo.txt")


@pytest.mark.integration
def test_build_json_uses_the_contract_names(tmp_path):
    out = flagsweep("build", "tiny", "--flags", "-O2", "--flags", "-O2 -mfpmath=sse", "--json",
                    "--out", str(tmp_path))
    doc = json.loads(out.stdout)        # stdout is the JSON alone: `| jq` works
    assert [v["id"] for v in doc] == ["gcc-O2", "gcc-O2-mfpmath-sse"]
    keys = {"status", "seconds", "log", "binary", "code_sha256", "size_bytes", "identical_to",
            "flags_verified"}
    assert keys <= set(doc[0]["build"])
    assert doc[1]["build"]["identical_to"] == "gcc-O2"
    assert doc[0]["build"]["log"] == "builds/gcc-O2/build.log"
    assert out.stderr.strip().splitlines()[-1] == str(tmp_path / "builds.json")
    saved = json.loads((tmp_path / "builds.json").read_text())
    assert saved["baseline"] == "gcc-O2" and saved["compilers"][0]["name"] == "gcc"


def test_bad_recipe_is_a_clear_error_not_a_traceback(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('summary = "x"\nextra_key = 1\nbaseline = { opt = "-O2" }\n[axes]\nopt = ["-O2"]\n')
    out = flagsweep("build", "tiny", "--recipe", str(bad), check=False)
    assert out.returncode == 2
    assert out.stderr.strip() == f"flagsweep: {bad}: unknown key 'extra_key'"


def test_unknown_target_lists_the_shipped_ones():
    out = flagsweep("build", "nosuch", check=False)
    assert out.returncode == 2
    assert "no target 'nosuch'" in out.stderr and "gzip" in out.stderr


def test_recipe_and_flags_together_is_a_usage_error():
    out = flagsweep("build", "tiny", "--recipe", "olevels", "--flags", "-O2", check=False)
    assert out.returncode == 2 and "--recipe or --flags" in out.stderr


@pytest.mark.parametrize("command", ["build", "run"])
def test_an_out_that_cannot_be_written_is_refused_before_any_work(command, tmp_path, small_fs):
    """A read-only --out, or one under a regular file, was a traceback from mkdir in the build."""
    (tmp_path / "a-file").write_text("")
    small_fs.read_only()
    cases = [(small_fs.path / "new", f"cannot write in {small_fs.path} (a read-only file system)"),
             (small_fs.path, f"cannot write in {small_fs.path} (a read-only file system)"),
             (tmp_path / "a-file" / "out", f"{tmp_path}/a-file is a file, not a folder; choose "
                                           "another folder")]
    for out, why in cases:
        done = flagsweep(command, "tiny", "--flags", "-O2", "--out", str(out), check=False)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr.splitlines()[-1].startswith(f"flagsweep: --out {out}: {why}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "small-fs"]


def test_build_prints_its_table_and_a_suite_that_failed(capsys):
    """`flagsweep build` printed `None` (or a PackageTests' repr) in place of its table: the
    failed-tests line's walrus was named like the table."""
    from types import SimpleNamespace

    from flagsweep import model
    from flagsweep.cli import sweeping

    def built(vid: str, tests: model.PackageTests | None):
        return SimpleNamespace(variant=SimpleNamespace(id=vid, flags=["-" + vid]),
                               identical_to=None, code_sha256="ab" * 32, status="ok",
                               flags_verified=True, size_bytes=1000, reused=False, seconds=1.0,
                               detail="", package_tests=tests, fixes=[], libraries=[],
                               external_libraries=[], binary=None, left_out=None,
                               dependencies=[], audit=None)

    failed = model.PackageTests(status="failed", command=["meson", "test"], log="t.log",
                                tail="1/1 selftest FAIL")
    builds = [built("O2", None), built("O1", failed)]
    sweeping._print_builds(builds, SimpleNamespace(baseline=builds[0].variant))
    out = capsys.readouterr().out
    assert "O2 *" in out and "abababababab" in out and "PackageTests" not in out
    assert "O1: fails its own tests (failed, meson test; t.log)\n1/1 selftest FAIL" in out
