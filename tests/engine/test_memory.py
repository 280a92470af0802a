"""What an engine holds for tasks that are final: no more than an engine that has just loaded
the same tasks from the database, so a daemon's memory stays flat however many it has run
(bench/chaos.py measures the daemon's RSS over 30,000; this counts the objects)."""

from __future__ import annotations

import asyncio
import types
import weakref
from collections import Counter
from pathlib import Path
from typing import Any

from tests.conftest import shell_task
from tui.engine.scheduler import Engine
from tui.model.task import Task
from tui.store.db import Store

TASKS = 120
SLACK = 40  # objects an engine makes once (caches, lazy imports), whatever it has run

# Walked through, never into: what every engine shares with the whole process.
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.CodeType, types.FrameType)


def held_by(engine: Engine) -> Counter[str]:
    """Objects reachable from ``engine`` by type, the event loop and shared code left out.
    Strings count once per value: an id held twice as two equal strings (the graph's copy of
    a dependency id, say) is not one more thing kept per task."""
    import gc

    gc.collect()  # garbage is not held (another test may have left the collector slowed)
    loop = asyncio.get_running_loop()
    seen: set[int] = {id(loop)}
    strings: set[str] = set()
    counts: Counter[str] = Counter()
    stack: list[Any] = [engine]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _OPAQUE):
            continue
        if type(obj) is weakref.ReferenceType and obj() is None:
            # sqlite3 (3.11) keeps a weakref per cursor made and prunes the dead ones only
            # every 200 cursors: up to 199 dead ones, however many tasks ran.
            continue
        seen.add(id(obj))
        if type(obj) is str:
            if obj in strings:
                continue
            strings.add(obj)
        counts[type(obj).__name__] += 1
        stack.extend(gc.get_referents(obj))
    return counts


def workload() -> list[Task]:
    """Tasks that end every way a task ends: done, failed after retries, cancelled by a failed
    dependency, with output on both streams."""
    tasks = []
    for i in range(TASKS // 4):
        ok = shell_task(f"ok{i}", "echo out; echo err >&2")
        bad = shell_task(f"bad{i}", "exit 3", retry={"max_attempts": 2, "delay": "1ms"})
        after_ok = shell_task(f"after-ok{i}", "true", depends_on=[ok.id])
        after_bad = shell_task(f"after-bad{i}", "true", depends_on=[bad.id])
        tasks += [ok, bad, after_ok, after_bad]
    return tasks


async def until_idle(engine: Engine) -> None:
    """Every run's coroutine has ended (its task is final some steps before that)."""
    async with asyncio.timeout(30):
        while engine._runners or engine._running:
            await asyncio.sleep(0.01)


async def test_final_tasks_leave_nothing_behind_but_their_records(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "tui.db")
    try:
        async with Engine(store, concurrency=8) as engine:
            ids = await engine.submit(workload())
            await asyncio.wait_for(engine.wait_settled(ids), 60)
            await until_idle(engine)
            await engine.output.flush()
            ran = held_by(engine)
            ran_parsed = parsed_specs(engine)
            states = Counter(r.state.value for r in await engine.list_tasks())
        assert states == {"COMPLETED": TASKS // 2, "FAILED": TASKS // 4, "CANCELLED": TASKS // 4}
        async with Engine(store, concurrency=8) as fresh:
            loaded = held_by(fresh)
            loaded_parsed = parsed_specs(fresh)
    finally:
        await store.close()
    # The records themselves are the same in both; anything kept per task on top of them
    # (a parsed spec, a run, a graph or queue entry, a waiter) shows as TASKS more.
    assert ran["TaskRecord"] == loaded["TaskRecord"] == TASKS
    grown = {k: ran[k] - loaded[k] for k in ran if ran[k] - loaded[k] > SLACK}
    assert grown == {}, f"held per task after running them: {grown}"
    # Neither engine validated a final task's stored spec again (~0.1 ms and some kB a task:
    # the subtask bookkeeping and the hooks read only its parent and hooks).
    assert ran_parsed == loaded_parsed == []


def parsed_specs(engine: Engine) -> list[str]:
    """Names of final tasks whose record holds a parsed spec instead of the stored JSON."""
    return sorted(
        r.name for r in engine._tasks.values() if r.settled and not isinstance(r.spec, str)
    )
