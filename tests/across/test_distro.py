"""The distro report of a campaign (tests/distro_fixture.py: three recorded packages, one whose
results file is gone, one that failed at generate, one change that fails a package's own
tests): the table's numbers against pick's, the CSV parsed back, the page, and the command's
one-line refusals."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
from html.parser import HTMLParser

import distro_fixture as fx
import pytest
import report_fixture as rf

from flagsweep import report
from flagsweep.across import distro, pick
from flagsweep.errors import FlagsweepError
from flagsweep.model import PackageTests
from flagsweep.report.distro import CSV_COLUMNS


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The campaign's folder, its table and its report written beside campaign.json."""
    campaign_json = fx.campaign(tmp_path_factory.mktemp("campaign"))
    (campaign_json.parent / "p1" / "index.html").write_text("<!doctype html>")
    page = report.write_distro(campaign_json)
    return campaign_json, distro.build(campaign_json), page


def _row(table, package: str, variant: str) -> distro.DistroRow:
    return next(r for r in table.rows if (r.package, r.variant) == (package, variant))


def _change(table, variant: str) -> distro.DistroChange:
    return next(c for c in table.changes if c.variant == variant)


def test_each_package_and_change_with_its_own_verdict_costs_and_tests(written):
    _, table, _ = written
    assert [p.name for p in table.packages] == ["alpha", "beta", "=gamma", "delta", "eps"]
    assert len(table.rows) == 3 * 3                  # measured packages x changes
    o3 = _row(table, "alpha", "gcc-O3")
    assert (o3.change, o3.verdict, o3.tests, o3.version) == ("debian +O3", "faster", "passed",
                                                              "1.1-2")
    assert 0.88 < o3.ratio < 0.92 and o3.ci95[1] < 0.99
    assert o3.size_ratio == pytest.approx(1.3) and o3.build_cpu_ratio == pytest.approx(1.2)
    assert _row(table, "alpha", "gcc-lto").verdict == "equivalent"
    lto = _row(table, "beta", "gcc-lto")
    assert (lto.verdict, lto.tests, lto.ratio) == ("broken", "failed", None)
    assert "own tests failed where the baseline's pass" in lto.why


def test_across_packages_is_picks_pool_with_the_shares_and_the_spread(written):
    campaign_json, table, _ = written
    picked = pick.pick([campaign_json.parent / f"p{i}" / "results.json" for i in (1, 2, 3)])
    o3 = _change(table, "gcc-O3")
    candidate = next(c for c in picked.candidates if c.id == "gcc-O3")
    assert (o3.ratio, o3.ci95) == (candidate.ratio, candidate.ci95)
    assert o3.size_ratio == pytest.approx(1.3) and o3.build_cpu_ratio == pytest.approx(1.2)
    assert o3.skew == pick.Skew(faster=3, equivalent=0, slower=0, undecided=0)
    ratios = sorted(_row(table, p, "gcc-O3").ratio for p in ("alpha", "beta", "=gamma"))
    assert o3.spread == (ratios[0], ratios[1], ratios[2])
    # the pick, and where it does worst
    assert table.chosen is o3 and table.why.startswith("debian +O3: -")
    assert o3.worst.program == "=gamma" and o3.worst.ratio == ratios[-1]
    # a broken package is counted apart and has no ratio in the mean
    lto = _change(table, "gcc-lto")
    assert lto.broken == ["beta"] and lto.note == "breaks 1 package(s): beta"
    assert sum(vars(lto.skew).values()) == 2
    both = [_row(table, p, "gcc-lto") for p in ("alpha", "=gamma")]
    assert lto.ratio == pytest.approx(math.sqrt(both[0].ratio * both[1].ratio))
    fp = _change(table, "gcc-frame-pointers")
    assert fp.skew.slower == 2 and fp.broken == [] and fp.ratio > 1


def test_what_was_not_measured_and_what_the_campaign_cost(written):
    _, table, _ = written
    gone, failed = table.unmeasured
    assert (gone.name, gone.stage) == ("delta", "report") and "no such file" in gone.error
    assert (failed.name, failed.stage, failed.package) == ("eps", "generate", "eps-src")
    assert failed.error.startswith(fx.FAILED)
    assert table.total("generate_seconds") == sum(g for g, _ in fx.SECONDS.values())
    assert table.total("sweep_seconds") == 1420.0
    assert [p.status for p in table.packages] == ["swept"] * 3 + ["unmeasured", "failed"]


def test_the_csv_reads_back_and_no_cell_is_a_formula(written):
    campaign_json, table, _ = written
    text = (campaign_json.parent / "distro.csv").read_bytes().decode()
    assert text.count("\r\n") == 1 + len(table.rows)          # RFC 4180 line ends
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert list(rows[0]) == list(CSV_COLUMNS)
    lto = next(r for r in rows if (r["package"], r["change"]) == ("beta", "debian +lto"))
    assert (lto["verdict"], lto["tests"], lto["ratio"]) == ("broken", "failed", "")
    o3 = next(r for r in rows if (r["package"], r["change"]) == ("alpha", "debian +O3"))
    assert float(o3["ci_low"]) < float(o3["ratio"]) < float(o3["ci_high"]) < 1
    assert (o3["text_size_ratio"], o3["build_cpu_ratio"]) == ("1.3000", "1.2000")
    # what a spreadsheet would run starts with a quote instead
    assert {r["package"] for r in rows} == {"alpha", "beta", "'=gamma"}
    assert o3["flags"] == "'" + " ".join([*fx.BASE, "-O3"])
    assert all(not cell.startswith(("=", "+", "-", "@")) for r in rows for cell in r.values())


class _Tables(HTMLParser):
    """The page's tables by id: each row's cells' text, and every cell's data-verdict."""

    def __init__(self):
        super().__init__()
        self.tables, self.verdicts, self.scripts = {}, [], 0
        self._table = self._row = None
        self._in_cell = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(a.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag == "td" and self._row is not None:
            self._row.append("")
            self._in_cell = True
            if "data-verdict" in a:
                self.verdicts.append(a["data-verdict"])
        self.scripts += tag == "script"

    def handle_endtag(self, tag):
        self._in_cell = self._in_cell and tag != "td"

    def handle_data(self, data):
        if self._in_cell:
            self._row[-1] += data


def test_the_page_shows_every_part_and_runs_nothing_it_was_given(written):
    campaign_json, table, page = written
    assert page == campaign_json.parent / "distro.html"
    html = page.read_text()
    parsed = _Tables()
    parsed.feed(html)
    assert parsed.scripts == 1                                 # base.html.j2's sorting only
    assert rf.EVIL not in html and "&lt;script&gt;" in html
    across = parsed.tables["across-table"][1:]
    assert [r[0].split()[0:2] for r in across] == [["debian", "+O3"],
                                                   ["debian", "+frame-pointers"],
                                                   ["debian", "+lto"]]
    assert "the pick" in across[0][0] and across[2][6].startswith("1 (33%)")
    packages = parsed.tables["package-table"][1:]
    assert [r[0:3] for r in packages] == [[name, f"1.{i}-2", "passed"] for i, name in
                                          enumerate(["alpha", "beta", "=gamma"], start=1)]
    assert parsed.verdicts.count("broken") == 1 and parsed.verdicts.count("faster") == 3
    assert 'href="p1/index.html"' in html and 'href="p2/' not in html
    unmeasured = parsed.tables["unmeasured-table"][1:]
    assert [(r[0], r[2]) for r in unmeasured] == [("delta", "report"), ("eps", "generate")]
    assert parsed.tables["costs-table"][-1][0] == "total"


def test_the_command_draws_it_again_elsewhere(written, tmp_path, main):
    campaign_json, _, _ = written
    code, err = main("distro", str(campaign_json.parent), "--out", str(tmp_path / "o"),
                     "--threshold", "5")
    assert (code, err) == (0, "")
    assert main.out.strip() == str(tmp_path / "o" / "distro.html")
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["distro.csv", "distro.html"]
    assert "&plusmn;5%" in (tmp_path / "o" / "distro.html").read_text()


def test_the_command_refuses_in_one_line(tmp_path, main, written):
    campaign_json, _, _ = written
    code, err = main("distro", str(tmp_path))
    assert (code, err) == (2, f"flagsweep: {tmp_path}: no campaign.json there (DIR is the "
                              "folder a campaign swept its packages into)\n")
    folder = tmp_path / "c"
    folder.mkdir()
    doc = json.loads(campaign_json.read_text())
    doc["packages"][1]["results"] = "../outside/results.json"
    (folder / "campaign.json").write_text(json.dumps(doc))
    code, err = main("distro", str(folder))
    assert code == 2 and err.count("\n") == 1
    assert "key 'packages[1].results': '../outside/results.json' is outside" in err
    del doc["packages"][1]["line"]
    (folder / "campaign.json").write_text(json.dumps(doc))
    code, err = main("distro", str(folder))
    assert code == 2 and err.count("\n") == 1 and "packages[1] lacks key(s) line" in err
    assert not (folder / "distro.html").exists()


def test_a_results_path_through_a_link_out_of_the_folder_is_refused(tmp_path_factory, written):
    campaign_json, _, _ = written
    scratch = tmp_path_factory.mktemp("link")
    folder = scratch / "c"
    shutil.copytree(campaign_json.parent, folder)
    (folder / "p1").rename(scratch / "outside")
    (folder / "p1").symlink_to(scratch / "outside")
    with pytest.raises(FlagsweepError, match=r"packages\[0\].results': 'p1/results.json' is "
                                             "outside the campaign's folder"):
        distro.build(folder / "campaign.json")


def test_a_results_file_the_reader_refuses_is_that_package_not_measured(tmp_path_factory,
                                                                        written):
    """One package's NaN stops neither the report nor the others: it is listed with the
    reader's line, as a missing file is; a pipe in a results file's place is not waited on."""
    campaign_json, _, _ = written
    folder = tmp_path_factory.mktemp("nan")
    shutil.copytree(campaign_json.parent, folder, dirs_exist_ok=True)
    beta = folder / "p2" / "results.json"
    beta.write_text(re.sub(r'"ratio": [0-9.]+', '"ratio": NaN', beta.read_text(), count=1))
    (folder / "p3" / "results.json").unlink()
    os.mkfifo(folder / "p3" / "results.json")
    table = distro.build(folder / "campaign.json")
    assert [p.name for p in table.packages if p.results] == ["alpha"]
    nan, pipe = (next(u for u in table.unmeasured if u.name == n) for n in ("beta", "=gamma"))
    assert nan.stage == "report" and "expected a finite number or null, got NaN" in nan.error
    assert pipe.error.endswith("p3/results.json: not a file")


def test_a_campaign_that_measured_nothing_still_has_its_report(tmp_path, written):
    campaign_json, _, _ = written
    doc = json.loads(campaign_json.read_text())
    doc["packages"] = doc["packages"][3:]
    (tmp_path / "campaign.json").write_text(json.dumps(doc))
    html = report.write_distro(tmp_path / "campaign.json").read_text()
    assert "no package of the campaign was measured" in html and "eps" in html


def test_a_change_a_package_did_not_sweep_is_absent_there_and_not_pooled(tmp_path_factory,
                                                                         written):
    campaign_json, _, _ = written
    folder = tmp_path_factory.mktemp("absent")
    shutil.copytree(campaign_json.parent, folder, dirs_exist_ok=True)
    gamma = folder / "p3" / "results.json"
    doc = json.loads(gamma.read_text())
    doc["variants"] = [v for v in doc["variants"] if v["id"] != "gcc-frame-pointers"]
    doc["skipped"] = [{"id": "gcc-frame-pointers", "flags": ["-fno-omit-frame-pointer"],
                       "reason": "this CPU lacks it"}]
    gamma.write_text(json.dumps(doc))
    table = distro.build(folder / "campaign.json")
    row = _row(table, "=gamma", "gcc-frame-pointers")
    assert (row.verdict, row.change, row.why) == ("absent", "debian +frame-pointers",
                                                  "skipped: this CPU lacks it")
    fp = _change(table, "gcc-frame-pointers")
    assert fp.ratio is None and fp.note == "not swept for =gamma" and fp.skew.slower == 2


def test_what_makes_a_change_broken_for_a_package():
    """A failed build, flags that did not reach it, a failed output check, its own tests
    failing where the baseline's pass; not a suite that fails at the baseline too."""
    doc = rf.model(rf.results_doc())
    v = {x.id: x for x in doc.variants}
    base = v["gcc-O2"]
    assert distro.broken(v["gcc-O2-fbroken"], v["gcc-O2-fbroken"], base).startswith(
        "build failed: ")
    assert distro.broken(v["gcc-O2-fsneaky"], v["gcc-O2-fsneaky"], base).startswith(
        "build flags-mismatch: compile line lacks -fsneaky")
    o3 = v["gcc-O3"]
    assert distro.broken(o3, o3, base) == ""
    o3.check.status = "failed"
    assert distro.broken(o3, o3, base).startswith("its output check failed: ")
    o3.check.status = "ok"
    o3.build.package_tests = PackageTests(status="timeout")
    assert distro.broken(o3, o3, base) == "its own tests timed out where the baseline's pass"
    base.build.package_tests = PackageTests(status="failed")
    assert distro.broken(o3, o3, base) == ""
