"""The durable store: one SQLite file in WAL mode, every change inside a checked transaction.

``Store`` is the facade every layer above uses: each method is one call on the database
thread (``tui.store.tx``), running SQL kept with its table (``tasks``, ``runs``,
``questions``, ``output``, ``journal``, ``engines``). Journal rows written by a
call reach ``on_event`` right after it commits, in commit order.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from tui.model.states import State
from tui.model.task import Task
from tui.store import engines, health, journal, output, questions, runs, tasks, worktrees
from tui.store.batch import Tx
from tui.store.chunks import ChunkRow, LineRow, group_rows
from tui.store.engines import engine_sockets, stored_settings
from tui.store.errors import DatabaseFileError, DiskFullError, StoreError
from tui.store.health import FileIdentity
from tui.store.questions import WAITING_REASON, waiting_reason
from tui.store.records import (
    EventRecord,
    OutputLine,
    QuestionRecord,
    TaskRecord,
)
from tui.store.run_store import RunEndArgs, RunStore, deps_of, likely_of, with_spec
from tui.store.tasks import Move
from tui.store.tx import Database, setup

log = logging.getLogger("tui.store")

# Moves in one ``move_many`` that may still be run on the loop (``Database.call(quick=...)``).
QUICK_MOVES = 64

__all__ = [
    "WAITING_REASON",
    "DatabaseFileError",
    "DiskFullError",
    "Move",
    "RunEndArgs",
    "Store",
    "StoreError",
    "engine_sockets",
    "stored_settings",
    "waiting_reason",
]


class Store(RunStore):
    """Async access to one database file. Safe to open from several processes at once."""

    def __init__(self, db: Database, path: Path, identity: FileIdentity) -> None:
        self._db = db
        self.path = path
        self._identity = identity
        self._changes_at_open = -1  # rows changed by the connection when opened (see close)
        # Runs' processes noted (``note_run_process``) and not yet written: the run's end takes
        # its own into its statement when it comes first, else the rider writes it.
        self._procs: dict[int, runs.Process] = {}

    @property
    def on_event(self) -> Callable[[EventRecord], None] | None:
        return self._db.on_event

    @on_event.setter
    def on_event(self, fn: Callable[[EventRecord], None] | None) -> None:
        self._db.on_event = fn

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    async def open(cls, path: str | os.PathLike[str], *, create: bool = True) -> Store:
        """Open the database at ``path``. Without ``create`` (read commands) a missing file
        is an error naming it: reading never leaves a new empty database behind."""
        p = Path(path).expanduser()
        if p.is_dir():
            raise StoreError(f"cannot open database {p}: it is a directory (give a file path)")
        if not create and not p.exists():
            raise health.missing(p)
        health.check_header(p)
        try:
            if create:
                p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            existed = p.exists()
            if not existed:
                health.drop_orphans(p)
            db = await Database.connect(p, create=create)
        except (OSError, sqlite3.Error) as e:
            if isinstance(e, sqlite3.Error) and health.is_file_problem(e):
                raise health.explain(p, e) from None
            raise StoreError(f"cannot open database {p}: {e}") from None
        try:
            if not existed:
                os.chmod(p, 0o600)  # task text and output can hold secrets
            await db.call(setup, write=False)
            changes = await db.run(lambda conn: conn.total_changes)
            identity = health.FileIdentity.of(p)
        except DatabaseFileError:
            await db.close()
            raise
        except sqlite3.DatabaseError as e:
            await db.close()
            raise StoreError(f"{p} is not a usable tui database: {e}") from None
        except BaseException:
            await db.close()
            raise
        store = cls(db, p, identity)
        store._changes_at_open = changes
        return store

    def check_file(self) -> None:
        """Raise :class:`DatabaseFileError` unless the path still names the file this store has
        open (deleted or replaced under a running daemon, it would take every write with it)."""
        self._identity.check(self.path)

    async def close(self) -> None:
        """Close; if the file was deleted or replaced meanwhile, first save what this store
        has open (see :func:`health.save_copy`), so that nothing it wrote is lost. A store
        that wrote nothing (a viewer of the daemon's database) saves beside the path, never
        at it: the writer still holding the file saves a newer copy there. Closing again
        does nothing."""
        if self._db.closed:
            return
        try:
            self.check_file()
        except DatabaseFileError as e:
            wrote = await self._db.run(lambda conn: conn.total_changes) != self._changes_at_open
            try:
                where = await self._db.run(
                    lambda conn: health.save_copy(conn, self.path, beside=not wrote)
                )
                log.error("%s; saved what it held to %s", e, where)
            except (OSError, sqlite3.Error) as failed:
                log.error("%s; could not save what it held: %s", e, failed)
        await self._db.close()

    # -- tasks -------------------------------------------------------------------------------

    async def insert_tasks(
        self,
        tasks_: Sequence[Task],
        *,
        approved: bool,
        queued: Collection[str] = (),
        queued_reason: str = "",
        first: Callable[[list[TaskRecord]], None] | None = None,
    ) -> list[TaskRecord]:
        """Store new tasks as PENDING, all or none. Ids already stored are refused. Those of
        ``queued`` are stored QUEUED (``queued_reason``) in the same transaction, their
        PENDING → QUEUED journal rows after every ``submitted`` row (see tasks.insert).
        ``first`` gets the records before any listener hears of those rows (Database.call)."""
        now = time.time()
        return await self._db.call(
            lambda t: tasks.insert(t, tasks_, approved, now, queued, queued_reason), first=first
        )

    async def transition(
        self,
        task_id: str,
        expected: State | Collection[State],
        to: State,
        reason: str = "",
        *,
        base: TaskRecord | None = None,
        **updates: Any,
    ) -> TaskRecord | None:
        """Compare-and-set: move ``task_id`` to ``to`` only if it is now in ``expected``.

        Returns the updated task, or None (and changes nothing) when another writer got there
        first or the state table forbids the move. ``updates`` sets other task columns in the
        same transaction. ``base``, the caller's record of the task, lends the result its
        parsed spec (a spec never changes after submission); so it does in the methods below.
        """
        now = time.time()
        move = Move(task_id, expected, to, reason, updates)
        deps, likely = deps_of(base, task_id), likely_of(base, task_id)
        return await self._db.call(
            lambda t: with_spec(tasks.transition(t, move, now, deps=deps, likely=likely), base),
            quick=True,
        )

    async def move_many(
        self, moves: Sequence[tuple[Move, TaskRecord | None]]
    ) -> list[TaskRecord | None]:
        """Several ``transition``s in one transaction, in order (a cascade of any length is one
        round trip). Each is checked on its own; one refused does not stop the others."""
        now = time.time()
        return await self._db.call(
            lambda t: [
                with_spec(
                    tasks.transition(
                        t, m, now, deps=deps_of(base, m.task_id), likely=likely_of(base, m.task_id)
                    ),
                    base,
                )
                for m, base in moves
            ],
            quick=len(moves) <= QUICK_MOVES,
        )

    async def update_task_record(
        self, task_id: str, base: TaskRecord | None = None, **cols: Any
    ) -> TaskRecord | None:
        """``update_task``, returning the updated task (None if there is no such task)."""
        now = time.time()

        def tx(t: Tx) -> TaskRecord | None:
            tasks.update(t, task_id, cols, now)
            return with_spec(tasks.get(t, task_id), base)

        return await self._db.call(tx)

    async def update_task(self, task_id: str, **cols: Any) -> None:
        """Change non-state columns (approval flag, retry time, totals)."""
        now = time.time()
        await self._db.call(lambda t: tasks.update(t, task_id, cols, now))

    async def get_task(self, task_id: str) -> TaskRecord | None:
        return await self._db.call(lambda t: tasks.get(t, task_id), write=False)

    async def list_tasks(
        self, states: Collection[State] | None = None, tag: str | None = None
    ) -> list[TaskRecord]:
        out = await self._db.call(lambda t: tasks.select(t, states), write=False)
        return [r for r in out if tag in (r.spec_fields("tags")[0] or ())] if tag else out

    async def all_ids(self) -> set[str]:
        return await self._db.call(tasks.ids, write=False)

    async def resolve(self, ref: str) -> str:
        """A full id, a unique id prefix, or a unique task name → the task id."""
        if not ref.strip():  # `tui cancel "$ID"` with ID unset: a prefix of every id
            raise StoreError("the task id is empty: give an id, a unique id prefix or a name")
        matches = await self._db.call(lambda t: tasks.matches(t, ref), write=False)
        if len(matches) == 1:
            return next(iter(matches))
        if not matches:
            raise StoreError(f"no task matches {ref!r} (give an id, a unique id prefix or a name)")
        listed = ", ".join(f"{i[:8]} ({n})" for i, n in list(matches.items())[:5])
        raise StoreError(f"{ref!r} matches {len(matches)} tasks: {listed}; give more of the id")

    # -- output ------------------------------------------------------------------------------

    async def append_output(self, rows: Sequence[LineRow]) -> int:
        """Store a batch of (task_id, run_id, stream, seq, at, text) lines; returns the first id.

        Consecutive lines of one read are stored as one chunk row (see ``tui.store.chunks``).
        """
        return await self.append_chunks(group_rows(rows))

    async def append_chunks(
        self, chunks: Sequence[ChunkRow], offsets: Sequence[output.Offset] = ()
    ) -> int:
        """Store chunks of lines, and with them how far into its agent's streams each run's
        stored lines reach (run id, stream, bytes); returns the id of the first line (0 for
        none)."""
        if not chunks:
            return 0
        return await self._db.call(lambda t: output.append(t, chunks, offsets))

    async def run_offsets(self, run_id: int) -> tuple[int, int]:
        """How far into its agent's (stdout, stderr) a run's stored lines reach, in bytes."""
        return await self._db.call(lambda t: output.run_offsets(t, run_id), write=False)

    async def append_raw(self, rows: Sequence[tuple[str, int, int, float, str]]) -> None:
        """Store a batch of (task_id, run_id, seq, at, text) protocol lines."""
        if rows:
            await self._db.call(lambda t: output.append_raw(t, rows))

    async def read_raw(self, task_id: str) -> list[tuple[int, str]]:
        """(run_id, text) of a task's protocol lines, oldest first."""
        return await self._db.call(lambda t: output.read_raw(t, task_id), write=False)

    async def read_output(
        self,
        task_id: str | None = None,
        *,
        after_id: int = 0,
        limit: int = 10_000,
        stream: int | None = None,
    ) -> list[OutputLine]:
        """Up to ``limit`` lines with ids after ``after_id``, oldest first."""
        return await self._db.call(
            lambda t: output.read(t, task_id, after_id, limit, stream), write=False
        )

    async def read_output_chunks(
        self, after_id: int = 0, limit: int = 10_000
    ) -> list[tuple[int, ChunkRow]]:
        """(first line id, chunk) of the chunks holding lines after ``after_id``, oldest first,
        until they hold at least ``limit`` lines. The first may begin at or before ``after_id``:
        the event stream hands chunks on unsplit, so catching up costs nothing per line."""
        return await self._db.call(lambda t: output.read_chunks(t, after_id, limit), write=False)

    async def output_index(self, task_id: str) -> list[tuple[int, int]]:
        """(run_id, number of lines) for each run of a task, oldest first: a log view's map."""
        return await self._db.call(lambda t: output.index(t, task_id), write=False)

    async def run_stored(self, run_id: int) -> tuple[int, int]:
        """The last line numbers stored for a run, (text, protocol); 0 for none."""
        return await self._db.call(lambda t: output.run_stored(t, run_id), write=False)

    async def read_run_lines(self, run_id: int, first_seq: int, last_seq: int) -> list[OutputLine]:
        """Lines ``first_seq..last_seq`` (1-based, inclusive) of one run."""
        return await self._db.call(
            lambda t: output.run_lines(t, run_id, first_seq, last_seq), write=False
        )

    # -- the journal -------------------------------------------------------------------------

    async def add_event(self, task_id: str, kind: str, data: dict[str, Any]) -> None:
        now = time.time()
        await self._db.call(lambda t: t.event(task_id, kind, None, None, "", data, now))

    async def read_events(self, after_id: int = 0, limit: int = 10_000) -> list[EventRecord]:
        return await self._db.call(lambda t: journal.read(t, after_id, limit), write=False)

    async def transitions(
        self, task_id: str | None = None
    ) -> list[tuple[str, str, str, str, float]]:
        """(task_id, from, to, reason, at) in the order they happened."""
        return await self._db.call(lambda t: journal.transitions(t, task_id), write=False)

    async def cursor(self) -> tuple[int, int]:
        """The newest (event id, output id): where a live stream starts."""
        return await self._db.call(lambda t: (journal.last_id(t), output.last_id(t)), write=False)

    # -- questions ---------------------------------------------------------------------------

    async def raise_question(
        self,
        question_id: str,
        task_id: str,
        run_id: int | None,
        kind: str,
        payload: dict[str, Any],
        *,
        expected: Collection[State],
        base: TaskRecord | None = None,
    ) -> TaskRecord | None:
        """Store an open question and put the task in READY (the checked transition), in one
        transaction. A task already READY stays READY. Returns the task, or None (refused)."""
        now = time.time()
        return await self._db.call(
            lambda t: with_spec(
                questions.raise_(t, question_id, task_id, run_id, kind, payload, expected, now),
                base,
            )
        )

    async def add_message(
        self,
        task_id: str,
        run_id: int | None,
        text: str,
        then: Move | None = None,
        base: TaskRecord | None = None,
    ) -> TaskRecord | bool | None:
        """Store a person's message to the agent (see ``questions.message``)."""
        now = time.time()

        def tx(t: Tx) -> TaskRecord | bool | None:
            out = questions.message(t, task_id, run_id, text, then, now)
            return with_spec(out, base) if isinstance(out, TaskRecord) else out

        return await self._db.call(tx)

    async def close_question(
        self, question_id: str, status: str, answer: dict[str, Any] | None = None
    ) -> bool:
        """open → answered | expired | cancelled, exactly once (compare-and-set)."""
        now = time.time()
        return await self._db.call(lambda t: questions.close(t, question_id, status, answer, now))

    async def questions(
        self, *, task_id: str | None = None, open_only: bool = True
    ) -> list[QuestionRecord]:
        return await self._db.call(lambda t: questions.select(t, task_id, open_only), write=False)

    async def get_question(self, question_id: str) -> QuestionRecord | None:
        return await self._db.call(lambda t: questions.get(t, question_id), write=False)

    # -- engines -----------------------------------------------------------------------------

    # -- worktrees (tui.engine.worktrees) ---------------------------------------------------

    async def put_worktree(self, rec: worktrees.WorktreeRecord) -> None:
        await self._db.call(lambda t: worktrees.insert(t, rec))

    async def get_worktree(self, task_id: str) -> worktrees.WorktreeRecord | None:
        return await self._db.call(lambda t: worktrees.get(t, task_id), write=False)

    async def list_worktrees(self) -> list[worktrees.WorktreeRecord]:
        return await self._db.call(worktrees.select, write=False)

    async def set_worktree_status(self, path: str, status: str) -> None:
        await self._db.call(lambda t: worktrees.set_status(t, path, status))

    async def register_engine(self, engine_id: str, pid: int, proc_start: int | None) -> None:
        now = time.time()
        await self._db.call(lambda t: engines.register(t, engine_id, pid, proc_start, now))

    async def unregister_engine(self, engine_id: str) -> None:
        now = time.time()
        await self._db.call(lambda t: engines.unregister(t, engine_id, now))

    async def engines(self) -> list[tuple[str, int, int | None]]:
        """(id, pid, process start time) of engines that have not said they stopped."""
        return await self._db.call(engines.live, write=False)

    async def set_engine_socket(self, engine_id: str, socket: str) -> None:
        """Where the engine serves its clients (tui.daemon.server)."""
        await self._db.call(lambda t: engines.set_socket(t, engine_id, socket))

    async def engine_settings(self) -> dict[str, Any]:
        """The settings this database's engines were last told to run with (name → value)."""
        return await self._db.call(engines.settings, write=False)

    async def save_engine_settings(self, values: dict[str, Any]) -> None:
        """Store ``values`` (replacing those of the same names) for the engines to come."""
        now = time.time()
        await self._db.call(lambda t: engines.save_settings(t, values, now))
