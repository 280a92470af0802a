"""A plain command's result read from the end of its stdout bytes (tui.agents.result_tail)."""

from __future__ import annotations

from tui.agents.result_tail import RESULT_LINES, TAIL_BYTES, ResultTail


def tail_of(*reads: bytes) -> str:
    t = ResultTail()
    for data in reads:
        t.feed(data)
    return t.result()


def test_the_last_lines_whole_however_they_were_read() -> None:
    long = "y" * 50_000  # longer than a stored line: several pieces in the output, one here
    text = "\n".join(f"line {i}" for i in range(30)) + "\n" + long + "\n"
    data = text.encode()
    assert tail_of(data) == "\n".join([*(f"line {i}" for i in range(11, 30)), long])
    assert tail_of(*(data[i : i + 7] for i in range(0, len(data), 7))) == tail_of(data)


def test_crlf_and_progress_bars_read_as_the_output_shows_them() -> None:
    assert tail_of(b"10%\r50%\r100%\r\nok\r\n", b"done") == "100%\nok\ndone"
    assert tail_of(b"") == ""


def test_a_result_that_began_before_the_window_is_marked_cut() -> None:
    big = b"[" + b"1," * TAIL_BYTES + b"1]\n"
    out = tail_of(*(big[i : i + 65536] for i in range(0, len(big), 65536)))
    assert out.startswith("…") and out.endswith("1,1]") and "\n" not in out
    # Enough whole lines after it: the cut line is not among the last ones, nothing is marked.
    lines = b"".join(b"%d\n" % i for i in range(RESULT_LINES))
    assert tail_of(big, lines) == "\n".join(str(i) for i in range(RESULT_LINES))
