"""Where a make variant's link flags go: make's environment when a makefile appends to LDFLAGS
for one target (xxhash's `$(LIBXXH): LDFLAGS += -shared`, which make's command line would
override), its command line otherwise (bzip2's Makefile sets `LDFLAGS =` itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagsweep.compilation import steps, variants
from flagsweep.experiment import matrix, recipe, target

FLAGS = "-O2 -Wl,-z,relro"     # Debian's: a link flag the audit looks for on the binary's link
SOURCES = {"main.c": "int twice(int);\nint main(int argc, char **argv) "
                     "{ (void)argv; return twice(argc) == 2 ? 0 : 1; }\n",
           "twice.c": "int twice(int x) { return 2 * x; }\n",
           "lib.c": "int half(int x) { return x / 2; }\n"}
COMPILE = "%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n"
# xxhash's Makefile in small: the default goal links a shared library as well as the program.
TARGET_APPEND = ("all: libdemo.so prog\n"
                 "prog: main.o twice.o\n\t$(CC) $(CFLAGS) main.o twice.o $(LDFLAGS) -o prog\n"
                 "libdemo.so: LDFLAGS += -shared\n"
                 "libdemo.so: lib.o\n\t$(CC) $(CFLAGS) lib.o $(LDFLAGS) -o $@\n" + COMPILE)
# bzip2's: LDFLAGS set outright, which only the command line overrides.
HARD_SET = ("LDFLAGS =\n"
            "prog: main.o twice.o\n\t$(CC) $(CFLAGS) $(LDFLAGS) -o prog main.o twice.o\n"
            + COMPILE)


def _built(folder: Path, makefile: str) -> variants.VariantBuild:
    src = folder / "src"
    src.mkdir(parents=True)
    for name, text in {**SOURCES, "Makefile": makefile}.items():
        (src / name).write_text(text)
    (folder / "target.toml").write_text(
        'summary = "link flags"\nversion = "1"\n[source]\npath = "src"\n'
        '[build]\nsystem = "make"\nbinary = "prog"\n'
        '[inputs]\nkind = "file"\npath = "x"\n[run]\nargv = ["{binary}"]\n'
        '[check]\nmethod = "exact"\n')
    m = matrix.expand(recipe.from_flags([FLAGS], ["gcc"]))
    (b,) = variants.build_all(target.load(str(folder)), m,
                              variants.Options(out_dir=folder / "run", jobs=2))
    return b


@pytest.mark.integration
def test_a_target_specific_append_keeps_its_library_and_the_link_flags_reach_the_program(
        tmp_path):
    b = _built(tmp_path, TARGET_APPEND)
    assert b.status == "ok" and b.flags_verified, b.detail
    log = (b.log.parent / "compile.jsonl").read_text()
    # the library was linked as one (-shared appended to the environment's LDFLAGS), and the
    # program's link carries the variant's link flag
    assert '"lib.o", "-Wl,-z,relro", "-shared"' in log
    assert '"twice.o", "-Wl,-z,relro", "-o", "prog"' in log


@pytest.mark.integration
def test_a_makefile_setting_ldflags_itself_still_gets_them_on_the_command_line(tmp_path):
    b = _built(tmp_path, HARD_SET)
    assert b.status == "ok" and b.flags_verified, b.detail
    assert '"-Wl,-z,relro", "-o", "prog"' in (b.log.parent / "compile.jsonl").read_text()


@pytest.mark.parametrize("line, found", [
    ("$(LIBXXH): LDFLAGS += -shared", True),
    ("%.so: override LDFLAGS += -shared", True),
    ("zstd : LDFLAGS += $(THREAD_LD)", True),
    ("LDFLAGS += -lm", False),                    # for every target: the command line's rule
    ("LDFLAGS := -lm", False),
    ("LDFLAGS ::= -lm", False),
    ("usan: LDFLAGS = $(CFLAGS)", False),         # replaced, not appended to
    ("prog: MYLDFLAGS += -lm", False),
    ("\tLDFLAGS=-x $(MAKE) test", False),         # a recipe's shell line
    ("# lib.so: LDFLAGS += -shared", False),
])
def test_which_makefile_lines_append_to_ldflags_for_a_target(tmp_path, line, found):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "Makefile").write_text(f"all:\n\ttrue\n{line}\n")
    assert steps.target_append(tmp_path) == ("lib/Makefile:3" if found else None)
