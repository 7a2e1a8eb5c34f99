"""The headless-Chromium helper in tests/browser.py, checked on tiny pages of its own."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from browser import BrowserError  # the `browser` fixture is in conftest.py

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Without this, a mobile-emulated page lays out at the legacy 980 px, not the device width.
VIEWPORT_META = '<meta name="viewport" content="width=device-width">'


def page(tmp_path: Path, html: str) -> Path:
    path = tmp_path / "page.html"
    path.write_text(f"<!doctype html><html><head>{VIEWPORT_META}<title>t</title></head>"
                    f"<body>{html}</body></html>")
    return path


def png_size(path: Path) -> tuple[int, int]:
    return struct.unpack(">II", path.read_bytes()[16:24])  # IHDR width, height


def test_clean_page_has_no_errors_no_external_requests_and_a_full_page_screenshot(browser, tmp_path):
    shot = tmp_path / "shots" / "clean.png"
    path = page(tmp_path, '<div style="height:2500px">tall</div>')
    load = browser.open(path, screenshot=shot)
    assert load.console_errors == []
    assert load.external_requests == []
    assert load.requests == [path.resolve().as_uri()]
    assert load.screenshot == shot
    assert shot.read_bytes().startswith(PNG_SIGNATURE) and shot.stat().st_size > 0
    assert png_size(shot)[1] >= 2500  # beyond the 900 px viewport


def test_console_error_is_reported(browser, tmp_path):
    load = browser.open(page(tmp_path, '<script>console.error("boom")</script>'))
    assert len(load.console_errors) == 1
    assert "boom" in load.console_errors[0]


def test_uncaught_exception_is_reported(browser, tmp_path):
    load = browser.open(page(tmp_path, '<script>throw new Error("kaboom")</script>'))
    assert any("kaboom" in error for error in load.console_errors)


def test_external_request_is_reported(browser, tmp_path):
    load = browser.open(page(tmp_path, '<img src="http://127.0.0.1:9/x.png">'))
    assert load.external_requests == ["http://127.0.0.1:9/x.png"]


def test_evaluate_returns_values_from_the_open_page(browser, tmp_path):
    browser.open(page(tmp_path, "<p>hi</p>"))
    assert browser.evaluate("1+2") == 3
    assert browser.evaluate("document.title") == "t"
    assert browser.evaluate("Promise.resolve(7)") == 7


def test_evaluate_raises_with_the_js_error(browser, tmp_path):
    browser.open(page(tmp_path, "<p>hi</p>"))
    with pytest.raises(BrowserError, match="nope"):
        browser.evaluate('throw new Error("nope")')


def test_phone_width_sets_the_viewport(browser, tmp_path):
    browser.open(page(tmp_path, "<p>small</p>"), width=390, height=844)
    assert browser.evaluate("window.innerWidth") == 390
