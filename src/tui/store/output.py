"""The ``output`` table (lines stored as chunks, see ``tui.store.chunks``) and ``raw_output``
(an agent CLI's protocol lines, for ``tui logs --raw``)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from tui.store.batch import Tx
from tui.store.chunks import ChunkRow, stored_lines
from tui.store.records import OutputLine

COLS = "id, task_id, run_id, stream, seq, at, text, lines"
# The chunks holding lines after ?2 (the first may begin before it: ?1 is ?2 + 1).
_FROM = (
    f"SELECT {COLS} FROM output WHERE id >= (SELECT COALESCE(MAX(id), 0)"
    " FROM output WHERE id <= ?) AND id + lines - 1 > ?"
)


def last_id(t: Tx) -> int:
    """The id of the newest stored line (the last line of the newest chunk)."""
    row = t.one("SELECT id + lines - 1 FROM output ORDER BY id DESC LIMIT 1")
    return int(row[0]) if row else 0


# An (run id, stream, byte offset): how far into that stream of its agent the run's stored
# lines reach.
Offset = tuple[int, int, int]


def append(t: Tx, chunks: Sequence[ChunkRow], offsets: Sequence[Offset] = ()) -> int:
    """Inside BEGIN IMMEDIATE nobody else writes, so the batch's lines take the ids that
    follow the last stored line, in order. Returns the first id. ``offsets`` are stored in
    the same transaction: where each stream's stored lines end, for the engine that adopts
    the run (tui.engine.adoption)."""
    first = last_id(t) + 1
    ids = accumulate((c[6] for c in chunks[:-1]), initial=first)
    t.db.executemany(
        "INSERT INTO output (id, task_id, run_id, stream, seq, at, text, lines)"
        " VALUES (?,?,?,?,?,?,?,?)",
        [(i, *c) for i, c in zip(ids, chunks, strict=True)],
    )
    for run_id, stream, offset in offsets:
        column = "out_offset" if stream == 1 else "err_offset"
        t.db.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (offset, run_id))
    return first


def run_offsets(t: Tx, run_id: int) -> tuple[int, int]:
    """How far into its agent's (stdout, stderr) a run's stored lines reach, in bytes."""
    row = t.one("SELECT out_offset, err_offset FROM runs WHERE id = ?", (run_id,))
    return (int(row[0]), int(row[1])) if row else (0, 0)


def append_raw(t: Tx, rows: Sequence[tuple[str, int, int, float, str]]) -> None:
    t.db.executemany(
        "INSERT INTO raw_output (task_id, run_id, seq, at, text) VALUES (?,?,?,?,?)", rows
    )


def read_raw(t: Tx, task_id: str) -> list[tuple[int, str]]:
    return t.all(
        "SELECT run_id, text FROM raw_output WHERE run_id IN"
        " (SELECT id FROM runs WHERE task_id = ?) ORDER BY run_id, seq",
        (task_id,),
    )


def read(
    t: Tx, task_id: str | None, after_id: int, limit: int, stream: int | None
) -> list[OutputLine]:
    sql = _FROM
    args: list[Any] = [after_id + 1, after_id]
    if task_id is not None:
        sql += " AND run_id IN (SELECT id FROM runs WHERE task_id = ?)"
        args.append(task_id)
    if stream is not None:
        sql += " AND stream = ?"
        args.append(stream)
    out: list[OutputLine] = []
    # Row by row: a page needs only as many chunks as hold `limit` lines.
    for row in t.db.execute(sql + " ORDER BY id", args):
        out.extend(ln for ln in stored_lines([row]) if ln.id > after_id)
        if len(out) >= limit:
            break
    return out[:limit]


def read_chunks(t: Tx, after_id: int, limit: int) -> list[tuple[int, ChunkRow]]:
    out: list[tuple[int, ChunkRow]] = []
    lines = 0
    for id_, *chunk in t.db.execute(_FROM + " ORDER BY id", (after_id + 1, after_id)):
        out.append((id_, tuple(chunk)))
        lines += chunk[6]
        if lines >= limit:
            break
    return out


def index(t: Tx, task_id: str) -> list[tuple[int, int]]:
    rows = t.all(
        "SELECT r.id, COALESCE((SELECT seq + lines - 1 FROM output o WHERE o.run_id = r.id"
        " ORDER BY seq DESC LIMIT 1), 0) FROM runs r WHERE r.task_id = ? ORDER BY r.id",
        (task_id,),
    )
    return [(int(r), int(n)) for r, n in rows]


def run_lines(t: Tx, run_id: int, first_seq: int, last_seq: int) -> list[OutputLine]:
    rows = t.all(
        f"SELECT {COLS} FROM output WHERE run_id = ? AND seq <= ? AND seq >="
        " (SELECT COALESCE(MAX(seq), 0) FROM output WHERE run_id = ? AND seq <= ?)"
        " ORDER BY seq",
        (run_id, last_seq, run_id, first_seq),
    )
    return [ln for ln in stored_lines(rows) if first_seq <= ln.seq <= last_seq]


def run_stored(t: Tx, run_id: int) -> tuple[int, int]:
    """The last line numbers stored for a run: (text, protocol)."""
    row = t.one(
        "SELECT (SELECT COALESCE(MAX(seq + lines - 1), 0) FROM output WHERE run_id = ?),"
        " (SELECT COALESCE(MAX(seq), 0) FROM raw_output WHERE run_id = ?)",
        (run_id, run_id),
    )
    return (int(row[0]), int(row[1])) if row else (0, 0)
