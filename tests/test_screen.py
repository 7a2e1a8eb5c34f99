"""Text from data on the terminal: shown, never obeyed (flagsweep.screen). The rule itself, the
stream main puts over stdout and stderr, and the rich consoles, whose own colours and progress
bar must still reach a terminal. Each door data comes in by is tested beside its command
(report, the tune page, history, the lock, explain, pick)."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from flagsweep.report import formats, terminal
from flagsweep.screen import Screen, beneath, shown


class Terminal(io.StringIO):
    """A stream that says it is a terminal, so rich draws colours and live bars on it."""

    def isatty(self) -> bool:
        return True


def test_every_control_character_is_written_out_and_text_is_kept():
    assert shown("a\x1b]0;owned\x07b\x1b[2Jc") == r"a\x1b]0;owned\x07b\x1b[2Jc"
    assert shown("\x00\x08\x0b\x0c\r\x7f\x80\x9b\x9d\x9f") == \
        r"\x00\x08\x0b\x0c\x0d\x7f\x80\x9b\x9d\x9f"
    assert shown("\udc9b") == r"\udc9b"          # a byte that was not UTF-8 (surrogateescape)
    text = "tab\tnew\nline: -O2 -march=native é ü 中文 ✓ [brackets] \\x1b"
    assert shown(text) == text
    assert shown(shown("\x1b[2J")) == shown("\x1b[2J")


def test_a_screen_writes_the_stream_under_it_shown_and_is_that_stream_otherwise():
    under = Terminal()
    screen = Screen(under)
    print("held by \x1b]0;owned\x07", file=screen)
    assert under.getvalue() == "held by \\x1b]0;owned\\x07\n"
    assert screen.isatty() and screen.encoding == under.encoding and beneath(screen) is under
    assert beneath(under) is under


def test_rich_leaves_escape_sequences_in_a_string_so_flagsweeps_console_shows_them():
    """rich strips BEL and a few others from a str, but not ESC or C1: a plain console would
    pass a title or a clear-screen on. flagsweep's console shows them, and its own colours
    still reach a terminal."""
    plain = io.StringIO()
    Console(file=plain, width=80).print("id\x1b[2J\x1b]0;owned\x07\x9b", markup=False)
    assert "\x1b[2J" in plain.getvalue() and "\x1b]0;owned" in plain.getvalue()
    tty = Terminal()
    out = formats.console(tty, 80)
    t = formats.table("title \x1b]0;owned\x07")
    t.add_column("variant")
    t.add_row("gcc-O3\x1b[2J")
    out.print(t)
    out.print("stopped: \x9b2J", markup=False)
    text = tty.getvalue()
    assert "\x1b[1m" in text                           # the bold header: rich's own escape
    assert "\x1b[2J" not in text and "\x1b]" not in text and "\x9b" not in text
    assert r"\x1b]0;owned" in text and r"gcc-O3\x1b[2J" in text
    assert r"stopped: \x9b2J" in text


def test_the_live_bar_still_draws_on_a_terminal_and_shows_a_variants_escapes(monkeypatch):
    tty = Terminal()
    monkeypatch.setattr("sys.stderr", Screen(tty))
    plan = SimpleNamespace(warmup=0, max_runs=2, variant_ids=["gcc-O2", "gcc-O3\x1b]0;owned\x07"])
    with terminal.progress(plan) as tick:
        tick("gcc-O3\x1b]0;owned\x07", 0, 0)
    drawn = tty.getvalue()
    assert "\x1b[?25l" in drawn and "\x1b[2K" in drawn  # rich hides the cursor, clears its line
    assert r"round 1 gcc-O3\x1b]0;owned\x07" in drawn and "\x1b]" not in drawn
