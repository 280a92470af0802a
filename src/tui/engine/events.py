"""What the engine's event stream carries. Journal events and output lines each keep their own
commit-ordered id; a Cursor holds both so a viewer can resume with no gap and no duplicate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from tui.store.chunks import ChunkRow, LineRow, chunk_rows
from tui.store.records import EventRecord, OutputLine

OutputRow = LineRow  # task_id, run_id, stream, seq, at, text


class Cursor(NamedTuple):
    event_id: int = 0
    output_id: int = 0


class OutputBatch:
    """Lines stored together, ids ``first_id..last_id``. Line rows and objects are built only
    if a viewer looks at them, so a million-line run costs nothing for viewers that don't."""

    _chunks: Sequence[ChunkRow]  # set by of_chunks; ``rows`` splits them when first read

    def __init__(self, first_id: int, rows: Sequence[OutputRow]) -> None:
        self.first_id = first_id
        self.__dict__["rows"] = rows
        self.count = len(rows)

    @classmethod
    def of(cls, lines: Sequence[OutputLine]) -> OutputBatch:
        batch = cls(
            lines[0].id,
            [(ln.task_id, ln.run_id, ln.stream, ln.seq, ln.at, ln.text) for ln in lines],
        )
        batch.__dict__["lines"] = list(lines)
        return batch

    @classmethod
    def of_chunks(cls, first_id: int, chunks: Sequence[ChunkRow]) -> OutputBatch:
        """The lines of stored chunks (see ``tui.store.chunks``), split only when read."""
        batch = cls.__new__(cls)
        batch.first_id = first_id
        batch.count = sum(c[6] for c in chunks)
        batch._chunks = chunks
        return batch

    @classmethod
    def of_stored(cls, chunks: Sequence[tuple[int, ChunkRow]]) -> list[OutputBatch]:
        """Batches of stored (first line id, chunk) pairs; a gap in the ids starts a new one."""
        out: list[OutputBatch] = []
        start = 0
        for i in range(1, len(chunks) + 1):
            if i < len(chunks) and chunks[i][0] == chunks[i - 1][0] + chunks[i - 1][1][6]:
                continue
            out.append(cls.of_chunks(chunks[start][0], [c for _, c in chunks[start:i]]))
            start = i
        return out

    @cached_property
    def rows(self) -> Sequence[OutputRow]:
        return chunk_rows(self._chunks)

    @property
    def last_id(self) -> int:
        return self.first_id + self.count - 1

    def after(self, output_id: int) -> OutputBatch | None:
        """The part of this batch newer than ``output_id`` (None if nothing is)."""
        if self.last_id <= output_id:
            return None
        if self.first_id > output_id:
            return self
        skip = output_id - self.first_id + 1
        return OutputBatch(output_id + 1, self.rows[skip:])

    @cached_property
    def lines(self) -> list[OutputLine]:
        return [OutputLine(self.first_id + i, *row) for i, row in enumerate(self.rows)]

    @property
    def chunks(self) -> Sequence[ChunkRow] | None:
        """The stored chunks, while nobody has split them into lines (else None)."""
        return None if "rows" in self.__dict__ else getattr(self, "_chunks", None)

    def lines_of(self, task_id: str) -> list[OutputLine]:
        """One task's lines: a viewer that shows one task splits only that task's chunks."""
        chunks = self.chunks
        if chunks is None:
            return [ln for ln in self.lines if ln.task_id == task_id]
        out: list[OutputLine] = []
        line_id = self.first_id
        for c in chunks:
            if c[0] == task_id:
                out += [OutputLine(line_id + i, *row) for i, row in enumerate(chunk_rows([c]))]
            line_id += c[6]
        return out


# Journal kinds: submitted, state, run_ended, question, answered. A run's end is in the data of
# the state it moved its task to (run_id, outcome, exit_code, ...); run_ended only when it moved
# none (see tui.store.db.Store.end_run).
Event = EventRecord | OutputBatch


@dataclass(frozen=True)
class Notice:
    """Not an event but news about the stream itself, for a remote viewer to show: it fell
    behind (``lagged``), lost the daemon (``disconnected``), or caught up again."""

    kind: str  # lagged | disconnected | reconnected
    text: str


def advance(cursor: Cursor, item: Event) -> Cursor:
    """The cursor just past ``item``."""
    # Built directly: NamedTuple._replace (a keyword call through _make) took ~3x as long,
    # and this runs twice for every event (publish, then each viewer).
    if isinstance(item, OutputBatch):
        return Cursor(cursor[0], item.last_id)
    return Cursor(item.id, cursor[1])


def newer(item: Event, cursor: Cursor) -> Event | None:
    """The part of ``item`` after ``cursor`` (None if it was all seen)."""
    if isinstance(item, OutputBatch):
        return item.after(cursor.output_id)
    return item if item.id > cursor.event_id else None
