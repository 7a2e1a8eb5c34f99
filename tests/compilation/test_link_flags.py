"""A variant's link flags (a layout's shuffle) reaching the link of a make project that links
without CFLAGS: through LDFLAGS, and where the link reads neither, through the variable its
rule names, which the fix says how to set."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flagsweep.compilation import layout, variants
from flagsweep.experiment import matrix, recipe, target

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("ld.lld") is None, reason="LLD is not installed")]

# Several functions, so that shuffled layouts place them differently.
SOURCES = {
    "main.c": "int f1(int), f2(int), f3(int), f4(int);\n"
              "int main(void) { return (f1(1) + f2(2) + f3(3) + f4(4)) & 1; }\n",
    "fs.c": "".join(f"int f{i}(int x) {{ int s = 0; for (int j = 0; j < x * {i}; j++) "
                    f"s += j ^ {i}; return s; }}\n" for i in range(1, 5)),
}
COMPILE = "%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n"


def _project(folder: Path, makefile: str, make_args: list[str] | None = None) -> target.Target:
    src = folder / "src"
    src.mkdir(parents=True)
    for name, text in {**SOURCES, "Makefile": makefile}.items():
        (src / name).write_text(text)
    args = f"make_args = {make_args!r}\n".replace("'", '"') if make_args else ""
    (folder / "target.toml").write_text(
        'summary = "links without CFLAGS"\nversion = "1"\n[source]\npath = "src"\n'
        f'[build]\nsystem = "make"\nbinary = "prog"\n{args}'
        '[inputs]\nkind = "file"\npath = "x"\n[run]\nargv = ["{binary}"]\n'
        '[check]\nmethod = "exact"\n')
    return target.load(str(folder))


def _layouts(t: target.Target, out: Path, k: int = 2) -> list[variants.VariantBuild]:
    m = layout.replicate(matrix.expand(recipe.from_flags(["-O2"], ["gcc"])), k, "gcc-O2-aa")
    return variants.build_all(t, m, variants.Options(out_dir=out, jobs=2))


def test_layouts_of_a_make_project_linking_without_cflags_reach_its_link(tmp_path):
    """`$(CC) -o prog $(OBJS) $(LDFLAGS)`: the layout's link flags come in LDFLAGS."""
    t = _project(tmp_path / "p", "prog: main.o fs.o\n\t$(CC) -o prog main.o fs.o $(LDFLAGS)\n"
                 + COMPILE)
    builds = _layouts(t, tmp_path / "run")
    assert [b.status for b in builds] == ["ok"] * 4, [b.detail for b in builds]
    # Each seed its own order of the same functions.
    assert len({b.functions_sha256 for b in builds}) == 1
    assert len({b.code_sha256 for b in builds}) > 1


def test_a_link_reading_neither_names_the_variable_to_set_and_that_fix_works(tmp_path):
    makefile = ("LINKOPTS = -lm\nOBJS = main.o fs.o\n"
                "prog: $(OBJS)\n\t$(CC) -o prog $(OBJS) $(LINKOPTS)\n" + COMPILE)
    t = _project(tmp_path / "p", makefile)
    (b, *_) = _layouts(t, tmp_path / "run", k=1)
    assert b.status == "flags-mismatch"
    assert b.detail.startswith("the link that wrote prog lacks the variant's link flags "
                               "-fuse-ld=lld -Wl,--shuffle-sections=*=1")
    assert b.fixes[-1] == (
        "the link that writes prog reads none of CFLAGS, CXXFLAGS, LDFLAGS, where flagsweep "
        "passes the variant's link flags (-fuse-ld=lld -Wl,--shuffle-sections=*=1) (its rule, "
        f"Makefile:3, reads $(OBJS) $(LINKOPTS)): give them to the variable it reads link "
        f"options from, in {t.path} under [build]: make_args = "
        '["LINKOPTS=$(FLAGSWEEP_LDFLAGS)"] (keep what LINKOPTS held after it, e.g. -lm)')
    # Done as it says, keeping the library the variable held: every layout verifies, and a
    # variant without link flags builds as before.
    fixed = _project(tmp_path / "q", makefile, ["LINKOPTS=$(FLAGSWEEP_LDFLAGS) -lm"])
    assert [b.status for b in _layouts(fixed, tmp_path / "run2", k=1)] == ["ok", "ok"]
    m = matrix.expand(recipe.from_flags(["-O2"], ["gcc"]))
    (plain,) = variants.build_all(fixed, m, variants.Options(out_dir=tmp_path / "run3", jobs=2))
    assert plain.status == "ok"
