"""Tasks submitted together that are plainly ready to run queue in one store call, in the
order given; anything with more to decide goes the one-task-at-a-time way."""

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


async def test_ready_tasks_queue_together_in_submission_order(store: Store) -> None:
    leaves = [shell_task(f"t{i}", "true") for i in range(5)]
    fan_in = shell_task("all", "true", depends_on=[t.id for t in leaves])
    engine = Engine(store, concurrency=2)
    await engine.start()
    batches = _count(store, "move_many")
    singles = _count(store, "transition")
    try:
        await engine.submit([*leaves, fan_in])
        assert batches == [1] and singles == [0]  # one call queued all five
        await engine.wait_settled([fan_in.id])
    finally:
        await engine.stop()
    queued = [tid for tid, frm, to, _, _ in await store.transitions() if to == State.QUEUED]
    assert queued[:5] == [t.id for t in leaves]  # journal and queue in the order given
    for t in [*leaves, fan_in]:
        rec = await store.get_task(t.id)
        assert rec is not None and rec.state == State.COMPLETED


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
