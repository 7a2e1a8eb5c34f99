"""`flagsweep new`: the target file a trial build writes, offline on a purpose-made project
(the Debian index stood in for) and for real on a Debian source package."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from demo_source import release_of

from flagsweep import files
from flagsweep.jobs import project, scaffold, sizing, target_file, trial
from flagsweep.compilation import debian, fetch, sources_list, variants
from flagsweep.errors import FlagsweepError
from flagsweep.experiment import matrix, recipe, target

# A program whose Makefile adds -fPIC to one object (as a project with a shared library does),
# whose executable is not named like the package, and which does work in proportion to its
# input (so a run can be sized): 40 passes over the bytes.
PROJECT = {
    "Makefile": "all: tool\n"
                "tool: main.o sum.o\n\t$(CC) $(CFLAGS) -o tool main.o sum.o\n"
                "sum.o: sum.c\n\t$(CC) $(CFLAGS) -fPIC -c sum.c -o sum.o\n"
                "main.o: main.c\n\t$(CC) $(CFLAGS) -c main.c -o main.o\n",
    "sum.c": "unsigned long sum(const unsigned char *p, long n) {\n"
             "  unsigned long s = 0;\n"
             "  for (int pass = 0; pass < 40; pass++)\n"
             "    for (long i = 0; i < n; i++) s = s * 31 + p[i] + pass;\n"
             "  return s;\n}\n",
    "main.c": "#include <stdio.h>\n#include <stdlib.h>\n"
              "unsigned long sum(const unsigned char *, long);\n"
              "int main(int argc, char **argv) {\n"
              "  FILE *f = fopen(argv[1], \"rb\"); if (!f) return 2;\n"
              "  fseek(f, 0, SEEK_END); long n = ftell(f); rewind(f);\n"
              "  unsigned char *p = malloc(n); if (fread(p, 1, n, f) != (size_t)n) return 3;\n"
              "  printf(\"%lu\\n\", sum(p, n)); return 0;\n}\n",
}


@pytest.fixture
def demo_release(tmp_path, monkeypatch) -> debian.DebianRelease:
    return release_of(tmp_path, monkeypatch, PROJECT)


# zstd's case: `make` of everything fails (there a shared library without its -fPIC), while a
# rule named like the program builds it; and the source sets a flag in an optimize attribute.
BROKEN_ALL = {
    **PROJECT,
    "Makefile": "all: shared demo-src\n"
                "shared:\n\t@echo 'relocation R_X86_64_PC32 ...; recompile with -fPIC' >&2; exit 1\n"
                "demo-src: main.o sum.o\n\t$(CC) $(CFLAGS) -o demo-src main.o sum.o\n"
                "sum.o: sum.c\n\t$(CC) $(CFLAGS) -c sum.c -o sum.o\n"
                "main.o: main.c\n\t$(CC) $(CFLAGS) -c main.c -o main.o\n",
    "sum.c": "__attribute__((optimize(\"no-tree-vectorize\")))\n" + PROJECT["sum.c"],
}


@pytest.mark.integration
def test_new_builds_only_the_programs_rule_when_everything_fails(tmp_path, monkeypatch):
    release_of(tmp_path, monkeypatch, BROKEN_ALL)
    said: list[str] = []
    folder = tmp_path / "demo"
    path = scaffold.new("demo", "demo-src", folder, said.append)
    t = target.load(str(path))
    assert t.spec.build.make_args == ["demo-src"] and t.spec.build.binary == "demo-src"
    assert t.spec.build.tolerated_flags == ["-fno-tree-vectorize"]
    text = path.read_text()
    assert "the Makefile has a rule for demo-src, so only it is built" in text
    assert ("#   -fno-tree-vectorize: the project's source sets it in 1 optimize attribute(s) "
            "or pragma(s)") in text
    assert [line for line in said if line.startswith("trial build")] == [
        "trial build 1 at -O2: failed", "trial build 2 at -O2: flags-mismatch",
        "trial build 3 at -O2: ok"]


@pytest.mark.integration
def test_new_finds_the_release_the_executable_and_the_projects_own_flags(tmp_path, demo_release):
    said: list[str] = []
    folder = tmp_path / "demo"
    path = scaffold.new("demo", "demo-src", folder, said.append,
                        argv=["{binary}", "{input}"])
    text = path.read_text()
    t = target.load(str(folder))
    # The newest release, verified by its sha256.
    assert t.spec.source.sha256 == demo_release.orig_sha256
    assert (t.spec.source.debian.package, t.spec.source.debian.version) == ("demo-src", "1.0-2")
    assert t.spec.version == "1.0" and t.spec.build.system == "make"
    # The executable the trial build made, though not named like the package.
    assert t.spec.build.binary == "tool"
    assert "# the trial build made 1 executable(s): tool; this one was picked" in text
    # The project's own -fPIC tolerated, with what the trial saw; never an -O level.
    assert t.spec.build.tolerated_flags == ["-fPIC"]
    assert ("#   -fPIC: the project's build adds it on 1 of 2 compile lines of the trial -O2 "
            "build") in text
    assert [line for line in said if line.startswith("trial build")] == [
        "trial build 1 at -O2: failed", "trial build 2 at -O2: flags-mismatch",
        "trial build 3 at -O2: ok"]
    # A failed trial says why under it: here the executable it was told to expect.
    assert said[said.index("trial build 1 at -O2: failed") + 1].startswith(
        "  the build succeeded but demo-src is missing from ")
    # The run command was run once on a generated corpus before the input was sized.
    assert "trial run: `{binary} {input}` on a generated 1 MB corpus exited 0" in said
    # Run twice more: the same bytes, so `exact` (tool has no decompress mode).
    assert "check: exact: two runs on the same input wrote the same bytes" in said
    # Sized by timing the run command; the trial builds are gone, the file verifies as is.
    # Which size is larger is a timing outcome: on a loaded machine both searches can end on
    # one timed size, so only that both were timed is asserted.
    sizes = t.spec.inputs
    assert "(timed at -O2: " in text and 0 < sizes.quick_megabytes <= sizes.megabytes
    assert not (folder / "trial").exists()
    m = matrix.expand(recipe.from_flags(["-O2"], ["gcc"]))
    (b,) = variants.build_all(t, m, variants.Options(out_dir=tmp_path / "check", jobs=2))
    assert b.status == "ok" and b.flags_verified


@pytest.mark.integration
def test_new_with_a_placeholder_run_leaves_sizing_to_size(tmp_path, demo_release):
    folder = tmp_path / "demo"
    scaffold.new("demo", "demo-src", folder, lambda line: None)
    text = (folder / "target.toml").read_text()
    assert 'argv = ["{binary}", "{input}"]' in text
    assert "megabytes = 1  # ~2 s at -O2 (not sized: write [run], then `flagsweep new --size" in text
    # The user writes the run command; --size times it and rewrites only the sizes.
    edited = text.replace('argv = ["{binary}", "{input}"]', 'argv = ["{binary}", "{input}"]  # mine')
    (folder / "target.toml").write_text(edited)
    scaffold.resize(str(folder), lambda line: None)
    after = (folder / "target.toml").read_text()
    assert "# mine" in after and "(timed at -O2: " in after
    assert [line for line in after.splitlines() if "megabytes" not in line] == \
        [line for line in edited.splitlines() if "megabytes" not in line]
    t = target.load(str(folder))
    assert 0 < t.spec.inputs.quick_megabytes <= t.spec.inputs.megabytes   # a timing outcome


def test_new_refuses_an_existing_file_and_a_bad_run(tmp_path, demo_release):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "target.toml").write_text("")
    with pytest.raises(FlagsweepError, match="target.toml exists: edit it, size its input"):
        scaffold.new("demo", "demo-src", tmp_path / "demo", print)
    with pytest.raises(FlagsweepError) as e:
        scaffold.new("other", "demo-src", tmp_path / "other", print, argv=["cat", "{input}"])
    assert "--run 'cat {input}':" in str(e.value) and "argv[0] must be '{binary}'" in str(e.value)
    with pytest.raises(FlagsweepError, match=r"--version 7: demo-src has 1.0-2, 0.9-1 here"):
        scaffold.new("other", "demo-src", tmp_path / "other", print, version="7")


def _tree(folder: Path, **members: str) -> Path:
    """A source tree of these files (name=text), for detect_system."""
    folder.mkdir()
    for file, text in members.items():
        (folder / file).write_text(text)
    return folder


def test_build_systems_are_told_apart(tmp_path):
    def tree(name: str, **members: str) -> Path:
        return _tree(tmp_path / name, **members)

    autoconf = "#! /bin/sh\n# Generated by GNU Autoconf 2.71 for x 1.0.\n"
    assert project.detect_system(tree("a", configure=autoconf, Makefile=""))[0] == "autotools"
    # brotli's configure only wraps CMake: CMake it is.
    wrapper = "#!/bin/sh\ncmake .\n"
    assert project.detect_system(tree("b", configure=wrapper,
                                      **{"CMakeLists.txt": ""}))[0] == "cmake"
    assert project.detect_system(tree("c", Makefile=""))[0] == "make"
    with pytest.raises(FlagsweepError, match="no configure script, CMakeLists.txt, meson.build "
                                             "or Makefile"):
        project.detect_system(tree("d", **{"README": ""}))
    # discount's configure.sh (David Parsons' configure.inc) writes its Makefile from a
    # Makefile.in: autotools, with that script run as it is
    discount = tree("e", **{"configure.sh": "#! /bin/sh\n. ./configure.inc\n",
                            "Makefile.in": ""})
    assert project.detect_system(discount)[:2] == ("autotools", [])
    assert project.hand_written(discount) == "configure.sh"
    # lzip's own configure takes CC= as an argument and ignores the environment's: as before
    lzip = tree("g", configure="#!/bin/sh\n", **{"Makefile.in": ""})
    assert project.detect_system(lzip)[0] == "autotools" and project.hand_written(lzip) is None
    assert project.hand_written(tree("h", configure=autoconf, **{"configure.sh": ""})) is None


def test_meson_is_told_apart_and_a_release_tarball_with_configure_keeps_autotools(tmp_path):
    def tree(name: str, **members: str) -> Path:
        return _tree(tmp_path / name, **members)

    autoconf = "#! /bin/sh\n# Generated by GNU Autoconf 2.71 for fribidi 1.0.8.\n"
    system, args, note = project.detect_system(tree("m", **{"meson.build": "", "Makefile": ""}))
    assert (system, args) == ("meson", [])
    assert note == "meson (meson.build at the top, no Autoconf configure)"
    # fribidi 1.0.8's tarball has both: its configure, as debhelper would choose
    system, _, note = project.detect_system(tree("f", configure=autoconf, **{"meson.build": ""}))
    assert system == "autotools" and note.endswith(
        "and a meson.build too: a release tarball with a configure builds with it, as "
        "debhelper's own detection chooses; where the package's debian/rules chooses meson, "
        "system = \"meson\" follows it)")
    # a configure Autoconf did not write beside meson.build wraps it
    system, _, note = project.detect_system(tree("w", configure="#!/bin/sh\nmeson setup b\n",
                                                 **{"meson.build": ""}))
    assert system == "meson" and "not Autoconf's, so a wrapper" in note
    both = tree("c", **{"meson.build": "", "CMakeLists.txt": ""})
    assert project.detect_system(both)[:2] == ("cmake", [])


def test_executables_are_the_elf_programs_not_libraries_or_probes(tmp_path):
    (tmp_path / "CMakeFiles").mkdir()
    src = tmp_path / "x.c"
    src.write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", str(src), "-o", str(tmp_path / "prog")], check=True)
    subprocess.run(["gcc", str(src), "-o", str(tmp_path / "CMakeFiles" / "probe")], check=True)
    (tmp_path / "meson-private").mkdir()      # meson's compiler sanity check
    shutil.copy(tmp_path / "CMakeFiles" / "probe", tmp_path / "meson-private" / "sanitycheckc.exe")
    subprocess.run(["gcc", "-shared", "-fPIC", str(src), "-o", str(tmp_path / "libx.so.1")],
                   check=True)
    (tmp_path / "script").write_text("#!/bin/sh\n")
    os.chmod(tmp_path / "script", 0o755)
    assert project.executables(tmp_path) == [tmp_path / "prog"]


def test_sizing_says_why_a_run_cannot_be_sized(tmp_path):
    script = tmp_path / "fails"
    script.write_text("#!/bin/sh\necho 'no such option: -q' >&2\nexit 4\n")
    script.chmod(0o755)
    with pytest.raises(FlagsweepError) as e:
        sizing.size_input(["{binary}", "-q", "{input}"], script, print)
    assert str(e.value) == ("{binary} -q {input} on 1 MB failed: exit status 4; stderr: "
                            "no such option: -q")


@pytest.mark.network
@pytest.mark.integration
def test_new_on_a_real_debian_package_builds_verified_without_edits(tmp_path):
    """bzip2 (a plain Makefile): the file `new` writes builds verified at -O2 as it is."""
    if shutil.which("apt-get") is None or not sources_list.private_sources():
        pytest.skip("no apt-get, or no Debian entries in the system's apt sources")
    # --no-build-deps: the suite installs nothing (as root, new would). --no-patches: Debian's
    # makefile.diff links bzip2 against its own libbz2.so, loaded from outside the build tree
    done = subprocess.run([sys.executable, "-m", "flagsweep", "new", "bz", "--debian", "bzip2",
                           "--no-build-deps", "--no-patches"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "bz/target.toml"
    t = target.load(str(tmp_path / "bz"))
    assert t.spec.build.system == "make" and t.spec.build.binary == "bzip2"
    # The Makefile's large-file define, which `make CFLAGS=...` drops, given back as the
    # shipped bzip2 target does by hand.
    assert t.spec.build.project_flags == ["-D_FILE_OFFSET_BITS=64"]
    assert "trial build 1 at -O2: flags-mismatch" in done.stderr
    assert "trial build 2 at -O2: ok" in done.stderr
    m = matrix.expand(recipe.from_flags(["-O2"], ["gcc"]))
    (b,) = variants.build_all(t, m, variants.Options(out_dir=tmp_path / "check", jobs=2))
    assert b.status == "ok" and b.flags_verified


# An interpreter in miniature: it runs a script of "add N" and "print" lines and stops with a
# syntax error on anything else (a generated corpus, say); "crash" aborts it. With a second
# argument it writes its result to that file instead of stdout.
INTERPRETER = {
    "Makefile": "demo-src: interp.c\n\t$(CC) $(CFLAGS) -o demo-src interp.c\n",
    "interp.c": "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
                "int main(int argc, char **argv) {\n"
                "  FILE *f = fopen(argv[1], \"r\"); if (!f) return 2;\n"
                "  FILE *out = argc > 2 ? fopen(argv[2], \"w\") : stdout;\n"
                "  char line[256]; long total = 0; int n = 0;\n"
                "  while (fgets(line, sizeof line, f)) {\n"
                "    n++;\n"
                "    if (strncmp(line, \"add \", 4) == 0) total += atol(line + 4);\n"
                "    else if (strcmp(line, \"print\\n\") == 0) fprintf(out, \"%ld\\n\", total);\n"
                "    else if (strcmp(line, \"crash\\n\") == 0) abort();\n"
                "    else { fprintf(stderr, \"interp: reading %s\\n\", argv[1]);\n"
                "           fprintf(stderr, \"interp: syntax error at line %d\\n\", n); return 1; }\n"
                "  }\n"
                "  return 0;\n}\n",
}
SCRIPT = "add 2\nadd 40\nprint\n"


@pytest.fixture
def interpreter(tmp_path, monkeypatch) -> debian.DebianRelease:
    return release_of(tmp_path, monkeypatch, INTERPRETER)


@pytest.mark.integration
def test_new_with_input_measures_the_users_file_hashed_and_unsized(tmp_path, interpreter):
    script = tmp_path / "bench.script"
    script.write_text(SCRIPT)
    said: list[str] = []
    folder = tmp_path / "demo"
    path = scaffold.new("demo", "demo-src", folder, said.append,
                        argv=["{binary}", "{input}"], given=script)
    t = target.load(str(path))
    digest = hashlib.sha256(SCRIPT.encode()).hexdigest()
    # Copied next to the target file, declared as a file input with the bytes' sha256.
    assert (folder / "bench.script").read_text() == SCRIPT
    assert t.spec.inputs == target.FileInput(kind="file", path="bench.script", sha256=digest)
    # The trial run read the user's file (a generated corpus is a syntax error to it).
    assert "trial run: `{binary} {input}` on bench.script exited 0" in said
    # Not sized: the file is the workload as it is, and the file says so.
    assert "# measured whole: a given input is not sized, --quick uses it whole too." \
        in path.read_text().splitlines()
    assert any(line.startswith("input: ") and "is not sized" in line for line in said)
    assert not (folder / "trial").exists()


@pytest.mark.integration
def test_new_stops_when_the_run_fails_on_its_input(tmp_path, interpreter):
    said: list[str] = []
    folder = tmp_path / "demo"
    with pytest.raises(FlagsweepError) as e:
        scaffold.new("demo", "demo-src", folder, said.append, argv=["{binary}", "{input}"])
    message = str(e.value)
    # The failing command, how it ended, and the program's own last words.
    assert ("but its run command does not work: `{binary} {input}` on a generated 1 MB corpus "
            "exited 1; the last lines of its stderr:") in message
    assert "  interp: syntax error at line 1" in message
    # The file is written, with the finding where the command is; the trial is kept.
    text = (folder / "target.toml").read_text()
    assert "# FAILED in the trial: `{binary} {input}` on a generated 1 MB corpus exited 1" in text
    assert "#   interp: syntax error at line 1" in text
    assert "(not sized: the run command failed in the trial, see [run])" in text
    assert (folder / "trial").is_dir()


@pytest.mark.integration
def test_new_names_the_signal_that_killed_the_run(tmp_path, interpreter):
    script = tmp_path / "crash.script"
    script.write_text("add 1\ncrash\n")
    with pytest.raises(FlagsweepError, match=r"`\{binary\} \{input\}` on crash.script was killed "
                                             r"by SIGABRT; its stderr was empty"):
        scaffold.new("demo", "demo-src", tmp_path / "demo", lambda line: None,
                     argv=["{binary}", "{input}"], given=script)


@pytest.mark.integration
def test_new_cli_ends_with_the_error_not_the_success_line(tmp_path, interpreter, monkeypatch):
    from click.testing import CliRunner

    from flagsweep.cli import cli

    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(cli, ["new", "demo", "--debian", "demo-src",
                                    "--run", "{binary} {input}"])
    # main() prints a FlagsweepError as the last line and exits 2.
    assert isinstance(done.exception, FlagsweepError)
    assert "interp: syntax error at line 1" in str(done.exception)
    assert "wrote demo/target.toml:" not in done.output and "then `flagsweep run" not in done.output
    assert "trial run: `{binary} {input}` on a generated 1 MB corpus exited 1" in done.output


@pytest.mark.integration
def test_new_checks_the_output_file_when_the_run_writes_one(tmp_path, interpreter):
    script = tmp_path / "bench.script"
    script.write_text(SCRIPT)
    path = scaffold.new("demo", "demo-src", tmp_path / "demo", lambda line: None,
                        argv=["{binary}", "{input}", "{output}"], given=script)
    assert target.load(str(path)).spec.check.of == "output"
    # And stdout when it writes none.
    other = scaffold.new("other", "demo-src", tmp_path / "other", lambda line: None,
                         argv=["{binary}", "{input}"], given=script)
    assert target.load(str(other)).spec.check.of == "stdout"


def test_new_refuses_an_input_that_is_not_a_file(tmp_path, interpreter):
    with pytest.raises(FlagsweepError, match=r"--input .*nope.script: no such file"):
        scaffold.new("demo", "demo-src", tmp_path / "demo", print,
                     argv=["{binary}", "{input}"], given=tmp_path / "nope.script")
    (tmp_path / "target.toml").write_text("")
    with pytest.raises(FlagsweepError, match=r"target.toml is written by `new` itself"):
        scaffold.new("demo", "demo-src", tmp_path / "demo", print, given=tmp_path / "target.toml")


@pytest.mark.integration
def test_a_failed_trial_build_is_shown_with_its_error_lines(tmp_path, monkeypatch):
    broken = {**INTERPRETER, "interp.c": INTERPRETER["interp.c"].replace("return 0;\n}",
                                                                         "return 0\n}")}
    release_of(tmp_path, monkeypatch, broken)
    said: list[str] = []
    with pytest.raises(FlagsweepError) as e:
        scaffold.new("demo", "demo-src", tmp_path / "demo", said.append)
    # The compiler's own error, in the last message and in the file, not just "failed".
    error = [line for line in str(e.value).splitlines() if "error: expected ';'" in line]
    assert error and "interp.c" in error[0]
    assert any("error: expected ';'" in line for line in said)
    assert any(line.startswith("#   ") and "error: expected ';'" in line
               for line in (tmp_path / "demo" / "target.toml").read_text().splitlines())


@pytest.mark.integration
def test_tolerated_flags_the_verified_build_does_not_need_are_left_out(tmp_path, demo_release):
    """A flag tolerated for an earlier trial's build (a shared library's -fvisibility) that no
    compile line of the verified build carries is said to be stale and left out; one still
    carried (-fPIC on sum.o) stays."""
    d = target_file.Draft(name="demo", package="demo-src", release=demo_release, upstream="1.0",
                          urls=[], system="make", binary="tool",
                          tolerated={"-fPIC": "seen", "-fvisibility=hidden": "seen before"})
    d.source = fetch.prepare(scaffold._source(d))
    folder = tmp_path / "demo"
    folder.mkdir()
    said: list[str] = []
    built = trial.trial_builds(d, folder / "target.toml", folder / "trial", 2, said.append)
    assert built is not None and built.status == "ok"
    assert list(d.tolerated) == ["-fPIC"]
    assert ("tolerated_flags: -fvisibility=hidden stale: no compile line of the verified trial "
            "build carried them; left out") in said
    assert 'tolerated_flags = ["-fPIC"]' in target_file.render(d)


def test_the_check_reads_what_the_run_command_writes(demo_release):
    def check_of(argv: list[str]) -> str:
        d = target_file.Draft(name="demo", package="demo-src", release=demo_release,
                              upstream="1.0", urls=[], system="make", binary="demo-src",
                              argv=argv, run_given=True)
        return target.TargetFile.model_validate(tomllib.loads(target_file.render(d))).check.of

    assert check_of(["{binary}", "-o", "{output}", "{input}"]) == "output"
    assert check_of(["{binary}", "--out={output}", "{input}"]) == "output"
    assert check_of(["{binary}", "-c", "{input}"]) == "stdout"


# --- the user's input, as root copies it ---------------------------------------------------

# A project whose build fails at once: `new` copies the input, then stops at the trial build,
# which is all the input's tests need (no compile).
UNBUILDABLE = {"Makefile": "all:\n\t@echo this project does not build >&2; exit 1\n"}


@pytest.fixture
def unbuildable(tmp_path, monkeypatch) -> debian.DebianRelease:
    return release_of(tmp_path, monkeypatch, UNBUILDABLE)


def _secret(path: Path, owner: int) -> Path:
    path.write_text("root:$6$planted-hash:19000:0:99999:7:::\n")
    os.chown(path, owner, owner)
    path.chmod(0o600)
    return path


def _readable_by_others(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and p.stat().st_mode & 0o044]


@pytest.mark.parametrize("owner", [0, 65534], ids=["root's", "another user's"])
def test_an_input_that_is_a_link_to_a_private_file_is_refused(tmp_path, unbuildable, owner):
    # A link anyone could plant where root's `new --input` will look, to a 0600 file.
    secret = _secret(tmp_path / "shadow", owner)
    link = tmp_path / "bench.script"
    link.symlink_to(secret)
    folder = tmp_path / "demo"
    with pytest.raises(FlagsweepError) as e:
        scaffold.new("demo", "demo-src", folder, print, given=link)
    assert str(e.value) == f"--input {link}: a symbolic link, which is not followed; name the " \
                           "file itself"
    assert not (folder / "bench.script").exists()
    assert not folder.exists() or not _readable_by_others(folder)


@pytest.mark.integration
def test_an_input_keeps_its_private_mode_in_the_copy(tmp_path, unbuildable):
    # Named by root itself, another user's 0600 file is copied, and stays theirs to read.
    given = _secret(tmp_path / "bench.script", 65534)
    folder = tmp_path / "demo"
    with pytest.raises(FlagsweepError, match="the trial -O2 build is failed"):
        scaffold.new("demo", "demo-src", folder, print, given=given)
    copy = folder / "bench.script"
    assert copy.read_text() == given.read_text()
    assert copy.stat().st_mode & 0o777 == 0o600


def test_a_sparse_input_past_the_file_limit_is_refused_before_any_copy(tmp_path, unbuildable):
    huge = tmp_path / "holes.img"
    subprocess.run(["truncate", "-s", "3G", str(huge)], check=True)
    folder = tmp_path / "demo"
    with pytest.raises(FlagsweepError) as e:
        scaffold.new("demo", "demo-src", folder, print, given=huge)
    assert str(e.value) == (f"--input {huge}: 3221.2 MB (a sparse file), beyond the limit of "
                            "1024 MB for one file (FLAGSWEEP_UNPACK_FILE_MB)")
    assert not (folder / "holes.img").exists()


@pytest.mark.integration
def test_a_sparse_input_within_the_limit_is_copied_sparsely(tmp_path, unbuildable):
    given = tmp_path / "holes.img"
    with open(given, "wb") as f:
        f.write(b"head")
        f.seek(200_000_000)
        f.write(b"tail")
    folder = tmp_path / "demo"
    with pytest.raises(FlagsweepError, match="the trial -O2 build is failed"):
        scaffold.new("demo", "demo-src", folder, print, given=given)
    copy = folder / "holes.img"
    assert copy.stat().st_size == given.stat().st_size
    assert copy.stat().st_blocks * 512 < 1_000_000         # its holes are holes
    with open(copy, "rb") as f:
        assert f.read(4) == b"head" and f.seek(200_000_000) and f.read() == b"tail"
    inputs = tomllib.loads((folder / "target.toml").read_text())["inputs"]
    assert inputs == {"kind": "file", "path": "holes.img", "sha256": files.sha256_file(given)}


# --- which executable: --binary, and the one picked ----------------------------------------

def _elf(path: Path, size: int) -> Path:
    """An executable as project.executables knows one: the ELF magic and e_type 2."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x7fELF" + bytes(12) + (2).to_bytes(2, "little") + bytes(size))
    path.chmod(0o755)
    return path


@pytest.fixture
def opus_tree(tmp_path) -> Path:
    """opus-tools' build tree: three frontends, none named like the source package."""
    tree = tmp_path / "tree"
    for name, size in [("opusenc", 300), ("opusdec", 200), ("opusinfo", 100)]:
        _elf(tree / "src" / name, size)
    return tree


def _draft(release, binary: str = "opus-tools", given: str = "") -> target_file.Draft:
    return target_file.Draft(name="opus", package="opus-tools", release=release, upstream="0.2",
                             urls=[], system="autotools", binary=binary, binary_given=given)


RELEASE = debian.DebianRelease("opus-tools", "0.2-1", "opus-tools_0.2.orig.tar.gz", "a" * 64)


def test_the_binary_given_is_found_by_name_in_the_build_tree(opus_tree):
    d = _draft(RELEASE, "opusenc", "opusenc")
    assert trial.found_binary(d, opus_tree)
    assert d.binary == "src/opusenc"
    assert d.binary_note == "--binary opusenc: the trial build made it as src/opusenc"


def test_a_binary_given_that_the_build_did_not_make_names_what_it_made(opus_tree):
    d = _draft(RELEASE, "opus", "opus")
    assert not trial.found_binary(d, opus_tree)
    assert d.binary == "opus"       # never swapped for another
    assert d.build_note == ("--binary opus: the trial build made no executable of that name; "
                            "it made: src/opusenc, src/opusdec, src/opusinfo")


def test_without_binary_the_largest_is_picked_and_the_choice_said(opus_tree):
    d = _draft(RELEASE)
    assert trial.found_binary(d, opus_tree)
    assert d.binary == "src/opusenc"
    # (this index names no binary package, so nothing to check against: said)
    assert d.binary_note == ("the trial build made 3 executable(s): src/opusenc, src/opusdec, "
                             "src/opusinfo; this one was picked (--binary NAME to choose another)"
                             "; not checked against Debian's: the Sources index names no binary "
                             "package that may ship a program")


@pytest.mark.integration
def test_new_ends_on_a_binary_given_that_the_trial_build_did_not_make(tmp_path, demo_release):
    folder = tmp_path / "demo"
    with pytest.raises(FlagsweepError) as e:
        scaffold.new("demo", "demo-src", folder, print, binary="nope")
    assert str(e.value) == (f"wrote {folder / 'target.toml'}, but --binary nope: the trial "
                            "build made no executable of that name; it made: tool")
    assert 'binary = "nope"' in (folder / "target.toml").read_text()


@pytest.mark.integration
def test_new_writes_strip_zero_for_an_orig_without_a_top_folder(tmp_path, monkeypatch):
    # ssdeep's orig: its files at its top, which the default strip of 1 would drop (the
    # one-folder case: test_force_redoes_new_without_what_the_earlier_one_wrote)
    release_of(tmp_path, monkeypatch, UNBUILDABLE, top="")
    seen = ("demo-src_1.0.orig.tar.gz: its members do not all sit in one folder: its top holds "
            "1 name (Makefile), so strip_components = 0 unpacks it as it is")
    said: list[str] = []
    with pytest.raises(FlagsweepError, match="the trial -O2 build is failed"):
        scaffold.new("demo", "demo-src", tmp_path / "demo", said.append)
    text = (tmp_path / "demo" / "target.toml").read_text()
    assert f"# {seen}\nstrip_components = 0\n" in text
    assert f"demo-src: {seen}" in said
    assert tomllib.loads(text)["source"]["strip_components"] == 0
    # the tree unpacked with that strip has the Makefile at its top, where it is looked for
    assert any(line.startswith("demo-src: make (a Makefile") for line in said)


@pytest.mark.parametrize("binary", ["/usr/bin/opusenc", "../opusenc", "/"])
def test_a_binary_outside_the_build_tree_is_refused(tmp_path, unbuildable, binary):
    with pytest.raises(FlagsweepError, match=r"--binary .*: expected an executable's name or"):
        scaffold.new("demo", "demo-src", tmp_path / "demo", print, binary=binary)


@pytest.mark.integration
def test_force_redoes_new_without_what_the_earlier_one_wrote(tmp_path, unbuildable):
    folder = tmp_path / "demo"
    (folder / "trial" / "1").mkdir(parents=True)
    (folder / "trial" / "1" / "stale.log").write_text("an earlier attempt\n")
    (folder / "bench.script").write_text("the input the earlier `new` copied\n")
    (folder / "notes.txt").write_text("the user's own\n")
    (folder / "target.toml").write_text('[inputs]\nkind = "file"\npath = "bench.script"\n')
    said: list[str] = []
    with pytest.raises(FlagsweepError, match="the trial -O2 build is failed"):
        scaffold.new("demo", "demo-src", folder, said.append, force=True)
    assert not (folder / "bench.script").exists()
    assert not (folder / "trial" / "1" / "stale.log").exists()
    assert (folder / "notes.txt").read_text() == "the user's own\n"
    text = (folder / "target.toml").read_text()
    assert 'kind = "corpus"' in text
    assert ("# demo-src_1.0.orig.tar.gz: its members all sit in one folder, demo-1.0/, so "
            "strip_components = 1 unpacks it without that folder\nstrip_components = 1\n") in text
    assert f"--force: removed {folder / 'bench.script'}" in said


def test_a_library_from_a_debian_package_is_written_as_a_commented_dependency():
    """Uncommented, the block loads as the target's [[dependency]]: the codec opusenc loads
    from the system, built with each variant's flags."""
    d = _draft(RELEASE, "opusenc")
    opus = debian.DebianRelease("opus", "1.3.1-3", "opus_1.3.1.orig.tar.gz", "b" * 64)
    d.dependencies.append(("libopus.so.0", debian.DebianSource("opus", "1.3.1-3"), opus))
    text = target_file.render(d)
    assert "# opusenc loads libopus.so.0, from Debian's source package opus 1.3.1-3" in text
    uncommented = text.replace("# [[dependency]]", "[[dependency]]")
    for key in ("name", "version", "system", "source", "configure_args"):
        uncommented = uncommented.replace(f"\n# {key} = ", f"\n{key} = ")
    (dep,) = target.TargetFile.model_validate(tomllib.loads(uncommented)).dependency
    assert (dep.name, dep.version, dep.source.sha256, dep.configure_args) == \
        ("opus", "1.3.1", "b" * 64, ["--disable-shared"])


@pytest.mark.skipif(not Path("/var/lib/dpkg/status").is_file(), reason="not a Debian system")
def test_the_source_package_of_an_installed_file_is_dpkgs_answer():
    libc = next(Path(p) for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/libc.so.6",
                                  "/lib/aarch64-linux-gnu/libc.so.6") if Path(p).exists())
    src = debian.source_of(str(libc))
    assert src is not None and src.package == "glibc"
    assert debian.source_of("/no/such/file") is None
    assert debian.source_of("-S") is None          # never an option
