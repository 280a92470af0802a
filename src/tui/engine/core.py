"""What the parts of ``Engine`` (tui.engine.scheduler) share, declared once: the engine's
state and the methods one part calls on another. The parts (``Dispatch``, ``RunEnd``,
``Questions``, ``Subtasks``, ``TaskCommands``...) derive from this class; ``Engine`` sets the
attributes and mixes the parts in.

The methods are declared for the type checker only: at run time the class has none, so no
stub can shadow a part's real method whatever the order of the mix.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from tui.engine.adapter import RunResult
from tui.engine.children import Children
from tui.engine.clock import Clock
from tui.engine.end_log import EndLog
from tui.engine.output import OutputBuffer
from tui.engine.queue import RunQueue
from tui.engine.room import Room
from tui.engine.runner import Executor, Run, RunHost
from tui.engine.worktrees import Worktrees
from tui.model.states import State
from tui.model.workflow import FileDefaults
from tui.store.db import Store
from tui.store.records import RunStart, TaskRecord


class EngineCore:
    store: Store
    executor: Executor
    output: OutputBuffer
    clock: Clock
    rng: random.Random
    defaults: FileDefaults | None
    worktrees: Worktrees
    end_log: EndLog | None  # tui.engine.end_log
    room: Room | None  # tui.engine.room
    _tasks: dict[str, TaskRecord]  # as the store last returned each
    _running: dict[str, Run]
    _runners: set[asyncio.Task[None]]  # until each has fully finished
    _stopping: bool  # ``stop`` has begun
    _ends_left: list[Run]  # ends a full disk refused at the stop, left to the next engine
    _children: dict[str, Children]  # parent id -> its children, in submit order, counted
    _parent: dict[str, str]  # child id -> parent id (a settled record's spec stays unparsed)
    _subtask_dirty: set[str]
    _retrying: set[str]  # tasks with an automatic retry to come (tui.engine.dispatch)
    queue: RunQueue

    if TYPE_CHECKING:
        # -- the engine's own (tui.engine.scheduler) --------------------------------------

        @property
        def engine_id(self) -> str: ...

        @property
        def db_path(self) -> str: ...

        def _get(self, task_id: str) -> TaskRecord: ...

        def _index(self, records: Sequence[TaskRecord]) -> None: ...

        def _changed_now(self, schedule: bool = True) -> None: ...

        # -- tui.engine.task_commands -------------------------------------------------------

        async def cancel(self, task_id: str, reason: str = "cancelled by user") -> str: ...

        # -- tui.engine.dispatch ------------------------------------------------------------

        def _took(self, rec: TaskRecord) -> None: ...

        def _enqueue(self, rec: TaskRecord) -> None: ...

        async def _move(
            self,
            task_id: str,
            expected: State | Collection[State],
            to: State,
            reason: str,
            **updates: Any,
        ) -> TaskRecord | None: ...

        async def _check_pending(self, task_id: str) -> None: ...

        async def _check_pending_all(self, task_ids: Sequence[str]) -> None: ...

        async def _dependents_may_run(self, task_id: str) -> None: ...

        async def _cascade_failure(self, task_id: str) -> None: ...

        def _next_for_slot(self, freeing: str) -> str | None: ...

        def _ahead(self) -> int: ...

        def _paced(self, run: Run) -> None: ...

        async def _launch(self, began: RunStart | None) -> None: ...

        # -- tui.engine.questions and tui.engine.subtasks ----------------------------------

        async def _close_run_questions(self, run: Run, status: str) -> None: ...

        async def _raise(
            self, task_id: str, run: Run | None, kind: str, payload: dict[str, Any]
        ) -> str: ...

        def _waits_on_children(self, task_id: str) -> bool: ...

        def _mark_subtask(self, rec: TaskRecord) -> None: ...

        def _parent_lets_run(self, rec: TaskRecord) -> bool: ...

        async def _as_parent(
            self, rec: TaskRecord, to: State, reason: str
        ) -> tuple[State, str]: ...

        async def _settle_subtasks(self) -> None: ...

        # -- tui.engine.run_end --------------------------------------------------------------

        async def _execute(self, run: Run, began: RunStart, host: RunHost) -> None: ...

        async def _finish(self, run: Run, result: RunResult) -> None: ...
