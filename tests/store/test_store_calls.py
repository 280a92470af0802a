"""Store calls made at the same time share thread hops but stay separate transactions: one
that fails changes nothing and takes nothing else down, and the journal follows call order."""

from __future__ import annotations

import asyncio

import pytest

from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Move, Store, StoreError
from tui.store.records import EventRecord


def _task(name: str) -> Task:
    return Task.model_validate({"name": name, "agent": {"type": "shell", "instructions": "true"}})


async def test_calls_made_together_are_separate_transactions_in_call_order(store: Store) -> None:
    seen: list[EventRecord] = []
    store.on_event = seen.append
    first = [_task(f"t{i}") for i in range(5)]
    await store.insert_tasks(first, approved=True)
    again = _task("again").model_copy(update={"id": first[0].id})  # an id already stored
    results = await asyncio.gather(
        *(store.transition(t.id, State.PENDING, State.QUEUED) for t in first[:3]),
        store.insert_tasks([_task("new"), again], approved=True),
        *(store.transition(t.id, State.PENDING, State.QUEUED) for t in first[3:]),
        store.transition(first[0].id, State.PENDING, State.QUEUED),  # already QUEUED: refused
        return_exceptions=True,
    )
    moved = [r for i, r in enumerate(results) if i != 3]
    assert [getattr(r, "id", None) for r in moved] == [t.id for t in first] + [None]
    assert all(r.state == State.QUEUED for r in moved[:5])
    assert isinstance(results[3], StoreError) and first[0].id in str(results[3])
    # The refused insert stored nothing, not even its good task; the others all committed.
    assert [r.name for r in await store.list_tasks()] == [t.name for t in first]
    assert all(r.state == State.QUEUED for r in await store.list_tasks())
    queued = [ev.task_id for ev in seen if ev.to_state == State.QUEUED.value]
    assert queued == [t.id for t in first]
    assert [ev.id for ev in seen] == sorted(ev.id for ev in seen)


async def test_a_caller_cancelled_while_waiting_for_its_turn_changes_nothing(
    store: Store,
) -> None:
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    first = asyncio.ensure_future(store.transition(t.id, State.PENDING, State.QUEUED))
    second = asyncio.ensure_future(store.transition(t.id, State.QUEUED, State.RUNNING))
    await asyncio.sleep(0)  # one loop step: both calls are queued, none has gone over yet
    second.cancel()
    moved = await first
    assert moved is not None and moved.state == State.QUEUED
    with pytest.raises(asyncio.CancelledError):
        await second
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.QUEUED


async def test_a_run_ends_and_its_task_moves_in_one_transaction(store: Store) -> None:
    seen: list[EventRecord] = []
    store.on_event = seen.append
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    assert await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.start_run(t.id, "engine")
    assert began is not None
    done = Move(t.id, State.RUNNING, State.COMPLETED, "exit code 0")
    assert await store.end_run(began.run_id, outcome="COMPLETED", exit_code=0, then=done)
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.COMPLETED
    (run,) = await store.runs(t.id)
    assert run.ended_at is not None and run.exit_code == 0
    # The run's end comes first in the journal, the state right after it.
    assert [(ev.kind, ev.to_state) for ev in seen[-2:]] == [
        ("run_ended", None),
        ("state", "COMPLETED"),
    ]
    assert seen[-1].id == seen[-2].id + 1


async def test_a_refused_move_still_ends_the_run(store: Store) -> None:
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    assert await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.start_run(t.id, "engine")
    assert began is not None
    # Someone else got there first: the task is no longer RUNNING.
    assert await store.transition(t.id, State.RUNNING, State.CANCELLED, "cancelled by user")
    late = Move(t.id, State.RUNNING, State.COMPLETED, "exit code 0")
    assert not await store.end_run(began.run_id, outcome="COMPLETED", exit_code=0, then=late)
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.CANCELLED
    (run,) = await store.runs(t.id)
    assert run.ended_at is not None
