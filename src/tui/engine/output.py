"""Output capture: lines of running tasks buffered and stored in batches, then published.

Lines are stored before viewers see them (see ``stream``), a frame's worth at a time; a
producer faster than the database waits only when the writer is a whole batch behind.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tui.engine.events import OutputBatch
from tui.store.chunks import ChunkRow, make_chunks
from tui.store.db import DiskFullError, Store
from tui.store.records import RAW

FLUSH_INTERVAL = 0.05  # seconds between output batches (a UI frame or so)
FLUSH_HIGH_WATER = 20_000  # lines buffered before a producer waits for the writer


@dataclass
class LineCounter:
    """Where one run's lines stand: the next line numbers of its text and protocol streams."""

    task_id: str
    run_id: int
    seq: int = 0
    raw_seq: int = 0
    # Told (stream, byte offset) once the run's lines up to there are committed: the keeper
    # then lets go of those bytes (tui.procs.keeper).
    ack: Callable[[int, int], None] | None = field(default=None, repr=False, compare=False)


class OutputBuffer:
    def __init__(
        self,
        store: Store,
        publish: Callable[[OutputBatch], None],
        not_stored: Callable[[DiskFullError, set[int]], None],
    ) -> None:
        self._store = store
        self._publish = publish
        self._not_stored = not_stored  # told which runs' lines the full disk refused
        self._chunks: list[ChunkRow] = []  # one per read: see tui.store.chunks
        self._lines = 0  # lines in _chunks
        self._raw: list[tuple[str, int, int, float, str]] = []
        # (run id, stream) → how far into that stream the buffered lines reach, and the run.
        self._ends: dict[tuple[int, int], tuple[int, LineCounter]] = {}
        self._lock = asyncio.Lock()
        # Taken by a flush, not yet committed.
        self._writing: tuple[list[ChunkRow], list[tuple[str, int, int, float, str]]] = ([], [])
        self._flushing: asyncio.Future[None] | None = None
        self._ready = asyncio.Event()
        # Runs whose lines a full disk refused: they are killed, and their later lines are not
        # stored. A smaller batch of them could still fit in the room the refused one left in
        # the WAL, and batch after batch would take it all: then the run's own end (a few
        # pages) could never be stored, and the engine would wait for room for ever.
        self._refused: set[int] = set()

    async def add(
        self, run: LineCounter, stream: int, lines: list[str], end: int | None = None
    ) -> None:
        """Buffer ``lines``; ``end``: the byte offset in the agent's ``stream`` where they
        end (stored with them, see tui.store.output.append)."""
        if run.run_id in self._refused:
            return
        now = time.time()
        if end is not None:
            self._ends[run.run_id, stream] = (end, run)
        if stream == RAW:
            for text in lines:
                run.raw_seq += 1
                self._raw.append((run.task_id, run.run_id, run.raw_seq, now, text))
        elif lines:
            self._chunks += make_chunks(run.task_id, run.run_id, stream, run.seq + 1, now, lines)
            run.seq += len(lines)
            self._lines += len(lines)
        self._ready.set()
        if self._lines >= FLUSH_HIGH_WATER:
            # Double-buffered: one batch is written while the next fills. Only when the
            # writer is a whole batch behind does the producer wait (its pipe then fills).
            if self._flushing is not None and not self._flushing.done():
                await self._flushing
            self._flushing = asyncio.ensure_future(self.flush())

    async def flush(self) -> None:
        """Store everything buffered, then publish it (in store order)."""
        if not (self._chunks or self._raw or self._ends or self._lock.locked()):
            # Nothing buffered and no flush under way: nothing to store or to wait for (every
            # run's end asks, and most runs of a big DAG print nothing).
            return
        async with self._lock:
            chunks, self._chunks, self._lines = self._chunks, [], 0
            raw, self._raw = self._raw, []
            ends, self._ends = self._ends, {}
            self._writing = (chunks, raw)
            try:
                await self._store.append_raw(raw)
                if not chunks:
                    return
                offsets = [(run_id, stream, end) for (run_id, stream), (end, _) in ends.items()]
                first_id = await self._store.append_chunks(chunks, offsets)
            except DiskFullError as e:
                await self._store_each_run(e, chunks, raw, ends)
                return
            finally:
                self._writing = ([], [])
            _acknowledge(ends)
            self._publish(OutputBatch.of_chunks(first_id, chunks))

    def unstored(
        self, run_id: int
    ) -> tuple[list[ChunkRow], list[tuple[str, int, int, float, str]]]:
        """The lines of ``run_id`` not committed yet (buffered, or in a flush under way)."""
        chunks = [c for c in (*self._writing[0], *self._chunks) if c[1] == run_id]
        raw = [r for r in (*self._writing[1], *self._raw) if r[1] == run_id]
        return chunks, raw

    def restore(self, chunks: list[ChunkRow], raw: list[tuple[str, int, int, float, str]]) -> None:
        """Lines a dead engine had read but not stored (tui.engine.end_log): stored next."""
        self._chunks += chunks
        self._lines += sum(c[6] for c in chunks)
        self._raw += raw
        self._ready.set()

    async def _store_each_run(
        self,
        full: DiskFullError,
        chunks: list[ChunkRow],
        raw: list[tuple[str, int, int, float, str]],
        ends: dict[tuple[int, int], tuple[int, LineCounter]],
    ) -> None:
        """The disk refused a batch: store it again run by run, smallest first, so that a
        quiet task's few lines are not lost with the flood that filled the disk. Only the runs
        whose own lines do not fit are told (and fail)."""
        runs: dict[int, tuple[list[ChunkRow], list[tuple[str, int, int, float, str]]]] = {}
        for c in chunks:
            runs.setdefault(c[1], ([], []))[0].append(c)
        for r in raw:
            runs.setdefault(r[1], ([], []))[1].append(r)

        def size(
            item: tuple[int, tuple[list[ChunkRow], list[tuple[str, int, int, float, str]]]],
        ) -> int:
            own_chunks, own_raw = item[1]
            return sum(len(c[5]) for c in own_chunks) + sum(len(r[4]) for r in own_raw)

        refused: set[int] = set()
        error = full
        for run_id, (own_chunks, own_raw) in sorted(runs.items(), key=size):
            own_ends = {k: v for k, v in ends.items() if k[0] == run_id}
            offsets = [(run_id, stream, end) for (_, stream), (end, _) in own_ends.items()]
            try:
                await self._store.append_raw(own_raw)
                first_id = await self._store.append_chunks(own_chunks, offsets)
            except DiskFullError as e:
                refused.add(run_id)
                error = e
                continue
            _acknowledge(own_ends)
            if own_chunks:
                self._publish(OutputBatch.of_chunks(first_id, own_chunks))
        if refused:
            self._refuse(refused)
            self._not_stored(error, refused)

    def _refuse(self, run_ids: set[int]) -> None:
        """Drop what is buffered of ``run_ids`` and every line they send from now on."""
        self._refused |= run_ids
        self._chunks = [c for c in self._chunks if c[1] not in run_ids]
        self._lines = sum(c[6] for c in self._chunks)
        self._raw = [r for r in self._raw if r[1] not in run_ids]
        self._ends = {k: v for k, v in self._ends.items() if k[0] not in run_ids}

    def forget(self, run_id: int) -> None:
        """``run_id`` has ended."""
        self._refused.discard(run_id)

    async def loop(self) -> None:
        """Flush a frame after the first line of each batch, forever."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            await asyncio.sleep(FLUSH_INTERVAL)  # gather a frame's worth of lines
            await self.flush()


def _acknowledge(ends: dict[tuple[int, int], tuple[int, LineCounter]]) -> None:
    """Committed: each run's keeper may let go of the bytes up to there."""
    for (_, stream), (end, run) in ends.items():
        if run.ack is not None:
            run.ack(stream, end)
