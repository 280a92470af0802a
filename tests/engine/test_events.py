"""The event stream under a viewer that stops reading: bounded memory, then no gap, no
duplicate once it reads again (it catches up from the store)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tests.conftest import shell_task
from tui.engine import scheduler
from tui.engine.events import Cursor, Event, OutputBatch
from tui.engine.scheduler import Engine
from tui.engine.stream import _Subscriber
from tui.model.states import State
from tui.store.db import Store
from tui.store.records import EventRecord

LINES = 200_000


async def test_a_stalled_viewer_is_bounded_then_catches_up(store: Store) -> None:
    async with Engine(store) as engine:
        t = shell_task("chatty", f"seq 1 {LINES}")
        stream = engine.events(Cursor())
        await engine.submit([t])
        first = await anext(stream)  # the viewer is subscribed, then stops reading
        assert isinstance(first, EventRecord)  # the submission, before any output
        [sub] = engine.stream._subscribers
        peak = 0

        def watch(item: Event) -> None:
            nonlocal peak
            peak = max(peak, sub.backlog)

        engine.stream._subscribers.add(_Probe(watch))
        await engine.wait_settled([t.id])
        assert sub.lagging  # it fell behind and holds nothing more
        assert peak <= scheduler.SUBSCRIBER_BACKLOG + scheduler.FLUSH_HIGH_WATER * 2

        ids: list[int] = []
        seqs: list[int] = []
        events: list[EventRecord] = [first]
        done = False
        async with asyncio.timeout(60):
            # Journal events and output lines each come in their own order (two cursors).
            async for item in stream:
                if isinstance(item, OutputBatch):
                    ids += [ln.id for ln in item.lines]
                    seqs += [ln.seq for ln in item.lines]
                else:
                    events.append(item)
                    done = done or item.to_state == State.COMPLETED
                if done and len(seqs) >= LINES:
                    break
    assert seqs == list(range(1, LINES + 1))  # every line once, in order
    assert ids == sorted(set(ids))
    event_ids = [e.id for e in events]
    assert event_ids == sorted(set(event_ids))


class _Probe(_Subscriber):
    """A subscriber that only watches the others' backlog as items are published."""

    def __init__(self, on_item: Callable[[Event], None]) -> None:
        super().__init__()
        self._on_item = on_item

    def offer(self, item: Event) -> None:
        self._on_item(item)
