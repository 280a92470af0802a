"""Output stored one row per read chunk: every reader still sees one line at a time, with the
same ids, line numbers, streams and order as when each line had its own row."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from tui.engine.events import OutputBatch
from tui.model.states import State
from tui.model.task import Task
from tui.store.chunks import make_chunks
from tui.store.db import Store
from tui.store.records import STDERR, STDOUT
from tui.store.schema import MIGRATIONS


def _task(name: str) -> Task:
    return Task.model_validate({"name": name, "agent": {"type": "shell", "instructions": "true"}})


async def _running(store: Store, name: str) -> tuple[str, int]:
    t = _task(name)
    await store.insert_tasks([t], approved=True)
    await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.begin_run(t.id, "engine")
    assert began is not None
    return t.id, began[0]


async def _three_reads(store: Store) -> tuple[str, int]:
    """stdout lines 1-3, stderr 4-5, stdout 6-8: three reads, three chunk rows."""
    task_id, run_id = await _running(store, "a")
    chunks = [
        *make_chunks(task_id, run_id, STDOUT, 1, 1.0, ["o1", "", "o3"]),
        *make_chunks(task_id, run_id, STDERR, 4, 2.0, ["e4", "e5"]),
    ]
    assert await store.append_chunks(chunks) == 1
    assert await store.append_chunks(make_chunks(task_id, run_id, STDOUT, 6, 3.0, ["o6"] * 3)) == 6
    return task_id, run_id


async def test_lines_of_chunks_keep_ids_seqs_streams_and_order(store: Store) -> None:
    task_id, run_id = await _three_reads(store)
    lines = await store.read_output(task_id)
    assert [(ln.id, ln.seq, ln.stream, ln.text) for ln in lines] == [
        (1, 1, STDOUT, "o1"),
        (2, 2, STDOUT, ""),
        (3, 3, STDOUT, "o3"),
        (4, 4, STDERR, "e4"),
        (5, 5, STDERR, "e5"),
        (6, 6, STDOUT, "o6"),
        (7, 7, STDOUT, "o6"),
        (8, 8, STDOUT, "o6"),
    ]
    assert [ln.at for ln in lines] == [1.0] * 3 + [2.0] * 2 + [3.0] * 3
    assert [ln.seq for ln in await store.read_output(task_id, stream=STDERR)] == [4, 5]
    assert await store.output_index(task_id) == [(run_id, 8)]
    assert (await store.cursor())[1] == 8
    # Three rows hold the eight lines.
    with contextlib.closing(sqlite3.connect(store.path)) as db:
        assert db.execute("SELECT COUNT(*) FROM output").fetchone() == (3,)


async def test_pages_start_and_end_inside_a_chunk(store: Store) -> None:
    task_id, run_id = await _three_reads(store)
    page = await store.read_output(task_id, after_id=2, limit=4)
    assert [ln.id for ln in page] == [3, 4, 5, 6]
    rest = await store.read_output(task_id, after_id=page[-1].id, limit=4)
    assert [ln.id for ln in rest] == [7, 8]
    assert await store.read_output(task_id, after_id=8) == []
    assert [ln.text for ln in await store.read_output(task_id, after_id=4, stream=STDERR)] == ["e5"]
    # The log view's pages by line number, across and inside chunk boundaries.
    assert [ln.seq for ln in await store.read_run_lines(run_id, 2, 2)] == [2]
    assert [ln.seq for ln in await store.read_run_lines(run_id, 3, 7)] == [3, 4, 5, 6, 7]
    assert [ln.text for ln in await store.read_run_lines(run_id, 5, 100)] == ["e5"] + ["o6"] * 3
    assert await store.read_run_lines(run_id, 9, 20) == []


async def test_event_stream_batches_resume_inside_a_chunk(store: Store) -> None:
    await _three_reads(store)
    stored = await store.read_output_chunks(after_id=4)
    [batch] = OutputBatch.of_stored(stored)
    assert (batch.first_id, batch.last_id) == (4, 8)  # the chunk holding line 5 starts at 4
    fresh = batch.after(4)
    assert fresh is not None
    assert (fresh.first_id, fresh.last_id) == (5, 8)
    assert [(ln.id, ln.text) for ln in fresh.lines] == [(5, "e5")] + [(i, "o6") for i in (6, 7, 8)]
    assert [row[3] for row in fresh.rows] == [5, 6, 7, 8]
    assert batch.after(8) is None


async def test_a_line_holding_a_newline_stays_one_line(store: Store) -> None:
    task_id, run_id = await _running(store, "a")
    await store.append_chunks(make_chunks(task_id, run_id, STDOUT, 1, 0.0, ["a", "b\nc", "d"]))
    lines = await store.read_output(task_id)
    assert [(ln.seq, ln.text) for ln in lines] == [(1, "a"), (2, "b\nc"), (3, "d")]
    assert await store.output_index(task_id) == [(run_id, 3)]


async def test_a_version_1_database_keeps_its_lines_and_continues_their_ids(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.executescript(MIGRATIONS[0])
    con.execute("PRAGMA user_version = 1")
    con.execute(
        "INSERT INTO tasks (id, name, spec, state, priority_rank, submit_seq, created_at,"
        " updated_at) VALUES ('t1', 'old', ?, 'COMPLETED', 1, 1, 0, 0)",
        (_task("old").model_copy(update={"id": "t1"}).model_dump_json(),),
    )
    con.execute(
        "INSERT INTO runs (id, task_id, attempt, engine_id, started_at) VALUES (1, 't1', 1, 'e', 0)"
    )
    # What tui v1 wrote: one row per line.
    con.executemany(
        "INSERT INTO output (task_id, run_id, stream, seq, at, text) VALUES ('t1', 1, ?, ?, 0, ?)",
        [(STDOUT, 1, "one"), (STDERR, 2, "two"), (STDOUT, 3, "")],
    )
    con.commit()
    con.close()

    store = await Store.open(path)
    try:
        assert [(ln.id, ln.seq, ln.stream, ln.text) for ln in await store.read_output("t1")] == [
            (1, 1, STDOUT, "one"),
            (2, 2, STDERR, "two"),
            (3, 3, STDOUT, ""),
        ]
        assert await store.output_index("t1") == [(1, 3)]
        assert [ln.text for ln in await store.read_run_lines(1, 2, 3)] == ["two", ""]
        # New chunks take the ids after the old lines.
        task_id, run_id = await _running(store, "new")
        first = await store.append_chunks(make_chunks(task_id, run_id, STDOUT, 1, 0.0, ["x", "y"]))
        assert first == 4
        assert [ln.id for ln in await store.read_output(after_id=2)] == [3, 4, 5]
        assert (await store.cursor())[1] == 5
    finally:
        await store.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    con.close()
