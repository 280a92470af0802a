"""All the app asks of an engine: the in-process ``Engine`` and the daemon's ``RemoteEngine``
both provide it, so the same app runs embedded or attached to a daemon."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Protocol

from tui.engine.client import EngineClient
from tui.engine.events import Cursor, Event, Notice
from tui.store.records import OutputLine, QuestionRecord, TaskRecord


class AppEngine(EngineClient, Protocol):
    """The command API (``EngineClient``) plus what a viewer reads."""

    @property
    def cursor(self) -> Cursor: ...

    def events(self, since: Cursor | None = None) -> AsyncIterator[Event | Notice]: ...
    async def list_tasks(self) -> list[TaskRecord]: ...
    async def get(self, task_id: str) -> TaskRecord | None: ...
    async def get_many(self, task_ids: Iterable[str]) -> list[TaskRecord]: ...
    async def questions(self, task_id: str | None = None) -> list[QuestionRecord]: ...
    async def output_index(self, task_id: str) -> list[tuple[int, int]]: ...
    async def read_run_lines(
        self, run_id: int, first_seq: int, last_seq: int
    ) -> list[OutputLine]: ...
