"""A person's commands on one task: approve it, cancel it (or its pending retry), retry it.

A part of ``Engine`` (mixed in): it uses the engine's task records, moves and runs, declared
in tui.engine.core, and nothing else of it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tui.engine.core import EngineCore
from tui.engine.errors import EngineError
from tui.model.states import UNSUCCESSFUL, State, being, label

if TYPE_CHECKING:
    from tui.engine.graph import Graph


class TaskCommands(EngineCore):
    graph: Graph

    async def approve(self, task_id: str) -> str:
        rec = self._get(task_id)
        if rec.state != State.PENDING:
            raise EngineError(f"{rec.name} {being(rec.state)}; only pending tasks need approval")
        if rec.approved:
            return f"{rec.name} was already approved"
        new = await self.store.update_task_record(task_id, rec, approved=1)
        if new is not None:
            self._took(new)
        await self._check_pending(task_id)
        self._changed_now()
        return f"approved {rec.name}"

    async def cancel(self, task_id: str, reason: str = "cancelled by user") -> str:
        rec = self._get(task_id)
        run = self._running.get(task_id)
        if run is None and rec.state == State.RUNNING:
            raise EngineError(
                f"{rec.name} is running under an engine that is gone; `tui run` recovers it first"
            )
        if run is not None:
            run.kill_reason = "cancel"
            run.kill_error = "" if reason == "cancelled by user" else reason
            await self.executor.kill(run)
            if run.runner:
                await asyncio.shield(run.runner)
            return f"cancelled {rec.name}"
        if rec.state in (
            State.PENDING,
            State.QUEUED,
            State.READY,
            State.BLOCKED,
        ) and await self._move(task_id, rec.state, State.CANCELLED, reason):
            for q in await self.store.questions(task_id=task_id):
                await self.store.close_question(q.id, "cancelled")
            await self._cascade_failure(task_id)
            return f"cancelled {rec.name}"
        if rec.state in UNSUCCESSFUL and rec.retry_at is not None:
            new = await self.store.update_task_record(task_id, rec, retry_at=None)
            if new is not None:
                self._took(new)
            await self._cascade_failure(task_id)
            self._changed_now()
            return f"cancelled the pending retry of {rec.name}; it stays {label(rec.state)}"
        raise EngineError(f"{rec.name} {being(rec.state)}: nothing to cancel")

    async def retry(self, task_id: str) -> str:
        rec = self._get(task_id)
        if rec.state not in UNSUCCESSFUL and rec.state not in (State.BLOCKED, State.SKIPPED):
            raise EngineError(
                f"{rec.name} {being(rec.state)}; only failed, timed-out, cancelled, over-budget "
                "or skipped tasks can be retried"
            )
        waiting = self.graph.unfinished(rec, self._tasks.get)
        if waiting:
            names = ", ".join(self._tasks[d].name if d in self._tasks else d for d in waiting)
            raise EngineError(f"{rec.name} still waits on {names}: retry those first")
        # A manual retry grants a fresh round of attempts.
        new = await self._move(
            task_id,
            rec.state,
            State.QUEUED,
            "retried by user",
            attempt_base=rec.attempts,
            retry_at=None,
        )
        if new is None:
            raise EngineError(f"{rec.name} changed state meanwhile; try again")
        self._enqueue(new)
        self._changed_now()
        return f"queued {rec.name} again"
