"""`flagsweep new` builds the measured binary alone when that works (jobs/goal.py): the forms
each build system takes, the whole build kept when none works (trial builds planted), and a
recursive make tree's goal built for real."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from flagsweep import model
from flagsweep.compilation import debian, variants
from flagsweep.experiment import matrix, recipe, target
from flagsweep.jobs import goal, scaffold
from flagsweep.jobs.project import make_goal
from flagsweep.jobs.target_file import Draft

RELEASE = debian.DebianRelease("demo-src", "1.0-2", "demo-src_1.0.orig.tar.gz", "0" * 64)


def _draft(system: str, binary: str, make_args: list[str] = ()) -> Draft:
    return Draft(name="demo", package="demo-src", release=RELEASE, upstream="1.0", urls=[],
                 system=system, binary=binary, make_args=list(make_args))


def test_each_build_system_is_asked_for_the_binary_in_its_own_forms():
    assert goal.candidates(_draft("cmake", "cjpeg")) == [("cjpeg", None)]
    assert goal.candidates(_draft("cmake", "bin/cjpeg")) == [("bin/cjpeg", None), ("cjpeg", None)]
    assert goal.candidates(_draft("autotools", "src/lzop")) == [("src/lzop", None),
                                                                ("lzop", "src")]
    # the program's own rule already chosen (zstd's), or a name make cannot take as a goal
    assert goal.candidates(_draft("make", "zstd", ["zstd"])) == []
    assert goal.candidates(_draft("make", "-rf")) == []


def _build(status: str, compiles: int, links: int, detail: str = "") -> variants.VariantBuild:
    cell = matrix.expand(recipe.from_flags(["-O2"], ["gcc"])).variants[0]
    return variants.VariantBuild(
        variant=cell, status=status, log=Path("build.log"), detail=detail,
        binary=Path("tree/src/tool") if status == "ok" else None, functions_sha256="f00d",
        audit=model.AuditSummary(verified=status == "ok", compiles=compiles, links=links))


@pytest.fixture
def tried(tmp_path, monkeypatch):
    """goal.alone with the trial builds planted: each form's build in turn, what was asked
    kept (the target file each trial was given)."""
    asked: list[tuple[str | None, str | None]] = []

    def plant(*builds):
        queue = list(builds)

        def o2_build(t: target.Target, out: Path, jobs: int) -> variants.VariantBuild:
            asked.append((t.spec.build.goal, t.spec.build.goal_dir))
            return queue.pop(0)
        monkeypatch.setattr(goal, "o2_build", o2_build)
        return asked
    return plant


NO_RULE = ("build exited 2; build.log:\nmake: *** No rule to make target '../lib/libsum.a', "
           "needed by 'tool'.  Stop.")


def test_the_whole_build_stays_when_no_form_builds_it_with_what_each_said(tmp_path, tried):
    asked = tried(_build("failed", 0, 0, "build exited 2; build.log:\nmake: *** No rule to "
                                         "make target 'src/tool'.  Stop."),
                  _build("failed", 1, 0, NO_RULE))
    d, whole, said = _draft("autotools", "src/tool"), _build("ok", 40, 3), []
    assert goal.alone(d, tmp_path / "target.toml", tmp_path, 1, whole, said.append) is whole
    assert asked == [("src/tool", None), ("tool", "src")] and d.goal is None
    assert d.goal_note.startswith("the whole build (40 compile lines): src/tool could not be "
                                  "built alone: `make src/tool` failed: make: *** No rule")
    assert "`make -C src tool` failed: make: *** No rule to make target '../lib/libsum.a'" \
        in d.goal_note


def test_the_first_form_that_builds_is_kept_with_its_compile_lines(tmp_path, tried):
    tried(_build("ok", 12, 1))
    d, said = _draft("cmake", "cjpeg"), []
    b = goal.alone(d, tmp_path / "target.toml", tmp_path, 1, _build("ok", 279, 18), said.append)
    assert b.audit.compiles == 12 and (d.goal, d.goal_dir) == ("cjpeg", None)
    assert d.goal_note == ("built alone: `cmake --build TREE --target cjpeg` made cjpeg from 12 "
                           "of the whole build's 279 compile lines (the same functions as the "
                           "whole build's)")
    assert 'goal = "cjpeg"' in scaffold.render(d)


def test_a_build_that_links_only_the_binary_is_not_tried_again(tmp_path, tried):
    asked = tried()
    whole = _build("ok", 2, 1)
    assert goal.alone(_draft("make", "tool"), tmp_path / "t.toml", tmp_path, 1, whole,
                      print) is whole and asked == []


def test_a_library_compiled_and_linked_in_one_go_counts_as_more_to_leave_out(tmp_path, tried):
    """xxhash's `make` links xxhsum, and libxxhash.so straight from xxhash.c: one link, and
    one compile that links."""
    asked = tried(_build("ok", 6, 1))
    whole = _build("ok", 7, 1)
    whole.log = tmp_path / "whole" / "build.log"
    whole.log.parent.mkdir()
    (whole.log.parent / "compile.jsonl").write_text(
        '{"argv": ["cc", "-O2", "xxhash.c", "-shared", "-o", "libxxhash.so.0.8.1"], '
        '"cwd": "/t"}\n{"argv": ["cc", "-O2", "-c", "xxhsum.c"], "cwd": "/t"}\n')
    d = _draft("make", "xxhsum")
    goal.alone(d, tmp_path / "t.toml", tmp_path, 1, whole, print)
    assert asked == [("xxhsum", None)] and d.goal == "xxhsum"


# A recursive tree: the top Makefile descends into lib/ and src/; src/ makes two programs, and
# its Makefile has a rule for the library it links, so `make -C src tool` builds tool alone.
RECURSIVE = {
    "Makefile": "all:\n\t$(MAKE) -C lib\n\t$(MAKE) -C src\n",
    "lib/Makefile": "libsum.a: sum.o\n\tar rcs libsum.a sum.o\n"
                    "sum.o: sum.c\n\t$(CC) $(CFLAGS) -c sum.c -o sum.o\n",
    "lib/sum.c": "int sum(int a, int b) { return a + b; }\n",
    "src/Makefile": "all: tool other\n"
                    "tool: main.o ../lib/libsum.a\n\t$(CC) $(CFLAGS) -o tool main.o ../lib/libsum.a\n"
                    "other: other.o\n\t$(CC) $(CFLAGS) -o other other.o\n"
                    "../lib/libsum.a:\n\t$(MAKE) -C ../lib libsum.a\n"
                    "%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n",
    "src/main.c": "#include <stdio.h>\nint sum(int, int);\n"
                  "int main(void) { printf(\"%d\\n\", sum(2, 40)); return 0; }\n",
    "src/other.c": "int main(void) { return 0; }\n",
}


@pytest.mark.integration
def test_a_recursive_trees_binary_is_built_alone_in_its_folder_and_verified(tmp_path):
    for name, text in RECURSIVE.items():
        (tmp_path / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / name).write_text(text)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "target.toml").write_text(
        'summary = "a recursive tree"\nversion = "1.0"\n[source]\npath = "../src"\n'
        '[build]\nsystem = "make"\nbinary = "src/tool"\ngoal = "tool"\ngoal_dir = "src"\n'
        '[inputs]\nkind = "corpus"\nmegabytes = 1\nquick_megabytes = 1\n'
        '[run]\nargv = ["{binary}"]\n[check]\nmethod = "exact"\n')
    t = target.load(str(tmp_path / "t"))
    m = matrix.expand(recipe.from_flags(["-O2"], ["gcc"]))
    (b,) = variants.build_all(t, m, variants.Options(out_dir=tmp_path / "out", jobs=2))
    # tool and the library it links, through src/Makefile's own rule; not `other`
    assert b.status == "ok" and b.flags_verified and b.audit.compiles == 2
    tree = tmp_path / "out" / "builds" / "gcc-O2" / "tree"
    assert (tree / "src" / "tool").is_file() and not (tree / "src" / "other").exists()


def test_a_hand_written_configures_makefile_gives_the_binarys_own_rule(tmp_path):
    """discount: configure.sh writes the Makefile into the trial's tree, whose `make` of
    everything links a tool before the library it needs at -j2; its `markdown` rule (the
    --binary's name, not the package's) builds alone, and the file says which script."""
    d = _draft("autotools", "markdown")
    d.configure = "configure.sh"
    (tmp_path / "Makefile").write_text("markdown: main.o $(COMMON) $(MKDLIB)\n\t$(LINK) -o x\n")
    assert make_goal(d, tmp_path) == "markdown"
    assert make_goal(_draft("autotools", "markdown"), tmp_path) is None   # Autoconf's: as before
    build = target.TargetFile.model_validate(tomllib.loads(scaffold.render(d))).build
    assert build.configure == "configure.sh"
