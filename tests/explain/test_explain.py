"""run --explain: per-function profiles matched across binaries and the change attributed.

Cachegrind's counts are deterministic, so the real path runs here on small real programs; the
perf path is tested on perf report output in perf's own format (tests/fixtures/perf)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import report_fixture as rf
from click.testing import CliRunner
from conftest import raw_controls
from synthetic import Synthetic
from tiny_target import write_tiny_target

from flagsweep.jobs import sweep
from flagsweep.compilation import selection
from flagsweep.cli import cli
from flagsweep.errors import FlagsweepError
from flagsweep.explain import attribution, explanation, profile, sampling, symbols
from flagsweep.report import terminal
from flagsweep import model
from flagsweep.results import reader
from flagsweep.results.store import Store

PERF = Path(__file__).parents[1] / "fixtures" / "perf"
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")

# `work` is called with a constant from main only: gcc -O2 specialises it (work.constprop.0);
# `helper` is static inline: -O2 inlines it into main, -O0 keeps it a function.
CLONES_C = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static long work(long *a, long n, int k)
{ long s = 0; for (long i = 0; i < n; i++) s += a[i] * k; return s; }
static inline long helper(long x) { return x * 3 + 1; }
int main(int argc, char **argv) {
    long n = atol(argv[1]); long *a = malloc(n * sizeof *a);
    for (long i = 0; i < n; i++) a[i] = helper(i);
    long s = 0; for (int r = 0; r < 10; r++) s += work(a, n, 7);
    printf("%ld\n", s); return 0; }
"""


@pytest.mark.parametrize("name, function", [
    ("foo", "foo"), ("foo.constprop.0", "foo"), ("foo.isra.0", "foo"), ("foo.part.0", "foo"),
    ("foo.cold", "foo"), ("foo.isra.0.cold", "foo"), ("foo.constprop.0.isra.0", "foo"),
    ("foo.lto_priv.0", "foo"), ("foo.llvm.8412319043", "foo"),
    ("foo(int) [clone .constprop.0]", "foo(int)"), ("memcpy@@GLIBC_2.14", "memcpy"),
    ("__libc_start_main@GLIBC_2.34", "__libc_start_main"), ("x.y", "x.y")])
def test_clones_and_parts_are_one_function(name, function):
    assert symbols.canonical(name) == function


def _cachegrind_text(blocks: dict[str, list[int]]) -> str:
    lines = ["desc: I1 cache: 65536 B, 64 B, 16-way associative", "cmd: ./prog",
             "events: Ir Dr Bc Bcm", "fl=???"]
    for fn, counts in blocks.items():
        lines += [f"fn={fn}", "0 " + " ".join(map(str, counts))]
    return "\n".join(lines) + "\nsummary: 0 0 0 0\n"


def test_clones_are_matched_and_a_function_inlined_away_is_said_to_be():
    base = profile.parse_cachegrind(_cachegrind_text({
        "main": [100, 10, 5, 1], "foo.constprop.0": [600, 60, 20, 2], "foo.cold": [40],
        "helper": [200, 0, 10, 0]}))
    var = profile.parse_cachegrind(_cachegrind_text({
        "main": [450, 10, 5, 1], "foo": [700, 70, 20, 9]}))
    assert base.cost("foo") == 640 and base.symbols["foo"] == ["foo.constprop.0", "foo.cold"]
    entry = attribution.attribute(base, var, {"main": 50, "foo": 80, "helper": 12},
                                  {"main": 90, "foo": 70})
    rows = {r.function: r for r in entry.functions}
    assert set(rows) == {"main", "foo", "helper"}
    assert rows["foo"].baseline == 640 and rows["foo"].variant == 700
    assert rows["foo"].symbols_variant == ["foo"] and rows["foo"].size_variant == 70
    assert rows["helper"].variant == 0 and "inlined" in rows["helper"].note
    assert rows["main"].change == 350 and rows["main"].note is None
    # Gross change 350 + 60 + 200 = 610; the net is +210.
    assert entry.change == 210 and entry.gross_change == 610
    assert rows["main"].share_pct == pytest.approx(100 * 350 / 610)
    assert entry.top_share_pct == pytest.approx(100.0)
    assert [r.function for r in entry.functions] == ["main", "helper", "foo"]
    assert rows["foo"].events_variant["Bcm"] == 9


def test_a_file_that_is_not_a_cachegrind_profile_is_refused_by_name():
    with pytest.raises(FlagsweepError, match="p.out: not a Cachegrind profile"):
        profile.parse_cachegrind("fn=main\n0 1\n", "p.out")


@needs_valgrind
def test_real_binaries_match_a_constprop_clone_and_show_the_inlined_helper(tmp_path):
    (tmp_path / "c.c").write_text(CLONES_C)
    for level in ("O2", "O0"):
        subprocess.run(["gcc", f"-{level}", "-o", str(tmp_path / level), str(tmp_path / "c.c")],
                       check=True)
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    runs = {level: profile.cachegrind([str(tmp_path / level), "20000"], env=env, cwd=tmp_path,
                                      timeout=60, out_file=tmp_path / f"{level}.out")
            for level in ("O2", "O0")}
    sizes = {level: symbols.function_sizes(tmp_path / level) for level in runs}
    assert "work.constprop.0" in runs["O2"].symbols["work"]
    assert runs["O0"].symbols["work"] == ["work"]
    assert "helper" in sizes["O0"] and "helper" not in sizes["O2"]
    entry = attribution.attribute(runs["O2"], runs["O0"], sizes["O2"], sizes["O0"])
    rows = {r.function: r for r in entry.functions}
    assert rows["work"].baseline > 0 and rows["work"].variant > rows["work"].baseline
    assert rows["helper"].baseline == 0 and rows["helper"].variant > 0
    assert "inlined" in rows["helper"].note and rows["helper"].size_baseline is None
    assert entry.variant_total > entry.baseline_total
    # Deterministic: the same binary and input count the same again.
    again = profile.cachegrind([str(tmp_path / "O2"), "20000"], env=env, cwd=tmp_path,
                               timeout=60, out_file=tmp_path / "again.out")
    assert again.functions == runs["O2"].functions


def test_perf_report_as_perf_prints_it_is_read():
    real = sampling.parse_report((PERF / "cpu-clock-report.txt").read_text())
    assert real.event == "cpu-clock" and real.samples == 31
    assert real.sample_counts["work"] == 11 and real.symbols["work"] == ["work.constprop.0"]
    assert real.periods[sampling.KERNEL] == sum(
        p for n, p in real.periods.items() if n not in ("work", "main", "get_common_cache_info"))
    assert sum(real.sample_counts.values()) == 31


def test_perf_records_give_each_share_a_t_interval_and_the_unknown_share():
    base = sampling.combine([sampling.parse_report((PERF / f"baseline.{i}.txt").read_text())
                             for i in range(3)])
    var = sampling.combine([sampling.parse_report((PERF / f"variant.{i}.txt").read_text())
                            for i in range(3)])
    assert base.cost("longest_match") == 7_000_000 and base.samples == 1000
    assert base.symbols["deflate"] == ["deflate.constprop.0"]
    assert base.unknown_share == pytest.approx(0.02)
    lo, hi = base.share_ci["longest_match"]
    assert lo < 0.70 < hi and hi - lo < 0.05
    # fill_window: 50, 55, 45 samples of 1000 -> mean share 5%, t(0.975, 2) = 4.303.
    half = 4.3027 * 0.005 / 3 ** 0.5
    assert base.share_ci["fill_window"] == pytest.approx((0.05 - half, 0.05 + half), abs=1e-4)
    entry = attribution.attribute(base, var, {}, {})
    top = entry.functions[0]
    assert top.function == "fill_window" and top.change == pytest.approx(3_500_000)
    assert entry.unit == "cycles" and entry.samples == [1000, 1340]
    assert entry.top_share_pct <= 100.0 + 1e-9
    assert top.share_ci_variant[0] < 100 * 4_000_000 / 13_450_000 < top.share_ci_variant[1]


def test_perf_output_in_another_format_is_refused_by_name():
    with pytest.raises(FlagsweepError, match="unexpected row"):
        sampling.parse_report("# Samples: 3  of event 'cycles'\n 45.0% foo\n", "r.txt")
    with pytest.raises(FlagsweepError, match="no `# Samples"):
        sampling.parse_report("# nothing here\n", "r.txt")


def _sweep(tmp_path: Path, explain: bool = True) -> Path:
    folder = write_tiny_target(tmp_path / "tiny", megabytes=0.25, quick_megabytes=0.25)
    t, r, m, build_opts = selection.prepare(selection.Selection(
        str(folder), flag_sets=("-O2", "-O1", "-O0"), out_dir=tmp_path / "run"), lambda _: None)
    opts = sweep.MeasureOptions(min_runs=5, max_runs=12, warmup=1, seed=11, quick=True,
                                explain=explain)
    return sweep.start(t, r, m, build_opts, opts, Store(), lambda _: None,
                       execute=Synthetic({"gcc-O1": 1.10, "gcc-O0": 0.8}))


@needs_valgrind
@pytest.mark.integration
def test_run_explain_writes_entries_for_the_called_variants_and_survives_a_failed_one(
        tmp_path, capsys):
    path = _sweep(tmp_path)
    doc = reader.load(path).dump()
    by_id = {v["id"]: v for v in doc["variants"]}
    assert doc["explain"]["method"] == "cachegrind" and doc["explain"]["unit"] == "instructions"
    assert doc["explain"]["explained"] == ["gcc-O1", "gcc-O0"]
    assert "explain" not in by_id["gcc-O2.aa"] and "explain" not in by_id["gcc-O2"]
    for vid in ("gcc-O1", "gcc-O0"):
        e = by_id[vid]["explain"]
        assert e["status"] == "ok" and len(e["functions"]) >= 2   # tiny has few functions
        assert e["top_share_pct"] <= 100.0 + 1e-9
        assert all(f["baseline"] is not None and f["variant"] is not None for f in e["functions"])
        assert Path(e["variant_profile"]).is_file()
        # The remarks rebuild of the variant's own compile commands, on every row.
        assert e["remarks"]["status"] == "ok" and e["remarks"]["compiler"] == "gcc"
        # The program's own functions have remarks; a library's (not compiled here) has none.
        assert all(isinstance(f["remarks_variant"], dict) == (f["size_variant"] is not None)
                   for f in e["functions"])
        assert any(f["remarks_variant"] for f in e["functions"])
    # -O0 runs no vectoriser: none of its functions has a vectorised loop.
    assert all(f["remarks_variant"]["loops"] == 0 for f in by_id["gcc-O0"]["explain"]["functions"]
               if f["remarks_variant"])
    assert doc["explain"]["baseline"]["remarks"]["status"] == "ok"
    assert by_id["gcc-O0"]["explain"]["variant_total"] > by_id["gcc-O0"]["explain"]["baseline_total"]
    base_top = doc["explain"]["baseline"]["functions"]
    assert base_top[0]["cost"] >= base_top[-1]["cost"] and base_top[0]["size"]
    terminal.show(path)
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if line.startswith("explain ")]
    # The top three functions per variant.
    assert [line.split(" ")[1] for line in said] == ["-O1"] * 3 + ["-O0"] * 3
    # One variant's binary gone: its entry says why, the other is still explained.
    model = reader.load(path)
    model.variants = [v.model_copy(update={"build": v.build.model_copy(
                          update={"binary": "/nonexistent/tiny"})})
                      if v.id == "gcc-O1" else v for v in model.variants]
    found = explanation.explain(model, path.parent, lambda _: None)
    assert found["variants"]["gcc-O1"]["status"] == "failed"
    assert "/nonexistent/tiny" in found["variants"]["gcc-O1"]["failure"]
    assert found["variants"]["gcc-O0"]["status"] == "ok"


@needs_valgrind
@pytest.mark.integration
def test_flagsweep_explain_adds_the_section_to_a_finished_sweep(tmp_path):
    path = _sweep(tmp_path, explain=False)
    assert "explain" not in reader.load(path).dump()
    done = CliRunner().invoke(cli, ["explain", str(path), "--with", "cachegrind"])
    assert done.exit_code == 0, done.output
    doc = reader.load(path).dump()
    assert doc["explain"]["explained"] == ["gcc-O1", "gcc-O0"]
    assert "diverging" in (path.parent / "index.html").read_text()
    # The store keeps it: results.json written again from the store still has it.
    rewritten = sweep.writer.write(path.parent, Store(), doc["run_id"])
    assert json.loads(rewritten.read_text())["explain"]["explained"] == ["gcc-O1", "gcc-O0"]


def test_a_results_file_without_its_target_file_is_refused_by_key(tmp_path):
    doc = _results("slower", workload={})
    with pytest.raises(FlagsweepError, match="workload.target_file"):
        explanation.explain(doc, tmp_path, lambda _: None, method="cachegrind")


def test_nothing_faster_or_slower_is_nothing_to_explain(tmp_path):
    found = explanation.explain(_results("equivalent"), tmp_path, lambda _: None)
    assert found["variants"] == {} and "nothing to explain" in found["note"]


def _results(verdict: str, **more) -> model.Results:
    """A results document of one variant `a` with this verdict against baseline `b`."""
    return model.Results.model_validate({
        "schema": model.SCHEMA, "target": "t", "recipe": "r", "metric": "wall_s",
        "baseline": "b", "machine": {}, **more,
        "variants": [{"id": "a", "compiler": "gcc", "flags": [], "build": {"status": "ok"},
                      "vs_baseline": {"verdict": verdict}}]})


def test_a_function_is_disassembled_side_by_side_and_an_inlined_one_is_said_so(tmp_path):
    import subprocess

    from flagsweep.explain import disassembly

    src = tmp_path / "p.c"
    src.write_text("static int helper(int x) { return x * 3 + 1; }\n"
                   "int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += helper(i); "
                   "return s; }\nint main(int c, char **v) { return work(c * 1000) & 1; }\n")
    bins = {}
    for level in ("-O0", "-O2"):
        bins[level] = tmp_path / f"p{level}"
        subprocess.run(["gcc", level, "-o", str(bins[level]), str(src)], check=True)
    o0, o2 = (disassembly.listing(bins[k], "work") for k in ("-O0", "-O2"))
    assert o0[0] == "<work>:" and o2[0].startswith("<work")
    assert not any(line[:1].isdigit() for line in o0 + o2)        # addresses dropped
    assert disassembly.listing(bins["-O2"], "helper") == []       # inlined at -O2
    rows = disassembly.side_by_side(disassembly.listing(bins["-O0"], "helper"), [],
                                    ("gcc-O0", "gcc-O2"), width=40)
    assert rows[0].startswith("gcc-O0") and rows[0].endswith("| gcc-O2")
    assert rows[2].startswith("<helper>:") and "(not in this binary: inlined or removed)" in rows[2]


def test_an_instruction_valgrind_cannot_run_is_named_with_where_it_was():
    # valgrind 3.19's own words on a -march=native binary of an AVX-512 CPU (lame, recorded).
    stderr = ("==24783== Command: lame --help\n==24783== \n"
              "vex amd64->IR: unhandled instruction bytes: 0x62 0xF2 0xFD 0x8 0x7C 0xC7 0xB9 0x0\n"
              "vex amd64->IR:   REX=0 REX.W=0 REX.R=0 REX.X=0 REX.B=0\n"
              "==24783== valgrind: Unrecognised instruction at address 0x10ef45.\n"
              "==24783==    at 0x10EF45: frontend_open_console (in /x/lame)\n"
              "==24783==    by 0x10C45D: main (in /x/lame)\n")
    said = profile._unrecognised(stderr)
    assert "AVX-512" in said and "frontend_open_console" in said and "--with perf" in said
    assert profile._unrecognised("==1== I   refs: 294,478\n") is None


def test_a_usage_error_that_lists_a_results_files_ids_shows_them(tmp_path, main):
    """click prints its usage errors itself, past flagsweep's printer: `explain --variant`
    lists the variants of the file. Before: a variant id's escape sequences reached the
    terminal raw."""
    path = rf.write(tmp_path / "run", rf.escaping_doc())
    code, err = main("explain", str(path), "--disassemble", "main", "--variant", "nosuch")
    assert code == 2
    assert raw_controls(err + main.out) == []
    assert r"gcc-O2-fbroken\x1b]0;owned\x07, gcc-O2-fsneaky" in err


@pytest.mark.parametrize("planted", ["[" * 200_000 + "]" * 200_000, "[1]",
                                     '{"templates": [1]}', '{"templates": {"gcc": 7}}',
                                     '{"templates": {"gcc": {"dir": NaN}}}'])
def test_a_planted_manifest_gives_no_template_and_no_traceback(tmp_path, planted):
    """explain reads the results folder's manifest.json for the compilers' configured trees,
    where a reused build's compiles can run again. Before: 200,000 brackets there ended in a
    RecursionError, a list or a number where an object stands in an AttributeError."""
    (tmp_path / "manifest.json").write_text(planted)
    assert explanation._templates(tmp_path) == []
    (tmp_path / "manifest.json").write_text('{"templates": {"gcc": {"dir": "/x/gcc"}}}')
    assert explanation._templates(tmp_path) == [Path("/x/gcc")]
