"""Helpers of the engine's workflow tests (results, needs, context, summaries): tasks loaded
from YAML as a user writes them, run to the end on a real store, and records made by hand."""

from __future__ import annotations

import json
from typing import Any

from tui.engine.scheduler import Engine
from tui.model.loader import load_task_text
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store
from tui.store.records import TaskRecord


def load(text: str) -> list[Task]:
    return load_task_text(text, "wf.yaml").tasks


async def run_all(store: Store, text: str, **engine: Any) -> dict[str, TaskRecord]:
    """Run the tasks of ``text`` until they settle; every stored record by name."""
    tasks = load(text)
    async with Engine(store, **engine) as e:
        await e.submit(tasks)
        await e.wait_settled([t.id for t in tasks])
    return {r.name: r for r in await store.list_tasks()}


def task_record(
    task: Task | str,
    state: State = State.PENDING,
    result: Any = None,
    retry_at: float | None = None,
) -> TaskRecord:
    """A record as the store returns it after one attempt, without a store: of ``task``, or
    of a bare id (its spec then unparsed and empty)."""
    spec: Task | str = task if isinstance(task, Task) else "{}"
    task_id = task.id if isinstance(task, Task) else task
    return TaskRecord(
        id=task_id,
        name=task.name if isinstance(task, Task) else task,
        spec=spec,
        state=state,
        reason="exit code 4" if state == State.FAILED else "",
        approved=True,
        attempts=1,
        attempt_base=0,
        retry_at=retry_at,
        cost_usd=0,
        tokens_in=0,
        tokens_out=0,
        rejection_comment="",
        question_json=None,
        result=None if result is None else json.dumps(result),
        created_at=0,
        updated_at=0,
        submit_seq=1,
        depends_on=list(task.depends_on) if isinstance(task, Task) else [],
    )
