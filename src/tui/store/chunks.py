"""Output is stored one row per read chunk, not one row per line.

SQLite inserts about 500k rows/s on a small machine, so a row per line caps capture there.
A chunk row holds the lines of one read of one stream of one run: ``text`` is the lines
joined by ``\\n`` and ``lines`` how many there are. Line numbers and ids stay per line: the
chunk's ``seq`` and ``id`` are those of its first line, and line ``i`` of the chunk has
``seq + i`` and ``id + i``. So ids stay commit-ordered line numbers across all tasks and every
reader (cursors, paging by run and line number) works on lines exactly as before.

A line may itself contain ``\\n`` only when an adapter hands one over; such a line is stored as
a chunk of its own (``lines`` = 1 is never split), so splitting never changes what was written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from tui.store.records import OutputLine

# task_id, run_id, stream, first seq, at, text (lines joined by "\n"), number of lines
ChunkRow = tuple[str, int, int, int, float, str, int]
# task_id, run_id, stream, seq, at, text: one line
LineRow = tuple[str, int, int, int, float, str]


def make_chunks(
    task_id: str, run_id: int, stream: int, first_seq: int, at: float, lines: Sequence[str]
) -> list[ChunkRow]:
    """The chunk rows that store ``lines`` (numbered from ``first_seq``)."""
    n = len(lines)
    text = "\n".join(lines)
    if text.count("\n") == n - 1:  # the common case: no line holds a newline of its own
        return [(task_id, run_id, stream, first_seq, at, text, n)]
    return [(task_id, run_id, stream, first_seq + i, at, line, 1) for i, line in enumerate(lines)]


def group_rows(rows: Sequence[LineRow], max_lines: int = 4096) -> list[ChunkRow]:
    """Line rows → chunk rows: consecutive lines of one run and stream with the same time and
    consecutive numbers share a chunk (at most ``max_lines``)."""
    out: list[ChunkRow] = []
    start = 0
    for i in range(1, len(rows) + 1):
        if i < len(rows) and i - start < max_lines:
            a, b = rows[i - 1], rows[i]
            if a[:3] == b[:3] and a[4] == b[4] and a[3] + 1 == b[3]:
                continue
        first = rows[start]
        out += make_chunks(*first[:5], [r[5] for r in rows[start:i]])
        start = i
    return out


def split_text(text: str, n: int) -> list[str]:
    return text.split("\n") if n > 1 else [text]


def chunk_rows(chunks: Sequence[ChunkRow]) -> list[LineRow]:
    """Chunks → one row per line, in order."""
    out: list[LineRow] = []
    for task_id, run_id, stream, seq, at, text, n in chunks:
        out.extend(
            (task_id, run_id, stream, seq + i, at, line)
            for i, line in enumerate(split_text(text, n))
        )
    return out


def stored_lines(rows: Sequence[tuple[Any, ...]]) -> Iterator[OutputLine]:
    """Stored chunk rows ``(id, task_id, run_id, stream, seq, at, text, lines)`` → lines."""
    for id_, task_id, run_id, stream, seq, at, text, n in rows:
        for i, line in enumerate(split_text(text, n)):
            yield OutputLine(id_ + i, task_id, run_id, stream, seq + i, at, line)
