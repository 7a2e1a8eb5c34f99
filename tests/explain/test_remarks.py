"""The compiler's vectorisation remarks per function (flagsweep.explain.remarks), from real gcc
and clang rebuilds of recorded compile commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flagsweep.explain import remarks
from flagsweep.report import explanation as view
from flagsweep import model

# saxpy's loop vectorises at -O3 (and at -O2 in gcc 12); chase's loop cannot (control flow and
# an indirect load); scale's loop is inlined into twice() and vectorised there.
SOURCE = """
void saxpy(float *restrict y, const float *restrict x, float a, int n)
{ for (int i = 0; i < n; i++) y[i] += a * x[i]; }
int chase(const int *p, int n)
{ int s = 0; for (int i = 0; i < n; i++) if (p[i] > 3) s += p[p[i]]; return s; }
static void scale(float *restrict y, int n) { for (int i = 0; i < n; i++) y[i] *= 3.0f; }
void twice(float *restrict y, int n) { scale(y, n); scale(y + n, n); }
"""


def _project(tmp_path: Path, compiler: str, flags: list[str]) -> Path:
    """A source in a 'tree' and the compile log the wrapper would have written for it."""
    tree = tmp_path / "run" / "builds" / "v" / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "k.c").write_text(SOURCE)
    (tree / "src" / "other.txt").write_text("not compiled")
    argv = [compiler, *flags, "-MD", "-MF", ".deps/k.Tpo", "-Wp,-MD,.deps/k.d", "-c", "k.c",
            "-o", "k.o"]
    log = tree.parent / "compile.jsonl"
    lines = [{"argv": argv, "cwd": str(tree / "src"), "exit": 0},
             {"argv": [compiler, "-o", "prog", "k.o"], "cwd": str(tree / "src"), "exit": 0},
             {"argv": [compiler, "-c", "broken.c"], "cwd": str(tree / "src"), "exit": 1}]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return log


def test_a_command_is_rewritten_to_a_scratch_object_without_dependency_files():
    argv = ["gcc", "-O2", "-MD", "-MF", "d.Tpo", "-MT", "k.o", "-Wp,-MD,.deps/k.d", "-MFx.d",
            "-c", "k.c", "-o", "k.o", "-save-temps=obj"]
    got = remarks.rewritten(argv, Path("/s/0/o.o"), "gcc")
    assert got == ["gcc", "-O2", "-c", "k.c", "-o", "/s/0/o.o", "-fsave-optimization-record"]
    clang = remarks.rewritten(["clang", "-O3", "-c", "k.c", "-ok.o"], Path("/s/o.o"), "clang")
    assert clang[-1] == "-foptimization-record-passes=loop-vectorize|slp-vectorizer"
    assert "-ok.o" not in clang and clang[clang.index("-o") + 1] == "/s/o.o"


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_real_remarks_name_the_vectorised_loop_the_missed_one_and_the_inlined_one(
        tmp_path, compiler):
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not installed")
    log = _project(tmp_path, compiler, ["-O3"])
    before = sorted(p.name for p in (log.parent / "tree" / "src").iterdir())
    found = remarks.collect(log, cache=tmp_path / "cache")
    assert found.status == "ok", found.why
    assert found.commands == 1 and found.compiler == compiler
    saxpy = found.of("saxpy")
    assert saxpy.loops >= 1 and any("k.c:3:" in m for m in saxpy.vectorized)
    assert saxpy.widest == (16 if compiler == "gcc" else None)   # x86-64's SSE2; clang: lanes
    # The inlined helper's loop is vectorised where it was inlined, in the caller.
    assert found.of("twice").loops >= 2
    chase = found.of("chase")
    assert chase.loops == 0 and chase.missed_total >= 1
    assert any("k.c:5:" in m for m in chase.missed)
    # The variant's tree is left as it was: no object, no dependency file, no record there.
    assert sorted(p.name for p in (log.parent / "tree" / "src").iterdir()) == before
    # Kept in the cache: the second time reads it back without compiling.
    (log.parent / "tree" / "src" / "k.c").unlink()
    again = remarks.collect(log, cache=tmp_path / "cache")
    assert again.of("saxpy") == saxpy and again.compiler == compiler


def test_gcc_for_x86_64_v3_says_its_vectors_are_twice_as_wide(tmp_path):
    found = remarks.collect(_project(tmp_path, "gcc", ["-O3", "-march=x86-64-v3"]),
                            cache=tmp_path / "cache")
    assert found.of("saxpy").widest == 32


def test_gcc_at_O1_does_not_vectorise_and_says_nothing_of_it(tmp_path):
    found = remarks.collect(_project(tmp_path, "gcc", ["-O1"]), cache=tmp_path / "cache")
    assert found.status == "ok"
    assert found.of("saxpy").dump() == {"vectorized": [], "missed": [], "missed_total": 0, "loops": 0,
                                 "blocks": 0, "widest": None}


def test_a_reused_build_compiles_in_the_configured_tree_it_was_copied_from(tmp_path):
    log = _project(tmp_path, "gcc", ["-O3"])
    template = tmp_path / "configured" / "gcc-abc"
    shutil.copytree(log.parent / "tree", template)
    shutil.rmtree(log.parent / "tree")              # the earlier run's folder is gone
    found = remarks.collect(log, [template], cache=tmp_path / "cache")
    assert found.status == "ok" and found.of("saxpy").loops >= 1
    gone = remarks.collect(log, [], cache=tmp_path / "cache2")
    assert gone.status == "failed" and "is gone" in gone.why and "--rebuild" in gone.why


def test_no_log_lto_and_a_failing_compile_are_said_not_hidden(tmp_path):
    missing = remarks.collect(tmp_path / "nothing" / "compile.jsonl", cache=tmp_path / "c")
    assert missing.status == "failed" and "compile.jsonl is missing" in missing.why
    lto = remarks.collect(_project(tmp_path / "a", "gcc", ["-O2", "-flto"]), cache=tmp_path / "c")
    assert lto.status == "skipped" and "link time" in lto.why and lto.of("saxpy") is None
    broken = _project(tmp_path / "b", "gcc", ["-O2", "-DX=("])
    (broken.parent / "tree" / "src" / "k.c").write_text("int f(void) { return X; }\n")
    failed = remarks.collect(broken, cache=tmp_path / "c")
    assert failed.status == "failed" and "remarks rebuild failed" in failed.why


def test_a_gcc_record_of_another_layout_is_refused_by_name(tmp_path):
    import gzip
    bad = tmp_path / "k.c.opt-record.json.gz"
    bad.write_bytes(gzip.compress(b'{"not": "a list"}'))
    with pytest.raises(Exception, match="metadata, passes, records"):
        list(remarks.gcc_remarks(bad))


def _results(doc: dict) -> model.Results:
    """The parts of a results.json the explanation's view reads, as the contract's models."""
    return model.Results.model_construct(
        explain=model.ExplainRun.model_validate(doc["explain"]),
        variants=[model.Variant.model_construct(
            id=v["id"], vs_baseline=model.VsBaseline.model_validate(v["vs_baseline"]),
            explain=model.Explain.model_validate(v["explain"])) for v in doc["variants"]])


def test_the_page_and_terminal_say_what_the_vectorisers_did_on_each_side():
    row = {"function": "fill_window", "baseline": 5.9e6, "variant": 5.3e7, "change": 4.7e7,
           "change_pct": 800.0, "share_pct": 86.0,
           "remarks_baseline": {"vectorized": ["deflate.c:560: loop vectorized using 16 byte vectors"],
                                "missed": [], "missed_total": 0, "loops": 2, "blocks": 1},
           "remarks_variant": {"vectorized": [], "missed": ["deflate.c:560: not vectorized: x"],
                               "missed_total": 3, "loops": 0, "blocks": 0}}
    doc = {"explain": {"method": "cachegrind", "unit": "instructions", "baseline": None},
           "variants": [{"id": "gcc-Os", "vs_baseline": {"verdict": "slower"},
                         "explain": {"status": "ok", "functions": [row]}}]}
    got = view.explained(_results(doc), {"gcc-Os": "-Os"})
    f = got.variants[0].rows[0]
    assert f.vectorised == "2 loops, 1 block -> none"
    assert "loop vectorized using 16 byte vectors" in f.remarks and "2 more not vectorized" in f.remarks
    assert got.variants[0].lines()[0].endswith("; vectorised 2 loops, 1 block -> none")
    # Not collected: nothing claimed either way.
    bare = view.explained(_results({**doc, "variants": [{**doc["variants"][0], "explain": {
        "status": "ok", "functions": [{k: v for k, v in row.items() if "remarks" not in k}]}}]}),
        {})
    wider = {**row, "remarks_variant": {**row["remarks_baseline"], "widest": 32},
             "remarks_baseline": {**row["remarks_baseline"], "widest": 16}}
    assert view._vectorised(model.ExplainFunction.model_validate(wider)) == "2 loops, 1 block, 16 B vectors -> 2 loops, 1 block, 32 B vectors"
    assert bare.variants[0].rows[0].vectorised == "" and "vectorised" not in bare.variants[0].lines()[0]


def test_a_profile_guided_gcc_build_is_skipped_and_a_lost_clang_profile_refused(tmp_path):
    gcc = remarks.collect(_project(tmp_path / "g", "gcc", ["-O2", "-fprofile-use=/p"]),
                          cache=tmp_path / "c")
    assert gcc.status == "skipped" and "profile-guided" in gcc.why
    if shutil.which("clang") is None:
        pytest.skip("clang not installed")
    lost = tmp_path / "gone" / "merged.profdata"
    clang = remarks.collect(_project(tmp_path / "k", "clang", ["-O2", f"-fprofile-instr-use={lost}"]),
                            cache=tmp_path / "c")
    assert clang.status == "failed" and "merged.profdata" in clang.why


def test_a_compiler_that_is_gone_is_named(tmp_path):
    found = remarks.collect(_project(tmp_path, "/nonexistent/gcc-99", ["-O2"]), cache=tmp_path / "c")
    assert found.status == "failed" and "/nonexistent/gcc-99" in found.why
