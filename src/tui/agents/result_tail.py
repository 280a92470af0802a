"""A plain command's result: its last stdout lines, taken from the bytes it printed.

The stored output splits a line longer than 16 KiB into pieces (tui.procs.lines), and a piece
cannot be told from a line of its own; a JSON result printed as one 200 KiB line must not
come back with newlines inside it. So the result is read from the end of stdout as printed:
the last ``RESULT_LINES`` lines, whole, within the last ``TAIL_BYTES`` bytes. A result whose
start lies further back is kept from where the window starts, after a leading ``…`` (as a
result over the stored cap is, tui.model.workflow.cap_result), and a note says why when
it then does not parse (tui.model.workflow.CUT_NOTE).
"""

from __future__ import annotations

from tui.model.workflow import RESULT_TAIL_BYTES as TAIL_BYTES
from tui.procs.lines import _collapse_cr

RESULT_LINES = 20  # a plain command's last stdout lines are its result (shown in a review)


class ResultTail:
    """The end of stdout (at most about ``TAIL_BYTES`` plus one read are held)."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._dropped = False  # bytes before the window were dropped

    def feed(self, data: bytes) -> None:
        self._buf += data
        if len(self._buf) > TAIL_BYTES + TAIL_BYTES // 4:  # trim now and then, not each read
            del self._buf[: len(self._buf) - TAIL_BYTES]
            self._dropped = True

    def result(self) -> str:
        """The last lines, as the stored output shows them (a bare CR overwrites), joined by
        newlines; led by ``…`` when the first of them began before the window."""
        if not self._buf:  # most commands print nothing: no decoding and splitting
            return ""
        cut = self._dropped or len(self._buf) > TAIL_BYTES
        # A window that starts inside a UTF-8 character only loses that character.
        text = bytes(self._buf[-TAIL_BYTES:]).decode(errors="replace").replace("\r\n", "\n")
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()  # the newline that ended the last line
        whole = len(lines) > RESULT_LINES or not cut
        kept = [_collapse_cr(ln) for ln in lines[-RESULT_LINES:]]
        return "\n".join(kept) if whole else "…" + "\n".join(kept)
