"""Failure cascades walk the graph iteratively: long chains end in one pass, on real files."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from tests.conftest import shell_task, wait_state
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import Store

CHAIN = 100_000


async def chain_database(path: Path, n: int) -> None:
    """A database holding a chain t0 <- t1 <- ... of ``n`` tasks with t0 FAILED for good
    (as a crash in the middle of a cascade leaves it). The head goes through the store; the
    rest are written with plain SQL, which is quicker than validating 100,000 tasks."""
    store = await Store.open(path)
    head = shell_task("t0", "exit 1", id="t0")
    await store.insert_tasks([head], approved=True)
    for frm, to in [(State.PENDING, State.QUEUED), (State.QUEUED, State.RUNNING)]:
        assert await store.transition("t0", frm, to, "test")
    assert await store.transition("t0", State.RUNNING, State.FAILED, "exit code 1")
    await store.close()
    spec = json.loads(head.model_dump_json())
    rows, deps = [], []
    for i in range(1, n):
        spec.update(id=f"t{i}", name=f"t{i}", depends_on=[f"t{i - 1}"])
        rows.append((f"t{i}", f"t{i}", json.dumps(spec), i + 1))
        deps.append((f"t{i}", f"t{i - 1}"))
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO tasks (id, name, spec, state, priority_rank, submit_seq, approved,"
            " created_at, updated_at) VALUES (?, ?, ?, 'PENDING', 1, ?, 1, 0, 0)",
            rows,
        )
        db.executemany("INSERT INTO deps (task_id, depends_on) VALUES (?, ?)", deps)


async def test_an_engine_starting_on_a_100000_chain_with_a_failed_head_cancels_it_all(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chain.db"
    await chain_database(path, CHAIN)
    store = await Store.open(path)
    try:
        async with Engine(store) as engine:  # this start used to die of RecursionError
            records = await engine.list_tasks()
    finally:
        await store.close()
    states = [r.state for r in records]
    assert states.count(State.CANCELLED) == CHAIN - 1 and states[0] == State.FAILED
    by_id = {r.id: r for r in records}
    assert by_id["t1"].reason == "dependency t0 ended failed"
    assert by_id[f"t{CHAIN - 1}"].reason == f"dependency t{CHAIN - 2} ended cancelled"
    # Stored, not only in memory: a fresh look at the file agrees.
    with sqlite3.connect(path) as db:
        left = db.execute("SELECT COUNT(*) FROM tasks WHERE state = 'PENDING'").fetchone()
    assert left == (0,)


async def test_a_failure_at_the_head_of_a_long_chain_cancels_every_dependent(
    store: Store,
) -> None:
    n = 1000
    tasks = [shell_task("c0", "exit 3", id="c0")] + [
        shell_task(f"c{i}", "true", id=f"c{i}", depends_on=[f"c{i - 1}"]) for i in range(1, n)
    ]
    async with Engine(store) as engine:
        await engine.submit(tasks)
        async with asyncio.timeout(30):
            await engine.wait_settled(t.id for t in tasks)
        records = await engine.list_tasks()
    assert [r.state for r in records] == [State.FAILED] + [State.CANCELLED] * (n - 1)
    assert records[-1].reason == f"dependency c{n - 2} ended cancelled"


async def test_cancelling_the_head_of_a_1000_chain_is_quick(store: Store) -> None:
    n = 1000
    tasks = [shell_task("h", "sleep 60", id="h")] + [
        shell_task(f"d{i}", "true", id=f"d{i}", depends_on=["h" if i == 1 else f"d{i - 1}"])
        for i in range(1, n)
    ]
    async with Engine(store) as engine:
        await engine.submit(tasks)
        await wait_state(engine, "h", State.RUNNING)
        async with asyncio.timeout(30):  # it used to time out here, 511 left PENDING
            assert await engine.cancel("h") == "cancelled h"
        records = await engine.list_tasks()
    assert [r.state for r in records] == [State.CANCELLED] * n
    transitions = await store.transitions()
    assert len([t for t in transitions if t[2] == "CANCELLED"]) == n  # each once
