"""The report from fixture results: structure, every verdict, warnings, escaping, counters,
the Markdown summary, the study page, `flagsweep report` and `flagsweep compare`."""

from __future__ import annotations

import html as htmlmod
import io
import json
import re
from html.parser import HTMLParser

import pytest
import report_fixture as rf
from click.testing import CliRunner
from rich.console import Console
from conftest import raw_controls

from flagsweep import report, stats
from flagsweep.cli import cli
from flagsweep.errors import FlagsweepError
from flagsweep.report import formats, headline, method, terminal, view
from flagsweep.results import reader

SECTIONS = ["headline", "effects", "variants", "distributions", "counters", "machine", "builds"]


class Page(HTMLParser):
    """The parts of a page the tests look at: elements by id, scripts, links, table rows."""

    def __init__(self, html: str):
        super().__init__()
        self.ids, self.scripts, self.urls, self.svgs = set(), 0, [], 0
        self.rows: dict[str, list[dict]] = {}
        self._table = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "script":
            self.scripts += 1
        if tag == "svg":
            self.svgs += 1
        self.urls += [a[k] for k in ("href", "src") if a.get(k)]
        if tag == "table":
            self._table = a.get("id")
        if tag == "tr" and self._table:
            self.rows.setdefault(self._table, []).append(a)


@pytest.fixture
def rendered(tmp_path):
    path = rf.write(tmp_path / "run", rf.results_doc())
    page = report.write(path)
    return page, page.read_text(), (page.parent / "summary.md").read_text()


def test_page_has_every_section_and_inline_plots(rendered):
    page, html, _ = rendered
    p = Page(html)
    assert set(SECTIONS) <= p.ids
    assert p.svgs == 3                          # forest, distributions, run order
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html
    assert p.scripts == 1                       # the sorting script, nothing else
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


def test_names_are_escaped_in_html_and_markdown(rendered):
    _, html, md = rendered
    assert rf.EVIL not in html and "alert('x')</script>" not in html
    assert "tiny&lt;script&gt;" in html
    # Markdown shows a code span's content as text; everywhere else it must be escaped.
    outside_code = re.sub(r"``.*?``|`[^`]*`", "", md)
    assert "<script" not in outside_code and "&lt;script&gt;" in outside_code


def test_no_reference_leaves_the_page(rendered):
    page, html, _ = rendered
    urls = Page(html).urls
    assert urls and not [u for u in urls if re.match(r"[a-z]+:", u)]
    assert "builds/gcc-O2/build.log" in urls and "results.json" in urls
    # XML namespace names are identifiers, never fetched; any other absolute URL would be.
    without_ns = re.sub(r'xmlns(:\w+)?="[^"]*"', "", html)
    assert not re.search(r"url\((?!#)|@import|https?://", without_ns)  # url(#id): in-page


def test_every_verdict_has_its_badge_and_row(rendered):
    _, html, _ = rendered
    rows = Page(html).rows["variants-table"]
    assert len(rows) == len(rf.PLAN) + 1        # the header row too
    for verdict in formats.VERDICTS + ("baseline",):
        assert f'class="badge {verdict}"' in html, verdict


def test_headline_counts_findings_and_warnings():
    doc = rf.results_doc()
    r = view.build(rf.model(doc), rf.Path("/x/results.json"), rf.Path("/x"))
    h = r.headline
    assert dict(h.counts) == {"faster": 1, "slower": 1, "equivalent": 2, "inconclusive": 1,
                              "identical-code": 1, "not-measured": 2}
    # the interval its verdict used, adjusted for the choice, and named so
    assert re.match(r"Use -O3: -(9|10)\.\d% against the baseline \(\d\d\.\d% CI \[[-+.\d]+, "
                    r"[-+.\d]+\], adjusted for choosing it among 6 comparisons; adjusted p ",
                    h.recommendation)
    assert h.interval.startswith("The interval is the one its verdict used")
    kinds = {w.kind for w in h.warnings}
    assert {"output", "flags", "build", "pmu"} <= kinds
    assert "machine" not in kinds               # isolated, pinned, performance, idle
    assert [f.verdict for f in h.findings] == ["slower", "faster", "equivalent", "inconclusive",
                                               "identical-code", "not-measured"]
    same = next(f for f in h.findings if f.verdict == "identical-code").items[0]
    assert same.text == "same code as gcc-O3"


def test_a_failed_or_interrupted_sweep_says_so():
    doc = rf.results_doc()
    doc.update(status="interrupted", stop_reason="interrupted")
    doc["aa"] = {**doc["aa"], "verdict": "slower", "warning": "the A/A arm came out slower"}
    warnings = headline.warnings(rf.model(doc))
    assert any("interrupted" in w.text for w in warnings if w.kind == "status")
    assert any(w.kind == "aa" and "A/A" in w.text for w in warnings)


def test_counters_without_and_with_a_pmu(tmp_path):
    plain = view.build(rf.model(rf.results_doc()), tmp_path / "r.json", tmp_path).counters
    assert plain.kind == "software" and "IPC" not in plain.columns
    assert "context switches" in plain.columns
    hw = view.build(rf.model(rf.results_doc(counters=True)), tmp_path / "r.json", tmp_path).counters
    assert hw.kind == "hardware"
    assert hw.columns[0] == "IPC"
    label, cells = hw.rows[0]
    assert cells == ["2", "1", "0.5"]


def test_builds_section_shows_compile_line_and_failures(rendered):
    _, html, _ = rendered
    assert "gcc -O2 -c a.c" in html
    assert "unrecognized option" in html
    assert "compile line lacks -fsneaky" in html


def test_the_a_a_copy_says_what_it_is_instead_of_problems(rendered):
    _, html, _ = rendered
    assert ("<code>gcc-O2.aa</code>: not built: A/A twin: a copy of gcc-O2&#39;s binary</summary>"
            in html)
    assert "<code>gcc-O2-fsneaky</code>: first compile line and problems</summary>" in html
    assert "<code>gcc-O2</code>: first compile line</summary>" in html


def test_numbers_have_one_format_whatever_their_size():
    # A peak RSS of 10810 KiB beside rows of 5000: both plain, grouped integers.
    assert [formats.number(x) for x in (10810, 5000.0, 10810.5, 0.523, 1.0811, 0.00012345, None)] == [
        "10,810", "5,000", "10,810", "0.523", "1.081", "0.0001234", ""]


def test_a_column_has_one_number_of_decimals():
    assert formats.column([0.321, 0.3206, None, 0.7028]) == ["0.3210", "0.3206", "", "0.7028"]
    assert formats.column([10810.0, 5000.0]) == ["10,810", "5,000"]
    assert formats.column([2.0, 1.5, 12.25]) == ["2.00", "1.50", "12.25"]
    assert formats.column([0.5, 0.5]) == ["0.5", "0.5"]


def test_the_page_says_why_its_two_tables_differ(rendered):
    _, html, _ = rendered
    assert 'id="two-estimates"' in html and "Read this table for which flag matters" in html


def test_page_summary_and_terminal_print_the_same_adjusted_interval(rendered):
    """The recommendation's interval is the one its verdict used (results.json's
    recommendation.estimate), wider than the variant's 95% CI; the page, summary.md and the
    terminal print the same sentence, and say which interval it is."""
    page, html, md = rendered
    doc = reader.load(page.parent / "results.json")
    e, vs = doc.recommendation.estimate, next(
        v.vs_baseline for v in doc.variants if v.id == doc.recommendation.variant)
    assert e.ci == vs.ci_fcr and e.ci[0] < vs.ci95[0] and vs.ci95[1] < e.ci[1]
    h = view.build(doc, page.parent / "results.json", page.parent).headline
    said = (f"{stats.level_text(e.level)} CI {stats.ci_text(e.ci)}, adjusted for choosing it "
            f"among {e.comparisons:g} comparisons")
    assert said in h.recommendation and stats.ci_text(vs.ci95) not in h.recommendation
    buf = io.StringIO()
    terminal.show(page.parent / "results.json", Console(file=buf, width=400))
    shown = buf.getvalue()
    for text, said in ((htmlmod.unescape(html), str), (md, report.markdown_text),
                       (shown, str)):
        assert said(h.recommendation) in text
        assert said(h.interval) in text
    assert f"recommendation: {h.recommendation}" in shown
    assert f"interval: {h.interval}" in shown


def test_which_flags_matter_shows_the_interval_it_decided_on(rendered):
    """Each effects row shows the interval its `matters` was decided on (the adjusted one where
    its estimate is beyond the threshold, its level written before it), and the caption says
    so, on the page, in summary.md and in the plot's rows."""
    page, html, md = rendered
    doc = reader.load(page.parent / "results.json")
    r = view.build(doc, page.parent / "results.json", page.parent)
    decided = [(e, row) for e, row in zip(sorted(doc.effects, key=lambda e: e.effect_pct),
                                           r.effects) if e.ci_fcr_pct]
    assert decided
    for e, row in decided:
        lo, hi = e.ci_fcr_pct
        assert row.ci == (lo, hi)
        assert row.ci_text == f"{stats.level_text(e.fcr_level)} [{lo:+.1f}, {hi:+.1f}]"
        assert f"| {row.ci_text} |" in md and f">{row.ci_text}<" in html
    assert "interval decided on" in html and "interval decided on" in md
    rule = "the one the table decided on"
    assert rule in r.effects_rule and rule in htmlmod.unescape(html) and rule in md
    assert report.markdown_text(r.effects_rule) in md
    assert "A level matters when its 95% CI" not in html


def test_reproduce_command_repeats_the_sweep():
    cmd = method.reproduce_command(rf.model(rf.results_doc()))
    assert cmd.startswith("flagsweep run /x --recipe olevels --compiler gcc --runs 12 --seed 42")
    assert "--min-runs" not in cmd and "--threshold 1" in cmd      # --runs sets both
    assert "--metric wall" in cmd and "--cpu 1" in cmd and "--counters auto" in cmd


def test_markdown_summary_is_a_pasteable_table(rendered):
    _, _, md = rendered
    table = [line for line in md.splitlines() if line.startswith("| `")]
    assert len(table) == len(rf.PLAN)
    assert all(line.count(" | ") == 7 for line in table)  # no cell broke the table
    assert "**Use -O3" in md
    assert report.markdown_code("a|b`c") == "``a\\|b`c``"


def test_results_without_sample_times_still_draw(tmp_path):
    doc = rf.results_doc()
    for v in doc["variants"]:
        v["samples"].pop("elapsed_s", None)
    page = report.write(rf.write(tmp_path / "old", doc))
    assert ">round<" in page.read_text()


def test_nothing_measured_still_renders(tmp_path):
    doc = rf.results_doc()
    for v in doc["variants"]:
        v["samples"], v["summary"] = {}, {"n": 0}
        v["vs_baseline"] = None if v["id"] == "gcc-O2" else {"verdict": "not-measured"}
    doc.update(effects=[], recommendation=None, status="failed", stop_reason="nothing to measure")
    html = report.write(rf.write(tmp_path / "none", doc)).read_text()
    assert "No variant was measured." in html and "nothing to measure" in html


def test_study_page_sets_then_beside_now(tmp_path):
    doc = rf.results_doc(study=True)
    r = view.build(rf.model(doc), tmp_path / "r.json", tmp_path)
    rows = {row.label: row for row in r.study.rows}
    assert rows["-O0"].then == ["+150.0%"] and rows["-O0"].verdict == "slower"
    assert rows["-O2"].then == ["baseline"] and rows["-O1"].then == ["-"]
    assert r.study.answer.startswith("On this Test CPU (-march=native znver4) with gcc 12.2.0:")
    assert re.search(r"faster than -O2: -O3 \(-(9|10)\.\d%", r.study.answer)
    slower = next(f for f in r.headline.findings if f.verdict == "slower")
    assert slower.items[0].then == "then: +150.0% on Old box"
    html = report.write(rf.write(tmp_path / "s", doc)).read_text()
    assert 'id="study"' in html and "Do the old flags still matter?" in html


def test_load_names_the_file_and_the_key(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(FlagsweepError, match="nope.json: no such file"):
        reader.load(missing)
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(FlagsweepError, match="bad.json: not a results.json .not valid JSON"):
        reader.load(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**rf.results_doc(), "schema": "flagsweep/9"}))
    with pytest.raises(FlagsweepError, match="other.json: key 'schema' is 'flagsweep/9'"):
        reader.load(other)
    partial = rf.results_doc()
    del partial["variants"][2]["build"]
    p = tmp_path / "partial.json"
    p.write_text(json.dumps(partial))
    with pytest.raises(FlagsweepError, match=r"partial.json: variants\[2\] lacks key\(s\) build"):
        reader.load(p)


def test_report_command_renders_elsewhere(tmp_path):
    path = rf.write(tmp_path / "run", rf.results_doc())
    out = tmp_path / "elsewhere"
    result = CliRunner().invoke(cli, ["report", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == str(out / "index.html")
    html = (out / "index.html").read_text()
    assert 'href="../run/builds/gcc-O2/build.log"' in html and (out / "summary.md").exists()


def test_compare_shows_what_moved(tmp_path):
    a = rf.write(tmp_path / "a", rf.results_doc(seed=5))
    b = rf.write(tmp_path / "b", rf.results_doc(seed=6, scale={"gcc-O0": 1.10}))
    c = report.write_comparison(a, b, tmp_path / "cmp")
    rows = {r.id: r for r in c.rows}
    assert rows["gcc-O0"].across_verdict == "slower"
    assert rows["gcc-O1"].across_verdict in ("equivalent", "inconclusive")
    assert rows["gcc-O2-fbroken"].across_text == ""
    assert "1 moved by more than 1%" in c.summary
    html = (tmp_path / "cmp" / "compare.html").read_text()
    assert rf.EVIL not in html and 'id="compare-table"' in html


def test_compare_refuses_two_targets(tmp_path):
    a = rf.write(tmp_path / "a", rf.results_doc())
    other = rf.results_doc()
    other["target"] = "gzip"
    b = rf.write(tmp_path / "b", other)
    result = CliRunner().invoke(cli, ["compare", str(a), str(b)])
    assert result.exit_code != 0
    assert "differ in target" in str(result.exception)
    assert str(a) in str(result.exception) and str(b) in str(result.exception)


# ---- what cannot be written, what is not a number ------------------------------------------------

def test_a_full_disk_keeps_the_old_page(small_fs):
    """Written in place, index.html was left empty (0 bytes) by a full disk."""
    path = rf.write(small_fs.path / "run", rf.results_doc())
    page = report.write(path)
    before = {p.name: p.read_bytes() for p in path.parent.iterdir() if p.is_file()}
    small_fs.fill()
    with pytest.raises(FlagsweepError,
                       match=rf"^cannot write {path.parent}/(junit.xml|summary.md|index.html): "
                       r"No space left on device \(the disk is full: free space there and run "
                       r"the command again\)$"):
        report.write(path)
    after = {p.name: p.read_bytes() for p in path.parent.iterdir() if p.is_file()}
    assert after == before and len(after["index.html"]) > 10000 and page.name == "index.html"


def test_a_read_only_out_is_one_line(small_fs, tmp_path, main):
    path = rf.write(tmp_path / "run", rf.results_doc())
    small_fs.read_only()
    for out in (small_fs.path / "new", small_fs.path):
        code, err = main("report", str(path), "--out", str(out))
        assert code == 2
        what = (f"cannot create the report's folder {out}: Read-only file system" if out.name == "new"
                else f"cannot write {out}/junit.xml: Read-only file system")
        assert err == f"flagsweep: {what}\n"
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    assert main("compare", str(path), str(path), "--out", str(a_file / "cmp")) == (
        2, f"flagsweep: cannot create the --out folder {a_file}/cmp: Not a directory\n")


def _set(doc: dict, key: str, value) -> None:
    """doc at a key path such as variants[2].vs_baseline.ratio := value."""
    parts = [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", key)]
    node = doc
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value


@pytest.mark.breaks_contract
@pytest.mark.parametrize("key, value, shown", [
    ("variants[2].vs_baseline.ratio", "fast", '"fast"'),
    ("variants[2].vs_baseline.ratio", True, "true"),
    ("variants[0].summary.median", [1.0], "[1.0]"),
    ("variants[3].samples.wall_s[4]", "x", '"x"'),
    ("effects[0].effect_pct", {"a": 1}, '{"a": 1}'),
    ("noise.baseline_cv", "0.01", '"0.01"'),
    ("threshold_pct", "1", '"1"'),
])
def test_load_refuses_what_is_not_a_number(tmp_path, key, value, shown):
    doc = rf.results_doc()
    _set(doc, key, value)
    path = rf.write(tmp_path / "run", doc)
    with pytest.raises(FlagsweepError) as e:
        reader.load(path)
    assert str(e.value) == f"{path}: key '{key}': expected a number or null, got {shown}"


@pytest.mark.breaks_contract
def test_load_refuses_an_interval_that_is_not_two_numbers(tmp_path):
    for value, shown in [([0.9, "x"], '[0.9, "x"]'), ([0.9], "[0.9]"), ("wide", '"wide"')]:
        doc = rf.results_doc()
        doc["variants"][2]["vs_baseline"]["ci95"] = value
        path = rf.write(tmp_path / "run", doc)
        with pytest.raises(FlagsweepError) as e:
            reader.load(path)
        assert str(e.value) == (f"{path}: key 'variants[2].vs_baseline.ci95': expected a pair of "
                                f"numbers or null, got {shown}")


@pytest.mark.breaks_contract
def test_report_and_compare_of_a_non_number_are_one_line(tmp_path, main):
    doc = rf.results_doc()
    doc["variants"][2]["vs_baseline"]["ratio"] = "fast"
    bad = rf.write(tmp_path / "bad", doc)
    good = rf.write(tmp_path / "good", rf.results_doc())
    why = f"flagsweep: {bad}: key 'variants[2].vs_baseline.ratio': expected a number or null, got \"fast\"\n"
    for args in (["report", str(bad)], ["compare", str(good), str(bad)]):
        assert main(*args) == (2, why)
    assert not (bad.parent / "index.html").exists()


def nan_results(folder, what: str = "results.json") -> tuple:
    """A results.json of the fixture with a NaN ratio (json.dumps writes one, Python's json
    reads it back) and the line every reader refuses it with, whatever it reads."""
    doc = rf.results_doc()
    doc["variants"][2]["vs_baseline"]["ratio"] = float("nan")
    path = rf.write(folder, doc)
    return path, (f"{path}: key 'variants[2].vs_baseline.ratio': expected a finite number or "
                  "null, got NaN")


def deep_results(folder, what: str = "results.json") -> tuple:
    """A results.json of the fixture with a key 200,000 lists deep, and the line a reader of
    `what` refuses it with."""
    path = rf.write(folder, rf.results_doc())
    depth = 200_000
    path.write_text(path.read_text().rstrip()[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}")
    return path, f"{path}: not a {what} (its JSON nests deeper than 64 levels)"


READERS = {"report": lambda bad, good, out: ["report", bad],
           "compare": lambda bad, good, out: ["compare", good, bad],
           "pick": lambda bad, good, out: ["pick", bad, good],
           "merge": lambda bad, good, out: ["merge", good, bad, "--out", out],
           "suite": lambda bad, good, out: ["suite", bad, "--out", out],
           "explain": lambda bad, good, out: ["explain", bad]}


@pytest.mark.breaks_contract
@pytest.mark.parametrize("fault", [nan_results, deep_results])
@pytest.mark.parametrize("command", READERS)
def test_every_reader_refuses_a_nan_or_a_deep_file_in_one_line(tmp_path, main, command, fault):
    """Before: every one took the NaN (pick, merge and suite computed with it, the report
    showed a ratio of NaN as 0.0%); the deep file ended in a RecursionError traceback from
    json."""
    # report reads a results.json or a tune.json, and says so
    bad, why = fault(tmp_path / "bad", "results.json or tune.json" if command == "report"
                     else "results.json")
    good = rf.write(tmp_path / "good", rf.results_doc())
    argv = READERS[command](str(bad), str(good), str(tmp_path / "out"))
    code, err = main(*argv)
    assert (code, err) == (2, f"flagsweep: {why}\n")
    assert not (bad.parent / "index.html").exists() and not (tmp_path / "out").exists()


def test_report_shows_the_escape_sequences_of_a_results_json_and_obeys_none(tmp_path, main):
    """A results.json whose target, variant id, flag, build detail and stop reason set the
    window's title and clear the screen. Before: each reached root's terminal raw, in the
    verdicts table, the warnings and the `stopped:` line."""
    path = rf.write(tmp_path / "run", rf.escaping_doc())
    code, err = main("report", str(path))
    assert code == 0, err
    assert raw_controls(err + main.out) == []
    lines = err.splitlines()
    assert any(line.startswith(r"tiny<script>alert('x')</script>\x1b]0;owned 1.0, recipe")
               for line in lines)
    assert [line for line in lines if line.startswith(r"-O0 -DX=\x1b[2J ")]
    assert [line for line in lines if line.startswith(r"warning: Build failed for "
                                                     r"gcc-O2-fbroken\x1b]0;owned (build")]
    assert r"stopped: the fixed 12 rounds are done\x1b[2J" in lines
    assert main.out == f"{path.parent / 'index.html'}\n"


def test_builds_show_size_build_cpu_and_lto_pgo_beside_speed(tmp_path):
    doc = rf.results_doc()
    o3 = next(v for v in doc["variants"] if v["id"] == "gcc-O3")
    o3["build"].update(sizes={"text": 123_456, "data": 1, "bss": 2}, cpu_seconds=42.25,
                       lto=True, pgo={"matched": True, "training": "tiny in",
                                      "profile_sha256": "ab" * 32})
    doc["distro"] = {"name": "debian", "source": "dpkg-buildflags", "flags": ["-O2"]}
    html = report.write(rf.write(tmp_path / "r", doc)).read_text()
    builds = html[html.index('<section id="builds">'):]
    assert "<td class=\"num\">42.2</td>" in builds or "<td class=\"num\">42.3</td>" in builds
    assert "123,456" in builds and "<td>LTO, PGO</td>" in builds
    # named by the change to the distribution's flags, not by its flags
    assert "debian +" in html


HOSTILE_LOGS = ["javascript:alert(1)", "/etc/passwd", "../../x", "http://evil",
                "data:text/html,<script>alert(1)</script>", "linked.log"]


def _hostile_folder(tmp_path):
    """A results folder whose build log paths try to leave it: a file really named
    `javascript:alert(1)` (and `http:/evil`, `data:...`) inside it, /etc/passwd, a file two
    levels up, and a log that is a link to /etc/passwd."""
    folder = tmp_path / "a" / "b" / "run"
    doc = rf.results_doc()
    path = rf.write(folder, doc)
    for v, log in zip(doc["variants"], HOSTILE_LOGS):
        v["build"]["log"] = log
        if not log.startswith("/"):
            target = (folder / log)
            target.parent.mkdir(parents=True, exist_ok=True)
            if log == "linked.log":
                target.symlink_to("/etc/passwd")
            else:
                target.write_text("log\n")
    path.write_text(json.dumps(doc, indent=1))
    return path


def _leaves(href: str, page_dir, folder) -> bool:
    """Whether a link goes anywhere but a file inside the results folder."""
    if href.startswith("#"):
        return False
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", href) or href.startswith(("/", "\\")):
        return True
    from urllib.parse import unquote
    target = (page_dir / unquote(href)).resolve()
    return not target.is_relative_to(folder.resolve())


@pytest.mark.parametrize("elsewhere", [False, True])
def test_every_link_of_a_hostile_results_folder_stays_inside_it(elsewhere, tmp_path):
    """A build log path of `javascript:alert(1)` became <a href="javascript:alert(1)">; an
    absolute or `..` path, or a link, pointed the page outside the results folder."""
    path = _hostile_folder(tmp_path)
    out = tmp_path / "pages" if elsewhere else None
    page = report.write(path, out)
    html = page.read_text()
    urls = Page(html).urls
    assert urls
    left = [u for u in urls if _leaves(u, page.parent, path.parent)]
    assert left == []
    for bad in ("javascript:", "/etc/passwd", "http:", "data:", "../../x"):
        assert not [u for u in urls if bad in u], bad
    # What cannot be a link is shown as text; a file inside the folder named like a scheme is
    # linked, its ':' percent-encoded so that it is a path, not a scheme.
    for shown in ("/etc/passwd", "../../x", "linked.log"):
        assert f'<span class="note">{shown}</span>' in html, shown
    assert [u for u in urls if u.endswith("run/javascript%3Aalert%281%29")
            or u == "javascript%3Aalert%281%29"]


def test_a_suite_links_only_to_pages_inside_each_programs_folder(tmp_path):
    path = _hostile_folder(tmp_path)
    (path.parent / "index.html").symlink_to("/etc/passwd")
    out = tmp_path / "suite"
    CliRunner().invoke(cli, ["suite", str(path), "--out", str(out)], catch_exceptions=False)
    urls = Page((out / "suite.html").read_text()).urls
    assert not [u for u in urls if _leaves(u, out, path.parent)]


def test_a_library_from_outside_the_build_is_named_in_the_builds_section(tmp_path):
    """opusenc's codec was Debian's libopus, and nothing said so: the page names each library
    from outside the build trees once, the C runtime left out, and leaves out the copies."""
    doc = rf.results_doc()
    loads = [{"name": "libz.so.1", "path": "/usr/lib/x86_64-linux-gnu/libz.so.1",
              "runtime": False},
             {"name": "libc.so.6", "path": "/lib/x86_64-linux-gnu/libc.so.6", "runtime": True}]
    for v in doc["variants"]:
        v["build"]["external_libraries"] = loads
    html = report.write(rf.write(tmp_path / "run", doc)).read_text()
    said = ("bin loads libz.so.1 from /usr/lib/x86_64-linux-gnu/libz.so.1: its code is the "
            "system&#39;s, not built with the variant&#39;s flags")
    assert html.count(said) == 1 and "libc.so.6" not in html
    assert html.index(said) > html.index('<section id="builds">')
