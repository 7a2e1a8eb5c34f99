"""flagsweep dashboard: a store of recorded nights (tests/report_fixture.py, no sweep) as a
static site. tiny: two steady nights, an unstable one (its A/A arm failed: unjudged), then
-O3 30% slower with the target's version 1.0 -> 1.1, a regression `history --check` fails on;
a second target whose name, variant and flags try to be HTML and to drive a terminal. One
site for the module, one Chromium session for the suite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import report_fixture as rf
from conftest import raw_controls

from flagsweep import report
from flagsweep.report import dashboard
from flagsweep.results.store import Store

STEADY = {"gcc-O2": (["-O2"], 1.0, 0.004), "gcc-O2.aa": (["-O2"], 1.0, 0.004),
          "gcc-O2.ref": (["-O2"], 1.0, 0.004), "gcc-O3": (["-O3"], 0.9, 0.004)}
# The program reads 30% slower and its own binary again (the A/A twin) does not: the machine
# moved that night, which judges nothing.
SHAKY = {**STEADY, "gcc-O2": (["-O2"], 1.3, 0.004), "gcc-O3": (["-O3"], 1.17, 0.004)}
SLOWER = {**STEADY, "gcc-O3": (["-O3"], 1.17, 0.004)}
HOSTILE = f"tiny{rf.EVIL}\"&amp;{rf.TITLE}"
EVIL_VARIANT = f"gcc-O1{rf.CLEAR}"
EVIL_PLAN = {"gcc-O2": (["-O2"], 1.0, 0.004),
             EVIL_VARIANT: (["-O1", f"-DX={rf.EVIL}&\"'{rf.CLEAR}"], 1.0, 0.004)}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, Path]:
    """(the store's file, the site's index.html)."""
    folder = tmp_path_factory.mktemp("dashboard")
    store = Store(f"sqlite:///{folder / 'store.sqlite'}")
    for night, plan in enumerate((STEADY, STEADY, SHAKY, SLOWER), start=1):
        rf.recorded(store, f"tiny-night-{night}", "tiny", plan, out=folder / f"n{night}",
                    seed=night)
    store.set_option("tiny-night-4", "target_version", "1.1")
    for night in (1, 2):
        rf.recorded(store, f"evil-night-{night}", HOSTILE, EVIL_PLAN, out=folder / f"e{night}",
                    seed=night)
    index = report.write_dashboard(store, folder / "site")
    store.engine.dispose()
    return folder / "store.sqlite", index


def _pages(index: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in index.parent.iterdir()}


def _text(html: str) -> str:
    """The page's text as a reader sees it: tags out, the entities autoescape writes back."""
    text = re.sub(r"<[^>]+>", " ", html)
    for entity, ch in (("&lt;", "<"), ("&gt;", ">"), ("&#34;", '"'), ("&#39;", "'"),
                       ("&amp;", "&")):
        text = text.replace(entity, ch)
    return re.sub(r"\s+", " ", text)


def test_an_index_and_a_page_per_target_and_nothing_else(site):
    _, index = site
    assert sorted(_pages(index)) == sorted(["index.html", dashboard.page_file("tiny"),
                                            dashboard.page_file(HOSTILE)])
    assert re.fullmatch(r"target-tiny_script_alert_x_script_amp_0_owned-[0-9a-f]{10}\.html",
                        dashboard.page_file(HOSTILE))
    assert dashboard.page_file("../../etc/passwd").startswith("target-etc_passwd-")
    assert dashboard.page_file("a/b") != dashboard.page_file("a_b")


def test_the_regression_is_on_the_index_with_what_changed(site):
    _, index = site
    text = _text(index.read_text())
    assert "fails (exit 1)" in text
    (line,) = re.findall(r"gcc-O3 : regression: \+[^;]*? in tiny-night-4 \(target 1\.0 -> 1\.1\)",
                         text)
    assert "+30." in line or "+29." in line
    # the steady series of the same night passed; the target's row counts them
    assert "1 slower" in text and "1 no difference" in text and "gcc 12.2.0" in text
    assert f'<a href="{dashboard.page_file("tiny")}#m1-s2"><code>gcc-O3</code></a>' \
        in index.read_text()                                      # the series' own plot


def test_the_unstable_night_is_shown_unjudged_with_why(site):
    _, index = site
    html = (index.parent / dashboard.page_file("tiny")).read_text()
    text = _text(html)
    assert "unjudged tiny-night-3: the sweep's A/A arm" in text and "unstable" in text
    assert html.count('<circle class="unjudged"') == 2  # drawn hollow on both series' axes
    # every judged night a dot, the step a dashed line in its verdict's colour
    assert html.count('<g class="night">') == 2 * 3
    assert html.count('class="step slower"') == 1


def test_hostile_names_are_text_and_control_characters_are_shown(site):
    _, index = site
    for name, html in _pages(index).items():
        assert raw_controls(html) == [], name
        assert "<script>alert" not in html and "alert('x')" not in html, name
    page = (index.parent / dashboard.page_file(HOSTILE)).read_text()
    assert "tiny&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&#34;&amp;amp;\\x1b]0;owned\\x07" \
        in page
    assert "gcc-O1\\x1b[2J" in page and "-DX=&lt;script&gt;" in page


def test_no_reference_leaves_the_site(site):
    _, index = site
    for name, html in _pages(index).items():
        urls = re.findall(r'(?:href|src|xlink:href)\s*=\s*"([^"]*)"', html)
        assert urls, name
        assert [u for u in urls if re.match(r"[a-z]+:|//", u, re.I)] == [], name
        assert not re.search(r"https?:|url\(|@import|\bsrc=", html), name


def test_the_command_writes_the_site_and_refuses_what_it_cannot_write(site, tmp_path,
                                                                      monkeypatch, main):
    db, _ = site
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{db}")
    code, err = main("dashboard", "--out", str(tmp_path / "site"), "--target", "tiny",
                     "--threshold", "5")
    assert code == 0, err
    assert main.out.strip() == str(tmp_path / "site" / "index.html")
    assert sorted(p.name for p in (tmp_path / "site").iterdir()) == [
        "index.html", dashboard.page_file("tiny")]
    (tmp_path / "file").write_text("")
    code, err = main("dashboard", "--out", str(tmp_path / "file"))
    assert code == 2 and "is a file" in err
    code, err = main("dashboard", "--out", str(tmp_path / "no" / "site"))
    assert code == 2 and "parent folder" in err and not (tmp_path / "no").exists()
    code, err = main("dashboard", "--out", str(tmp_path / "other"), "--target", "nothing")
    assert code == 2 and "--target 'nothing': no complete sweep" in err
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp_path / 'none.sqlite'}")
    code, err = main("dashboard", "--out", str(tmp_path / "other"))
    assert code == 2 and "nothing is stored yet" in err
    assert not (tmp_path / "other").exists() and not (tmp_path / "none.sqlite").exists()


def test_both_pages_load_clean_and_draw_in_chromium(site, browser, tmp_path):
    _, index = site
    load = browser.open(index, screenshot=tmp_path / "index.png")
    assert load.console_errors == [] and load.external_requests == []
    assert browser.evaluate("document.querySelectorAll('#dashboard-table tbody tr').length") == 2
    load = browser.open(index.parent / dashboard.page_file("tiny"),
                        screenshot=tmp_path / "tiny.png")
    assert load.console_errors == [] and load.external_requests == []
    assert browser.evaluate("document.querySelectorAll('svg.plot').length") == 2
    drawn = browser.evaluate("Array.from(document.querySelectorAll('svg.plot circle'))"
                             ".map(c => c.getBBox().width > 0).filter(Boolean).length")
    assert drawn == 2 * 3 + 2                 # the judged nights, and the unjudged one twice
    assert (tmp_path / "tiny.png").stat().st_size > 10_000
    # on a phone the plots scroll in their own box, the page never sideways (a page wider than
    # the phone widens the layout viewport with it: innerWidth is no yardstick)
    for page in (index, index.parent / dashboard.page_file("tiny")):
        browser.open(page, width=390, height=844)
        assert browser.evaluate("document.documentElement.scrollWidth") <= 390, page.name
