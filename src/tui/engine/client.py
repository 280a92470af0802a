"""How a process that does not own the engine reaches it.

The CLI and the app hold an ``EngineClient``: the engine itself when it runs in this process, a
``RemoteEngine`` (tui.daemon.remote) when the daemon runs it, an ``InboxClient`` when a
foreground `tui run` schedules the database (commands go through the store's command inbox and
the reply comes back the same way), or an engine loaded without scheduling when nothing runs
(commands then change the store directly).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

from tui.engine.scheduler import Engine, EngineError, live_engine_pid
from tui.model.task import Task
from tui.procs.process import proc_start_time
from tui.store.db import Store

REPLY_TIMEOUT = 30.0


class EngineClient(Protocol):
    async def submit(self, tasks: list[Task], approved: bool | None = None) -> list[str]: ...
    async def approve(self, task_id: str) -> str: ...
    async def cancel(self, task_id: str) -> str: ...
    async def retry(self, task_id: str) -> str: ...
    async def answer(self, question_id: str, answer: dict[str, Any]) -> str: ...
    async def expire(self, question_id: str) -> str: ...
    async def accept(self, task_id: str) -> str: ...
    async def reject(self, task_id: str, comment: str) -> str: ...


class CommandClient:
    """The command API as named commands (``Engine.dispatch`` kinds) sent to an engine in
    another process; subclasses say how a command travels and how its reply comes back."""

    async def _call(self, kind: str, payload: dict[str, Any]) -> str:
        raise NotImplementedError

    async def submit(self, tasks: list[Task], approved: bool | None = None) -> list[str]:
        payload: dict[str, Any] = {"tasks": [t.model_dump(mode="json") for t in tasks]}
        if approved is not None:
            payload["approved"] = approved
        reply = await self._call("submit", payload)
        return reply.split()

    async def approve(self, task_id: str) -> str:
        return await self._call("approve", {"task_id": task_id})

    async def cancel(self, task_id: str) -> str:
        return await self._call("cancel", {"task_id": task_id})

    async def retry(self, task_id: str) -> str:
        return await self._call("retry", {"task_id": task_id})

    async def answer(self, question_id: str, answer: dict[str, Any]) -> str:
        return await self._call("answer", {"question_id": question_id, "answer": answer})

    async def expire(self, question_id: str) -> str:
        return await self._call("expire", {"question_id": question_id})

    async def accept(self, task_id: str) -> str:
        return await self._call("accept", {"task_id": task_id})

    async def reject(self, task_id: str, comment: str) -> str:
        return await self._call("reject", {"task_id": task_id, "comment": comment})

    async def ask(self, task_id: str, run_id: int, kind: str, payload: dict[str, Any]) -> str:
        return await self._call(
            "ask", {"task_id": task_id, "run_id": run_id, "kind": kind, "payload": payload}
        )


class InboxClient(CommandClient):
    """Commands through the store's inbox table, for an engine that has no socket (`tui run`)."""

    def __init__(self, store: Store, engine_pid: int) -> None:
        self.store = store
        self.engine_pid = engine_pid

    async def _call(self, kind: str, payload: dict[str, Any]) -> str:
        command_id = await self.store.enqueue_command(kind, payload)
        deadline = time.monotonic() + REPLY_TIMEOUT
        start = proc_start_time(self.engine_pid)
        while (reply := await self.store.command_reply(command_id)) is None:
            if proc_start_time(self.engine_pid) != start:
                raise EngineError(
                    f"the engine (pid {self.engine_pid}) stopped before it "
                    "answered; run the command again"
                )
            if time.monotonic() > deadline:
                raise EngineError(
                    f"the engine (pid {self.engine_pid}) did not answer in "
                    f"{REPLY_TIMEOUT:.0f}s; is it stuck?"
                )
            await asyncio.sleep(0.05)  # polling the reply row; the engine commits it
        ok, text = reply
        if not ok:
            raise EngineError(text)
        return text


async def connect(store: Store) -> EngineClient:
    """The daemon of this database if it runs, else another process's live engine (`tui run`),
    else direct access to the store."""
    from tui.daemon.lifecycle import attach  # the daemon package builds on this module

    remote = await attach(store.path)
    if remote is not None:
        return remote
    pid = await live_engine_pid(store)
    if pid is not None:
        return InboxClient(store, pid)
    engine = Engine(store)
    await engine.load()
    return engine


@asynccontextmanager
async def connected(store: Store) -> AsyncIterator[EngineClient]:
    """``connect``, closing the daemon connection (if it was one) afterwards."""
    client = await connect(store)
    try:
        yield client
    finally:
        close = getattr(client, "aclose", None)
        if close is not None:
            await close()
