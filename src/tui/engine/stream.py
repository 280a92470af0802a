"""The event stream viewers subscribe to: what is stored after a cursor, then live.

Every item (a journal event, a batch of output lines) is stored before it is published, so a
viewer that opens the stream at a cursor, or falls behind, reads the gap back from the store
and sees no gap and no duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable

from tui.engine.events import Cursor, Event, OutputBatch, advance, newer
from tui.store.db import Store
from tui.store.records import EventRecord

SUBSCRIBER_BACKLOG = 50_000  # events + lines a viewer may lag before it reads back from the store


class _Subscriber:
    """One viewer of the event stream, and how far behind it is (in events and lines).

    Its items wait in a deque, its reader on one future: an ``asyncio.Queue`` cost ~10
    Python calls an item (put, get and their bookkeeping), for every event of every run."""

    def __init__(self) -> None:
        self.items: deque[Event] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.backlog = 0
        self.lagging = False

    def offer(self, item: Event) -> None:
        if self.lagging:
            return  # it will read this back from the store
        self.backlog += item.count if isinstance(item, OutputBatch) else 1
        if self.backlog > SUBSCRIBER_BACKLOG:
            self.lagging = True
        self.items.append(item)  # when lagging, it wakes a reader waiting on an empty queue
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():  # its reader was cancelled
                waiter.set_result(None)

    async def wait(self) -> None:
        """Until an item is offered (at once if one waits)."""
        while not self.items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            await waiter

    def take(self, whole: bool) -> list[Event]:
        """The next item, or (``whole``) every item queued. Items taken one at a time keep the
        rest counted until they are taken, so a viewer stuck on its socket holding one item
        lags at SUBSCRIBER_BACKLOG; a whole batch is the reader's to hold (a reader that
        handles it at once: `tui run`'s printer)."""
        if whole:
            items = list(self.items)
            self.items.clear()
            self.backlog = 0
            return items
        item = self.items.popleft()
        self.backlog -= item.count if isinstance(item, OutputBatch) else 1
        return [item]

    def catch_up(self) -> None:
        """Forget the queue: everything in it is stored and will be read back."""
        self.lagging = False
        self.backlog = 0
        self.items.clear()


class EventStream:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._subscribers: set[_Subscriber] = set()
        self.published = Cursor()  # the newest item handed to subscribers
        self.live = False  # an engine runs and publishes: else the store is all there is

    async def start(self) -> None:
        self.published = Cursor(*await self._store.cursor())
        self.live = True

    def publish(self, item: Event) -> None:
        self.published = advance(self.published, item)
        for sub in self._subscribers:
            sub.offer(item)

    def on_event(self, ev: EventRecord) -> None:
        """The store committed a journal row (handed over in commit order)."""
        self.publish(ev)

    async def events(
        self, since: Cursor | None = None, on_lag: Callable[[], None] | None = None
    ) -> AsyncIterator[Event]:
        """Everything after ``since`` (None = from now), stored first, then live, one item at
        a time (see :meth:`batches`)."""
        async with contextlib.aclosing(self.batches(since, on_lag, whole=False)) as batches:
            async for batch in batches:
                for item in batch:
                    yield item

    async def batches(
        self,
        since: Cursor | None = None,
        on_lag: Callable[[], None] | None = None,
        *,
        whole: bool = True,
    ) -> AsyncGenerator[list[Event], None]:
        """Everything after ``since`` (None = from now), stored first, then live: in lists,
        each what was there when the viewer looked (a viewer printing a busy run's
        transitions is resumed once a batch, not once an event); ``whole=False``: one live
        item a list, for a reader that may block while it holds one (:meth:`events`).

        A viewer that falls more than SUBSCRIBER_BACKLOG items behind is not allowed to hold
        memory: its queue is dropped and it reads what it missed back from the store (every
        item is stored before it is published), so it still sees no gap and no duplicate.
        ``on_lag`` is called when that happens, so a remote viewer can be told.
        """
        sub = _Subscriber()
        self._subscribers.add(sub)
        try:
            last = since if since is not None else self.published
            while True:
                # What is published from here on reaches the queue: the store is read only
                # up to what was published before, or a busy engine would be chased forever.
                upto = self.published if self.live else None
                async for stored in self._stored_after(last, upto):
                    last = advance(last, stored[-1])
                    yield stored
                while not sub.lagging:
                    if not sub.items:
                        await sub.wait()
                    # Taken whole: what the queue holds is contiguous even once it lags.
                    batch = []
                    for item in sub.take(whole):
                        fresh = newer(item, last)
                        if fresh is not None:
                            last = advance(last, fresh)
                            batch.append(fresh)
                    if batch:
                        yield batch
                sub.catch_up()
                if on_lag is not None:
                    on_lag()
        finally:
            self._subscribers.discard(sub)

    async def _stored_after(
        self, cursor: Cursor, upto: Cursor | None
    ) -> AsyncIterator[list[Event]]:
        last_event, last_output = cursor
        end = upto or Cursor(sys.maxsize, sys.maxsize)
        while last_event < end.event_id and (evs := await self._store.read_events(last_event)):
            yield list(evs)
            last_event = evs[-1].id
        while last_output < end.output_id and (
            chunks := await self._store.read_output_chunks(last_output)
        ):
            for batch in OutputBatch.of_stored(chunks):
                fresh = batch.after(last_output)
                if fresh is not None:
                    yield [fresh]
                    last_output = fresh.last_id
