"""A scripted adapter for scheduler unit tests: each attempt waits until the test releases it."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from tui.engine.adapter import RunContext, RunResult
from tui.model.states import State


class GatedAdapter:
    def __init__(self, type_: str = "claude") -> None:
        self.type = type_
        self.started: asyncio.Queue[str] = asyncio.Queue()
        self.order: list[str] = []
        self.running = 0
        self.max_running = 0
        self._gates: dict[str, asyncio.Queue[RunResult]] = defaultdict(asyncio.Queue)

    def finish(self, name: str, outcome: State = State.COMPLETED, **kw: object) -> None:
        self._gates[name].put_nowait(RunResult(outcome, **kw))  # type: ignore[arg-type]

    async def run(self, ctx: RunContext) -> RunResult:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.order.append(ctx.task.name)
        await self.started.put(ctx.task.name)
        try:
            return await self._gates[ctx.task.name].get()
        finally:
            self.running -= 1
