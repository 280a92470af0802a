"""A run's start and end are written on the engine's loop while the store's thread is idle
(tui.store.tx): the loop still never waits there. Another process's write lock sends the
write to the thread, which waits for it while the loop goes on; and the WAL is still
checkpointed while a long run commits on the loop."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Move, Store
from tui.store.tx import INLINE_COMMITS


def _task(name: str) -> Task:
    return Task.model_validate({"name": name, "agent": {"type": "shell", "instructions": "true"}})


async def test_a_start_waits_for_another_process_lock_without_stopping_the_loop(
    store: Store,
) -> None:
    t = _task("a")
    (rec,) = await store.insert_tasks([t], approved=True, queued=[t.id])
    # Warm: the connection is now set for the loop's writes.
    assert await store.transition(t.id, State.QUEUED, State.QUEUED) is None
    other = sqlite3.connect(store.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing, for as long as it likes
    try:
        start = asyncio.ensure_future(store.start_run(t.id, "engine", rec))
        # The loop turns (this timer fires, on time) while the start waits for the lock: on
        # the loop it would have stood still until SQLite gave up (10 s).
        loop = asyncio.get_running_loop()
        before = loop.time()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.shield(start), 0.3)
        assert loop.time() - before < 5
        assert not start.done()
    finally:
        other.execute("COMMIT")
        other.close()
    began = await start
    assert began is not None and began.task is not None and began.task.state == State.RUNNING
    got = await store.get_task(t.id)
    assert got is not None and got.state == State.RUNNING and got.attempts == 1


async def test_the_wal_is_checkpointed_while_runs_commit_on_the_loop(tmp_path: Path) -> None:
    """Every commit on the loop skips SQLite's checkpoint; the thread's next commit does it.
    Without that the WAL would hold every page written (here ~6 MB); with it, it is reused."""
    store = await Store.open(tmp_path / "s.db")
    try:
        tasks = [_task(f"t{i}") for i in range(6 * INLINE_COMMITS)]
        recs = await store.insert_tasks(tasks, approved=True, queued=[t.id for t in tasks])
        for rec in recs:
            began = await store.start_run(rec.id, "engine", rec)
            assert began is not None
            done = Move(rec.id, State.RUNNING, State.COMPLETED, "exit code 0")
            moved = await store.end_run(
                began.run_id, outcome="COMPLETED", exit_code=0, then=done, base=began.task
            )
            assert moved is not None and moved.state == State.COMPLETED
        wal = (tmp_path / "s.db-wal").stat().st_size
        page = 4096
        # ~2 commits a task, a few pages each: well past SQLite's 1,000 pages if never reused.
        assert wal < 1600 * page, f"WAL {wal / page:.0f} pages"
        assert len(await store.list_tasks([State.COMPLETED])) == len(tasks)
    finally:
        await store.close()
