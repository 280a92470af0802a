"""Transactions and group commit: one sqlite3 connection on one dedicated thread.

Every store call is a function ``fn(tx)`` run on the database thread (or, quick writes, the
loop: below) as one transaction
(read, check, write, journal), so a state change costs one thread hop, not one per
statement. Calls made while the thread is busy queue up and go over together: one hop runs
all of them in call order, consecutive writes sharing one ``BEGIN IMMEDIATE … COMMIT``, each
inside its own savepoint (tui.store.batch; a batch of writes is first tried without).
Journal rows written by a call are handed to ``on_event`` right after it commits, so
listeners see them in commit order.

A batch of quick writes only (a run's start and end, a task's move: ``call(quick=True)``) is
run on the loop itself while the thread is idle (see :meth:`Database._run_inline`): the same
transaction and commit, without the hop. The hop cost more than the batch: a queue wake-up,
the GIL handed back and forth at every SQLite call while the loop runs, and a wake-up of the
loop to hear of the result (the DAG: store thread 0.20 → 0.045 s of CPU, main thread +0.085,
the engine's process −0.08). It never waits there: the write lock is tried once
(``busy_timeout`` 0) and a batch that meets a lock, or any error, goes to the thread as
before, where it waits or fails as it always did; SQLite's checkpoints (an fsync) stay on the
thread (every ``INLINE_COMMITS`` inline commits the next batch goes there, with
``wal_autocheckpoint`` back on).

Why not aiosqlite: running a whole batch as one function on its thread needs its private
``_execute``/``_conn``; its public API is one hop per statement. The standard library's
sqlite3 on a thread of our own gives the same one-hop design through public APIs only, with
the same cost per hop (a queue put, a ``call_soon_threadsafe`` back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from tui.store import health
from tui.store.batch import Tx, run_jobs, run_writes_together
from tui.store.errors import StoreError
from tui.store.records import EventRecord
from tui.store.schema import MIGRATIONS

T = TypeVar("T")

log = logging.getLogger(__name__)

# How long a rider (``Database.ride``) waits for a transaction to ride in before it goes out in
# one of its own.
RIDE_DELAY = 0.02
# How long the thread waits for another process's write lock (ms).
BUSY_TIMEOUT_MS = 10_000
# Inline commits (no checkpoint) before a batch goes to the thread, whose commit checkpoints
# once the WAL holds SQLite's 1,000 pages: ~12 pages a commit of the DAG's.
INLINE_COMMITS = 64


def sqlite_uri(path: Path, mode: str) -> str:
    """SQLite's URI of ``path``, quoted: a `?`, `#` or `%` in a folder name stays a name."""
    return f"{path.absolute().as_uri()}?mode={mode}"


# (the transaction's function, whether it writes, its caller's future, what to call with its
# result before the journal's listeners hear of its rows, whether it may run on the loop)
Job = tuple[Callable[[Tx], Any], bool, "asyncio.Future[Any]", Callable[[Any], None] | None, bool]


class _Thread:
    """The one thread that touches the connection: runs functions in the order given."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], asyncio.Future[Any]] | None]
        self._jobs = queue.SimpleQueue()
        # Submitted and not yet settled (counted on the loop): 0 when the thread is not
        # touching the connection, so the loop may.
        self.pending = 0
        self._thread = threading.Thread(target=self._work, name="tui-store", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self.pending += 1
        self._jobs.put((fn, fut))
        return fut

    def stop(self) -> None:
        self._jobs.put(None)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, fut = job
            try:
                result, error = fn(), None
            except BaseException as e:
                result, error = None, e
            # A closed loop (RuntimeError) has nobody waiting any more.
            with contextlib.suppress(RuntimeError):
                fut.get_loop().call_soon_threadsafe(self._settle, fut, result, error)

    def _settle(self, fut: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
        self.pending -= 1
        _settle(fut, result, error)


def _settle(fut: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if fut.done():  # the caller was cancelled
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)


class Database:
    """One connection, one thread, calls batched into group commits."""

    def __init__(self, conn: sqlite3.Connection, thread: _Thread, path: Path) -> None:
        self._conn = conn
        self._thread = thread
        self.path = path
        self._queued: list[Job] = []
        self._riders: list[Callable[[Tx], Any]] = []
        self._ride_timer: asyncio.TimerHandle | None = None
        self._runner: asyncio.Task[None] | None = None
        self.on_event: Callable[[EventRecord], None] | None = None
        self.closed = False
        # The connection is set for the loop (no busy wait, no checkpoint): the thread sets
        # it back before its next use.
        self._inline = False
        self._inline_commits = 0  # since the thread's last write batch
        self._rider_failing = ""  # the failure last logged for a rider, until riders go through

    @classmethod
    async def connect(cls, path: Path, *, create: bool) -> Database:
        """Open ``path``; without ``create``, a missing file is an error, never a new one."""
        uri = sqlite_uri(path, "rwc" if create else "rw")
        thread = _Thread()
        try:
            # Used by the thread, and by the loop while the thread is idle (never both).
            conn = await thread.submit(
                lambda: sqlite3.connect(
                    uri, uri=True, isolation_level=None, check_same_thread=False
                )
            )
        except BaseException:
            thread.stop()
            raise
        return cls(conn, thread, path)

    async def call(
        self,
        fn: Callable[[Tx], T],
        *,
        write: bool = True,
        first: Callable[[T], None] | None = None,
        quick: bool = False,
    ) -> T:
        """Run ``fn`` as (part of) a transaction; its result once committed. ``first`` is
        called with the result on the loop as soon as it commits, before any listener
        (``on_event``) hears of its journal rows: a caller that must know what it stored
        before anyone is told (new tasks whose first move is in the same transaction).
        ``quick``: a write of a few rows (and no wait of its own) that may run on the loop
        (see the module's docstring)."""
        self._check_open()
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queued.append((fn, write, fut, first, quick))
        if self._runner is None:
            self._runner = asyncio.create_task(self._run_queued())
        try:
            return await fut
        except sqlite3.Error as e:
            if not health.is_file_problem(e):
                raise
            found = await self.run(health.integrity_check) if health.is_damage(e) else ""
            raise health.explain(self.path, e, found) from None

    def ride(self, fn: Callable[[Tx], Any]) -> None:
        """Write ``fn`` with the next transaction (a call of anyone's), or in one of its own
        within ``RIDE_DELAY``: a write nothing waits for (a run's pid) costs no round trip, no
        future and no turn of the loop of its own. Its failure is logged, not raised. ``fn``
        executes one statement, as its last step (it gets no savepoint: SQLite takes back a
        failed statement by itself)."""
        self._check_open()
        self._riders.append(fn)
        if self._runner is None and self._ride_timer is None:
            self._ride_timer = asyncio.get_running_loop().call_later(RIDE_DELAY, self._go)

    def _go(self) -> None:
        if self._ride_timer is not None:
            self._ride_timer.cancel()
            self._ride_timer = None
        if self._runner is None and (self._queued or self._riders) and not self.closed:
            self._runner = asyncio.create_task(self._run_queued(riders_alone=True))

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(connection)`` on the database thread outside the queue (open, close,
        checks): for calls that must not wait behind a batch or join a transaction."""
        self._check_open()
        conn = self._conn
        if not self._inline:
            return await self._thread.submit(lambda: fn(conn))
        self._inline = False
        return await self._thread.submit(lambda: fn(_for_thread(conn)))

    def _check_open(self) -> None:
        # The thread is gone once closed: a call would wait forever for it.
        if self.closed:
            raise StoreError(f"the database {self.path} is closed")

    async def close(self) -> None:
        """Close once; closing again does nothing (an app and its owner may both close)."""
        if self.closed:
            return
        while self._runner is not None or self._riders:
            if self._runner is None:
                self._go()  # riders not yet written still are
            assert self._runner is not None
            await asyncio.shield(self._runner)  # calls already queued still run
        if self._ride_timer is not None:
            self._ride_timer.cancel()
            self._ride_timer = None
        try:
            await self.run(lambda c: c.close())
        finally:
            self.closed = True
            self._thread.stop()

    async def _run_queued(self, riders_alone: bool = False) -> None:
        """The calls queued, batch after batch, with the riders; riders left alone wait for
        the next call or their timer (``riders_alone``: the timer is up)."""
        try:
            while self._queued or (riders_alone and self._riders):
                riders_alone = False
                # A call whose caller was cancelled while it waited never runs.
                jobs = [j for j in self._queued if not j[2].cancelled()]
                self._queued = []
                riders, self._riders = self._riders, []
                if self._ride_timer is not None:
                    self._ride_timer.cancel()
                    self._ride_timer = None
                if not jobs and not riders:
                    continue
                try:
                    # The riders first: they were asked for before any of these calls.
                    batch = [(fn, True) for fn in riders] + [(fn, w) for fn, w, _, _, _ in jobs]
                    outcomes = self._run_inline(batch, jobs)
                    if outcomes is None:
                        outcomes = await self._thread.submit(self._on_thread(batch, len(riders)))
                except BaseException as e:  # the connection itself failed
                    for _, _, fut, _, _ in jobs:
                        if not fut.done():
                            fut.set_exception(e)
                    raise
                if riders:
                    self._log_riders([v for ok, v, _ in outcomes[: len(riders)] if not ok])
                outcomes = outcomes[len(riders) :]
                # Every caller resumes first, then whoever the journal rows wake (in commit
                # order): their wake-ups are queued after the callers', so a viewer woken by
                # an event finds the engine's memory already updated by the call that wrote
                # it. All in one turn of the loop: runs ended together start their next runs
                # (one frame to the keeper) and make their next calls (one batch) together.
                for (_, _, fut, first, _), (ok, value, _) in zip(jobs, outcomes, strict=True):
                    if ok and first is not None:
                        try:
                            first(value)
                        except Exception as e:
                            ok, value = False, e
                    if not fut.done():
                        if ok:
                            fut.set_result(value)
                        else:
                            fut.set_exception(value)
                if self.on_event is not None:
                    for _, _, events in outcomes:
                        for ev in events:
                            self.on_event(ev)
        finally:
            self._runner = None
            if self._riders and self._ride_timer is None and not self.closed:
                self._ride_timer = asyncio.get_running_loop().call_later(RIDE_DELAY, self._go)

    def _log_riders(self, failures: list[Any]) -> None:
        """The failures of a batch's riders: each logged as an error once, since a full disk
        refuses the same rider at every retry of its run's end (each second) until there is
        room; none (riders went through) ends that."""
        if not failures and self._rider_failing:
            log.info("writes riding with others go through again")
            self._rider_failing = ""
        for value in failures:
            said = str(value)
            if said == self._rider_failing:
                log.debug("a write riding with others failed again: %s", said)
            else:
                log.error("a write riding with others failed: %s", said)
                self._rider_failing = said

    def _run_inline(
        self, batch: list[tuple[Callable[[Tx], Any], bool]], jobs: list[Job]
    ) -> list[tuple[bool, Any, list[EventRecord]]] | None:
        """The batch run here on the loop, if it may be (quick writes only, the thread idle,
        no checkpoint due) and it goes through: committed whole, nothing failing, the write
        lock free at once. Else None, and nothing of it is stored: the thread runs it."""
        if (
            self._thread.pending
            or self._inline_commits >= INLINE_COMMITS
            or not all(quick for _, _, _, _, quick in jobs)
        ):
            return None
        db = self._conn
        if not self._inline:
            db.execute("PRAGMA busy_timeout = 0")
            db.execute("PRAGMA wal_autocheckpoint = 0")
            self._inline = True
        outcomes = run_writes_together(db, batch, give_up=True)
        if outcomes is not None:
            self._inline_commits += 1
        return outcomes

    def _on_thread(
        self, batch: list[tuple[Callable[[Tx], Any], bool]], single: int
    ) -> Callable[[], list[tuple[bool, Any, list[EventRecord]]]]:
        """The batch's run on the thread, the connection first set back for it."""
        db = self._conn
        if any(write for _, write in batch):
            self._inline_commits = 0  # its commit checkpoints if the WAL is due
        if not self._inline:
            return partial(run_jobs, db, batch, single)
        self._inline = False
        return lambda: run_jobs(_for_thread(db), batch, single)


def _for_thread(db: sqlite3.Connection) -> sqlite3.Connection:
    """The connection set back for the thread: it waits for the write lock, and its commits
    checkpoint the WAL (SQLite's default) — the loop's did neither."""
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    db.execute("PRAGMA wal_autocheckpoint = 1000")
    return db


def setup(t: Tx) -> None:
    """Connection settings, then the schema migrations the file still needs."""
    t.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # WAL lets other processes read while we write; NORMAL is durable against a crash of
    # this process (the case that matters here), without an fsync per transition. NORMAL
    # first: a new file's switch to WAL is a rollback-journal write, which FULL syncs four
    # times and NORMAL three (one fsync less in the launch of a run on a new database).
    t.db.execute("PRAGMA synchronous = NORMAL")
    t.db.execute("PRAGMA journal_mode = WAL")
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


def _split_sql(script: str) -> Iterable[str]:
    stmt = ""
    for line in script.splitlines(keepends=True):
        stmt += line
        if sqlite3.complete_statement(stmt):
            yield stmt
            stmt = ""
    if stmt.strip():
        yield stmt


def file_id(path: str | os.PathLike[str]) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino
