"""The report in a real browser (headless Chromium over CDP, tests/browser.py): it loads with
no console errors and no network requests, its tables sort, it fits a phone's width, and a
screenshot is saved."""

from __future__ import annotations

import report_fixture as rf

from flagsweep import report

PNG = b"\x89PNG\r\n\x1a\n"
VERDICT_COLUMN = "Array.from(document.querySelectorAll('#variants-table tbody tr')).map(r => r.cells[2].dataset.sort)"


def test_report_loads_clean_and_sorts(browser, tmp_path):
    page = report.write(rf.write(tmp_path / "run", rf.results_doc(counters=True, study=True)))
    shot = tmp_path / "report.png"
    load = browser.open(page, screenshot=shot)
    assert load.console_errors == []
    assert load.external_requests == []
    assert shot.read_bytes().startswith(PNG) and shot.stat().st_size > 20_000
    assert browser.evaluate("document.querySelectorAll('svg.plot').length") == 3
    assert browser.evaluate("document.title").startswith("tiny<script>")  # text, not markup
    assert browser.evaluate("document.scripts.length") == 1
    # Sort "vs baseline" by clicking its header: ascending numbers, empty cells last.
    browser.evaluate("document.querySelectorAll('#variants-table th button')[2].click()")
    cells = browser.evaluate(VERDICT_COLUMN)
    numbers = [float(c) for c in cells if c]
    assert numbers == sorted(numbers) and cells[len(numbers):] == [""] * (len(cells) - len(numbers))
    browser.evaluate("document.querySelectorAll('#variants-table th button')[2].click()")
    again = [float(c) for c in browser.evaluate(VERDICT_COLUMN) if c]
    assert again == sorted(numbers, reverse=True)


def test_the_layout_panel_renders(browser, tmp_path):
    """run --layouts: the page's Layout section, its plot and one row per variant, each layout
    a column; loads clean and fits a phone."""
    page = report.write(rf.write(tmp_path / "run", rf.layouts_doc()))
    load = browser.open(page, screenshot=tmp_path / "layouts.png", width=390, height=844)
    assert load.console_errors == [] and load.external_requests == []
    assert browser.evaluate("document.querySelectorAll('#layouts svg.plot').length") == 1
    assert browser.evaluate("document.querySelectorAll('#layouts tbody tr').length") == 3
    assert browser.evaluate("document.querySelectorAll('#layouts thead th').length") == 3 + 3
    text = browser.evaluate("document.querySelector('#layouts').innerText")
    assert "Layout alone moves this program by" in text and "across 3 layouts" in text
    assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_a_row_within_layout_luck_shows_its_label(browser, tmp_path):
    """A row layout luck could give reads "faster (one layout, within layout luck)" in the
    variants table, with why on hover, "one layout" in the effects table, and the note says
    what the label means; the page still loads clean and fits a phone."""
    page = report.write(rf.write(tmp_path / "run", rf.luck_doc()))
    load = browser.open(page, screenshot=tmp_path / "luck.png", width=390, height=844)
    assert load.console_errors == [] and load.external_requests == []
    badges = browser.evaluate("Array.from(document.querySelectorAll('#variants-table .badge'))"
                              ".map(b => [b.className, b.innerText, b.title])")
    luck = {text: (cls, title) for cls, text, title in badges if "layout luck" in text}
    assert set(luck) == {"faster (one layout, within layout luck)",
                         "slower (one layout, within layout luck)"}
    assert luck["faster (one layout, within layout luck)"][0] == "badge faster-luck"
    assert "(--no-confirm)" in luck["faster (one layout, within layout luck)"][1]
    matters = browser.evaluate("Array.from(document.querySelectorAll('#effects tbody tr'))"
                               ".map(r => [r.cells[0].innerText, r.cells[5].innerText])")
    assert dict(matters) == {"opt = -O1": "one layout", "opt = -Os": "one layout",
                             "opt = -O3": "yes"}
    assert "could be the luck of one build's code layout" in \
        browser.evaluate("document.querySelector('#layout-luck').innerText")
    assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_report_fits_a_phone(browser, tmp_path):
    page = report.write(rf.write(tmp_path / "run", rf.results_doc()))
    load = browser.open(page, screenshot=tmp_path / "phone.png", width=390, height=844)
    assert load.console_errors == [] and load.external_requests == []
    # Wide tables scroll inside their own box; the page itself never scrolls sideways.
    assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_compare_page_loads_clean(browser, tmp_path):
    a = rf.write(tmp_path / "a", rf.results_doc(seed=5))
    b = rf.write(tmp_path / "b", rf.results_doc(seed=6, scale={"gcc-O0": 1.1}))
    report.write_comparison(a, b, tmp_path / "cmp")
    load = browser.open(tmp_path / "cmp" / "compare.html", screenshot=tmp_path / "cmp.png")
    assert load.console_errors == [] and load.external_requests == []
    assert browser.evaluate("document.querySelectorAll('#compare-table tbody tr').length") == len(rf.PLAN)


def test_merged_page_loads_clean(browser, tmp_path):
    from flagsweep.across import merge

    docs = []
    for name, seed in (("alpha", 1), ("beta", 2)):
        doc = rf.results_doc(seed=seed)
        doc["machine"].update(hostname=name)
        docs.append(rf.write(tmp_path / name, doc))
    page = report.write_merge(merge.load_all(docs), tmp_path / "merged")
    load = browser.open(page)
    assert load.console_errors == [] and load.external_requests == []
    assert browser.evaluate("document.querySelectorAll('#merge-table tbody tr').length") == len(rf.PLAN) - 1


def test_suite_page_loads_clean_and_fits_a_phone(browser, tmp_path):
    from flagsweep.across import suite

    paths = []
    for name, seed in (("alpha", 1), ("beta", 2)):
        doc = rf.results_doc(seed=seed)
        doc["target"] = name
        paths.append(rf.write(tmp_path / name, doc))
    page = report.write_suite(suite.build(suite.load_all(paths)), tmp_path / "suite")
    load = browser.open(page, screenshot=tmp_path / "suite.png", width=390, height=844)
    assert load.console_errors == [] and load.external_requests == []
    # one row per compared variant (not the baseline, not the A/A copy)
    assert browser.evaluate("document.querySelectorAll('#suite-table tbody tr').length") == len(rf.PLAN) - 2
    assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_distro_page_loads_clean_and_fits_a_phone(browser, tmp_path, tmp_path_factory):
    import distro_fixture

    # the campaign's results are report_fixture's, held to the contract by their own tests:
    # outside tmp_path, they are not validated again after this one
    page = report.write_distro(distro_fixture.campaign(tmp_path_factory.mktemp("campaign")))
    load = browser.open(page, screenshot=tmp_path / "distro.png", width=390, height=844)
    assert load.console_errors == [] and load.external_requests == []
    # a row per measured package; the wide tables scroll in their box, never the page
    assert browser.evaluate("document.querySelectorAll('#package-table tbody tr').length") == 3
    assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_the_explain_section_draws_a_diverging_chart_per_variant(browser, tmp_path):
    """run --explain: one diverging bar chart and one table per explained variant; loads clean
    and fits a phone."""
    page = report.write(rf.write(tmp_path / "run", rf.explained_doc()))
    load = browser.open(page, screenshot=tmp_path / "explain.png", width=390, height=844)
    assert load.console_errors == [] and load.external_requests == []
    assert browser.evaluate("document.querySelectorAll('#explain figure.diverging svg.plot')"
                            ".length") == 2
    # Diverging: -O3's bars go both ways (fewer instructions green, more red).
    o3 = "document.querySelectorAll('#explain figure.diverging')[0]"
    assert browser.evaluate(f"{o3}.querySelectorAll('path[style*=\"fill: #1a7f37\"]').length") == 3
    assert browser.evaluate(f"{o3}.querySelectorAll('path[style*=\"fill: #cf222e\"]').length") == 1
    assert browser.evaluate("document.querySelectorAll('#explain table tbody tr').length") == 4 + 5
    text = browser.evaluate("document.querySelector('#explain').innerText")
    assert "longest_match" in text and "<script>alert('x')</script>" in text  # text, not markup
    assert "inlined" in text
    # The vectorisers' remarks: what changed in the cell, the remarks in its tooltip.
    cell = "[...document.querySelectorAll('#explain td.remarks')].find(c => c.innerText.includes('loop'))"
    assert browser.evaluate(f"{cell}.innerText") == "none -> 2 loops"
    assert "loop vectorized using 16 byte vectors" in browser.evaluate(f"{cell}.title")
    assert "control flow in loop" in browser.evaluate(f"{cell}.title")
    assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
