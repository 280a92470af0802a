from __future__ import annotations

import asyncio
import time

import pytest

from tui.procs.lines import MAX_LINE_CHARS, LineSplitter, read_lines


def split_all(*chunks: bytes) -> list[str]:
    s = LineSplitter()
    out: list[str] = []
    for c in chunks:
        out.extend(s.feed(c))
    out.extend(s.flush())
    return out


def split_bytewise(data: bytes) -> list[str]:
    return split_all(*(data[i : i + 1] for i in range(len(data))))


def test_simple_lines() -> None:
    assert split_all(b"a\nb\nc\n") == ["a", "b", "c"]


def test_empty_lines_preserved() -> None:
    assert split_all(b"a\n\nb\n") == ["a", "", "b"]
    assert split_all(b"\n\n") == ["", ""]


def test_feed_returns_only_completed_lines() -> None:
    s = LineSplitter()
    assert s.feed(b"hel") == []
    assert s.feed(b"lo\nwor") == ["hello"]
    assert s.feed(b"ld") == []
    assert s.flush() == ["world"]
    assert s.flush() == []


def test_split_across_chunk_boundaries() -> None:
    data = b"alpha\nbeta\r\ngamma\n\ndelta"
    expected = ["alpha", "beta", "gamma", "", "delta"]
    assert split_all(data) == expected
    assert split_bytewise(data) == expected
    for cut in range(len(data) + 1):
        assert split_all(data[:cut], data[cut:]) == expected, cut


def test_crlf() -> None:
    assert split_all(b"a\r\nb\r\n") == ["a", "b"]
    # CR and LF of one CRLF arriving in different reads.
    assert split_all(b"a\r", b"\nb\r", b"\n") == ["a", "b"]


def test_progress_carriage_returns() -> None:
    assert split_all(b"50%\r60%\r100%\nnext\n") == ["100%", "next"]
    # Empty text after the last bare CR keeps the previous segment.
    assert split_all(b"done\r\r\n") == ["done"]
    assert split_all(b"10%\r20%\r\n") == ["20%"]
    data = b"start\n10%\r20%\r30%\rok\r\nend"
    assert split_bytewise(data) == ["start", "ok", "end"]


def test_progress_without_newline_stays_bounded() -> None:
    s = LineSplitter()
    for i in range(100_000):
        assert s.feed(b"%d%%\r" % (i % 100)) == []
    assert len(s._pending) < 10
    assert s.flush() == ["99%"]


def test_partial_last_line_flushed() -> None:
    assert split_all(b"a\nlast") == ["a", "last"]
    s = LineSplitter()
    assert s.feed(b"a\n") == ["a"]
    assert s.flush() == []  # nothing pending: no spurious empty line


def test_invalid_utf8_replaced() -> None:
    assert split_all(b"ok \xff\xfe bad\n") == ["ok \ufffd\ufffd bad"]
    # A truncated multi-byte sequence at EOF also becomes U+FFFD.
    assert split_all(b"tail \xe2\x82") == ["tail \ufffd"]


def test_multibyte_char_split_across_feeds() -> None:
    data = "€ añb 😀\n".encode()
    assert split_bytewise(data) == ["€ añb 😀"]
    s = LineSplitter()
    assert s.feed(data[:1]) == []
    assert s.feed(data[1:]) == ["€ añb 😀"]


def test_long_line_split_into_chunks() -> None:
    n = MAX_LINE_CHARS * 3 + 123
    line = "".join(chr(ord("a") + i % 26) for i in range(n))
    data = line.encode() + b"\nshort\n"
    out = split_all(*(data[i : i + 1000] for i in range(0, len(data), 1000)))
    assert out[-1] == "short"
    chunks = out[:-1]
    assert [len(c) for c in chunks] == [MAX_LINE_CHARS] * 3 + [123]
    assert "".join(chunks) == line


def test_long_line_exact_multiple_has_no_spurious_empty_line() -> None:
    line = "x" * (MAX_LINE_CHARS * 2)
    assert split_all(line.encode() + b"\n") == ["x" * MAX_LINE_CHARS] * 2
    assert split_bytewise(b"y" * MAX_LINE_CHARS + b"\r\n") == ["y" * MAX_LINE_CHARS]
    # Same when the whole long line arrives in a single read.
    assert split_all(b"z" * (MAX_LINE_CHARS + 1) + b"\n") == ["z" * MAX_LINE_CHARS, "z"]


def test_huge_line_without_newline_is_emitted_incrementally() -> None:
    s = LineSplitter()
    block = b"q" * 65536
    total = 0
    for _ in range(200):  # ~13 MB, never a newline
        total += sum(len(x) for x in s.feed(block))
        assert len(s._pending) <= MAX_LINE_CHARS
    total += sum(len(x) for x in s.flush())
    assert total == 200 * len(block)


def test_ansi_codes_preserved() -> None:
    line = "\x1b[31mred\x1b[0m \x1b[1;32mbold green\x1b[0m"
    assert split_all(line.encode() + b"\n") == [line]


def test_other_unicode_breaks_are_text() -> None:
    assert split_all("a\x0bb\x0cc\u2028d\n".encode()) == ["a\x0bb\x0cc\u2028d"]


def test_million_lines_fast() -> None:
    data = b"".join(b"line number %d\n" % i for i in range(1_000_000))
    s = LineSplitter()
    t0 = time.perf_counter()
    n = 0
    for i in range(0, len(data), 65536):
        n += len(s.feed(data[i : i + 65536]))
    n += len(s.flush())
    elapsed = time.perf_counter() - t0
    assert n == 1_000_000
    assert elapsed < 2.0, elapsed


async def test_read_lines_from_subprocess() -> None:
    proc = await asyncio.create_subprocess_exec(
        "printf",
        r"one\ntwo\r\n\n50%%\r100%%\n\033[32mgreen\033[0m\nlast",
        stdout=asyncio.subprocess.PIPE,
    )
    batches: list[list[str]] = []
    assert proc.stdout is not None
    await read_lines(proc.stdout, batches.append)
    assert await proc.wait() == 0
    assert all(batches)  # never called with an empty batch
    assert [line for b in batches for line in b] == [
        "one",
        "two",
        "",
        "100%",
        "\x1b[32mgreen\x1b[0m",
        "last",
    ]


async def test_read_lines_batches_per_chunk() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(b"a\nb\nc\n")
    reader.feed_eof()
    batches: list[list[str]] = []
    await read_lines(reader, batches.append)
    assert batches == [["a", "b", "c"]]


@pytest.mark.parametrize("chunk", [1, 3, 7, 65536])
async def test_read_lines_small_chunks(chunk: int) -> None:
    reader = asyncio.StreamReader()
    reader.feed_data("x€\ny\r\nz".encode())
    reader.feed_eof()
    batches: list[list[str]] = []
    await read_lines(reader, batches.append, chunk=chunk)
    assert all(batches)
    assert [line for b in batches for line in b] == ["x€", "y", "z"]
