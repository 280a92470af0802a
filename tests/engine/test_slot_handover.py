"""A run's end hands its slot to the next queued task in the same store transaction."""

import asyncio
import itertools
import random
from pathlib import Path
from typing import Any

from tests.conftest import shell_task, stored, wait_state
from tests.engine.fake_agent import GatedAdapter
from tests.engine.test_scheduler import fake_task, next_started
from tui.engine.clock import FakeClock
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import Store


async def test_the_next_run_starts_in_the_transaction_that_ends_the_last(store: Store) -> None:
    tasks = [
        shell_task(f"t{i}", "true", priority=p) for i, p in enumerate(["high", "normal", "low"])
    ]
    # None sent ahead of a free slot (tui.engine.dispatch): quick runs would be, their rows
    # stored before the run they wait on ends (tests/engine/test_ahead.py).
    async with Engine(store, concurrency=1, ahead=0) as engine:
        await engine.submit(tasks)
        await engine.wait_settled(t.id for t in tasks)
    runs = [(await store.runs(t.id))[0] for t in tasks]
    assert [r.outcome for r in runs] == ["COMPLETED"] * 3
    # One transaction, one instant: each run starts exactly as the one before it ends.
    for before, after in itertools.pairwise(runs):
        assert after.started_at == before.ended_at
    running = 0
    for _, _frm, to, _, _ in await store.transitions():
        running += (to == State.RUNNING) - (_frm == State.RUNNING)
        assert running <= 1


async def test_a_handover_as_the_engine_stops_starts_no_process(
    store: Store, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    first = shell_task("first", "true", priority="high")
    second = shell_task("second", f"touch {marker}")
    engine = Engine(store, concurrency=1)
    real = store.end_run_then_start
    stopping: list[asyncio.Task[None]] = []

    async def stop_meanwhile(*args: Any, **kw: Any) -> Any:
        # The engine begins to stop while the handover's transaction is under way.
        if not stopping:
            stopping.append(asyncio.create_task(engine.stop()))
        return await real(*args, **kw)

    store.end_run_then_start = stop_meanwhile  # type: ignore[method-assign]
    await engine.start()
    await engine.submit([first, second])
    await engine.wait_settled([first.id])
    assert stopping, "the first run's end did not start the second"
    await stopping[0]
    store.end_run_then_start = real  # type: ignore[method-assign]

    assert not marker.exists()
    rec = await store.get_task(second.id)
    assert rec is not None and rec.state == State.QUEUED and rec.reason == "interrupted"
    assert [r.outcome for r in await store.runs(second.id)] == ["interrupted"]
    assert not [r for r in await store.runs() if r.ended_at is None]
    async with Engine(store, concurrency=1) as engine:  # the next engine carries it on
        await engine.wait_settled([second.id])
        rec = await engine.get(second.id)
    assert rec is not None and rec.state == State.COMPLETED and rec.attempt_in_round == 1
    assert marker.exists()


async def test_a_retry_comes_due_on_time_while_its_slot_went_to_the_next(store: Store) -> None:
    # The failed run's end hands its slot to "next", so every slot stays taken: the retry
    # must still be timed (the schedule loop woken by that end), not wait for a slot to free.
    agent = GatedAdapter()
    clock = FakeClock()
    flaky = fake_task("flaky", priority="high", retry={"max_attempts": 2, "delay": "10s"})
    nxt = fake_task("next")
    async with Engine(
        store, concurrency=1, adapters={"claude": agent}, clock=clock, rng=random.Random(7)
    ) as engine:
        await engine.submit([flaky, nxt])
        assert await next_started(agent) == "flaky"
        agent.finish("flaky", State.FAILED, error="boom")
        assert await next_started(agent) == "next"
        rec = await stored(engine, flaky.id)
        assert rec.state == State.FAILED and rec.retry_at is not None
        clock.advance(rec.retry_at - clock.now() + 1)
        await wait_state(engine, flaky.id, State.QUEUED)  # queued at its time, "next" running
        assert (await stored(engine, nxt.id)).state == State.RUNNING
        agent.finish("next", State.COMPLETED)
        assert await next_started(agent) == "flaky"
        agent.finish("flaky", State.COMPLETED)
        await engine.wait_settled([flaky.id, nxt.id])
