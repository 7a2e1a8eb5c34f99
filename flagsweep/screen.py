"""Text on a terminal: what flagsweep prints from data is shown, never obeyed.

A results.json, a tune.json, a store row, a lock file in /tmp and a binary's symbol names are
data anyone may have written, and flagsweep prints them as root. An escape sequence in one of
them (`ESC ] 0 ; title BEL` sets the window's title, `ESC [ 2 J` clears the screen, some
terminals answer queries as if typed) would drive the terminal. So every control character
reaches the terminal written out (`\\x1b`), never raw: `shown` is the one rule, applied where
text meets a stream (`Screen`, which `cli.main` puts over stdout and stderr) and by the rich
consoles, whose own colours and progress bar are the only escapes that reach the terminal.
"""

from __future__ import annotations

import re
from typing import TextIO

# C0 but for tab and newline (a line and a table need them), DEL, C1 (CSI 0x9b and OSC 0x9d
# act like ESC [ and ESC ] on terminals that read 8-bit controls), and lone surrogates (bytes
# that were not UTF-8, which a stream writing with surrogateescape would put back raw).
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def shown(text: str) -> str:
    """text with each control character written out as Python writes it in a string
    (`\\x1b`, `\\x9b`, `\\udc9b`); text without one comes back as it is."""
    return CONTROL.sub(_written_out, text)


def _written_out(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xff else f"\\u{code:04x}"


class Screen:
    """A text stream that writes what it is given to the stream under it, its control
    characters shown: flagsweep's stdout and stderr while a command runs, so that a message,
    a log line, a click usage error or a traceback that quotes data cannot drive the terminal.
    Only text is taken: bytes written past it would skip the rule."""

    def __init__(self, under: TextIO):
        self.under = under

    def write(self, text: str) -> int:
        self.under.write(shown(text))
        return len(text)

    def flush(self) -> None:
        self.under.flush()

    def isatty(self) -> bool:
        return self.under.isatty()

    def fileno(self) -> int:
        return self.under.fileno()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return self.under.closed

    @property
    def encoding(self) -> str | None:
        return getattr(self.under, "encoding", None)

    @property
    def errors(self) -> str | None:
        return getattr(self.under, "errors", None)


def beneath(stream: TextIO) -> TextIO:
    """The stream under a Screen (any other stream as it is): where a rich console writes,
    having shown the data's control characters itself, so its own colours and progress bar
    reach the terminal."""
    return stream.under if isinstance(stream, Screen) else stream
