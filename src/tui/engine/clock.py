"""Injectable time for retry delays, so tests move time forward instead of sleeping."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """Time stands still until a test calls ``advance``."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._now + max(0.0, seconds), fut))
        self._release()
        await fut

    def advance(self, seconds: float) -> None:
        self._now += seconds
        self._release()

    def _release(self) -> None:
        keep = []
        for due, fut in self._sleepers:
            if fut.done():
                continue
            if due <= self._now:
                fut.set_result(None)
            else:
                keep.append((due, fut))
        self._sleepers = keep
