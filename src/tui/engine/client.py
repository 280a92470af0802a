"""How a viewer or a command reaches the engine: one ``Client`` with ``send(message)``.

A message is one of ``tui.engine.api``; ``send`` returns its typed reply. ``LocalClient``
sends to an engine in this process (``Engine.handle``); ``RemoteEngine`` (tui.daemon.remote)
sends the same models over the socket of whoever owns the database, and
``tui.daemon.lifecycle.connect`` picks between them. The methods below
(``submit``, ``cancel``, ``list_tasks``…) are conveniences built from the messages, nothing
more: adding a command needs none.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any, TypeVar

from tui.engine import api
from tui.engine.events import Cursor, Event, Notice
from tui.engine.scheduler import Engine
from tui.model.task import Task
from tui.store.records import OutputLine, QuestionRecord, TaskRecord

R = TypeVar("R", bound="api.Reply")  # a string: api is executed on first use (tui.engine)


class Client:
    """The one client of the engine API."""

    detached = False  # True when runs outlive this client (a daemon runs them)

    async def send(self, message: api.Message[R]) -> R:
        raise NotImplementedError

    @property
    def cursor(self) -> Cursor:
        raise NotImplementedError

    def events(self, since: Cursor | None = None) -> AsyncIterator[Event | Notice]:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass

    # -- conveniences, each one message --------------------------------------------------

    async def submit(self, tasks: list[Task], approved: bool | None = None) -> list[str]:
        return (await self.send(api.Submit(tasks=tasks, approved=approved))).ids

    async def approve(self, task_id: str) -> str:
        return await self._done(api.Approve(task_id=task_id))

    async def cancel(self, task_id: str) -> str:
        return await self._done(api.Cancel(task_id=task_id))

    async def retry(self, task_id: str) -> str:
        return await self._done(api.Retry(task_id=task_id))

    async def answer(self, question_id: str, answer: dict[str, Any]) -> str:
        return await self._done(api.Answer(question_id=question_id, answer=answer))

    async def expire(self, question_id: str) -> str:
        return await self._done(api.Expire(question_id=question_id))

    async def accept(self, task_id: str) -> str:
        return await self._done(api.Accept(task_id=task_id))

    async def reject(self, task_id: str, comment: str) -> str:
        return await self._done(api.Reject(task_id=task_id, comment=comment))

    async def _done(self, command: api.Message[api.Done]) -> str:
        """A command's reply: what was done, for a person."""
        return (await self.send(command)).text

    async def ask(self, task_id: str, run_id: int, kind: str, payload: dict[str, Any]) -> str:
        msg = api.Ask(task_id=task_id, run_id=run_id, kind=kind, payload=payload)
        return (await self.send(msg)).question_id

    async def list_tasks(self) -> list[TaskRecord]:
        return (await self.send(api.ListTasks())).tasks

    async def get_many(self, task_ids: Iterable[str]) -> list[TaskRecord]:
        return (await self.send(api.GetMany(task_ids=list(task_ids)))).tasks

    async def get(self, task_id: str) -> TaskRecord | None:
        found = await self.get_many([task_id])
        return found[0] if found else None

    async def questions(self, task_id: str | None = None) -> list[QuestionRecord]:
        return (await self.send(api.GetQuestions(task_id=task_id))).questions

    async def output_index(self, task_id: str) -> list[tuple[int, int]]:
        return (await self.send(api.OutputIndex(task_id=task_id))).runs

    async def read_run_lines(self, run_id: int, first_seq: int, last_seq: int) -> list[OutputLine]:
        msg = api.ReadRunLines(run_id=run_id, first_seq=first_seq, last_seq=last_seq)
        return (await self.send(msg)).lines


class LocalClient(Client):
    """The engine in this process: a running one, or one loaded from the store without
    scheduling (commands then change the store through the same handlers)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def send(self, message: api.Message[R]) -> R:
        return await self.engine.handle(message)  # type: ignore[return-value]

    @property
    def cursor(self) -> Cursor:
        return self.engine.cursor

    def events(self, since: Cursor | None = None) -> AsyncIterator[Event | Notice]:
        return self.engine.events(since)
