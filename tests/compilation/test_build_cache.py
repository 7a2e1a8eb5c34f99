"""The build cache: a verified build reused when nothing that decides its binary changed, and
built again when anything did (tests/compilation/test_build.py covers ccache below it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_target import write_tiny_target

from flagsweep.caches import BUILDS
from flagsweep.compilation import cache, variants
from flagsweep.experiment import matrix, recipe, target

pytestmark = pytest.mark.integration


def _build(t: target.Target, flags: list[str], out: Path,
           **opts) -> dict[str, variants.VariantBuild]:
    # Unfiltered: a flag the compiler refuses is the simplest build that fails.
    m = matrix.expand(recipe.from_flags(flags, ["gcc"]), filter_cpu=False)
    return {b.variant.id: b for b in variants.build_all(t, m, variants.Options(out_dir=out, jobs=2,
                                                                               **opts))}


@pytest.fixture
def tiny(tmp_path) -> target.Target:
    return target.load(str(write_tiny_target(tmp_path / "tiny")))


def test_a_second_build_of_the_same_inputs_is_reused_not_built(tiny, tmp_path, monkeypatch):
    # A cache of its own: the session's may hold these builds already, from whichever test
    # built tiny with the same flags first (the order differs when the suite runs split).
    monkeypatch.setenv("FLAGSWEEP_CACHE", str(tmp_path / "cache"))
    first = _build(tiny, ["-O2", "-O1 -fno-inline"], tmp_path / "a")
    assert not any(b.reused for b in first.values())
    said = []
    m = matrix.expand(recipe.from_flags(["-O2", "-O1 -fno-inline"], ["gcc"]))
    second = {b.variant.id: b for b in variants.build_all(
        tiny, m, variants.Options(out_dir=tmp_path / "b", jobs=2),
        lambda vid, status, *_: said.append((vid, status)))}
    assert said == [("gcc-O2", "reused"), ("gcc-O1-fno-inline", "reused")]
    for vid, b in second.items():
        assert b.reused and b.status == "ok" and b.flags_verified
        assert b.code_sha256 == first[vid].code_sha256 and b.audit == first[vid].audit
        assert b.binary.read_bytes() == first[vid].binary.read_bytes()
        assert b.binary == tmp_path / "b" / "builds" / vid / "tree" / "tiny"
        assert b.log.read_text().startswith("# reused from the build cache, ")
    # Nothing was configured or compiled: no superbuild, and the contract says reused.
    assert not (tmp_path / "b" / "superbuild").exists()
    docs = json.loads((variants.write_summary(tmp_path / "b", tiny, recipe.from_flags(["-O2"], ["gcc"]),
                                              m, list(second.values()))).read_text())
    assert [d["build"]["reused"] for d in docs["variants"]] == [True, True]
    # --rebuild builds again, and the same code comes out.
    third = _build(tiny, ["-O2"], tmp_path / "c", rebuild=True)
    assert not third["gcc-O2"].reused and third["gcc-O2"].code_sha256 == first["gcc-O2"].code_sha256


def test_any_change_to_what_decides_the_binary_is_a_miss(tiny, tmp_path):
    _build(tiny, ["-O2"], tmp_path / "a")
    assert not _build(tiny, ["-O2 -fno-inline"], tmp_path / "flags")["gcc-O2-fno-inline"].reused
    # The target file (here a comment only: the key takes its bytes, not a guess at meaning).
    tiny.path.write_text(tiny.path.read_text() + "\n# changed\n")
    edited = target.load(str(tiny.path))
    assert not _build(edited, ["-O2"], tmp_path / "target")["gcc-O2"].reused
    assert _build(edited, ["-O2"], tmp_path / "again")["gcc-O2"].reused
    # A --source-dir copy: the same bytes are the same source, one patched file is another.
    copy = tmp_path / "copy"
    shutil.copytree(edited.local_source(), copy)
    assert _build(edited, ["-O2"], tmp_path / "copy-same", source_dir=copy)["gcc-O2"].reused
    main_c = copy / "main.c"
    main_c.write_text(main_c.read_text() + "\n/* patched */\n")
    assert not _build(edited, ["-O2"], tmp_path / "copy-patched", source_dir=copy)["gcc-O2"].reused


def test_a_damaged_entry_is_built_again_and_a_failed_build_is_never_kept(tiny, tmp_path,
                                                                        isolated_cache):
    code = _build(tiny, ["-O2 -fno-tree-pre"], tmp_path / "a")["gcc-O2-fno-tree-pre"].code_sha256
    (entry,) = [p for p in BUILDS.folder().iterdir()
                if json.loads((p / "entry.json").read_text())["code_sha256"] == code]
    (entry / "binary").write_bytes(b"not the program")
    again = _build(tiny, ["-O2 -fno-tree-pre"], tmp_path / "b")["gcc-O2-fno-tree-pre"]
    assert not again.reused and again.status == "ok"
    before = BUILDS.usage()[0]
    bad = _build(tiny, ["-O2 -fno-such-flag-exists"], tmp_path / "c")
    assert bad["gcc-O2-fno-such-flag-exists"].status == "failed"
    assert BUILDS.usage()[0] == before


def test_the_cache_is_bounded_least_recently_used_first(tiny, tmp_path, monkeypatch):
    root = tmp_path / "own-cache"
    for i, flags in enumerate(["-O1", "-O2", "-O3"]):
        _build(tiny, [flags], tmp_path / f"b{i}", cache=root)
    entries, size = BUILDS.usage(root)
    assert entries == 3
    oldest = min(BUILDS.folder(root).iterdir(), key=lambda p: p.stat().st_mtime)
    gone = BUILDS.trim(root, limit_mb=size * 0.7 / 1e6)
    assert gone == 1 and not oldest.exists() and BUILDS.usage(root)[0] == 2


def test_cache_command_says_the_size_and_clears(tmp_path, monkeypatch):
    # A cache of its own: --clear empties every cache, the session's launcher and ccache too.
    own = tmp_path / "cache"
    monkeypatch.setenv("FLAGSWEEP_CACHE", str(own))
    (own / "builds" / "k").mkdir(parents=True)
    (own / "builds" / "k" / "binary").write_bytes(b"x" * 300_000)
    run = [sys.executable, "-m", "flagsweep", "cache"]
    shown = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    (row,) = [line for line in shown.splitlines() if line.startswith("builds ")]
    assert row.split()[1:5] == ["1", "builds", "0.3", "MB"]
    assert row.endswith(str(own / "builds"))
    cleared = subprocess.run(run + ["--clear"], capture_output=True, text=True, check=True).stdout
    assert f"builds cache {own / 'builds'}: 1 builds removed" in cleared.splitlines()
    assert BUILDS.usage() == (0, 0)


def _make_target(folder: Path) -> target.Target:
    """A plain-make program, `prog`, whose source tree is given with --source-dir."""
    folder.mkdir(parents=True)
    (folder / "target.toml").write_text(
        'summary = "linked sources"\nversion = "1"\n[source]\npath = "unused"\n'
        '[build]\nsystem = "make"\nbinary = "prog"\n'
        '[inputs]\nkind = "file"\npath = "x"\n[run]\nargv = ["{binary}"]\n[check]\nmethod = "exact"\n')
    return target.load(str(folder))


MAKEFILE = "prog: a.c part/b.c\n\t$(CC) $(CFLAGS) -o prog a.c part/b.c\n"


@pytest.mark.parametrize("linked", ["file", "folder"])
def test_a_source_behind_a_symlink_is_in_the_key(tmp_path, linked):
    """b.c reached through a link (to a file, or to its folder) outside the --source-dir tree:
    when what it points at changes, the build is done again and the new program comes out."""
    t = _make_target(tmp_path / "target")
    tree, elsewhere = tmp_path / "tree", tmp_path / "elsewhere"
    tree.mkdir()
    elsewhere.mkdir()
    (tree / "Makefile").write_text(MAKEFILE)
    (tree / "a.c").write_text('#include <stdio.h>\nint b(void);\n'
                              'int main(void) { printf("%d\\n", b()); return 0; }\n')
    (elsewhere / "b.c").write_text("int b(void) { return 1; }\n")
    if linked == "file":
        (tree / "part").mkdir()
        (tree / "part" / "b.c").symlink_to(elsewhere / "b.c")
    else:
        (tree / "part").symlink_to(elsewhere, target_is_directory=True)

    def build(out: str) -> variants.VariantBuild:
        m = matrix.expand(recipe.from_flags(["-O2"], ["gcc"]))
        (b,) = variants.build_all(t, m, variants.Options(out_dir=tmp_path / out, jobs=2,
                                                         source_dir=tree))
        assert b.status == "ok", b.detail
        return b

    first = build("a")
    assert subprocess.run([first.binary], capture_output=True, text=True).stdout == "1\n"
    assert build("same").reused       # nothing changed: reused
    (elsewhere / "b.c").write_text("int b(void) { return 2; }\n")
    second = build("b")
    assert not second.reused
    assert subprocess.run([second.binary], capture_output=True, text=True).stdout == "2\n"


def test_a_link_that_leads_back_up_the_tree_is_keyed_by_its_text(tmp_path):
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "up").symlink_to(tree, target_is_directory=True)
    (tree / "gone.c").symlink_to(tmp_path / "nowhere.c")
    first = cache.source_id(None, tree)
    (tree / "gone.c").unlink()
    (tree / "gone.c").symlink_to(tmp_path / "elsewhere.c")
    assert cache.source_id(None, tree) != first


@pytest.mark.parametrize("source, suffix", [
    ("", ""), ("strip_components = 1\n", ""), ("strip_components = 0\n", ":strip0")])
def test_a_tarball_unpacked_otherwise_is_another_source_for_the_caches(tmp_path, source, suffix):
    # the project's own build is cached under a key without the target file: a tree unpacked
    # with another strip (or autoreconf'd) must not take the other tree's; a plain one keeps
    # the key it always had
    (tmp_path / "target.toml").write_text(
        f'summary = "s"\nversion = "1.0"\n[source]\nurls = ["file:///nowhere.tar.gz"]\n'
        f'sha256 = "{"a" * 64}"\n{source}[build]\nsystem = "make"\nbinary = "prog"\n'
        '[inputs]\nkind = "corpus"\nmegabytes = 1\nquick_megabytes = 1\n[run]\n'
        'argv = ["{binary}"]\n[check]\nmethod = "exact"\n')
    t = target.load(str(tmp_path))
    assert variants._source_id(t, tmp_path, variants.Options(out_dir=tmp_path)) == \
        "a" * 64 + suffix
