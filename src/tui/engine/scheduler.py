"""The asyncio scheduler: queue, priorities, concurrency, dependencies, timeouts, retries,
recovery, and the command API every viewer uses.

The database is the source of truth; the engine keeps an in-memory copy of the tasks it
schedules so that deciding what runs next never rescans the store. Only one engine schedules a
database at a time; other processes reach it over the socket its owner serves (``client``).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import json
import logging
import os
import random
import sys
import time
import uuid
from collections.abc import (
    AsyncIterator,
    Callable,
    Collection,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Any

from tui.engine.adapter import Adapter, AdapterError, RunResult, declared_adapters
from tui.engine.api import Message, Reply
from tui.engine.clock import Clock, RealClock
from tui.engine.events import Cursor, Event, OutputBatch, advance, newer
from tui.engine.retry import retry_delay
from tui.model.duration import format_duration
from tui.model.output_format import OutputFormatError, parse_output
from tui.model.states import UNSUCCESSFUL, State
from tui.model.task import Task, priority_rank
from tui.procs.process import (
    Child,
    ProcIdentity,
    identity_alive,
    kill_orphan_group,
    proc_start_time,
    terminate_group,
)
from tui.store.chunks import ChunkRow, make_chunks
from tui.store.db import DiskFullError, Move, Store, StoreError, waiting_reason
from tui.store.records import (
    RAW,
    STDERR,
    EventRecord,
    OutputLine,
    QuestionRecord,
    RunRecord,
    RunStart,
    TaskRecord,
)

log = logging.getLogger(__name__)

FLUSH_INTERVAL = 0.05  # seconds between output batches (a UI frame or so)
FLUSH_HIGH_WATER = 20_000  # lines buffered before a producer waits for the writer
DISK_FULL_RETRY = 1.0  # seconds between attempts to store a run's end while the disk is full
SUBSCRIBER_BACKLOG = 50_000  # events + lines a viewer may lag before it reads back from the store


class EngineError(Exception):
    """A command that cannot be carried out; the message says why and what to do."""


class EngineBusy(EngineError):
    """Another live engine already schedules this database."""


@dataclass
class _Run:
    task_id: str
    run_id: int
    attempt: int
    seq: int = 0
    raw_seq: int = 0
    proc: Child | None = None
    recorded: asyncio.Future[None] | None = None  # the process stored in its run row
    kill_reason: str = ""  # "timeout" | "cancel" | "shutdown" | "disk_full"
    kill_error: str = ""  # why, for "disk_full"
    runner: asyncio.Task[None] | None = None
    # The timeout counts only while the agent works, not while it waits on a human:
    # exactly one of these two is set at any time.
    working: asyncio.Event = field(default_factory=asyncio.Event)
    waiting: asyncio.Event = field(default_factory=asyncio.Event)
    open_questions: set[str] = field(default_factory=set)


class _Subscriber:
    """One viewer of the event stream, and how far behind it is (in events and lines)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Event] = asyncio.Queue()
        self.backlog = 0
        self.lagging = False

    def offer(self, item: Event) -> None:
        if self.lagging:
            return  # it will read this back from the store
        self.backlog += _weight(item)
        if self.backlog > SUBSCRIBER_BACKLOG:
            self.lagging = True
            self.queue.put_nowait(item)  # wakes a reader waiting on an empty queue
            return
        self.queue.put_nowait(item)

    def taken(self, item: Event) -> None:
        self.backlog -= _weight(item)

    def catch_up(self) -> None:
        """Forget the queue: everything in it is stored and will be read back."""
        self.lagging = False
        self.backlog = 0
        while not self.queue.empty():
            self.queue.get_nowait()


def _weight(item: Event) -> int:
    return item.count if isinstance(item, OutputBatch) else 1


class _Ctx:
    """RunContext handed to adapters."""

    def __init__(self, engine: Engine, run: _Run, rec: TaskRecord) -> None:
        self._engine = engine
        self._run = run
        self.task = rec.task
        self.run_id = run.run_id
        self.attempt = run.attempt
        self.shell = engine.shell
        self.rejection_comment = rec.rejection_comment
        # `tui ask` inside the task must find this tui even when its venv is not on PATH.
        path = os.environ.get("PATH", os.defpath)
        self.env = {
            **os.environ,
            **rec.task.agent.env,
            "PATH": f"{path}{os.pathsep}{os.path.dirname(sys.executable)}",
            "TUI_TASK_ID": rec.id,
            "TUI_RUN_ID": str(run.run_id),
            "TUI_ATTEMPT": str(run.attempt),
            "TUI_DB": str(engine.store.path),
        }
        if rec.rejection_comment:
            self.env["TUI_REJECTION_COMMENT"] = rec.rejection_comment
        self.cost_so_far = rec.cost_usd
        self.previous_runs: list[RunRecord] = []
        self.late_answers: list[QuestionRecord] = []
        self._session_id = ""

    async def output(self, stream: int, lines: list[str]) -> None:
        await self._engine._buffer_output(self._run, stream, lines)

    async def ask(self, kind: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """Put the task in READY until a person answers; None if the question expired."""
        question_id = await self._engine._raise(self._run, kind, payload)
        waiter = self._engine._waiters.get(question_id)
        if waiter is None:
            return None
        try:
            return await asyncio.shield(waiter)
        except asyncio.CancelledError:
            # The agent withdrew the request (or the run ended): nobody waits any more.
            with contextlib.suppress(EngineError):
                await self._engine.expire(question_id)
            raise

    async def session_started(self, session_id: str) -> None:
        if session_id and session_id != self._session_id:
            self._session_id = session_id
            await self._engine.store.set_run_session(self._run.run_id, session_id)

    async def process_started(self, proc: Child) -> None:
        self._run.proc = proc
        # Stored for crash recovery while the agent gets on with its work: nothing waits for
        # it but the end of the run, which is stored after it.
        self._run.recorded = asyncio.ensure_future(
            self._engine.store.set_run_process(
                self._run.run_id, proc.pid, proc.pid, lambda: proc.identity().start_time
            )
        )


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


class Engine:
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
    ) -> None:
        self.store = store
        self.id = uuid.uuid4().hex
        self.concurrency = max(1, concurrency)
        self.agent_limits = dict(agent_limits or {})
        self.auto_approve = auto_approve
        self.adapters = adapters if adapters is not None else declared_adapters()
        self.clock = clock or RealClock()
        self.rng = rng or random.Random()
        self.kill_grace = kill_grace
        self.shell = shell

        self._tasks: dict[str, TaskRecord] = {}
        self._dependents: dict[str, set[str]] = {}
        # Dependencies not yet COMPLETED, per task: a fan-in of n costs O(n), not O(n²).
        self._open_deps: dict[str, int] = {}
        self._retrying: set[str] = set()  # tasks waiting for an automatic retry
        self._queue: list[tuple[int, int, str]] = []  # (priority rank, submit seq, id)
        self._running: dict[str, _Run] = {}
        self._runners: set[asyncio.Task[None]] = set()  # until each has fully finished
        self._waiters: dict[str, asyncio.Future[dict[str, Any] | None]] = {}
        self._wake = asyncio.Event()
        self._changed = asyncio.Condition()
        self._loops: list[asyncio.Task[None]] = []
        self._started = False
        # Held while a batch is submitted, so priorities order the whole batch.
        self._batch = asyncio.Lock()

        self._out_chunks: list[ChunkRow] = []  # one per read: see tui.store.chunks
        self._out_lines = 0  # lines in _out_chunks
        self._raw_rows: list[tuple[str, int, int, float, str]] = []
        self._out_lock = asyncio.Lock()
        self._flushing: asyncio.Future[None] | None = None
        self._out_ready = asyncio.Event()
        self._disk_kills: set[asyncio.Task[None]] = set()
        self._subscribers: set[_Subscriber] = set()
        self._published = Cursor()

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
        self._published = Cursor(*await self.store.cursor())
        self.store.on_event = self._on_event  # journal rows reach viewers in commit order
        await self._recover()
        self._started = True
        self._loops = [
            asyncio.create_task(self._schedule_loop(), name="tui-scheduler"),
            asyncio.create_task(self._flush_loop(), name="tui-output"),
        ]

    async def stop(self) -> None:
        """Stop scheduling; running attempts are ended as interrupted and retried next start."""
        if not self._started:
            return
        self._started = False
        for loop in self._loops:
            loop.cancel()
        for loop in self._loops:
            with contextlib.suppress(asyncio.CancelledError):
                await loop
        runs = list(self._running.values())
        for run in runs:
            run.kill_reason = run.kill_reason or "shutdown"
        await asyncio.gather(*(self._kill(run) for run in runs))
        await asyncio.gather(*self._runners, return_exceptions=True)
        await self._flush_output()
        await self.store.unregister_engine(self.id)
        self.store.on_event = None

    async def __aenter__(self) -> Engine:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _recover(self) -> None:
        """Reconcile what a dead engine left behind, then load every task."""
        for run in await self.store.runs(open_only=True):
            if run.pid and run.pgid:
                kill_orphan_group(ProcIdentity(run.pid, run.pgid, run.proc_start or -1))
            await self.store.end_run(run.id, outcome="interrupted", error="interrupted")
        records = await self.load()
        for r in records:
            if r.state == State.RUNNING:
                await self._after_attempt(r, State.FAILED, "interrupted")
            elif r.state == State.QUEUED:
                self._enqueue(r)
        for r in records:
            if r.state == State.PENDING:
                await self._check_pending(r)

    async def load(self) -> list[TaskRecord]:
        """Read every task into memory. Enough on its own for commands without scheduling."""
        records = await self.store.list_tasks()
        self._tasks, self._dependents, self._open_deps = {}, {}, {}
        self._index(records)
        return records

    def _index(self, records: Iterable[TaskRecord]) -> None:
        """Add tasks to the in-memory maps: dependents, and how many deps each still waits on."""
        records = list(records)
        for r in records:
            self._tasks[r.id] = r
            self._track_retry(r)
        for r in records:
            for dep in r.depends_on:
                self._dependents.setdefault(dep, set()).add(r.id)
            self._open_deps[r.id] = sum(
                1
                for d in r.depends_on
                if d not in self._tasks or self._tasks[d].state != State.COMPLETED
            )

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
            try:
                records = await self.store.insert_tasks(tasks, approved=approved)
            except StoreError as e:
                raise EngineError(str(e)) from None
            self._index(records)
            # Together, so their transitions share store round trips (in this order).
            await asyncio.gather(*(self._check_pending(rec) for rec in records))
        await self._changed_now()
        return [t.id for t in tasks]

    async def approve(self, task_id: str) -> str:
        rec = self._get(task_id)
        if rec.state != State.PENDING:
            raise EngineError(f"{rec.name} is {rec.state}, only PENDING tasks need approval")
        if rec.approved:
            return f"{rec.name} was already approved"
        await self.store.update_task(task_id, approved=1)
        rec.approved = True
        await self._check_pending(rec)
        await self._changed_now()
        return f"approved {rec.name}"

    async def cancel(self, task_id: str, reason: str = "cancelled by user") -> str:
        rec = self._get(task_id)
        run = self._running.get(task_id)
        if run is None and rec.state == State.RUNNING:
            raise EngineError(
                f"{rec.name} is RUNNING under an engine that is gone; `tui run` recovers it first"
            )
        if run is not None:
            run.kill_reason = "cancel"
            await self._kill(run)
            if run.runner:
                await asyncio.shield(run.runner)
            return f"cancelled {rec.name}"
        if rec.state in (State.PENDING, State.QUEUED, State.READY) and await self._move(
            rec, rec.state, State.CANCELLED, reason
        ):
            for q in await self.store.questions(task_id=task_id):
                await self.store.close_question(q.id, "cancelled")
            await self._cascade_failure(rec)
            return f"cancelled {rec.name}"
        if rec.state in UNSUCCESSFUL and rec.retry_at is not None:
            await self.store.update_task(task_id, retry_at=None)
            rec.retry_at = None
            self._track_retry(rec)
            await self._cascade_failure(rec)
            await self._changed_now()
            return f"cancelled the pending retry of {rec.name}; it stays {rec.state}"
        raise EngineError(f"{rec.name} is {rec.state}: nothing to cancel")

    async def retry(self, task_id: str) -> str:
        rec = self._get(task_id)
        if rec.state not in UNSUCCESSFUL and rec.state != State.BLOCKED:
            raise EngineError(
                f"{rec.name} is {rec.state}; only failed, timed-out, cancelled or "
                "over-budget tasks can be retried"
            )
        waiting = self._unfinished_deps(rec)
        if waiting:
            names = ", ".join(self._tasks[d].name if d in self._tasks else d for d in waiting)
            raise EngineError(f"{rec.name} still waits on {names}: retry those first")
        # A manual retry grants a fresh round of attempts.
        if not await self._move(
            rec,
            rec.state,
            State.QUEUED,
            "retried by user",
            attempt_base=rec.attempts,
            retry_at=None,
        ):
            raise EngineError(f"{rec.name} changed state meanwhile; try again")
        rec.attempt_base, rec.retry_at = rec.attempts, None
        self._enqueue(rec)
        await self._changed_now()
        return f"queued {rec.name} again"

    async def questions(self, task_id: str | None = None) -> list[QuestionRecord]:
        """Open questions, newest first."""
        return await self.store.questions(task_id=task_id)

    async def answer(self, question_id: str, answer: dict[str, Any]) -> str:
        """Deliver a person's answer exactly once (a second answer is refused)."""
        q = await self._open_question(question_id)
        if q.kind == "review":
            accept = bool(answer.get("accept"))
            return await (
                self.accept(q.task_id)
                if accept
                else self.reject(q.task_id, str(answer.get("comment", "")))
            )
        if not await self.store.close_question(q.id, "answered", answer):
            raise EngineError("that question was answered meanwhile")
        await self._question_closed(q, answer)
        return f"answered {self._tasks[q.task_id].name}"

    async def expire(self, question_id: str) -> str:
        """Give up waiting for an answer (the asker timed out)."""
        q = await self._open_question(question_id)
        if await self.store.close_question(q.id, "expired"):
            await self._question_closed(q, None)
        return "expired"

    async def accept(self, task_id: str) -> str:
        rec, q = await self._review_of(task_id)
        if not await self.store.close_question(q.id, "answered", {"accept": True}):
            raise EngineError("that review was answered meanwhile")
        await self._move(rec, State.READY, State.COMPLETED, "accepted in review")
        await self._dependents_may_run(rec)
        return f"accepted {rec.name}"

    async def reject(self, task_id: str, comment: str) -> str:
        rec, q = await self._review_of(task_id)
        if not comment.strip():
            raise EngineError("say what to change: a rejection needs a comment")
        if not await self.store.close_question(
            q.id, "answered", {"accept": False, "comment": comment}
        ):
            raise EngineError("that review was answered meanwhile")
        # Runs again (adapters resume the session with the comment) in a fresh round of attempts.
        await self._move(
            rec,
            State.READY,
            State.PENDING,
            "rejected in review",
            rejection_comment=comment,
            attempt_base=rec.attempts,
        )
        await self._check_pending(rec)
        return f"rejected {rec.name}; it runs again with your comment"

    async def ask(self, task_id: str, run_id: int, kind: str, payload: dict[str, Any]) -> str:
        """A question from inside a running task (``tui ask``); returns the question id."""
        run = self._running.get(task_id)
        if run is None or run.run_id != run_id:
            raise EngineError("that task run is not running under this engine")
        return await self._raise(run, kind, payload)

    async def _open_question(self, question_id: str) -> QuestionRecord:
        q = await self.store.get_question(question_id)
        if q is None:
            raise EngineError(f"no question with id {question_id!r}")
        if q.status != "open":
            raise EngineError(f"that question is already {q.status}")
        return q

    async def _review_of(self, task_id: str) -> tuple[TaskRecord, QuestionRecord]:
        rec = self._get(task_id)
        reviews = [q for q in await self.store.questions(task_id=task_id) if q.kind == "review"]
        if rec.state != State.READY or not reviews:
            raise EngineError(f"{rec.name} is {rec.state} and not waiting for a review")
        return rec, reviews[0]

    async def _raise(
        self, run: _Run | None, kind: str, payload: dict[str, Any], rec: TaskRecord | None = None
    ) -> str:
        rec = rec or self._get(run.task_id if run else "")
        question_id = uuid.uuid4().hex
        ok = await self.store.raise_question(
            question_id,
            rec.id,
            run.run_id if run else None,
            kind,
            payload,
            expected=(State.RUNNING, State.READY),
        )
        if not ok:
            raise EngineError(f"{rec.name} is {rec.state}; it cannot ask now")
        # The cache changes before the next await, so viewers woken by the journal see it.
        if rec.state != State.READY:
            rec.state, rec.reason = State.READY, waiting_reason(kind)
            rec.question_json = json.dumps(payload)
        if run is not None:
            run.open_questions.add(question_id)
            run.working.clear()  # the timeout stops counting while a person decides
            run.waiting.set()
            self._waiters[question_id] = asyncio.get_running_loop().create_future()
        await self._changed_now()
        return question_id

    async def _question_closed(self, q: QuestionRecord, answer: dict[str, Any] | None) -> None:
        rec = self._tasks[q.task_id]
        waiter = self._waiters.pop(q.id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(answer)
        run = self._running.get(q.task_id)
        if run is not None and q.id in run.open_questions:
            run.open_questions.discard(q.id)
            if not run.open_questions:
                await self._move(
                    rec,
                    State.READY,
                    State.RUNNING,
                    "answered" if answer is not None else "no answer in time",
                )
                run.waiting.clear()
                run.working.set()
            else:
                await self._changed_now()
        elif rec.state == State.READY and answer is not None:
            # The agent that asked is gone (e.g. the engine restarted): run the task again;
            # adapters that keep sessions resume with the answer.
            await self._move(
                rec,
                State.READY,
                State.PENDING,
                "answered after the agent stopped; running again",
                attempt_base=rec.attempts,
            )
            await self._check_pending(rec)
        else:
            await self._changed_now()

    async def _close_run_questions(self, run: _Run, status: str) -> None:
        for question_id in list(run.open_questions):
            await self.store.close_question(question_id, status)
            waiter = self._waiters.pop(question_id, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        run.open_questions.clear()

    async def get_many(self, task_ids: Iterable[str]) -> list[TaskRecord]:
        """The known tasks among ``task_ids`` (one call, so a remote viewer pays one trip)."""
        return [r for r in (self._tasks.get(i) for i in task_ids) if r is not None]

    async def get(self, task_id: str) -> TaskRecord | None:
        return self._tasks.get(task_id)

    async def list_tasks(self) -> list[TaskRecord]:
        return sorted(self._tasks.values(), key=lambda r: r.submit_seq)

    def settled(self, task_id: str) -> bool:
        """Nothing more will happen to this task without a person."""
        return self._tasks[task_id].settled

    async def wait_settled(self, task_ids: Iterable[str]) -> None:
        ids = list(task_ids)
        async with self._changed:
            await self._changed.wait_for(lambda: all(self.settled(i) for i in ids))

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
        return self._published

    # -- the event stream ------------------------------------------------------------------

    async def events(
        self, since: Cursor | None = None, on_lag: Callable[[], None] | None = None
    ) -> AsyncIterator[Event]:
        """Everything after ``since`` (None = from now), stored first, then live.

        A viewer that falls more than SUBSCRIBER_BACKLOG items behind is not allowed to hold
        memory: its queue is dropped and it reads what it missed back from the store (every
        item is stored before it is published), so it still sees no gap and no duplicate.
        ``on_lag`` is called when that happens, so a remote viewer can be told.
        """
        sub = _Subscriber()
        self._subscribers.add(sub)
        try:
            last = since if since is not None else self._published
            while True:
                # What is published from here on reaches the queue: the store is read only
                # up to what was published before, or a busy engine would be chased forever.
                # An engine not running publishes nothing: then the store is all there is.
                upto = self._published if self._started else None
                async for item in self._stored_after(last, upto):
                    last = advance(last, item)
                    yield item
                while not sub.lagging:
                    item = await sub.queue.get()
                    sub.taken(item)
                    fresh = newer(item, last)
                    if fresh is not None:
                        last = advance(last, fresh)
                        yield fresh
                sub.catch_up()
                if on_lag is not None:
                    on_lag()
        finally:
            self._subscribers.discard(sub)

    async def _stored_after(self, cursor: Cursor, upto: Cursor | None) -> AsyncIterator[Event]:
        last_event, last_output = cursor
        end = upto or Cursor(sys.maxsize, sys.maxsize)
        while last_event < end.event_id and (batch := await self.store.read_events(last_event)):
            for ev in batch:
                yield ev
            last_event = batch[-1].id
        while last_output < end.output_id and (
            chunks := await self.store.read_output_chunks(last_output)
        ):
            for batch in OutputBatch.of_stored(chunks):
                fresh = batch.after(last_output)
                if fresh is not None:
                    yield fresh
                    last_output = fresh.last_id

    def _publish(self, item: Event) -> None:
        for sub in self._subscribers:
            sub.offer(item)

    def _on_event(self, ev: EventRecord) -> None:
        self._published = self._published._replace(event_id=ev.id)
        self._publish(ev)

    async def _changed_now(self) -> None:
        self._wake.set()
        async with self._changed:
            self._changed.notify_all()

    # -- state changes ---------------------------------------------------------------------

    def _get(self, task_id: str) -> TaskRecord:
        rec = self._tasks.get(task_id)
        if rec is None:
            raise EngineError(f"no task with id {task_id!r}")
        return rec

    async def _move(
        self,
        rec: TaskRecord,
        expected: State | Collection[State],
        to: State,
        reason: str,
        **updates: Any,
    ) -> bool:
        moved = await self.store.transition(rec.id, expected, to, reason, **updates)
        if moved is not None:
            await self._moved(rec, to, reason, updates)
        return moved is not None

    async def _moved(
        self, rec: TaskRecord, to: State, reason: str, updates: dict[str, Any]
    ) -> None:
        """The store made the transition: memory follows."""
        rec.state, rec.reason = to, reason
        for k, v in updates.items():
            if hasattr(rec, k):
                setattr(rec, k, v)
        self._track_retry(rec)
        await self._changed_now()

    def _track_retry(self, rec: TaskRecord) -> None:
        """Keep the set of tasks with a pending automatic retry (scanned on every wake)."""
        if rec.retry_at is not None and rec.state in UNSUCCESSFUL:
            self._retrying.add(rec.id)
        else:
            self._retrying.discard(rec.id)

    def _unfinished_deps(self, rec: TaskRecord) -> list[str]:
        return [
            d
            for d in rec.depends_on
            if d not in self._tasks or self._tasks[d].state != State.COMPLETED
        ]

    async def _check_pending(self, rec: TaskRecord) -> None:
        """Queue a PENDING task whose dependencies are done, or cancel it if one failed."""
        if rec.state != State.PENDING:
            return
        for dep_id in rec.depends_on:
            dep = self._tasks.get(dep_id)
            if dep is not None and dep.state in UNSUCCESSFUL and dep.retry_at is None:
                await self._cancel_dependent(rec, dep)
                return
        ready = rec.approved and self._open_deps.get(rec.id, 0) == 0
        if ready and await self._move(rec, State.PENDING, State.QUEUED, "ready to run"):
            self._enqueue(rec)

    async def _cancel_dependent(self, rec: TaskRecord, failed: TaskRecord) -> None:
        reason = f"dependency {failed.name} ended {failed.state}"
        if await self._move(rec, State.PENDING, State.CANCELLED, reason):
            await self._cascade_failure(rec)

    async def _cascade_failure(self, rec: TaskRecord) -> None:
        for dep_id in sorted(self._dependents.get(rec.id, ())):
            dependent = self._tasks[dep_id]
            if dependent.state == State.PENDING:
                await self._cancel_dependent(dependent, rec)

    async def _after_attempt(self, rec: TaskRecord, outcome: State, reason: str) -> None:
        """RUNNING → outcome, scheduling an automatic retry when the policy allows one."""
        move, retrying = self._attempt_move(rec, outcome, reason)
        if await self._move(rec, move.expected, move.to, move.reason, **move.updates):
            await self._attempt_moved(rec, outcome, retrying)

    def _attempt_move(self, rec: TaskRecord, outcome: State, reason: str) -> tuple[Move, bool]:
        """Where a finished attempt goes, and whether an automatic retry is scheduled."""
        updates: dict[str, Any] = {}
        retrying = (
            outcome in (State.FAILED, State.TIMED_OUT)
            and rec.attempt_in_round < rec.task.retry.max_attempts
        )
        if retrying:
            delay = retry_delay(rec.task.retry, rec.attempt_in_round, self.rng)
            updates["retry_at"] = self.clock.now() + delay
            reason = (
                f"{reason}; retry {rec.attempt_in_round + 1}/{rec.task.retry.max_attempts}"
                f" in {format_duration(round(delay, 1))}"
            )
        return Move(rec.id, (State.RUNNING, State.READY), outcome, reason, updates), retrying

    async def _attempt_moved(self, rec: TaskRecord, outcome: State, retrying: bool) -> None:
        if outcome == State.COMPLETED:
            await self._dependents_may_run(rec)
        elif not retrying and outcome in UNSUCCESSFUL:
            await self._cascade_failure(rec)

    async def _dependents_may_run(self, rec: TaskRecord) -> None:
        """``rec`` just COMPLETED: each dependent waits on one dependency fewer."""
        for dep_id in sorted(self._dependents.get(rec.id, ())):
            self._open_deps[dep_id] = max(0, self._open_deps.get(dep_id, 0) - 1)
            if self._open_deps[dep_id] == 0:
                await self._check_pending(self._tasks[dep_id])

    def _enqueue(self, rec: TaskRecord) -> None:
        heapq.heappush(self._queue, (priority_rank(rec.task.priority), rec.submit_seq, rec.id))
        self._wake.set()

    # -- scheduling ------------------------------------------------------------------------

    async def _schedule_loop(self) -> None:
        while True:
            self._wake.clear()
            async with self._batch:
                next_due = await self._due_retries()
                await self._start_runnable()
            waits = [asyncio.create_task(self._wake.wait())]
            if next_due is not None:
                waits.append(asyncio.create_task(self._sleep_until(next_due)))
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()

    async def _sleep_until(self, when: float) -> None:
        # The delay is taken when the sleep starts, not when it is scheduled: the clock may
        # move in between (a test's clock jumps).
        await self.clock.sleep(when - self.clock.now())

    async def _due_retries(self) -> float | None:
        now = self.clock.now()
        next_due: float | None = None
        for task_id in list(self._retrying):
            rec = self._tasks[task_id]
            if rec.retry_at is None or rec.state not in UNSUCCESSFUL:
                self._retrying.discard(task_id)
                continue
            if rec.retry_at <= now:
                if await self._move(rec, rec.state, State.QUEUED, "automatic retry", retry_at=None):
                    self._enqueue(rec)
            elif next_due is None or rec.retry_at < next_due:
                next_due = rec.retry_at
        return next_due

    def _slots_free(self, agent_type: str, picked: Sequence[TaskRecord] = ()) -> bool:
        """Whether one more ``agent_type`` task may start, counting those being started."""
        if len(self._running) + len(picked) >= self.concurrency:
            return False
        limit = self.agent_limits.get(agent_type)
        if limit is None:
            return True
        busy = sum(
            1
            for r in self._running.values()
            if self._tasks[r.task_id].task.agent.type == agent_type
        )
        busy += sum(1 for rec in picked if rec.task.agent.type == agent_type)
        return busy < limit

    async def _start_runnable(self) -> None:
        held: list[tuple[int, int, str]] = []  # queued behind a per-agent limit
        picked: list[TaskRecord] = []
        while self._queue and len(self._running) + len(picked) < self.concurrency:
            item = heapq.heappop(self._queue)
            rec = self._tasks.get(item[2])
            if rec is None or rec.state != State.QUEUED or rec.id in self._running:
                continue
            if any(p is rec for p in picked):  # queued twice (retried while queued)
                continue
            if not self._slots_free(rec.task.agent.type, picked):
                held.append(item)
                continue
            picked.append(rec)
        for item in held:
            heapq.heappush(self._queue, item)
        # Started together, so their store calls share one round trip; a slot is taken only
        # once its run is stored, and nothing else starts tasks meanwhile (this loop is the
        # only caller, and it waits here).
        await asyncio.gather(*(self._start(rec) for rec in picked))

    async def _start(self, rec: TaskRecord) -> None:
        began = await self.store.start_run(rec.id, self.id)
        if began is None:
            return
        run_id, attempt = began.run_id, began.attempt
        rec.state, rec.reason, rec.attempts, rec.retry_at = State.RUNNING, "", attempt, None
        rec.run_started_at, rec.run_ended_at = time.time(), None  # the app's TIME column
        run = _Run(rec.id, run_id, attempt)
        run.working.set()
        self._running[rec.id] = run
        run.runner = asyncio.create_task(self._execute(rec, run, began), name=f"run-{rec.name}")
        self._runners.add(run.runner)
        run.runner.add_done_callback(self._runners.discard)
        await self._changed_now()

    async def _execute(self, rec: TaskRecord, run: _Run, began: RunStart) -> None:
        watchdog = None
        if rec.task.timeout > 0:
            watchdog = asyncio.create_task(self._watchdog(run, rec.task.timeout))
        adapter = self.adapters.get(rec.task.agent.type)
        try:
            if adapter is None:
                result = RunResult(
                    State.FAILED,
                    error=f"agent type {rec.task.agent.type!r} is not supported by this tui yet",
                )
            else:
                result = await adapter.run(self._context(run, rec, began))
        except AdapterError as e:
            result = RunResult(State.FAILED, error=str(e))
        except asyncio.CancelledError:
            result = RunResult(State.FAILED, error="interrupted")
        except Exception as e:  # an adapter bug must not take the scheduler down
            log.exception("adapter %s crashed", rec.task.agent.type)
            result = RunResult(State.FAILED, error=f"internal error: {type(e).__name__}: {e}")
        finally:
            if watchdog:
                watchdog.cancel()
            if run.proc is not None:
                await terminate_group(run.proc.pid, grace=0.5)
        await self._finish(rec, run, result)

    def _context(self, run: _Run, rec: TaskRecord, began: RunStart) -> _Ctx:
        ctx = _Ctx(self, run, rec)
        ctx.previous_runs = began.previous_runs
        # Answers that arrived after the run that asked had ended: the next run resumes with them.
        last_end = max((r.ended_at or 0 for r in ctx.previous_runs), default=0)
        ctx.late_answers = [
            q
            for q in began.questions
            if q.status == "answered" and q.kind != "review" and (q.answered_at or 0) > last_end
        ]
        return ctx

    async def _finish(self, rec: TaskRecord, run: _Run, result: RunResult) -> None:
        outcome, error = result.outcome, result.error
        if run.kill_reason == "timeout":
            outcome = State.TIMED_OUT
            error = f"timed out after {format_duration(rec.task.timeout)}"
        elif run.kill_reason == "cancel":
            outcome, error = State.CANCELLED, "cancelled by user"
        elif run.kill_reason == "shutdown":
            outcome, error = State.FAILED, "interrupted"
        elif run.kill_reason == "disk_full":
            outcome, error = State.FAILED, run.kill_error
        if outcome == State.COMPLETED and rec.task.output_format is not None:
            outcome, error = await self._check_output(rec, result)
        if run.open_questions:
            await self._close_run_questions(run, "cancelled")
        if rec.state == State.READY and outcome != State.CANCELLED:
            # The agent ended while waiting on a person; READY only leaves through RUNNING.
            await self._move(rec, State.READY, State.RUNNING, "the agent stopped while waiting")
        if error and outcome != State.COMPLETED:
            await self._buffer_output(run, STDERR, [f"[tui] {error}"])
        await self._flush_output()
        if run.recorded is not None:
            try:
                await run.recorded
            except Exception:  # the run row lacks its pid; recovery then leaves it alone
                log.exception("could not store the process of run %s", run.run_id)
        review = outcome == State.COMPLETED and rec.task.review
        # The run's end and the task's next state share one transaction (and round trip).
        move, retrying = (
            (None, False) if review else self._attempt_move(rec, outcome, error or "exit code 0")
        )
        while True:
            try:
                moved = await self.store.end_run(
                    run.run_id,
                    outcome=outcome.value,
                    exit_code=result.exit_code,
                    error=error,
                    cost_usd=result.cost_usd,
                    tokens_in=result.tokens_in,
                    tokens_out=result.tokens_out,
                    session_id=result.session_id,
                    then=move,
                )
                break
            except DiskFullError as e:  # the run's end is stored once there is room again
                log.error("%s; run %s ends when it can be stored", e, run.run_id)
                await asyncio.sleep(DISK_FULL_RETRY)
        rec.run_ended_at = time.time()
        rec.cost_usd += result.cost_usd
        rec.tokens_in += result.tokens_in
        rec.tokens_out += result.tokens_out
        self._running.pop(rec.id, None)
        if review:
            await self._raise(None, "review", {"result": result.result or ""}, rec=rec)
            return
        if moved and move is not None:
            await self._moved(rec, move.to, move.reason, move.updates)
            await self._attempt_moved(rec, outcome, retrying)
        if outcome == State.CANCELLED:
            await self._cascade_failure(rec)
        await self._changed_now()

    async def _check_output(self, rec: TaskRecord, result: RunResult) -> tuple[State, str]:
        """COMPLETED with the parsed result stored, or FAILED saying why (retry applies)."""
        assert rec.task.output_format is not None
        try:
            value = parse_output(rec.task.output_format, result.result)
        except OutputFormatError as e:
            return State.FAILED, f"output_format: {e}"
        rec.result = json.dumps(value)
        await self.store.update_task(rec.id, result=rec.result)
        return State.COMPLETED, ""

    async def _watchdog(self, run: _Run, timeout: float) -> None:
        remaining = timeout
        loop = asyncio.get_running_loop()
        while remaining > 0:
            await run.working.wait()
            started = loop.time()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.waiting.wait(), remaining)
            remaining -= loop.time() - started
        run.kill_reason = run.kill_reason or "timeout"
        await self._kill(run)

    async def _kill(self, run: _Run) -> None:
        if run.proc is not None:
            await terminate_group(run.proc.pid, grace=self.kill_grace, proc=run.proc)
        elif run.runner is not None and not run.runner.done():
            run.runner.cancel()

    # -- output ----------------------------------------------------------------------------

    async def _buffer_output(self, run: _Run, stream: int, lines: list[str]) -> None:
        now = time.time()
        if stream == RAW:
            for text in lines:
                run.raw_seq += 1
                self._raw_rows.append((run.task_id, run.run_id, run.raw_seq, now, text))
        elif lines:
            self._out_chunks += make_chunks(
                run.task_id, run.run_id, stream, run.seq + 1, now, lines
            )
            run.seq += len(lines)
            self._out_lines += len(lines)
        self._out_ready.set()
        if self._out_lines >= FLUSH_HIGH_WATER:
            # Double-buffered: one batch is written while the next fills. Only when the
            # writer is a whole batch behind does the producer wait (its pipe then fills).
            if self._flushing is not None and not self._flushing.done():
                await self._flushing
            self._flushing = asyncio.ensure_future(self._flush_output())

    async def _flush_output(self) -> None:
        async with self._out_lock:
            chunks, self._out_chunks, self._out_lines = self._out_chunks, [], 0
            raw, self._raw_rows = self._raw_rows, []
            try:
                await self.store.append_raw(raw)
                if not chunks:
                    return
                first_id = await self.store.append_chunks(chunks)
            except DiskFullError as e:
                self._output_not_stored(e, {c[1] for c in chunks} | {r[1] for r in raw})
                return
            batch = OutputBatch.of_chunks(first_id, chunks)
            self._published = self._published._replace(output_id=batch.last_id)
            self._publish(batch)

    def _output_not_stored(self, e: DiskFullError, run_ids: set[int]) -> None:
        """The disk is full: the runs whose output could not be stored fail (killed, with the
        reason), rather than run on with nothing kept. What was stored before stays."""
        log.error("%s", e)
        for run in list(self._running.values()):
            if run.run_id in run_ids and not run.kill_reason:
                run.kill_reason, run.kill_error = "disk_full", str(e)
                kill = asyncio.ensure_future(self._kill(run))
                self._disk_kills.add(kill)
                kill.add_done_callback(self._disk_kills.discard)

    async def _flush_loop(self) -> None:
        while True:
            await self._out_ready.wait()
            self._out_ready.clear()
            await asyncio.sleep(FLUSH_INTERVAL)  # gather a frame's worth of lines
            await self._flush_output()

    # -- commands (from this process, or from the socket: tui.daemon.server) ------------

    async def handle(self, message: Message[Any]) -> Reply:
        """Answer one message of ``tui.engine.api`` (its handler: ``tui.engine.handlers``)."""
        from tui.engine.handlers import handle

        return await handle(self, message)


__all__ = ["Engine", "EngineBusy", "EngineError", "EventRecord", "live_engine_pid"]
