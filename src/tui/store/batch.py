"""A batch of store calls run in one transaction on one connection: the ``Tx`` each call gets,
and group commit (consecutive writes share one ``BEGIN IMMEDIATE … COMMIT``, each inside its
own savepoint, a batch of writes first tried without). Which thread runs a batch, and when,
is tui.store.tx's.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from tui.store import journal
from tui.store.records import EventRecord

# What running a batch gives back for each of its calls: ok, its result (or exception), and
# the journal rows it wrote.
Outcome = tuple[bool, Any, list[EventRecord]]


class Tx:
    """What a transaction function gets: the connection, and a journal writer."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.events: list[EventRecord] = []

    # The connection has no row_factory: its rows are tuples already (copying each into a
    # tuple again was a list comprehension's frame per statement).
    def one(self, sql: str, args: Sequence[Any] = ()) -> tuple[Any, ...]:
        row: tuple[Any, ...] | None = self.db.execute(sql, args).fetchone()
        return row if row is not None else ()

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self.db.execute(sql, args).fetchall()
        return rows

    event = journal.insert  # t.event(task_id, kind, from, to, reason, data, at)
    events_many = journal.insert_many  # t.events_many([(task_id, kind, ...), ...])


def run_jobs(
    db: sqlite3.Connection,
    jobs: list[tuple[Callable[[Tx], Any], bool]],
    single: int = 0,
) -> list[Outcome]:
    """Run the jobs in call order: (ok, result or exception, journal rows) for each.
    The first ``single`` jobs are writes of one statement each (riders): SQLite takes back a
    failed statement by itself, so they need no savepoint of their own.

    Group commit: consecutive writes share one transaction, each inside its own savepoint, so
    a job that fails takes back only its own changes, and every job still checks what it
    changes inside a transaction (nobody else writes between BEGIN IMMEDIATE and COMMIT).
    One commit (one WAL append) per batch instead of one per job. No caller hears of its
    result before the commit (results go back only when the whole batch is done). A batch of
    writes only is tried first without savepoints (:func:`run_writes_together`).
    """
    if len(jobs) > 1 and all(write for _, write in jobs):
        together = run_writes_together(db, jobs)
        if together is not None:
            return together
    out: list[Outcome] = []
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

    for i, (fn, write) in enumerate(jobs):
        t = Tx(db)
        if i < single:
            try:
                if not db.in_transaction:
                    db.execute("BEGIN IMMEDIATE")
                result = fn(t)
            except BaseException as e:
                if not db.in_transaction:  # SQLite ended it: the group went with it
                    for j in group:
                        out[j] = (False, e, [])
                    group.clear()
                if not isinstance(e, Exception):
                    commit()
                    raise
                out.append((False, e, []))
                continue
            group.append(len(out))
            out.append((True, result, t.events))
            continue
        if not write:
            commit()  # a read-only job may open its own transaction (setup does)
            try:
                out.append((True, fn(t), []))
            except Exception as e:
                out.append((False, e, []))
            continue
        # A write with no other write in its transaction (none before it, none after it in
        # this batch) needs no savepoint: its rollback is the transaction's.
        alone = not db.in_transaction and (i + 1 == len(jobs) or not jobs[i + 1][1])
        try:
            if not db.in_transaction:
                db.execute("BEGIN IMMEDIATE")
            if not alone:
                db.execute("SAVEPOINT job")
        except Exception as e:  # could not even start (locked for too long, disk gone)
            commit()
            out.append((False, e, []))
            continue
        try:
            result = fn(t)
        except BaseException as e:
            if alone:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            else:
                undo(e)
            if not isinstance(e, Exception):
                commit()
                raise
            out.append((False, e, []))
            continue
        if not alone:
            db.execute("RELEASE job")
        group.append(len(out))
        out.append((True, result, t.events))
    commit()
    return out


def run_writes_together(
    db: sqlite3.Connection, jobs: list[tuple[Callable[[Tx], Any], bool]], give_up: bool = False
) -> list[Outcome] | None:
    """The usual batch (writes only, none of them failing) in one transaction with no
    savepoints: two statements a job fewer. If any job fails (or the transaction cannot
    start), nothing of it is kept and None says to run the batch again job by job, each in
    its own savepoint (:func:`run_jobs`); a job is a function of the transaction, so running
    it again after a rollback does what running it once would have. ``give_up``: a failed
    commit is None too (the loop's run: the thread runs the batch again and meets it)."""
    out: list[Outcome] = []
    try:
        db.execute("BEGIN IMMEDIATE")
    except Exception:
        return None
    try:
        for fn, _ in jobs:
            t = Tx(db)
            out.append((True, fn(t), t.events))
    except BaseException as e:  # taken back whole; the job by job run meets it again
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        if give_up and not isinstance(e, Exception):
            raise  # an interrupt of the loop's own, not the batch's to run again
        return None
    try:
        db.execute("COMMIT")
    except Exception as e:  # nothing of it is stored: each of them failed
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        return None if give_up else [(False, e, []) for _ in jobs]
    return out
