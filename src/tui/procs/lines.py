"""Turn raw subprocess output bytes into stored log lines.

Rules (what a terminal would end up showing, minus cursor tricks):

* ``\\n`` and ``\\r\\n`` end a line; other Unicode line breaks are ordinary text.
* A bare ``\\r`` (progress bars: ``50%\\r60%\\r100%\\n``) means the terminal would
  overwrite the line, so only the text after the last bare ``\\r`` is kept; if that
  part is empty (``done\\r\\n``), the last non-empty segment is kept instead.
* Bytes are decoded as UTF-8 with an incremental decoder (characters split across
  reads survive) and ``errors="replace"`` (garbage becomes U+FFFD, never an error).
* ANSI escape sequences are kept verbatim; rendering them is the viewer's job.
* Lines longer than :data:`MAX_LINE_CHARS` are split into chunks of that size, each
  stored as its own line, and emitted as soon as they are complete so memory stays
  bounded even for a 100 MB line without a newline.  A bare ``\\r`` can then only
  overwrite the part of the line that has not been emitted yet.
"""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import Callable

__all__ = ["MAX_LINE_CHARS", "LineSplitter", "read_lines"]

#: Longest stored line, in characters; longer lines become several stored lines.
MAX_LINE_CHARS = 16_384


def _collapse_cr(line: str) -> str:
    """Apply bare-CR overwrite semantics to a line that has no ``\\n``."""
    if "\r" not in line:
        return line
    for seg in reversed(line.split("\r")):
        if seg:
            return seg
    return ""


def _chunks(line: str) -> list[str]:
    if len(line) <= MAX_LINE_CHARS:
        return [line]
    return [line[i : i + MAX_LINE_CHARS] for i in range(0, len(line), MAX_LINE_CHARS)]


class LineSplitter:
    """Incremental bytes → lines splitter; see the module docstring for the rules."""

    __slots__ = ("_decoder", "_pending")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        # Text of the current unfinished line; at most MAX_LINE_CHARS chars plus
        # trailing CRs between feeds.
        self._pending = ""

    def feed(self, data: bytes) -> list[str]:
        """Consume ``data`` and return the lines it completed (without terminators)."""
        text = self._decoder.decode(data)
        if not text:
            return []
        if self._pending:
            text = self._pending + text
        has_cr = "\r" in text
        if has_cr:
            # CRLF first at C speed; what remains are bare CRs (a CR at the very end
            # stays pending and can still pair with the next chunk's LF).
            text = text.replace("\r\n", "\n")
            has_cr = "\r" in text
        parts = text.split("\n")
        self._pending = parts.pop()
        out = self._finish(parts, has_cr, len(text)) if parts else []
        if self._pending:
            self._trim_pending(out)
        return out

    def flush(self) -> list[str]:
        """Return the unterminated last line at EOF (if any) and reset the splitter."""
        tail = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        self._decoder.reset()
        if not tail:
            return []
        line = _collapse_cr(tail)
        return _chunks(line) if line else []

    def _finish(self, lines: list[str], has_cr: bool, text_len: int) -> list[str]:
        # Fast path (the overwhelmingly common case): C-level checks over the whole
        # chunk instead of a Python-level loop per line.
        if not has_cr and (text_len <= MAX_LINE_CHARS or max(map(len, lines)) <= MAX_LINE_CHARS):
            return lines
        out: list[str] = []
        for s in lines:
            if "\r" in s:
                s = _collapse_cr(s)
            if len(s) <= MAX_LINE_CHARS:
                out.append(s)
            else:
                out.extend(_chunks(s))
        return out

    def _trim_pending(self, out: list[str]) -> None:
        """Keep the unfinished line bounded: drop overwritten text, emit full chunks."""
        pending = self._pending
        # Trailing CRs stay undecided: they may be half of a CRLF or precede new text.
        body = pending.rstrip("\r")
        crs = pending[len(body) :]
        if "\r" in body:
            body = body[body.rfind("\r") + 1 :]  # non-empty: body ends in a non-CR char
        if len(body) > MAX_LINE_CHARS:
            # Keep 1..MAX chars back so a line of exactly k*MAX chars followed by
            # "\n" does not produce a spurious empty line.
            cut = (len(body) - 1) // MAX_LINE_CHARS * MAX_LINE_CHARS
            out.extend(body[i : i + MAX_LINE_CHARS] for i in range(0, cut, MAX_LINE_CHARS))
            body = body[cut:]
        self._pending = body + crs


async def read_lines(
    stream: asyncio.StreamReader,
    on_lines: Callable[[list[str]], None],
    chunk: int = 65536,
) -> None:
    """Read ``stream`` to EOF, calling ``on_lines`` once per chunk that completed lines.

    Batching per read (not per line) lets the engine write output in batches.
    """
    splitter = LineSplitter()
    while True:
        data = await stream.read(chunk)
        if not data:
            break
        lines = splitter.feed(data)
        if lines:
            on_lines(lines)
    tail = splitter.flush()
    if tail:
        on_lines(tail)
