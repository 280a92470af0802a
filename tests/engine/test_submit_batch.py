"""Tasks submitted together that are plainly ready to run are stored QUEUED by their insert,
in the order given; anything with more to decide goes the one-task-at-a-time way."""

from typing import Any

from tests.conftest import shell_task
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import Store


def _count(store: Store, name: str) -> list[int]:
    calls = [0]
    real = getattr(store, name)

    async def counted(*args: Any, **kw: Any) -> Any:
        calls[0] += 1
        return await real(*args, **kw)

    setattr(store, name, counted)
    return calls


async def test_ready_tasks_queue_with_their_insert_in_submission_order(store: Store) -> None:
    leaves = [shell_task(f"t{i}", "true") for i in range(5)]
    fan_in = shell_task("all", "true", depends_on=[t.id for t in leaves])
    engine = Engine(store, concurrency=2)
    await engine.start()
    inserts = _count(store, "insert_tasks")
    batches = _count(store, "move_many")
    singles = _count(store, "transition")
    try:
        await engine.submit([*leaves, fan_in])
        # One store call stored all six and queued the five leaves.
        assert inserts == [1] and batches == [0] and singles == [0]
        await engine.wait_settled([fan_in.id])
    finally:
        await engine.stop()
    events = await store.read_events()
    # The journal reads as before: every task submitted, then each leaf queued, in order.
    assert [(e.task_id, e.kind) for e in events[:6]] == [
        (t.id, "submitted") for t in [*leaves, fan_in]
    ]
    assert [(e.task_id, e.from_state, e.to_state, e.reason) for e in events[6:11]] == [
        (t.id, "PENDING", "QUEUED", "ready to run") for t in leaves
    ]
    started = [e.task_id for e in events if e.to_state == State.RUNNING]
    assert started[:2] == [leaves[0].id, leaves[1].id]  # the queue in the order given
    for t in [*leaves, fan_in]:
        rec = await store.get_task(t.id)
        assert rec is not None and rec.state == State.COMPLETED


async def test_a_task_after_a_stored_dependency_is_checked_once_stored(store: Store) -> None:
    first = shell_task("first", "true")
    engine = Engine(store, concurrency=2)
    await engine.start()
    try:
        await engine.submit([first])
        await engine.wait_settled([first.id])
        later = [shell_task(f"l{i}", "true", depends_on=[first.id]) for i in range(2)]
        plain = [shell_task(f"p{i}", "true") for i in range(2)]
        batches = _count(store, "move_many")
        await engine.submit([*later, *plain])
        assert batches == [1]  # stored PENDING, then all four queued together
        await engine.wait_settled([t.id for t in [*later, *plain]])
    finally:
        await engine.stop()
    for t in [*later, *plain]:
        rec = await store.get_task(t.id)
        assert rec is not None and rec.state == State.COMPLETED


async def test_unapproved_tasks_are_stored_pending(store: Store) -> None:
    tasks = [shell_task(f"t{i}", "true") for i in range(3)]
    engine = Engine(store, concurrency=2)
    await engine.start()
    try:
        await engine.submit(tasks, approved=False)
        for t in tasks:
            rec = await store.get_task(t.id)
            assert rec is not None and rec.state == State.PENDING and not rec.approved
    finally:
        await engine.stop()


async def test_a_task_with_more_to_decide_keeps_the_one_by_one_way(store: Store) -> None:
    plain = [shell_task(f"p{i}", "true") for i in range(3)]
    conditional = shell_task("c", "true", when="false")
    engine = Engine(store, concurrency=2)
    await engine.start()
    batches = _count(store, "move_many")
    try:
        await engine.submit([*plain, conditional])
        await engine.wait_settled([t.id for t in [*plain, conditional]])
    finally:
        await engine.stop()
    assert batches == [0]
    rec = await store.get_task(conditional.id)
    assert rec is not None and rec.state == State.SKIPPED
    for t in plain:
        rec = await store.get_task(t.id)
        assert rec is not None and rec.state == State.COMPLETED
