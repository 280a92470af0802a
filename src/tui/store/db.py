"""The durable store: one SQLite file in WAL mode, every change inside a checked transaction."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Collection, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from tui.model.states import State, valid_transition
from tui.model.task import Task
from tui.store.records import EventRecord, OutputLine, QuestionRecord, RunRecord, TaskRecord
from tui.store.schema import MIGRATIONS

_WAITING_REASON = {
    "question": "waiting for an answer",
    "approval": "waiting for an approval",
    "review": "waiting for a review",
}
PRIORITY_RANK = {"high": 0, "": 1, "normal": 1, "low": 2}

_TASK_COLS = (
    "spec, state, reason, approved, attempts, attempt_base, retry_at, cost_usd, tokens_in,"
    " tokens_out, rejection_comment, question_json, result, created_at, updated_at, submit_seq"
)
_RUN_COLS = (
    "id, task_id, attempt, engine_id, pid, pgid, proc_start, started_at, ended_at, exit_code,"
    " outcome, error, cost_usd, tokens_in, tokens_out, session_id"
)
_EVENT_COLS = "id, task_id, kind, from_state, to_state, reason, data, at"


class StoreError(Exception):
    """A problem the user can act on (bad id, duplicate task...). Printed without traceback."""


class Store:
    """Async access to one database file. Safe to open from several processes at once."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        # One connection is shared by every coroutine; the lock keeps transactions whole.
        self._lock = asyncio.Lock()

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    async def open(cls, path: str | os.PathLike[str]) -> Store:
        p = Path(path).expanduser()
        try:
            p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            existed = p.exists()
            conn = await aiosqlite.connect(str(p), isolation_level=None)
        except (OSError, aiosqlite.Error) as e:
            raise StoreError(f"cannot open database {p}: {e}") from None
        if not existed:
            os.chmod(p, 0o600)  # task text and output can hold secrets
        store = cls(conn, p)
        try:
            await store._setup()
        except BaseException:
            await conn.close()
            raise
        return store

    async def _setup(self) -> None:
        c = self._conn
        await c.execute("PRAGMA busy_timeout = 10000")
        # WAL lets other processes read while we write; NORMAL is durable against a crash of
        # this process (the case that matters here), without an fsync per transition.
        await c.execute("PRAGMA journal_mode = WAL")
        await c.execute("PRAGMA synchronous = NORMAL")
        async with self._tx():
            (version,) = await self._one("PRAGMA user_version")
            if version > len(MIGRATIONS):
                raise StoreError(
                    f"{self.path} was written by a newer tui (schema v{version}); upgrade tui"
                )
            for i in range(version, len(MIGRATIONS)):
                for stmt in _split_sql(MIGRATIONS[i]):
                    await c.execute(stmt)
                await c.execute(f"PRAGMA user_version = {i + 1}")

    async def close(self) -> None:
        await self._conn.close()

    # -- transaction helpers -----------------------------------------------------------------

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            await self._conn.execute("COMMIT")

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            yield self._conn

    async def _one(self, sql: str, args: Sequence[Any] = ()) -> tuple:
        async with self._conn.execute(sql, args) as cur:
            row = await cur.fetchone()
        return tuple(row) if row is not None else ()

    async def _all(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        async with self._conn.execute(sql, args) as cur:
            return [tuple(r) for r in await cur.fetchall()]

    # -- tasks -------------------------------------------------------------------------------

    async def insert_tasks(self, tasks: Sequence[Task], *, approved: bool) -> None:
        """Store new tasks as PENDING, all or none. Ids already stored are refused."""
        now = time.time()
        async with self._tx() as c:
            ids = [t.id for t in tasks]
            taken = await self._existing_ids(ids)
            if taken:
                raise StoreError(
                    "task ids already stored: "
                    + ", ".join(sorted(taken))
                    + " (continue them with `tui run` and no file, or `tui retry ID`)"
                )
            (seq,) = await self._one("SELECT COALESCE(MAX(submit_seq), 0) FROM tasks")
            for i, t in enumerate(tasks, start=1):
                await c.execute(
                    "INSERT INTO tasks (id, name, spec, state, priority_rank, submit_seq, approved,"
                    " parent_task_id, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (
                        t.id,
                        t.name,
                        t.model_dump_json(),
                        State.PENDING.value,
                        PRIORITY_RANK.get(t.priority.value, 1),
                        seq + i,
                        int(approved),
                        t.parent_task_id,
                        now,
                        now,
                    ),
                )
                await c.executemany(
                    "INSERT OR IGNORE INTO deps (task_id, depends_on) VALUES (?, ?)",
                    [(t.id, d) for d in t.depends_on],
                )
                await self._event(t.id, "submitted", None, State.PENDING, "submitted", None, now)

    async def _existing_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            rows = await self._all(f"SELECT id FROM tasks WHERE id IN ({marks})", chunk)
            found.update(r[0] for r in rows)
        return found

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
        allowed = {expected} if isinstance(expected, State) else set(expected)
        now = time.time()
        async with self._tx() as c:
            row = await self._one("SELECT state FROM tasks WHERE id = ?", (task_id,))
            if not row:
                return False
            current = State(row[0])
            if current not in allowed or not valid_transition(current, to):
                return False
            cols = {"state": to.value, "reason": reason, "updated_at": now, **updates}
            sets = ", ".join(f"{k} = ?" for k in cols)
            cur = await c.execute(
                f"UPDATE tasks SET {sets} WHERE id = ? AND state = ?",
                (*cols.values(), task_id, current.value),
            )
            if cur.rowcount != 1:
                return False
            await self._event(task_id, "state", current, to, reason, None, now)
            return True

    async def update_task(self, task_id: str, **cols: Any) -> None:
        """Change non-state columns (approval flag, retry time, totals)."""
        sets = ", ".join(f"{k} = ?" for k in cols)
        async with self._tx() as c:
            await c.execute(
                f"UPDATE tasks SET {sets}, updated_at = ? WHERE id = ?",
                (*cols.values(), time.time(), task_id),
            )

    async def get_task(self, task_id: str) -> TaskRecord | None:
        async with self._read():
            rows = await self._all(f"SELECT {_TASK_COLS} FROM tasks WHERE id = ?", (task_id,))
            if not rows:
                return None
            deps = await self._deps_map([task_id])
        return _task_from_row(rows[0], deps.get(task_id, []))

    async def list_tasks(
        self, states: Collection[State] | None = None, tag: str | None = None
    ) -> list[TaskRecord]:
        sql = f"SELECT {_TASK_COLS} FROM tasks"
        args: list[Any] = []
        if states:
            sql += f" WHERE state IN ({','.join('?' * len(states))})"
            args += [s.value for s in states]
        sql += " ORDER BY submit_seq"
        async with self._read():
            rows = await self._all(sql, args)
            deps = await self._deps_map(None)
        out = [_task_from_row(r, deps.get(json.loads(r[0])["id"], [])) for r in rows]
        if tag:
            out = [r for r in out if tag in r.task.tags]
        return out

    async def _deps_map(self, ids: list[str] | None) -> dict[str, list[str]]:
        if ids is None:
            rows = await self._all("SELECT task_id, depends_on FROM deps ORDER BY rowid")
        else:
            marks = ",".join("?" * len(ids))
            rows = await self._all(
                f"SELECT task_id, depends_on FROM deps WHERE task_id IN ({marks}) ORDER BY rowid",
                ids,
            )
        out: dict[str, list[str]] = {}
        for tid, dep in rows:
            out.setdefault(tid, []).append(dep)
        return out

    async def dependents(self, task_id: str) -> list[str]:
        async with self._read():
            rows = await self._all("SELECT task_id FROM deps WHERE depends_on = ?", (task_id,))
        return [r[0] for r in rows]

    async def all_ids(self) -> set[str]:
        async with self._read():
            return {r[0] for r in await self._all("SELECT id FROM tasks")}

    async def resolve(self, ref: str) -> str:
        """A full id, a unique id prefix, or a unique task name → the task id."""
        async with self._read():
            exact = await self._all("SELECT id FROM tasks WHERE id = ?", (ref,))
            if exact:
                return ref
            by_prefix = await self._all(
                "SELECT id, name FROM tasks WHERE id LIKE ? ESCAPE '\\'", (_like_prefix(ref),)
            )
            by_name = await self._all("SELECT id, name FROM tasks WHERE name = ?", (ref,))
        matches = {r[0]: r[1] for r in by_prefix + by_name}
        if len(matches) == 1:
            return next(iter(matches))
        if not matches:
            raise StoreError(f"no task matches {ref!r} (give an id, a unique id prefix or a name)")
        listed = ", ".join(f"{i[:8]} ({n})" for i, n in list(matches.items())[:5])
        raise StoreError(f"{ref!r} matches {len(matches)} tasks: {listed}; give more of the id")

    # -- runs --------------------------------------------------------------------------------

    async def begin_run(self, task_id: str, engine_id: str) -> tuple[int, int] | None:
        """QUEUED → RUNNING plus a new run row, in one transaction. Returns (run_id, attempt)."""
        now = time.time()
        async with self._tx() as c:
            row = await self._one("SELECT state, attempts FROM tasks WHERE id = ?", (task_id,))
            if not row or row[0] != State.QUEUED.value:
                return None
            attempt = row[1] + 1
            await c.execute(
                "UPDATE tasks SET state = ?, reason = '', attempts = ?, retry_at = NULL,"
                " updated_at = ? WHERE id = ?",
                (State.RUNNING.value, attempt, now, task_id),
            )
            cur = await c.execute(
                "INSERT INTO runs (task_id, attempt, engine_id, started_at) VALUES (?,?,?,?)",
                (task_id, attempt, engine_id, now),
            )
            run_id = int(cur.lastrowid or 0)
            await self._event(
                task_id,
                "state",
                State.QUEUED,
                State.RUNNING,
                f"attempt {attempt}",
                {"run_id": run_id, "attempt": attempt},
                now,
            )
            return run_id, attempt

    async def set_run_process(
        self, run_id: int, pid: int, pgid: int, proc_start: int | None
    ) -> None:
        async with self._tx() as c:
            await c.execute(
                "UPDATE runs SET pid = ?, pgid = ?, proc_start = ? WHERE id = ?",
                (pid, pgid, proc_start, run_id),
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
    ) -> None:
        """Close a run and add its cost and tokens to the task's totals."""
        now = time.time()
        async with self._tx() as c:
            row = await self._one("SELECT task_id, ended_at FROM runs WHERE id = ?", (run_id,))
            if not row or row[1] is not None:
                return
            task_id = row[0]
            await c.execute(
                "UPDATE runs SET ended_at = ?, outcome = ?, exit_code = ?, error = ?, cost_usd = ?,"
                " tokens_in = ?, tokens_out = ?, session_id = ? WHERE id = ?",
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
            await c.execute(
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
            }
            await self._event(task_id, "run_ended", None, None, outcome, data, now)

    async def runs(self, task_id: str | None = None, *, open_only: bool = False) -> list[RunRecord]:
        sql = f"SELECT {_RUN_COLS} FROM runs WHERE 1=1"
        args: list[Any] = []
        if task_id is not None:
            sql += " AND task_id = ?"
            args.append(task_id)
        if open_only:
            sql += " AND ended_at IS NULL"
        async with self._read():
            rows = await self._all(sql + " ORDER BY id", args)
        return [RunRecord(*r) for r in rows]

    # -- output ------------------------------------------------------------------------------

    async def append_output(
        self, rows: Sequence[tuple[str, int, int, int, float, str]]
    ) -> list[OutputLine]:
        """Store a batch of (task_id, run_id, stream, seq, at, text) in one transaction."""
        if not rows:
            return []
        async with self._tx() as c:
            (last,) = await self._one("SELECT COALESCE(MAX(id), 0) FROM output")
            # Inside BEGIN IMMEDIATE nobody else writes, so the ids are ours and in order.
            lines = [OutputLine(last + i, *r) for i, r in enumerate(rows, start=1)]
            await c.executemany(
                "INSERT INTO output (id, task_id, run_id, stream, seq, at, text)"
                " VALUES (?,?,?,?,?,?,?)",
                [(ln.id, ln.task_id, ln.run_id, ln.stream, ln.seq, ln.at, ln.text) for ln in lines],
            )
        return lines

    async def read_output(
        self,
        task_id: str | None = None,
        *,
        after_id: int = 0,
        limit: int = 10_000,
        stream: int | None = None,
        run_id: int | None = None,
    ) -> list[OutputLine]:
        sql = "SELECT id, task_id, run_id, stream, seq, at, text FROM output WHERE id > ?"
        args: list[Any] = [after_id]
        if task_id is not None:
            sql += " AND task_id = ?"
            args.append(task_id)
        if stream is not None:
            sql += " AND stream = ?"
            args.append(stream)
        if run_id is not None:
            sql += " AND run_id = ?"
            args.append(run_id)
        sql += " ORDER BY id LIMIT ?"
        args.append(limit)
        async with self._read():
            rows = await self._all(sql, args)
        return [OutputLine(*r) for r in rows]

    async def output_index(self, task_id: str) -> list[tuple[int, int]]:
        """(run_id, number of lines) for each run of a task, oldest first: a log view's map."""
        async with self._read():
            rows = await self._all(
                "SELECT r.id, (SELECT COALESCE(MAX(seq), 0) FROM output o WHERE o.run_id = r.id)"
                " FROM runs r WHERE r.task_id = ? ORDER BY r.id",
                (task_id,),
            )
        return [(int(r), int(n)) for r, n in rows]

    async def read_run_lines(self, run_id: int, first_seq: int, last_seq: int) -> list[OutputLine]:
        """Lines ``first_seq..last_seq`` (1-based, inclusive) of one run."""
        async with self._read():
            rows = await self._all(
                "SELECT id, task_id, run_id, stream, seq, at, text FROM output"
                " WHERE run_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
                (run_id, first_seq, last_seq),
            )
        return [OutputLine(*r) for r in rows]

    async def last_output_seq(self, run_id: int) -> int:
        async with self._read():
            (n,) = await self._one(
                "SELECT COALESCE(MAX(seq), 0) FROM output WHERE run_id = ?", (run_id,)
            )
        return int(n)

    # -- the journal -------------------------------------------------------------------------

    async def _event(
        self,
        task_id: str,
        kind: str,
        frm: State | None,
        to: State | None,
        reason: str,
        data: dict[str, Any] | None,
        at: float,
    ) -> None:
        await self._conn.execute(
            "INSERT INTO events (task_id, kind, from_state, to_state, reason, data, at)"
            " VALUES (?,?,?,?,?,?,?)",
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

    async def add_event(self, task_id: str, kind: str, data: dict[str, Any]) -> None:
        async with self._tx():
            await self._event(task_id, kind, None, None, "", data, time.time())

    async def read_events(self, after_id: int = 0, limit: int = 10_000) -> list[EventRecord]:
        async with self._read():
            rows = await self._all(
                f"SELECT {_EVENT_COLS} FROM events WHERE id > ? ORDER BY id LIMIT ?",
                (after_id, limit),
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
        async with self._read():
            return await self._all(sql + " ORDER BY id", args)

    async def cursor(self) -> tuple[int, int]:
        """The newest (event id, output id): where a live stream starts."""
        async with self._read():
            (e,) = await self._one("SELECT COALESCE(MAX(id), 0) FROM events")
            (o,) = await self._one("SELECT COALESCE(MAX(id), 0) FROM output")
        return int(e), int(o)

    # -- questions -----------------------------------------------------------------------------

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
        async with self._tx() as c:
            row = await self._one("SELECT state FROM tasks WHERE id = ?", (task_id,))
            if not row or State(row[0]) not in expected:
                return False
            current = State(row[0])
            await c.execute(
                "INSERT INTO questions (id, task_id, run_id, kind, payload, created_at)"
                " VALUES (?,?,?,?,?,?)",
                (question_id, task_id, run_id, kind, body, now),
            )
            reason = _WAITING_REASON.get(kind, f"waiting for {kind}")
            if current != State.READY:
                await c.execute(
                    "UPDATE tasks SET state = ?, reason = ?, question_json = ?, updated_at = ?"
                    " WHERE id = ?",
                    (State.READY.value, reason, body, now, task_id),
                )
                await self._event(task_id, "state", current, State.READY, reason, None, now)
            await self._event(
                task_id,
                "question",
                None,
                None,
                kind,
                {"question_id": question_id, "kind": kind, "payload": payload},
                now,
            )
            return True

    async def close_question(
        self, question_id: str, status: str, answer: dict[str, Any] | None = None
    ) -> bool:
        """open → answered | expired | cancelled, exactly once (compare-and-set)."""
        now = time.time()
        async with self._tx() as c:
            cur = await c.execute(
                "UPDATE questions SET status = ?, answer = ?, answered_at = ?"
                " WHERE id = ? AND status = 'open'",
                (status, json.dumps(answer) if answer is not None else None, now, question_id),
            )
            if cur.rowcount != 1:
                return False
            (task_id,) = await self._one(
                "SELECT task_id FROM questions WHERE id = ?", (question_id,)
            )
            await c.execute(
                "UPDATE tasks SET question_json = NULL WHERE id = ? AND NOT EXISTS"
                " (SELECT 1 FROM questions WHERE task_id = ? AND status = 'open')",
                (task_id, task_id),
            )
            await self._event(
                task_id,
                "answered",
                None,
                None,
                status,
                {"question_id": question_id, "status": status, "answer": answer},
                now,
            )
            return True

    async def questions(
        self, *, task_id: str | None = None, open_only: bool = True
    ) -> list[QuestionRecord]:
        sql = (
            "SELECT id, task_id, run_id, kind, payload, status, answer, created_at,"
            " answered_at FROM questions WHERE 1=1"
        )
        args: list[Any] = []
        if open_only:
            sql += " AND status = 'open'"
        if task_id is not None:
            sql += " AND task_id = ?"
            args.append(task_id)
        async with self._read():
            rows = await self._all(sql + " ORDER BY created_at DESC, rowid DESC", args)
        return [QuestionRecord.from_row(r) for r in rows]

    async def get_question(self, question_id: str) -> QuestionRecord | None:
        async with self._read():
            rows = await self._all(
                "SELECT id, task_id, run_id, kind, payload, status, answer, created_at,"
                " answered_at FROM questions WHERE id = ? OR id LIKE ? ESCAPE '\\'",
                (question_id, _like_prefix(question_id)),
            )
        if len(rows) > 1:
            exact = [r for r in rows if r[0] == question_id]
            if not exact:
                raise StoreError(f"question id {question_id!r} is ambiguous; give more of it")
            rows = exact
        return QuestionRecord.from_row(rows[0]) if rows else None

    # -- engines and their command inbox -----------------------------------------------------

    async def register_engine(self, engine_id: str, pid: int, proc_start: int | None) -> None:
        async with self._tx() as c:
            await c.execute(
                "INSERT INTO engines (id, pid, proc_start, started_at) VALUES (?,?,?,?)",
                (engine_id, pid, proc_start, time.time()),
            )

    async def unregister_engine(self, engine_id: str) -> None:
        async with self._tx() as c:
            await c.execute(
                "UPDATE engines SET stopped_at = ? WHERE id = ?", (time.time(), engine_id)
            )

    async def engines(self, *, running_only: bool = True) -> list[tuple[str, int, int | None]]:
        sql = "SELECT id, pid, proc_start FROM engines"
        if running_only:
            sql += " WHERE stopped_at IS NULL"
        async with self._read():
            return await self._all(sql + " ORDER BY started_at")

    async def enqueue_command(self, kind: str, payload: dict[str, Any]) -> int:
        async with self._tx() as c:
            cur = await c.execute(
                "INSERT INTO commands (kind, payload, created_at) VALUES (?,?,?)",
                (kind, json.dumps(payload), time.time()),
            )
            return int(cur.lastrowid or 0)

    async def pending_commands(self) -> list[tuple[int, str, dict[str, Any]]]:
        async with self._read():
            rows = await self._all(
                "SELECT id, kind, payload FROM commands WHERE done_at IS NULL ORDER BY id"
            )
        return [(i, k, json.loads(p)) for i, k, p in rows]

    async def finish_command(self, command_id: int, ok: bool, reply: str) -> bool:
        """Mark a command done; False if another engine already took it (exactly once)."""
        async with self._tx() as c:
            cur = await c.execute(
                "UPDATE commands SET done_at = ?, ok = ?, reply = ?"
                " WHERE id = ? AND done_at IS NULL",
                (time.time(), int(ok), reply, command_id),
            )
            return cur.rowcount == 1

    async def command_reply(self, command_id: int) -> tuple[bool, str] | None:
        async with self._read():
            row = await self._one(
                "SELECT done_at, ok, reply FROM commands WHERE id = ?", (command_id,)
            )
        if not row or row[0] is None:
            return None
        return bool(row[1]), row[2] or ""


def _task_from_row(row: tuple, deps: list[str]) -> TaskRecord:
    spec, state, reason, approved, attempts, base, retry_at, cost, tin, tout, rej, q, res = row[:13]
    created, updated, seq = row[13:]
    return TaskRecord(
        task=Task.model_validate_json(spec),
        state=State(state),
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
    )


def _like_prefix(ref: str) -> str:
    return ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _split_sql(script: str) -> Iterable[str]:
    # Migrations run statement by statement inside our own transaction (executescript would
    # commit behind our back); sqlite3 itself tells where a statement ends.
    stmt = ""
    for line in script.splitlines(keepends=True):
        stmt += line
        if sqlite3.complete_statement(stmt):
            yield stmt
            stmt = ""
    if stmt.strip():
        yield stmt
