"""Text helpers for the log view: one stored output line → what a terminal cell grid shows.

Kept apart from the widget so that searching (which must stay cheap on a million lines) and
rendering agree on what a line's visible text is.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

TAB_SIZE = 8

# The same escape-sequence grammar rich's AnsiDecoder uses, so plain text and rendered text agree.
_ANSI = re.compile(
    r"(?:\x1b[0-?])|(?:\x1b\](?:.*?)\x1b\\)|(?:\x1b(?:[(@-Z\\-_]|\[[0-?]*[ -/]*[@-~]))"
)
# Control characters other than tab and escape would move a real terminal's cursor.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1a\x1c-\x1f\x7f]")
# Anything that needs more than the identity transform to become plain text.
_SPECIAL = re.compile(r"[\x00-\x1f\x7f]")


def sanitize(raw: str) -> str:
    """Apply carriage returns as a terminal would and neutralise other control characters.

    Escape sequences and tabs are kept (they are handled by the renderer)."""
    if not _SPECIAL.search(raw):
        return raw
    s = raw.rstrip("\r\n")
    if "\r" in s:
        s = s.rsplit("\r", 1)[-1]  # progress bars: the last overwrite is what shows
    return _CONTROL.sub("\ufffd", s)


def plain(raw: str) -> str:
    """The characters a user sees for ``raw``: escapes removed, tabs expanded."""
    if not _SPECIAL.search(raw):
        return raw
    s = sanitize(raw)
    if "\x1b" in s:
        s = _ANSI.sub("", s)
    return s.expandtabs(TAB_SIZE) if "\t" in s else s


def width(raw: str) -> int:
    """Terminal cells ``raw`` occupies once rendered."""
    p = plain(raw)
    return len(p) if p.isascii() else cell_len(p)


def to_text(raw: str, style: Style) -> Text:
    """A rich Text for one line: ANSI colours as styles on top of ``style``, tabs expanded."""
    s = sanitize(raw)
    if "\x1b" in s:
        text = Text.from_ansi(s, style=style, end="", no_wrap=True)
        text.end = ""
    else:
        text = Text(s, style=style, end="", no_wrap=True)
    if "\t" in s:
        text.expand_tabs(TAB_SIZE)
    return text
