"""The engine: the tasks of one database, scheduled, and the command API every viewer uses.

The database is the source of truth. The engine keeps the records the store hands back from
each checked transition (never a copy it edits itself), so deciding what runs next never
rescans the store. Only one engine schedules a database at a time; other processes reach it
over the socket its owner serves (``client``).

Where things are: ``graph`` (dependencies, what a failure cancels), ``queue`` (priorities and
slots), ``runner`` (one run: spawn, watchdog, kill), ``questions`` (questions and reviews),
``output`` (buffered lines), ``stream`` (the event stream), ``recovery`` (what a dead engine
left behind), ``dispatch`` (dependencies met, the schedule loop, starting runs), ``run_end``
(a run's end), ``task_commands`` (approve, cancel, retry). This module ties them together: the
engine's life, submitting tasks and what viewers read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import uuid
from collections.abc import (
    AsyncIterator,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any

from tui.engine.adapter import Adapter, declared_adapters
from tui.engine.adoption import Adoption
from tui.engine.children import Children
from tui.engine.clock import Clock, RealClock
from tui.engine.dispatch import AHEAD, READY, Dispatch
from tui.engine.end_log import EndLog, ends_path
from tui.engine.errors import EngineBusy, EngineError
from tui.engine.events import Cursor, Event
from tui.engine.graph import Graph
from tui.engine.hooks import HookRunner
from tui.engine.output import FLUSH_HIGH_WATER, OutputBuffer
from tui.engine.questions import Questions
from tui.engine.queue import RunQueue
from tui.engine.recovery import end_orphaned_runs
from tui.engine.room import Room, room_path
from tui.engine.run_end import RunEnd
from tui.engine.runner import Executor, LocalExecutor, Run
from tui.engine.stream import SUBSCRIBER_BACKLOG, EventStream
from tui.engine.subtasks import Subtasks
from tui.engine.task_commands import TaskCommands
from tui.engine.worktree_runs import plan_worktrees
from tui.engine.worktrees import Worktrees
from tui.model.states import State
from tui.model.task import Task
from tui.model.workflow import FileDefaults
from tui.procs.process import Child, ProcIdentity, identity_alive, proc_start_time
from tui.store.db import DiskFullError, Store, StoreError
from tui.store.records import EventRecord, OutputLine, TaskRecord

if TYPE_CHECKING:
    from tui.engine.api import Message, Reply

log = logging.getLogger(__name__)


def _engine_alive(pid: int, start: int | None) -> bool:
    """Whether an engine registered in the store still runs (the same process, not a reused
    pid). An flock on top of this guards the daemon (tui.daemon.service)."""
    return start is not None and identity_alive(ProcIdentity(pid, pid, start))


async def live_engine_pid(store: Store) -> int | None:
    """The pid of the live engine that schedules this database, if one does."""
    for _id, pid, start in await store.engines():
        if _engine_alive(pid, start):
            return pid
    return None


class Engine(Dispatch, RunEnd, Adoption, Questions, Subtasks, TaskCommands):
    def __init__(
        self,
        store: Store,
        *,
        concurrency: int = 4,
        agent_limits: dict[str, int] | None = None,
        auto_approve: bool = True,
        adapters: Mapping[str, Adapter] | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        kill_grace: float = 5.0,
        shell: str = "bash",
        executor: Executor | None = None,
        defaults: FileDefaults | None = None,
        ahead: int = AHEAD,
    ) -> None:
        super().__init__()
        # on_error, on_max_retries and hooks for tasks (and files) that do not set them.
        self.defaults = defaults
        self.store = store
        self._db_path: str | None = None
        self.id = uuid.uuid4().hex
        self.auto_approve = auto_approve
        self.clock = clock or RealClock()
        self.rng = rng or random.Random()
        self.shell = shell
        self.executor: Executor = executor or LocalExecutor(
            adapters if adapters is not None else declared_adapters(), kill_grace
        )

        self._tasks: dict[str, TaskRecord] = {}  # as the store last returned each
        self._children: dict[str, Children] = {}  # parents' subtasks (engine.subtasks)
        self._parent: dict[str, str] = {}  # and each subtask's parent
        self._subtask_dirty: set[str] = set()
        self.graph = Graph()
        self.queue = RunQueue(concurrency, agent_limits)
        self._retrying: set[str] = set()  # tasks waiting for an automatic retry
        self._running: dict[str, Run] = {}
        self._quick = 0
        self._backoff = 1
        self._ahead_most = ahead  # runs sent ahead of a free slot, at most (0: none)
        self._adopted_runs = 0
        self._holds = getattr(self.executor, "holds", None)  # tui.engine.dispatch._ahead
        self._runners: set[asyncio.Task[None]] = set()  # until each has fully finished
        self._stopping = False
        self._ends_left: list[Run] = []
        self._wake = asyncio.Event()
        # Futures of those waiting for the next change (``wait_settled``): set by
        # ``_changed_now``, a few times a run; a Condition cost a lock taken and given back
        # at each of them.
        self._change_waiters: list[asyncio.Future[None]] = []
        self._loops: list[asyncio.Task[None]] = []
        self._started = False
        # Held while a batch is submitted, so priorities order the whole batch.
        self._batch = asyncio.Lock()
        self.stream = EventStream(store)
        self.output = OutputBuffer(store, self.stream.publish, self._output_not_stored)
        self._disk_kills: set[asyncio.Task[None]] = set()
        # Told the pid (= process group) of every agent process started (the daemon's guard).
        self.on_spawn: Callable[[int], None] | None = None
        self.worktrees = Worktrees(store)
        self.end_log: EndLog | None = None  # opened by recovery (tui.engine.end_log)
        self.room: Room | None = None  # kept by recovery (tui.engine.room)
        self.hooks = HookRunner(store, self._tasks_get, defaults.hooks if defaults else None)

    @property
    def concurrency(self) -> int:
        return self.queue.concurrency

    @property
    def engine_id(self) -> str:
        return self.id

    @property
    def db_path(self) -> str:
        # Made once: every run's environment and end log name it (str(Path) each time).
        if self._db_path is None:
            self._db_path = str(self.store.path)
        return self._db_path

    # -- life cycle ------------------------------------------------------------------------

    async def start(self) -> None:
        for engine_id, pid, start in await self.store.engines():
            if _engine_alive(pid, start):
                raise EngineBusy(
                    f"another tui engine (pid {pid}) is already running tasks from "
                    f"{self.store.path}; commands go to it, or stop it first"
                )
            await self.store.unregister_engine(engine_id)  # it died without saying so
        await self.store.register_engine(self.id, os.getpid(), proc_start_time(os.getpid()))
        prepare = getattr(self.executor, "prepare", None)
        if prepare is not None:  # e.g. the local executor's keeper: it starts while we recover
            prepare(self.id)
        await self.stream.start()
        self.store.on_event = self._on_journal  # journal rows reach viewers in commit order
        await self._recover()
        self._started = True
        self._loops = [
            asyncio.create_task(self._schedule_loop(), name="tui-scheduler"),
            asyncio.create_task(self.output.loop(), name="tui-output"),
        ]

    async def stop(self) -> None:
        """Stop scheduling; running attempts are ended as interrupted and their tasks queued
        again (the attempt not counted): the next engine on this database runs them."""
        if not self._started:
            return
        self._started = False
        self._stopping = True
        for loop in self._loops:
            loop.cancel()
        for loop in self._loops:
            with contextlib.suppress(asyncio.CancelledError):
                await loop
        runs = list(self._running.values())
        for run in runs:
            run.kill_reason = run.kill_reason or "shutdown"
        await asyncio.gather(*(self.executor.kill(run) for run in runs))
        await asyncio.gather(*self._runners, return_exceptions=True)
        await self.executor.close()
        await self.output.flush()
        await self.hooks.stop()
        try:
            await self.store.unregister_engine(self.id)
        except DiskFullError as e:  # the next engine sees this one's process gone
            log.error("%s; the engine's row stays until the next start", e)
        if self.end_log is not None:
            if not self._ends_left:  # every run is ended and committed
                self.end_log.clear()
            self.end_log.close()
            self.end_log = None
        if self.room is not None:
            self.room.close()
            self.room = None
        self.store.on_event = None
        self.stream.live = False

    def _on_journal(self, ev: EventRecord) -> None:
        self.stream.publish(ev)  # what stream.on_event does, a call fewer an event
        self.hooks.on_event(ev)

    def _tasks_get(self, task_id: str) -> TaskRecord | None:
        # Not ``self._tasks.get`` bound once: ``load`` replaces the dict.
        return self._tasks.get(task_id)

    async def __aenter__(self) -> Engine:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _recover(self) -> None:
        """Reconcile what a dead engine left behind, then load every task."""
        where = ends_path(self.db_path)
        self.end_log = EndLog(where) if where is not None else None
        room = room_path(self.db_path)
        self.room = Room(room) if room is not None else None
        ends = self.end_log.read() if self.end_log is not None else {}
        adopted = await self._adopt_kept(ends)  # agents a dead engine's keeper kept
        spare = {run_id: a.group for run_id, a in adopted.items()}
        finish = [ends[run_id] for run_id in await end_orphaned_runs(self.store, ends, spare)]
        records = await self.load()
        ending = {e.task_id for e in finish} | {a.row.task_id for a in adopted.values()}
        for r in records:
            if r.state == State.RUNNING and r.id not in ending:
                await self._requeue_interrupted(r.id)
            elif r.state == State.QUEUED:
                self._enqueue(r)
        # A failure cascades at once (one pass covers its whole subgraph); tasks ready to
        # queue go together, so their transitions share store round trips.
        ready = []
        for r in records:
            rec = self._tasks[r.id]
            if rec.state != State.PENDING:
                continue
            if self.graph.blocking(rec, self._tasks.get) is not None:
                await self._check_pending(rec.id)
            elif rec.approved and self.graph.open_deps(rec.id) == 0:
                ready.append(rec.id)
        await self._check_pending_all(ready)
        for e in finish:  # agents that had exited, their output stored: not run again
            await self._finish_ended(e)
        await self._carry_on(adopted)
        if self.end_log is not None:
            self.end_log.clear()

    async def load(self) -> list[TaskRecord]:
        """Read every task into memory. Enough on its own for commands without scheduling."""
        records = await self.store.list_tasks()
        self._tasks, self.graph, self._children, self._parent = {}, Graph(), {}, {}
        self._index(records)
        return records

    def _index(self, records: Sequence[TaskRecord]) -> None:
        """Add tasks to memory and to the dependency graph."""
        for r in records:
            self._tasks[r.id] = r
            self._track_retry(r)
        self.graph.add(records, self._tasks.get)
        self._index_children(records)

    # -- the command API -------------------------------------------------------------------

    async def submit(self, tasks: Sequence[Task], approved: bool | None = None) -> list[str]:
        """Store and schedule ``tasks``. ``approved`` overrides the engine's approval setting
        for these tasks (False: they wait in PENDING for `tui approve`)."""
        if approved is None:
            approved = self.auto_approve
        known = set(self._tasks) | {t.id for t in tasks}
        for t in tasks:
            missing = [d for d in t.depends_on if d not in known]
            if missing:
                raise EngineError(f"task {t.name!r} depends on unknown task ids: {missing}")
        async with self._batch:
            # Worktree bases are pinned now (and stored before the tasks: a row with no task
            # is what `tui gc` cleans up; a task whose worktree was never planned runs in place).
            await plan_worktrees(self.worktrees, tasks)
            # Tasks plainly ready are stored QUEUED by the insert itself (one transaction, no
            # UPDATE of each row); otherwise they are checked once stored, as below. They are
            # indexed before the journal's listeners (hooks) hear of their first move.
            queued = self._queued_at_submit(tasks, approved)
            try:
                records = await self.store.insert_tasks(
                    tasks, approved=approved, queued=queued, queued_reason=READY, first=self._index
                )
            except StoreError as e:
                raise EngineError(str(e)) from None
            if queued:  # every other task waits on one of these
                for rec in records:
                    if rec.state == State.QUEUED:
                        self._enqueue(rec)
            else:
                # Together, so their transitions share store round trips (in this order).
                await self._check_pending_all([rec.id for rec in records])
        self._changed_now()
        return [t.id for t in tasks]

    async def get_many(self, task_ids: Iterable[str]) -> list[TaskRecord]:
        """The known tasks among ``task_ids`` (one call, so a remote viewer pays one trip)."""
        return [r for r in (self._tasks.get(i) for i in task_ids) if r is not None]

    async def get(self, task_id: str) -> TaskRecord | None:
        return self._tasks.get(task_id)

    async def list_tasks(self) -> list[TaskRecord]:
        return sorted(self._tasks.values(), key=lambda r: r.submit_seq)

    def running_ids(self) -> set[str]:
        """The tasks whose agent runs now: RUNNING ones, and those that need a person while
        their agent waits (a question asked with `tui ask`: READY, its process alive)."""
        return set(self._running)

    def ending_ids(self) -> set[str]:
        """Of those, the tasks whose agent has exited and whose end waits for room on a full
        disk: stopping the engine interrupts nothing of theirs (tui.engine.run_end)."""
        return {task_id for task_id, run in self._running.items() if run.waiting_room}

    def settled(self, task_id: str) -> bool:
        """Nothing more will happen to this task without a person."""
        return self._tasks[task_id].settled

    async def wait_settled(self, task_ids: Iterable[str]) -> None:
        ids = list(task_ids)
        seen = 0  # ids[:seen] were settled when last looked at

        def all_settled() -> bool:
            # Called on every change: going on from where the last call stopped keeps a run of
            # N tasks O(N), where checking every id each time was O(N²).
            nonlocal seen
            while seen < len(ids) and self.settled(ids[seen]):
                seen += 1
            if seen < len(ids):
                return False
            # One seen settled earlier may have been retried since: all of them, at once.
            seen = next((i for i, t in enumerate(ids) if not self.settled(t)), len(ids))
            return seen == len(ids)

        while not all_settled():
            fut = asyncio.get_running_loop().create_future()
            self._change_waiters.append(fut)
            await fut

    @property
    def has_tasks(self) -> bool:
        return bool(self._tasks)

    def unsettled_ids(self) -> list[str]:
        return [i for i in self._tasks if not self.settled(i)]

    # -- reads for viewers (the log view pages lines by run and line number) ---------------

    async def output_index(self, task_id: str) -> list[tuple[int, int]]:
        return await self.store.output_index(task_id)

    async def read_run_lines(self, run_id: int, first_seq: int, last_seq: int) -> list[OutputLine]:
        return await self.store.read_run_lines(run_id, first_seq, last_seq)

    @property
    def cursor(self) -> Cursor:
        """Where the live stream stands now: open ``events(cursor)`` to miss nothing after it."""
        return self.stream.published

    def events(
        self, since: Cursor | None = None, on_lag: Callable[[], None] | None = None
    ) -> AsyncIterator[Event]:
        """Everything after ``since`` (None = from now), stored first, then live (see
        ``stream.EventStream.events``)."""
        return self.stream.events(since, on_lag)

    def event_batches(self, since: Cursor | None = None) -> AsyncIterator[list[Event]]:
        """As ``events``, in lists (``stream.EventStream.batches``)."""
        return self.stream.batches(since)

    def _changed_now(self, schedule: bool = True) -> None:
        """Wake whoever waits on a change, and the schedule loop unless ``schedule`` is False
        (a change that leaves it nothing to do: see ``RunEnd._loop_has_work``). Not a
        coroutine: it never waits, and it is called a few times a run."""
        if schedule:
            self._wake.set()
        if self._change_waiters:
            waiters, self._change_waiters = self._change_waiters, []
            for fut in waiters:
                if not fut.done():  # a waiter cancelled meanwhile
                    fut.set_result(None)

    # -- state changes: every one is a checked store transition ------------------------------

    def _get(self, task_id: str) -> TaskRecord:
        rec = self._tasks.get(task_id)
        if rec is None:
            raise EngineError(f"no task with id {task_id!r}")
        return rec

    def _output_not_stored(self, e: DiskFullError, run_ids: set[int]) -> None:
        """The disk is full: the runs whose output could not be stored fail (killed, with the
        reason), rather than run on with nothing kept. What was stored before stays."""
        log.error("%s", e)
        for run in list(self._running.values()):
            if run.run_id in run_ids and not run.kill_reason:
                run.kill_reason, run.kill_error = "disk_full", str(e)
                kill = asyncio.ensure_future(self.executor.kill(run))
                self._disk_kills.add(kill)
                kill.add_done_callback(self._disk_kills.discard)

    # -- what a run asks of its engine (runner.RunHost) --------------------------------------

    async def output_lines(
        self, run: Run, stream: int, lines: list[str], end: int | None = None
    ) -> None:
        await self.output.add(run, stream, lines, end)

    async def session_started(self, run: Run, session_id: str) -> None:
        await self.store.set_run_session(run.run_id, session_id)

    async def node_started(self, run: Run, node: str) -> None:
        new = await self.store.set_run_node(run.run_id, node)
        if new is not None:
            self._took(new)

    def process_started(self, run: Run, proc: Child) -> None:
        if self.on_spawn is not None:
            self.on_spawn(proc.pid)
        # Stored for crash recovery while the agent gets on with its work, with the next
        # transaction (the run's end at the latest): a store call of its own cost every run a
        # future, a task and a turn of the loop. Until then recovery finds it by its marker.
        self.store.note_run_process(
            run.run_id, proc.pid, proc.pid, lambda: proc.identity().start_time
        )

    # -- commands (from this process, or from the socket: tui.daemon.server) ------------

    async def handle(self, message: Message[Any]) -> Reply:
        """Answer one message of ``tui.engine.api`` (its handler: ``tui.engine.handlers``)."""
        from tui.engine.handlers import handle

        return await handle(self, message)


__all__ = [
    "FLUSH_HIGH_WATER",
    "SUBSCRIBER_BACKLOG",
    "Engine",
    "EngineBusy",
    "EngineError",
    "EventRecord",
    "live_engine_pid",
]
