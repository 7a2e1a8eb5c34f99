"""The flag rule (flagsweep.experiment.flags) and the compiler check (host.toolchain.resolve): a flag
is a code-generation option and a compiler is a C compiler that says it is gcc or clang.

Each hostile case is planted for real (a `cc1` script for -B, a shared object for -fplugin, a
shell for -wrapper, a dpkg-buildflags configuration) and must leave its marker unwritten: the
refusal comes before any compiler sees the flags.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flagsweep import shipped
from flagsweep.errors import ConfigError
from flagsweep.explain import remarks
from flagsweep.host import toolchain
from flagsweep.experiment import flags, matrix, recipe, target
from procs import flagsweep

RECIPE = 'summary = "s"\nbaseline = {{ opt = "-O2" }}\n[axes]\nopt = ["-O2", {level}]\n'


def _recipe(tmp_path: Path, level: str, head: str = "") -> Path:
    path = tmp_path / "r.toml"
    path.write_text(head + RECIPE.format(level=level))
    return path


def _planted_cc1(tmp_path: Path) -> tuple[Path, Path]:
    """A folder whose cc1 (the compiler proper gcc runs) writes a marker."""
    marker, folder = tmp_path / "cc1-ran", tmp_path / "planted"
    folder.mkdir()
    cc1 = folder / "cc1"
    cc1.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    cc1.chmod(0o755)
    return folder, marker


def _planted_plugin(tmp_path: Path) -> tuple[Path, Path]:
    """A shared object whose constructor writes a marker when gcc loads it as a plugin."""
    marker, source, plugin = tmp_path / "plugin-ran", tmp_path / "p.c", tmp_path / "planted.so"
    source.write_text('#include <stdio.h>\n__attribute__((constructor)) static void ran(void) '
                      f'{{ fclose(fopen("{marker}", "w")); }}\n')
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(plugin), str(source)], check=True)
    return plugin, marker


def _expanded(path: Path) -> str:
    """Load and expand a recipe as `flagsweep build` does; the refusal's message."""
    with pytest.raises(ConfigError) as info:
        matrix.expand(recipe.load(str(path)))
    return str(info.value)


# --- programs the compiler driver would run ---------------------------------------------------

def test_a_wrapper_in_a_recipe_never_runs(tmp_path):
    marker = tmp_path / "wrapper-ran"
    path = _recipe(tmp_path, f"\"-O2 -wrapper '/bin/sh,-c,touch {marker}'\"")
    message = _expanded(path)
    assert message.startswith(f"{path}: axes.opt[1]: flag '-wrapper' runs or loads another "
                              "program")
    assert not marker.exists()


def test_a_plugin_in_a_recipe_is_never_loaded(tmp_path):
    plugin, marker = _planted_plugin(tmp_path)
    path = _recipe(tmp_path, f'"-O2 -fplugin={plugin}"')
    message = _expanded(path)
    assert message.startswith(f"{path}: axes.opt[1]: flag '-fplugin={plugin}' ")
    assert not marker.exists()


@pytest.mark.parametrize("spelling", ["two words", "joined"])
def test_a_planted_cc1_behind_b_never_runs(tmp_path, spelling):
    folder, marker = _planted_cc1(tmp_path)
    option = f"-B {folder}" if spelling == "two words" else f"-B{folder}/"
    path = _recipe(tmp_path, f'{{ label = "b", flags = "-O2 {option}" }}')
    message = _expanded(path)
    assert message.startswith(f"{path}: axes.opt[1]: flag '{option.split()[0]}' ")
    assert not marker.exists()


def test_a_recipe_that_skipped_loading_is_checked_at_expansion(tmp_path):
    """A fleet worker gets the recipe as an object, not a file: the matrix checks it again."""
    folder, marker = _planted_cc1(tmp_path)
    spec = recipe.RecipeFile.model_construct(
        summary="s", compilers=["gcc"], design="factorial", axes={"opt": ["-O2", f"-O2 -B{folder}/"]},
        exclude=[], include=[], baseline={"opt": "-O2"}, base=None, distro=None, screen=[],
        study=None)
    with pytest.raises(ConfigError) as info:
        matrix.expand(recipe.Recipe("hostile", tmp_path / "hostile.toml", spec))
    assert str(info.value).startswith(f"{tmp_path / 'hostile.toml'}: variant gcc-O2-B")
    assert f"flag '-B{folder}/' runs or loads another program" in str(info.value)
    assert not marker.exists()


def test_distribution_flags_from_a_planted_dpkg_configuration_never_run(tmp_path, monkeypatch):
    """dpkg-buildflags adds what the user's ~/.config/dpkg/buildflags.conf says."""
    folder, marker = _planted_cc1(tmp_path)
    conf = tmp_path / "config" / "dpkg" / "buildflags.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(f"APPEND CFLAGS -B{folder}/\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with pytest.raises(ConfigError) as info:
        matrix.expand(recipe.load("distro"), ["gcc"])
    assert "key 'distro' (" in str(info.value)
    assert f"flag '-B{folder}/' runs or loads another program" in str(info.value)
    assert not marker.exists()


def test_cli_flags_with_a_wrapper_are_refused_before_any_work(tmp_path):
    marker, out = tmp_path / "wrapper-ran", tmp_path / "out"
    given = f"-O2 -wrapper /bin/sh,-c,touch\\ {marker}"
    run = flagsweep("build", "tiny", "--flags", "-O2", "--flags", given, "--compiler", "gcc",
                    "--out", str(out), check=False)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.startswith("flagsweep: --flags ")
    assert "flag '-wrapper' runs or loads another program" in run.stderr
    assert not marker.exists() and not out.exists()


def test_project_flags_with_b_are_refused_before_the_build(tmp_path):
    folder, marker = _planted_cc1(tmp_path)
    tiny = tmp_path / "tiny"
    shutil.copytree(shipped.TARGETS / "tiny", tiny)
    toml = tiny / "target.toml"
    toml.write_text(toml.read_text().replace('binary = "tiny"',
                                             f'binary = "tiny"\nproject_flags = ["-B", "{folder}"]'))
    out = tmp_path / "out"
    run = flagsweep("build", str(tiny), "--flags", "-O2", "--out", str(out), check=False)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"flagsweep: {toml}: key 'build.project_flags': flag '-B' "
                                 "runs or loads another program")
    assert not marker.exists() and not out.exists()


# --- flags that name outputs, and the rest of the rule ----------------------------------------

@pytest.mark.parametrize("level, flag, why", [
    ("-O2 -o elsewhere", "-o", "names a file"),
    ("-O2 -MD -MF deps.d", "-MD", "names a file"),
    ("-O2 -MF deps.d", "-MF", "names a file"),
    ("-O2 -Wl,-o,elsewhere", "-Wl,-o,elsewhere", "passes '-o' to the linker"),
    ("-O2 -Xlinker -o -Xlinker elsewhere", "-Wl,-o", "passes '-o' to the linker"),
    ("-O2 -Wl,-Map=map.txt", "-Wl,-Map=map.txt", "passes '-Map=map.txt' to the linker"),
    ("-O2 -Wl,--dependency-file=d", "-Wl,--dependency-file=d", "passes '--dependency-file=d'"),
    ("-O2 -Wl,-plugin,x.so", "-Wl,-plugin,x.so", "passes '-plugin' to the linker"),
    ("-O2 -Wl,-rpath,lib", "-Wl,-rpath,lib", "passes '-rpath' to the linker"),
    ("-O2 -save-temps=obj", "-save-temps=obj", "names a file"),
    ("-O2 -dumpdir x", "-dumpdir", "names a file"),
    ("-O2 -fdump-tree-all", "-fdump-tree-all", "names a file"),
    ("-O2 -fprofile-generate=/tmp/p", "-fprofile-generate=/tmp/p", "names a file"),
    ("-O2 -fprofile-use=p", "-fprofile-use=p", "names a file"),
    ("-O2 -fopt-info-vec=vec.txt", "-fopt-info-vec=vec.txt", "names a file"),
    ("-O2 -specs=x", "-specs=x", "runs or loads another program"),
    ("-O2 --sysroot=x", "--sysroot=x", "changes where the compiler looks"),
    ("-O2 -iprefix x", "-iprefix", "changes where the compiler looks"),
    ("-O2 -I inc", "-I", "changes where the compiler looks"),
    ("-O2 -fuse-ld=x", "-fuse-ld=x", "names a linker program"),
    ("-O2 --ld-path=ld", "--ld-path=ld", "runs or loads another program"),
    ("-O2 -Xclang -load", "-Xclang", "passes options to a program the compiler runs"),
    ("-O2 -mllvm -x", "-mllvm", "runs or loads another program"),
    ("-O2 -fpass-plugin=p.so", "-fpass-plugin=p.so", "runs or loads another program"),
    ("-O2 @rsp", "@rsp", "names a file of more flags"),
    ("-O2 -E", "-E", "changes what the compiler produces"),
    ("-O2 -x c", "-x", "changes what the compiler produces"),
    ("-O2 extra.c", "extra.c", "is not one of the code-generation options"),
    ("-O2 '-Dexit(x)=run(x)'", "-Dexit(x)=run(x)", "is not an object-like macro"),
    ("-O2 -Wp,-MD,deps.d", "-Wp,-MD,deps.d", "passes '-MD' to the preprocessor"),
])
def test_options_outside_code_generation_are_refused_naming_key_and_flag(tmp_path, level, flag, why):
    message, path = _load_error(tmp_path, level)
    assert message.startswith(f"{path}: axes.opt[1]: flag {flag!r} {why}"), message


def _load_error(tmp_path: Path, level: str) -> tuple[str, Path]:
    path = _recipe(tmp_path, f'"{level}"')
    with pytest.raises(ConfigError) as info:
        recipe.load(str(path))
    return str(info.value), path


def test_every_recipe_key_is_checked(tmp_path):
    cases = {
        "include[0].flags": 'summary = "s"\nbaseline = { row = "a" }\n'
                            '[[include]]\nfactors = { row = "a" }\nflags = "-O2 -o x"\n',
        "base": 'summary = "s"\ndesign = "plackett-burman"\nbase = "-O2 -o x"\n'
                'screen = ["-funroll-loops", "-fno-inline"]\n',
        "screen[1]": 'summary = "s"\ndesign = "plackett-burman"\nbase = "-O2"\n'
                     'screen = ["-funroll-loops", "-fplugin=x"]\n',
    }
    for key, text in cases.items():
        path = tmp_path / "r.toml"
        path.write_text(text)
        with pytest.raises(ConfigError) as info:
            recipe.load(str(path))
        assert str(info.value).startswith(f"{path}: {key}: flag "), (key, str(info.value))


# --- lengths ----------------------------------------------------------------------------------

def test_a_100_kb_cli_flag_is_refused_up_front_with_a_short_message(tmp_path):
    out = tmp_path / "out"
    given = "-O2 -DX=" + "a" * 100_000
    run = flagsweep("build", "tiny", "--flags", "-O2", "--flags", given, "--out", str(out),
                    check=False)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.startswith("flagsweep: --flags '-O2 -DX=aaa")
    assert (f"flag '-DX={'a' * 196}'... (100004 characters) is longer than {flags.FLAG_MAX} "
            "characters, the most one flag may hold") in run.stderr
    assert len(run.stderr) < 1000 and not out.exists()


def test_a_140_kb_recipe_flag_is_refused_naming_key_and_limit(tmp_path):
    """The kernel takes no argument over 128 KiB: gcc said only "Argument list too long"."""
    message, path = _load_error(tmp_path, "-O2 -DX=" + "a" * 140_000)
    assert message.startswith(f"{path}: axes.opt[1]: flag '-DX=aaa")
    assert f"... (140004 characters) is longer than {flags.FLAG_MAX} characters" in message
    assert len(message) < 600


def test_levels_longer_together_than_a_variant_may_be_are_refused(tmp_path):
    level = " ".join(f"-DX{i}=" + "a" * 900 for i in range(5))
    path = tmp_path / "r.toml"
    path.write_text(f'summary = "s"\nbaseline = {{ a = "x" }}\n[axes]\n'
                    f'a = [{{ label = "x", flags = "{level}" }}]\n'
                    f'b = [{{ label = "y", flags = "{level}" }}]\n')
    with pytest.raises(ConfigError) as info:
        matrix.expand(recipe.load(str(path)), filter_cpu=False)
    assert f"are longer than {flags.SET_MAX} characters" in str(info.value)
    assert len(str(info.value)) < 600


# --- compilers --------------------------------------------------------------------------------

def test_python_as_a_recipe_compiler_is_refused_naming_the_key(tmp_path):
    path = _recipe(tmp_path, '"-O3"', head='compilers = ["/usr/bin/python3"]\n')
    message = _expanded(path)
    assert message.startswith(f"{path}: key 'compilers[0]': compiler '/usr/bin/python3' (")
    assert "is not a C compiler that identifies itself as gcc or clang" in message


def test_python_as_compiler_option_is_refused_naming_it(tmp_path):
    out = tmp_path / "out"
    run = flagsweep("build", "tiny", "--flags", "-O2", "--compiler", "/usr/bin/python3",
                    "--out", str(out), check=False)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.startswith("flagsweep: --compiler /usr/bin/python3: compiler "
                                 "'/usr/bin/python3' (")
    assert "is not a C compiler that identifies itself as gcc or clang" in run.stderr


def test_a_script_that_only_claims_to_be_gcc_is_refused(tmp_path):
    """It predefines __GNUC__ when asked, but makes no object file."""
    fake = tmp_path / "bin" / "gcc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho '#define __GNUC__ 12'\n")
    fake.chmod(0o755)
    with pytest.raises(ConfigError) as info:
        toolchain.resolve(str(fake))
    assert "did not compile a one-line C program into an object file" in str(info.value)


@pytest.mark.parametrize("mode, why", [(0o777, "is writable by every user"),
                                       (0o775, "is writable by group")])
def test_a_compiler_others_can_replace_is_refused(tmp_path, mode, why):
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "gcc").symlink_to(shutil.which("gcc"))
    os.chown(folder, -1, 100)           # a group that is not root's
    folder.chmod(mode)
    with pytest.raises(ConfigError) as info:
        toolchain.resolve(str(folder / "gcc"))
    assert f"{folder} {why}" in str(info.value)
    folder.chmod(0o755)                 # the same link, in a folder only its owner writes
    assert toolchain._resolved.__wrapped__(str(folder / "gcc")).family == "gcc"


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_compiler_owned_by_another_user_is_refused(tmp_path):
    copy = tmp_path / "gcc"
    shutil.copy2(shutil.which("gcc"), copy)
    os.chown(copy, 65534, 65534)        # nobody
    with pytest.raises(ConfigError) as info:
        toolchain.resolve(str(copy))
    assert f"{copy} is owned by uid 65534, not by root or by uid 0 (you)" in str(info.value)


# --- what must keep passing -------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "-O2", "-O3 -flto", "-march=x86-64-v3 -mtune=native", "-mfpmath=387", "-DNDEBUG",
    "-D_FORTIFY_SOURCE=2 -U_FORTIFY_SOURCE", "-Wp,-D_FORTIFY_SOURCE=3", "-Wl,-z,relro -Wl,-z,now",
    "-Wl,-z -Wl,relro", "-z relro", "-Xlinker -z -Xlinker now", "-Wl,-O1 -Wl,--as-needed",
    "-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer", "-fstack-protector-strong",
    "-fstack-clash-protection -fcf-protection", "-Wformat -Werror=format-security",
    "--param max-unroll-times=4", "--param=max-unroll-times=4", "-fuse-ld=lld", "-lm",
    "-O2 '-DNAME=\"a b\"' -DX=#1", "-ffast-math -funroll-loops -pipe -Wall", "-g -gsplit-dwarf",
    "-static-pie", "-fprofile-partial-training", "-Wa,-mbranches-within-32B-boundaries",
])
def test_code_generation_flags_pass(text):
    assert flags.check_flags(text) == text


def test_every_shipped_recipe_and_target_passes_the_rule():
    for path in sorted(shipped.RECIPES.glob("*.toml")):
        r = recipe.load(str(path))
        levels = [lv for axis in r.axes().values() for lv in axis]
        for words in [lv.flags for lv in levels] + [recipe.split_flags(i.flags) for i in r.spec.include]:
            flags.check_words(words)
        matrix.expand(r, filter_cpu=False)     # the distribution's flags too
    for path in sorted(shipped.TARGETS.glob("*/target.toml")):
        flags.check_words(target.load(str(path)).spec.build.project_flags)


# --- a build's logged commands, run again by explain ------------------------------------------

def _logged(tmp_path: Path, *commands: list[str]) -> Path:
    """A compile log as a results folder from elsewhere could hold it."""
    tree = tmp_path / "run" / "builds" / "v" / "tree"
    tree.mkdir(parents=True)
    (tree / "k.c").write_text("int k(int x) { return x + 1; }\n")
    log = tree.parent / "compile.jsonl"
    log.write_text("".join(json.dumps({"argv": argv, "cwd": str(tree), "exit": 0}) + "\n"
                           for argv in commands))
    return log


def test_explain_does_not_run_a_logged_command_with_a_wrapper(tmp_path):
    marker = tmp_path / "wrapper-ran"
    log = _logged(tmp_path, ["gcc", "-O2", "-wrapper", f"/bin/sh,-c,touch {marker}", "-c", "k.c",
                             "-o", "k.o"])
    found = remarks.collect(log, cache=tmp_path / "cache")
    assert found.status == "failed"
    assert found.why.endswith("a logged command holds '-wrapper', with which the compiler runs "
                              "or loads another program; flagsweep does not run it again")
    assert not marker.exists()


def test_explain_does_not_run_a_logged_program_that_is_no_compiler(tmp_path):
    marker = tmp_path / "python-ran"
    log = _logged(tmp_path, ["gcc", "-O2", "-c", "k.c", "-o", "k.o"],
                  ["/usr/bin/python3", "-c", f"open('{marker}', 'w')", "-c", "k.c"])
    found = remarks.collect(log, cache=tmp_path / "cache")
    assert found.status == "failed"
    assert "is not a C compiler that identifies itself as gcc or clang" in found.why
    assert not marker.exists()


def test_a_cxx_driver_others_can_replace_is_refused(tmp_path):
    """gcc's g++ beside it builds a C++ target's compiles: it is held to the same rule."""
    folder = tmp_path / "bin"
    folder.mkdir()
    shutil.copy2(Path(shutil.which("gcc")).resolve(), folder / "gcc")
    cxx = folder / "g++"
    cxx.write_text("#!/bin/sh\nexec g++ \"$@\"\n")
    cxx.chmod(0o777)
    with pytest.raises(ConfigError) as info:
        toolchain.resolve(str(folder / "gcc"))
    assert str(info.value).startswith(f"compiler '{folder / 'gcc'}': its C++ driver {cxx}: "
                                      f"{cxx} is writable by every user")


@pytest.mark.parametrize("variable", ["GCC_EXEC_PREFIX", "COMPILER_PATH"])
def test_a_planted_cc1_behind_an_environment_variable_never_runs(tmp_path, variable):
    """GCC_EXEC_PREFIX and COMPILER_PATH are -B by another name."""
    folder, marker = _planted_cc1(tmp_path)
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "flagsweep", "build", "tiny", "--flags", "-O2",
                          "--out", str(out)], capture_output=True, text=True,
                         env={**os.environ, variable: f"{folder}/"})
    assert run.returncode == 2 and "Traceback" not in run.stderr
    # A value longer than 80 characters is shown cut, and pytest's folder can be that long.
    assert run.stderr.startswith(f"flagsweep: the environment sets {variable}={folder}"[:110])
    assert ": with it the compiler runs programs" in run.stderr
    assert not marker.exists() and not out.exists()


def test_a_plugin_added_by_clangs_override_variable_is_never_loaded(tmp_path, monkeypatch):
    plugin, marker = _planted_plugin(tmp_path)
    monkeypatch.setenv("CCC_OVERRIDE_OPTIONS", f"+-fplugin={plugin}")
    with pytest.raises(ConfigError) as info:
        matrix.expand(recipe.from_flags(["-O2"], ["clang"]))
    assert str(info.value).startswith("the environment sets CCC_OVERRIDE_OPTIONS=+-fplugin=")
    assert not marker.exists()
