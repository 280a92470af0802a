"""The durable store: one SQLite file in WAL mode, every change inside a checked transaction.

Each public method is one round trip to aiosqlite's database thread: the whole transaction
(read, check, write, journal) runs there as a single function, so a state change costs one
thread hop, not one per statement. Journal rows written by a transaction are handed to
``on_event`` right after it commits, under the store's lock, so listeners see them in commit
order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from tui.model.states import State, valid_transition
from tui.model.task import Task, priority_rank
from tui.store.chunks import ChunkRow, LineRow, group_rows, stored_lines
from tui.store.records import (
    EventRecord,
    OutputLine,
    QuestionRecord,
    RunRecord,
    RunStart,
    TaskRecord,
)
from tui.store.schema import MIGRATIONS

T = TypeVar("T")

WAITING_REASON = {
    "question": "waiting for an answer",
    "approval": "waiting for an approval",
    "review": "waiting for a review",
}
_TASK_COLS = (
    "id, name, spec, state, reason, approved, attempts, attempt_base, retry_at, cost_usd,"
    " tokens_in, tokens_out, rejection_comment, question_json, result, created_at, updated_at,"
    " submit_seq,"
    " (SELECT started_at FROM runs WHERE task_id = tasks.id ORDER BY id DESC LIMIT 1),"
    " (SELECT ended_at FROM runs WHERE task_id = tasks.id ORDER BY id DESC LIMIT 1)"
)
_SEQ = 17  # submit_seq's place in _TASK_COLS
_RUN_COLS = (
    "id, task_id, attempt, engine_id, pid, pgid, proc_start, started_at, ended_at, exit_code,"
    " outcome, error, cost_usd, tokens_in, tokens_out, session_id"
)
_EVENT_COLS = "id, task_id, kind, from_state, to_state, reason, data, at"
_OUT_COLS = "id, task_id, run_id, stream, seq, at, text, lines"
_Q_COLS = "id, task_id, run_id, kind, payload, status, answer, created_at, answered_at"


def waiting_reason(kind: str) -> str:
    return WAITING_REASON.get(kind, f"waiting for {kind}")


class StoreError(Exception):
    """A problem the user can act on (bad id, duplicate task...). Printed without traceback."""


class _Tx:
    """What a transaction function gets: the connection, and a journal writer."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.events: list[EventRecord] = []

    def one(self, sql: str, args: Sequence[Any] = ()) -> tuple:
        row = self.db.execute(sql, args).fetchone()
        return tuple(row) if row is not None else ()

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        return [tuple(r) for r in self.db.execute(sql, args).fetchall()]

    def event(
        self,
        task_id: str,
        kind: str,
        frm: State | None,
        to: State | None,
        reason: str,
        data: dict[str, Any] | None,
        at: float,
    ) -> None:
        cur = self.db.execute(
            f"INSERT INTO events ({_EVENT_COLS[4:]}) VALUES (?,?,?,?,?,?,?)",
            (
                task_id,
                kind,
                frm.value if frm else None,
                to.value if to else None,
                reason,
                json.dumps(data) if data else None,
                at,
            ),
        )
        self.events.append(
            EventRecord(
                int(cur.lastrowid or 0),
                task_id,
                kind,
                frm.value if frm else None,
                to.value if to else None,
                reason,
                data or {},
                at,
            )
        )


class Store:
    """Async access to one database file. Safe to open from several processes at once."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        # One connection serves every coroutine. Calls made while the database thread is
        # busy queue up and then go over together: one thread hop runs all of them, each
        # still in its own transaction, in call order (a hop costs more than a small
        # transaction). Journal rows reach on_event in commit order.
        self._queued: list[tuple[Callable[[_Tx], Any], bool, asyncio.Future[Any]]] = []
        self._runner: asyncio.Task[None] | None = None
        self.on_event: Callable[[EventRecord], None] | None = None

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    async def open(cls, path: str | os.PathLike[str]) -> Store:
        p = Path(path).expanduser()
        if p.is_dir():
            raise StoreError(f"cannot open database {p}: it is a directory (give a file path)")
        try:
            p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            existed = p.exists()
            conn = await aiosqlite.connect(str(p), isolation_level=None)
        except (OSError, sqlite3.Error) as e:
            raise StoreError(f"cannot open database {p}: {e}") from None
        if not existed:
            os.chmod(p, 0o600)  # task text and output can hold secrets
        store = cls(conn, p)
        try:
            await store._call(_setup, write=False)
        except sqlite3.DatabaseError as e:
            await conn.close()
            raise StoreError(f"{p} is not a usable tui database: {e}") from None
        except BaseException:
            await conn.close()
            raise
        return store

    async def close(self) -> None:
        if self._runner is not None:
            await asyncio.shield(self._runner)  # calls already queued still run
        await self._conn.close()

    async def _call(self, fn: Callable[[_Tx], T], *, write: bool = True) -> T:
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queued.append((fn, write, fut))
        if self._runner is None:
            self._runner = asyncio.create_task(self._run_queued())
        return await fut

    async def _run_queued(self) -> None:
        try:
            while self._queued:
                # A call whose caller was cancelled while it waited never runs.
                jobs = [j for j in self._queued if not j[2].cancelled()]
                self._queued = []
                if not jobs:
                    continue
                try:
                    # aiosqlite's worker runs the whole batch in its thread: one hop.
                    outcomes = await self._conn._execute(
                        _in_thread, self._conn, [(fn, write) for fn, write, _ in jobs]
                    )
                except BaseException as e:  # the connection itself failed
                    for _, _, fut in jobs:
                        if not fut.done():
                            fut.set_exception(e)
                    raise
                for i, ((_, _, fut), (ok, value, events)) in enumerate(
                    zip(jobs, outcomes, strict=True)
                ):
                    # The caller resumes first, then whoever its journal rows wake, as if it
                    # had been the only call: a viewer woken by an event finds the engine's
                    # memory already updated by the call that wrote it.
                    if not fut.done():
                        if ok:
                            fut.set_result(value)
                        else:
                            fut.set_exception(value)
                    if events and self.on_event is not None:
                        for ev in events:
                            self.on_event(ev)
                    if i < len(jobs) - 1:
                        await asyncio.sleep(0)
        finally:
            self._runner = None

    # -- tasks -------------------------------------------------------------------------------

    async def insert_tasks(self, tasks: Sequence[Task], *, approved: bool) -> list[TaskRecord]:
        """Store new tasks as PENDING, all or none. Ids already stored are refused."""
        now = time.time()

        def tx(t: _Tx) -> list[TaskRecord]:
            taken = _existing_ids(t, [task.id for task in tasks])
            if taken:
                raise StoreError(
                    "task ids already stored: "
                    + ", ".join(sorted(taken))
                    + " (continue them with `tui run` and no file, or `tui retry ID`)"
                )
            (seq,) = t.one("SELECT COALESCE(MAX(submit_seq), 0) FROM tasks")
            out = []
            for i, task in enumerate(tasks, start=1):
                t.db.execute(
                    "INSERT INTO tasks (id, name, spec, state, priority_rank, submit_seq, approved,"
                    " parent_task_id, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (
                        task.id,
                        task.name,
                        task.model_dump_json(),
                        State.PENDING.value,
                        priority_rank(task.priority),
                        seq + i,
                        int(approved),
                        task.parent_task_id,
                        now,
                        now,
                    ),
                )
                t.db.executemany(
                    "INSERT OR IGNORE INTO deps (task_id, depends_on) VALUES (?, ?)",
                    [(task.id, d) for d in task.depends_on],
                )
                t.event(
                    task.id, "submitted", None, State.PENDING, "submitted", {"name": task.name}, now
                )
                out.append(
                    TaskRecord(
                        id=task.id,
                        name=task.name,
                        spec=task,
                        state=State.PENDING,
                        reason="",
                        approved=approved,
                        attempts=0,
                        attempt_base=0,
                        retry_at=None,
                        cost_usd=0.0,
                        tokens_in=0,
                        tokens_out=0,
                        rejection_comment="",
                        question_json=None,
                        result=None,
                        created_at=now,
                        updated_at=now,
                        submit_seq=seq + i,
                        depends_on=list(dict.fromkeys(task.depends_on)),
                    )
                )
            return out

        return await self._call(tx)

    async def transition(
        self,
        task_id: str,
        expected: State | Collection[State],
        to: State,
        reason: str = "",
        **updates: Any,
    ) -> bool:
        """Compare-and-set: move ``task_id`` to ``to`` only if it is now in ``expected``.

        Returns False (and changes nothing) when another writer got there first or the state
        table forbids the move. ``updates`` sets other task columns in the same transaction.
        """
        now = time.time()
        move = Move(task_id, expected, to, reason, updates)
        return await self._call(lambda t: _transition(t, move, now))

    async def update_task(self, task_id: str, **cols: Any) -> None:
        """Change non-state columns (approval flag, retry time, totals)."""
        sets = ", ".join(f"{k} = ?" for k in cols)
        args = (*cols.values(), time.time(), task_id)
        await self._call(
            lambda t: t.db.execute(f"UPDATE tasks SET {sets}, updated_at = ? WHERE id = ?", args)
        )

    async def get_task(self, task_id: str) -> TaskRecord | None:
        def tx(t: _Tx) -> TaskRecord | None:
            rows = t.all(f"SELECT {_TASK_COLS} FROM tasks WHERE id = ?", (task_id,))
            if not rows:
                return None
            deps = [
                r[0]
                for r in t.all(
                    "SELECT depends_on FROM deps WHERE task_id = ? ORDER BY rowid", (task_id,)
                )
            ]
            return _task_from_row(rows[0], deps)

        return await self._call(tx, write=False)

    async def list_tasks(
        self, states: Collection[State] | None = None, tag: str | None = None
    ) -> list[TaskRecord]:
        sql = f"SELECT {_TASK_COLS} FROM tasks"
        args: list[Any] = []
        if states:
            sql += f" WHERE state IN ({','.join('?' * len(states))})"
            args += [s.value for s in states]

        def tx(t: _Tx) -> list[TaskRecord]:
            rows = t.all(sql, args)
            # Sorting here beats ORDER BY, which makes SQLite sort whole rows, specs and all.
            rows.sort(key=itemgetter(_SEQ))
            deps: dict[str, list[str]] = {}
            for tid, dep in t.all("SELECT task_id, depends_on FROM deps ORDER BY rowid"):
                deps.setdefault(tid, []).append(dep)
            return [_task_from_row(r, deps.get(r[0], [])) for r in rows]

        out = await self._call(tx, write=False)
        return [r for r in out if tag in (r.spec_fields("tags")[0] or ())] if tag else out

    async def all_ids(self) -> set[str]:
        rows = await self._call(lambda t: t.all("SELECT id FROM tasks"), write=False)
        return {r[0] for r in rows}

    async def resolve(self, ref: str) -> str:
        """A full id, a unique id prefix, or a unique task name → the task id."""

        def tx(t: _Tx) -> dict[str, str]:
            if t.all("SELECT id FROM tasks WHERE id = ?", (ref,)):
                return {ref: ""}
            rows = t.all(
                "SELECT id, name FROM tasks WHERE id LIKE ? ESCAPE '\\'", (_like_prefix(ref),)
            )
            rows += t.all("SELECT id, name FROM tasks WHERE name = ?", (ref,))
            return {r[0]: r[1] for r in rows}

        matches = await self._call(tx, write=False)
        if len(matches) == 1:
            return next(iter(matches))
        if not matches:
            raise StoreError(f"no task matches {ref!r} (give an id, a unique id prefix or a name)")
        listed = ", ".join(f"{i[:8]} ({n})" for i, n in list(matches.items())[:5])
        raise StoreError(f"{ref!r} matches {len(matches)} tasks: {listed}; give more of the id")

    # -- runs --------------------------------------------------------------------------------

    async def begin_run(self, task_id: str, engine_id: str) -> tuple[int, int] | None:
        """QUEUED → RUNNING plus a new run row, in one transaction. Returns (run_id, attempt)."""
        began = await self.start_run(task_id, engine_id)
        return (began.run_id, began.attempt) if began else None

    async def start_run(self, task_id: str, engine_id: str) -> RunStart | None:
        """``begin_run``, and in the same transaction what the new attempt may need to know:
        the task's earlier runs and every question asked about it."""
        now = time.time()

        def tx(t: _Tx) -> RunStart | None:
            row = t.one("SELECT state, attempts FROM tasks WHERE id = ?", (task_id,))
            if not row or row[0] != State.QUEUED.value:
                return None
            attempt = row[1] + 1
            t.db.execute(
                "UPDATE tasks SET state = ?, reason = '', attempts = ?, retry_at = NULL,"
                " updated_at = ? WHERE id = ?",
                (State.RUNNING.value, attempt, now, task_id),
            )
            cur = t.db.execute(
                "INSERT INTO runs (task_id, attempt, engine_id, started_at) VALUES (?,?,?,?)",
                (task_id, attempt, engine_id, now),
            )
            run_id = int(cur.lastrowid or 0)
            t.event(
                task_id,
                "state",
                State.QUEUED,
                State.RUNNING,
                f"attempt {attempt}",
                {"run_id": run_id, "attempt": attempt},
                now,
            )
            runs = t.all(
                f"SELECT {_RUN_COLS} FROM runs WHERE task_id = ? AND id != ? ORDER BY id",
                (task_id, run_id),
            )
            questions = t.all(
                f"SELECT {_Q_COLS} FROM questions WHERE task_id = ?"
                " ORDER BY created_at DESC, rowid DESC",
                (task_id,),
            )
            return RunStart(
                run_id,
                attempt,
                [RunRecord(*r) for r in runs],
                [QuestionRecord.from_row(r) for r in questions],
            )

        return await self._call(tx)

    async def set_run_process(
        self, run_id: int, pid: int, pgid: int, proc_start: int | Callable[[], int | None] | None
    ) -> None:
        """Record a run's process. ``proc_start`` may be a function: it is then called in the
        database thread (reading /proc for a child still in exec can wait a millisecond)."""

        def tx(t: _Tx) -> None:
            start = proc_start() if callable(proc_start) else proc_start
            t.db.execute(
                "UPDATE runs SET pid = ?, pgid = ?, proc_start = ? WHERE id = ?",
                (pid, pgid, start, run_id),
            )

        await self._call(tx)

    async def set_run_session(self, run_id: int, session_id: str) -> None:
        args = (session_id, run_id)
        await self._call(
            lambda t: t.db.execute("UPDATE runs SET session_id = ? WHERE id = ?", args)
        )

    async def end_run(
        self,
        run_id: int,
        *,
        outcome: str,
        exit_code: int | None = None,
        error: str = "",
        cost_usd: float = 0.0,
        tokens_in: int = 0,
        tokens_out: int = 0,
        session_id: str = "",
        then: Move | None = None,
    ) -> bool:
        """Close a run and add its cost and tokens to the task's totals; with ``then``, also
        make that transition in the same transaction (one round trip where two were).
        Returns whether ``then`` happened (False without one)."""
        now = time.time()

        def tx(t: _Tx) -> bool:
            row = t.one("SELECT task_id, ended_at FROM runs WHERE id = ?", (run_id,))
            if row and row[1] is None:
                close(t, row[0])
            if then is None:
                return False
            return _transition(t, then, now)

        def close(t: _Tx, task_id: str) -> None:
            t.db.execute(
                "UPDATE runs SET ended_at = ?, outcome = ?, exit_code = ?, error = ?, cost_usd = ?,"
                " tokens_in = ?, tokens_out = ?,"
                # A run closed without one (recovery) keeps the session it reported earlier.
                " session_id = coalesce(nullif(?, ''), session_id) WHERE id = ?",
                (
                    now,
                    outcome,
                    exit_code,
                    error,
                    cost_usd,
                    tokens_in,
                    tokens_out,
                    session_id,
                    run_id,
                ),
            )
            t.db.execute(
                "UPDATE tasks SET cost_usd = cost_usd + ?, tokens_in = tokens_in + ?,"
                " tokens_out = tokens_out + ? WHERE id = ?",
                (cost_usd, tokens_in, tokens_out, task_id),
            )
            data = {
                "run_id": run_id,
                "outcome": outcome,
                "exit_code": exit_code,
                "error": error,
                "cost_usd": cost_usd,
                "tokens_in": tokens_in,
                "tokens_out": tokens_out,
                "session_id": session_id,
            }
            t.event(task_id, "run_ended", None, None, outcome, data, now)

        return await self._call(tx)

    async def runs(self, task_id: str | None = None, *, open_only: bool = False) -> list[RunRecord]:
        sql = f"SELECT {_RUN_COLS} FROM runs WHERE 1=1"
        args: list[Any] = []
        if task_id is not None:
            sql += " AND task_id = ?"
            args.append(task_id)
        if open_only:
            sql += " AND ended_at IS NULL"
        rows = await self._call(lambda t: t.all(sql + " ORDER BY id", args), write=False)
        return [RunRecord(*r) for r in rows]

    # -- output ------------------------------------------------------------------------------

    async def append_output(self, rows: Sequence[LineRow]) -> int:
        """Store a batch of (task_id, run_id, stream, seq, at, text) lines; returns the first id.

        Consecutive lines of one read are stored as one chunk row (see ``tui.store.chunks``).
        """
        return await self.append_chunks(group_rows(rows))

    async def append_chunks(self, chunks: Sequence[ChunkRow]) -> int:
        """Store chunks of lines; returns the id of the first line.

        Inside BEGIN IMMEDIATE nobody else writes, so the batch's lines take the ids that
        follow the last stored line, in order.
        """
        if not chunks:
            return 0

        def tx(t: _Tx) -> int:
            first = _last_output_id(t) + 1
            ids = accumulate((c[6] for c in chunks[:-1]), initial=first)
            t.db.executemany(
                "INSERT INTO output (id, task_id, run_id, stream, seq, at, text, lines)"
                " VALUES (?,?,?,?,?,?,?,?)",
                [(i, *c) for i, c in zip(ids, chunks, strict=True)],
            )
            return first

        return await self._call(tx)

    async def append_raw(self, rows: Sequence[tuple[str, int, int, float, str]]) -> None:
        """Store a batch of (task_id, run_id, seq, at, text) protocol lines."""
        if rows:
            await self._call(
                lambda t: t.db.executemany(
                    "INSERT INTO raw_output (task_id, run_id, seq, at, text) VALUES (?,?,?,?,?)",
                    rows,
                )
            )

    async def read_raw(self, task_id: str) -> list[tuple[int, str]]:
        """(run_id, text) of a task's protocol lines, oldest first."""
        return await self._call(
            lambda t: t.all(
                "SELECT run_id, text FROM raw_output WHERE run_id IN"
                " (SELECT id FROM runs WHERE task_id = ?) ORDER BY run_id, seq",
                (task_id,),
            ),
            write=False,
        )

    async def read_output(
        self,
        task_id: str | None = None,
        *,
        after_id: int = 0,
        limit: int = 10_000,
        stream: int | None = None,
    ) -> list[OutputLine]:
        """Up to ``limit`` lines with ids after ``after_id``, oldest first."""
        # Start at the chunk holding line after_id + 1 (it may begin before it).
        sql = (
            f"SELECT {_OUT_COLS} FROM output WHERE id >= (SELECT COALESCE(MAX(id), 0)"
            " FROM output WHERE id <= ?) AND id + lines - 1 > ?"
        )
        args: list[Any] = [after_id + 1, after_id]
        if task_id is not None:
            sql += " AND run_id IN (SELECT id FROM runs WHERE task_id = ?)"
            args.append(task_id)
        if stream is not None:
            sql += " AND stream = ?"
            args.append(stream)
        sql += " ORDER BY id"

        def tx(t: _Tx) -> list[OutputLine]:
            out: list[OutputLine] = []
            # Row by row: a page needs only as many chunks as hold `limit` lines.
            for row in t.db.execute(sql, args):
                out.extend(ln for ln in stored_lines([row]) if ln.id > after_id)
                if len(out) >= limit:
                    break
            return out[:limit]

        return await self._call(tx, write=False)

    async def read_output_chunks(
        self, after_id: int = 0, limit: int = 10_000
    ) -> list[tuple[int, ChunkRow]]:
        """(first line id, chunk) of the chunks holding lines after ``after_id``, oldest first,
        until they hold at least ``limit`` lines. The first may begin at or before ``after_id``:
        the event stream hands chunks on unsplit, so catching up costs nothing per line."""

        def tx(t: _Tx) -> list[tuple[int, ChunkRow]]:
            out: list[tuple[int, ChunkRow]] = []
            lines = 0
            for id_, *chunk in t.db.execute(
                f"SELECT {_OUT_COLS} FROM output WHERE id >= (SELECT COALESCE(MAX(id), 0)"
                " FROM output WHERE id <= ?) AND id + lines - 1 > ? ORDER BY id",
                (after_id + 1, after_id),
            ):
                out.append((id_, tuple(chunk)))  # type: ignore[arg-type]
                lines += chunk[6]
                if lines >= limit:
                    break
            return out

        return await self._call(tx, write=False)

    async def output_index(self, task_id: str) -> list[tuple[int, int]]:
        """(run_id, number of lines) for each run of a task, oldest first: a log view's map."""
        rows = await self._call(
            lambda t: t.all(
                "SELECT r.id, COALESCE((SELECT seq + lines - 1 FROM output o WHERE o.run_id = r.id"
                " ORDER BY seq DESC LIMIT 1), 0) FROM runs r WHERE r.task_id = ? ORDER BY r.id",
                (task_id,),
            ),
            write=False,
        )
        return [(int(r), int(n)) for r, n in rows]

    async def read_run_lines(self, run_id: int, first_seq: int, last_seq: int) -> list[OutputLine]:
        """Lines ``first_seq..last_seq`` (1-based, inclusive) of one run."""
        rows = await self._call(
            lambda t: t.all(
                f"SELECT {_OUT_COLS} FROM output WHERE run_id = ? AND seq <= ? AND seq >="
                " (SELECT COALESCE(MAX(seq), 0) FROM output WHERE run_id = ? AND seq <= ?)"
                " ORDER BY seq",
                (run_id, last_seq, run_id, first_seq),
            ),
            write=False,
        )
        return [ln for ln in stored_lines(rows) if first_seq <= ln.seq <= last_seq]

    # -- the journal -------------------------------------------------------------------------

    async def add_event(self, task_id: str, kind: str, data: dict[str, Any]) -> None:
        now = time.time()
        await self._call(lambda t: t.event(task_id, kind, None, None, "", data, now))

    async def read_events(self, after_id: int = 0, limit: int = 10_000) -> list[EventRecord]:
        rows = await self._call(
            lambda t: t.all(
                f"SELECT {_EVENT_COLS} FROM events WHERE id > ? ORDER BY id LIMIT ?",
                (after_id, limit),
            ),
            write=False,
        )
        return [EventRecord.from_row(r) for r in rows]

    async def transitions(
        self, task_id: str | None = None
    ) -> list[tuple[str, str, str, str, float]]:
        """(task_id, from, to, reason, at) in the order they happened."""
        sql = "SELECT task_id, from_state, to_state, reason, at FROM transitions"
        args: tuple = ()
        if task_id:
            sql += " WHERE task_id = ?"
            args = (task_id,)
        return await self._call(lambda t: t.all(sql + " ORDER BY id", args), write=False)

    async def cursor(self) -> tuple[int, int]:
        """The newest (event id, output id): where a live stream starts."""

        def tx(t: _Tx) -> tuple[int, int]:
            (e,) = t.one("SELECT COALESCE(MAX(id), 0) FROM events")
            return int(e), _last_output_id(t)

        return await self._call(tx, write=False)

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
    ) -> bool:
        """Store an open question and put the task in READY, in one transaction.

        A task already READY (a second question while the first is open) stays READY.
        """
        now = time.time()
        body = json.dumps(payload)

        def tx(t: _Tx) -> bool:
            row = t.one("SELECT state FROM tasks WHERE id = ?", (task_id,))
            if not row or State(row[0]) not in expected:
                return False
            current = State(row[0])
            t.db.execute(
                f"INSERT INTO questions ({_Q_COLS}) VALUES (?,?,?,?,?,'open',NULL,?,NULL)",
                (question_id, task_id, run_id, kind, body, now),
            )
            reason = waiting_reason(kind)
            if current != State.READY:
                t.db.execute(
                    "UPDATE tasks SET state = ?, reason = ?, question_json = ?, updated_at = ?"
                    " WHERE id = ?",
                    (State.READY.value, reason, body, now, task_id),
                )
                t.event(task_id, "state", current, State.READY, reason, None, now)
            t.event(
                task_id,
                "question",
                None,
                None,
                kind,
                {"question_id": question_id, "kind": kind, "payload": payload},
                now,
            )
            return True

        return await self._call(tx)

    async def close_question(
        self, question_id: str, status: str, answer: dict[str, Any] | None = None
    ) -> bool:
        """open → answered | expired | cancelled, exactly once (compare-and-set)."""
        now = time.time()

        def tx(t: _Tx) -> bool:
            cur = t.db.execute(
                "UPDATE questions SET status = ?, answer = ?, answered_at = ?"
                " WHERE id = ? AND status = 'open'",
                (status, json.dumps(answer) if answer is not None else None, now, question_id),
            )
            if cur.rowcount != 1:
                return False
            (task_id,) = t.one("SELECT task_id FROM questions WHERE id = ?", (question_id,))
            t.db.execute(
                "UPDATE tasks SET question_json = NULL WHERE id = ? AND NOT EXISTS"
                " (SELECT 1 FROM questions WHERE task_id = ? AND status = 'open')",
                (task_id, task_id),
            )
            t.event(
                task_id,
                "answered",
                None,
                None,
                status,
                {"question_id": question_id, "status": status, "answer": answer},
                now,
            )
            return True

        return await self._call(tx)

    async def questions(
        self, *, task_id: str | None = None, open_only: bool = True
    ) -> list[QuestionRecord]:
        sql = f"SELECT {_Q_COLS} FROM questions WHERE 1=1"
        args: list[Any] = []
        if open_only:
            sql += " AND status = 'open'"
        if task_id is not None:
            sql += " AND task_id = ?"
            args.append(task_id)
        rows = await self._call(
            lambda t: t.all(sql + " ORDER BY created_at DESC, rowid DESC", args), write=False
        )
        return [QuestionRecord.from_row(r) for r in rows]

    async def get_question(self, question_id: str) -> QuestionRecord | None:
        rows = await self._call(
            lambda t: t.all(
                f"SELECT {_Q_COLS} FROM questions WHERE id = ? OR id LIKE ? ESCAPE '\\'",
                (question_id, _like_prefix(question_id)),
            ),
            write=False,
        )
        if len(rows) > 1:
            rows = [r for r in rows if r[0] == question_id]
            if not rows:
                raise StoreError(f"question id {question_id!r} is ambiguous; give more of it")
        return QuestionRecord.from_row(rows[0]) if rows else None

    # -- engines -----------------------------------------------------

    async def register_engine(self, engine_id: str, pid: int, proc_start: int | None) -> None:
        args = (engine_id, pid, proc_start, time.time())
        await self._call(
            lambda t: t.db.execute(
                "INSERT INTO engines (id, pid, proc_start, started_at) VALUES (?,?,?,?)", args
            )
        )

    async def unregister_engine(self, engine_id: str) -> None:
        args = (time.time(), engine_id)
        await self._call(
            lambda t: t.db.execute("UPDATE engines SET stopped_at = ? WHERE id = ?", args)
        )

    async def engines(self) -> list[tuple[str, int, int | None]]:
        """(id, pid, process start time) of engines that have not said they stopped."""
        return await self._call(
            lambda t: t.all(
                "SELECT id, pid, proc_start FROM engines WHERE stopped_at IS NULL"
                " ORDER BY started_at"
            ),
            write=False,
        )

    async def set_engine_socket(self, engine_id: str, socket: str) -> None:
        """Where the engine serves its clients (tui.daemon.server)."""
        args = (socket, engine_id)
        await self._call(lambda t: t.db.execute("UPDATE engines SET socket = ? WHERE id = ?", args))


def engine_sockets(path: Path) -> list[tuple[int, int | None, str]]:
    """(pid, process start time, socket) of engines of the database at ``path`` that have not
    said they stopped, read without creating or migrating anything (none if it does not exist
    or predates the socket column)."""
    if not path.exists():
        return []
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(
                "SELECT pid, proc_start, socket FROM engines"
                " WHERE stopped_at IS NULL AND socket IS NOT NULL ORDER BY started_at"
            ).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return []


@dataclass(frozen=True)
class Move:
    """A compare-and-set transition to make along with another write."""

    task_id: str
    expected: State | Collection[State]
    to: State
    reason: str = ""
    updates: dict[str, Any] = field(default_factory=dict)


def _transition(t: _Tx, move: Move, now: float) -> bool:
    """Compare-and-set inside the caller's transaction: see :meth:`Store.transition`."""
    task_id, to, reason = move.task_id, move.to, move.reason
    expected = move.expected
    allowed = {expected} if isinstance(expected, State) else set(expected)
    row = t.one("SELECT state FROM tasks WHERE id = ?", (task_id,))
    if not row:
        return False
    current = State(row[0])
    if current not in allowed or not valid_transition(current, to):
        return False
    cols = {"state": to.value, "reason": reason, "updated_at": now, **move.updates}
    sets = ", ".join(f"{k} = ?" for k in cols)
    cur = t.db.execute(
        f"UPDATE tasks SET {sets} WHERE id = ? AND state = ?",
        (*cols.values(), task_id, current.value),
    )
    if cur.rowcount != 1:
        return False
    t.event(task_id, "state", current, to, reason, None, now)
    return True


def _in_thread(
    conn: aiosqlite.Connection, jobs: list[tuple[Callable[[_Tx], Any], bool]]
) -> list[tuple[bool, Any, list[EventRecord]]]:
    """Run the jobs in call order: (ok, result or exception, journal rows) for each.

    Group commit: consecutive writes share one transaction, each inside its own savepoint, so
    a job that fails takes back only its own changes, and every job still checks what it
    changes inside a transaction (nobody else writes between BEGIN IMMEDIATE and COMMIT).
    One commit (one WAL append) per batch instead of one per job. No caller hears of its
    result before the commit (results go back only when the whole batch is done).
    """
    db = conn._conn
    out: list[tuple[bool, Any, list[EventRecord]]] = []
    group: list[int] = []  # indexes in ``out`` of the writes in the open transaction

    def commit() -> None:
        if not db.in_transaction:
            return
        try:
            db.execute("COMMIT")
        except Exception as e:  # nothing of the group is stored: each of them failed
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            for i in group:
                out[i] = (False, e, [])
        group.clear()

    def undo(error: BaseException) -> None:
        """Take back the failed job's changes; if SQLite already ended the transaction
        (some errors roll it all back), the group's earlier jobs are lost with it."""
        try:
            db.execute("ROLLBACK TO job")
            db.execute("RELEASE job")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            for i in group:
                out[i] = (False, error, [])
            group.clear()

    for fn, write in jobs:
        t = _Tx(db)
        if not write:
            commit()  # a read-only job may open its own transaction (_setup does)
            try:
                out.append((True, fn(t), []))
            except Exception as e:
                out.append((False, e, []))
            continue
        try:
            if not db.in_transaction:
                db.execute("BEGIN IMMEDIATE")
            db.execute("SAVEPOINT job")
        except Exception as e:  # could not even start (locked for too long, disk gone)
            commit()
            out.append((False, e, []))
            continue
        try:
            result = fn(t)
        except BaseException as e:
            undo(e)
            if not isinstance(e, Exception):
                commit()
                raise
            out.append((False, e, []))
            continue
        db.execute("RELEASE job")
        group.append(len(out))
        out.append((True, result, t.events))
    commit()
    return out


def _setup(t: _Tx) -> None:
    t.db.execute("PRAGMA busy_timeout = 10000")
    # WAL lets other processes read while we write; NORMAL is durable against a crash of
    # this process (the case that matters here), without an fsync per transition.
    t.db.execute("PRAGMA journal_mode = WAL")
    t.db.execute("PRAGMA synchronous = NORMAL")
    t.db.execute("BEGIN IMMEDIATE")
    try:
        (version,) = t.one("PRAGMA user_version")
        if version > len(MIGRATIONS):
            raise StoreError(
                f"the database was written by a newer tui (schema v{version}); upgrade tui"
            )
        for i in range(version, len(MIGRATIONS)):
            # Statement by statement inside our transaction: executescript would commit.
            for stmt in _split_sql(MIGRATIONS[i]):
                t.db.execute(stmt)
            t.db.execute(f"PRAGMA user_version = {i + 1}")
    except BaseException:
        t.db.execute("ROLLBACK")
        raise
    t.db.execute("COMMIT")


def _last_output_id(t: _Tx) -> int:
    """The id of the newest stored line (the last line of the newest chunk)."""
    row = t.one("SELECT id + lines - 1 FROM output ORDER BY id DESC LIMIT 1")
    return int(row[0]) if row else 0


def _existing_ids(t: _Tx, ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        found.update(r[0] for r in t.all(f"SELECT id FROM tasks WHERE id IN ({marks})", chunk))
    return found


_STATES = {s.value: s for s in State}


def _task_from_row(row: tuple, deps: list[str]) -> TaskRecord:
    tid, name, spec, state, reason, approved, attempts, base, retry_at, cost, tin, tout = row[:12]
    rej, q, res, created, updated, seq, run_started, run_ended = row[12:]
    return TaskRecord(
        id=tid,
        name=name,
        spec=spec,  # parsed by TaskRecord.task when first needed
        state=_STATES[state],  # a dict lookup: State(value) costs 3 µs a row
        reason=reason,
        approved=bool(approved),
        attempts=attempts,
        attempt_base=base,
        retry_at=retry_at,
        cost_usd=cost,
        tokens_in=tin,
        tokens_out=tout,
        rejection_comment=rej,
        question_json=q,
        result=res,
        created_at=created,
        updated_at=updated,
        submit_seq=seq,
        depends_on=deps,
        run_started_at=run_started,
        run_ended_at=run_ended,
    )


def _like_prefix(ref: str) -> str:
    return ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _split_sql(script: str) -> Iterable[str]:
    stmt = ""
    for line in script.splitlines(keepends=True):
        stmt += line
        if sqlite3.complete_statement(stmt):
            yield stmt
            stmt = ""
    if stmt.strip():
        yield stmt
