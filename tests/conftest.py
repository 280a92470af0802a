"""Fixtures shared by the engine and store tests: a real SQLite file per test."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tui.engine.events import OutputBatch
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(tmp_path / "tui.db")
    yield s
    await s.close()


def shell_task(name: str, script: str, **fields: object) -> Task:
    return Task.model_validate(
        {"name": name, "agent": {"type": "shell", "instructions": script}, **fields}
    )


async def wait_state(engine: Engine, task_id: str, *states: State) -> None:
    """Wait (on the event stream, not the clock) until the task is in one of ``states``."""

    async def watch() -> None:
        since = engine.cursor  # taken before the check, so nothing slips in between
        rec = await engine.get(task_id)
        if rec is not None and rec.state in states:
            return
        async for ev in engine.events(since):
            if isinstance(ev, OutputBatch) or ev.task_id != task_id:
                continue
            rec = await engine.get(task_id)
            if rec is not None and rec.state in states:
                return

    await asyncio.wait_for(watch(), 30)
