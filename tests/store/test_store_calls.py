"""Store calls made at the same time share thread hops but stay separate transactions: one
that fails changes nothing and takes nothing else down, and the journal follows call order."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Move, Store, StoreError
from tui.store.records import EventRecord, TaskRecord


def _task(name: str) -> Task:
    return Task.model_validate({"name": name, "agent": {"type": "shell", "instructions": "true"}})


async def test_calls_made_together_are_separate_transactions_in_call_order(store: Store) -> None:
    seen: list[EventRecord] = []
    store.on_event = seen.append
    first = [_task(f"t{i}") for i in range(5)]
    await store.insert_tasks(first, approved=True)
    again = _task("again").model_copy(update={"id": first[0].id})  # an id already stored
    results = await asyncio.gather(
        *(store.transition(t.id, State.PENDING, State.QUEUED) for t in first[:3]),
        store.insert_tasks([_task("new"), again], approved=True),
        *(store.transition(t.id, State.PENDING, State.QUEUED) for t in first[3:]),
        store.transition(first[0].id, State.PENDING, State.QUEUED),  # already QUEUED: refused
        return_exceptions=True,
    )
    moved = [r for i, r in enumerate(results) if i != 3]
    assert [getattr(r, "id", None) for r in moved] == [t.id for t in first] + [None]
    assert all(isinstance(r, TaskRecord) and r.state == State.QUEUED for r in moved[:5])
    assert isinstance(results[3], StoreError) and first[0].id in str(results[3])
    # The refused insert stored nothing, not even its good task; the others all committed.
    assert [r.name for r in await store.list_tasks()] == [t.name for t in first]
    assert all(r.state == State.QUEUED for r in await store.list_tasks())
    queued = [ev.task_id for ev in seen if ev.to_state == State.QUEUED.value]
    assert queued == [t.id for t in first]
    assert [ev.id for ev in seen] == sorted(ev.id for ev in seen)


async def test_a_caller_cancelled_while_waiting_for_its_turn_changes_nothing(
    store: Store,
) -> None:
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    first = asyncio.ensure_future(store.transition(t.id, State.PENDING, State.QUEUED))
    second = asyncio.ensure_future(store.transition(t.id, State.QUEUED, State.RUNNING))
    await asyncio.sleep(0)  # one loop step: both calls are queued, none has gone over yet
    second.cancel()
    moved = await first
    assert moved is not None and moved.state == State.QUEUED
    with pytest.raises(asyncio.CancelledError):
        await second
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.QUEUED


async def test_a_run_ends_and_its_task_moves_in_one_transaction(store: Store) -> None:
    seen: list[EventRecord] = []
    store.on_event = seen.append
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    assert await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.start_run(t.id, "engine")
    assert began is not None
    done = Move(t.id, State.RUNNING, State.COMPLETED, "exit code 0")
    assert await store.end_run(began.run_id, outcome="COMPLETED", exit_code=0, then=done)
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.COMPLETED
    (run,) = await store.runs(t.id)
    assert run.ended_at is not None and run.exit_code == 0
    # One journal row says both: the task's new state, carrying how the run ended.
    last = seen[-1]
    assert (last.kind, last.from_state, last.to_state) == ("state", "RUNNING", "COMPLETED")
    assert last.data["run_id"] == began.run_id
    assert (last.data["outcome"], last.data["exit_code"]) == ("COMPLETED", 0)
    assert [ev.kind for ev in seen if ev.kind == "run_ended"] == []


async def test_a_refused_move_still_ends_the_run(store: Store) -> None:
    seen: list[EventRecord] = []
    store.on_event = seen.append
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    assert await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.start_run(t.id, "engine")
    assert began is not None
    # Someone else got there first: the task is no longer RUNNING.
    assert await store.transition(t.id, State.RUNNING, State.CANCELLED, "cancelled by user")
    late = Move(t.id, State.RUNNING, State.COMPLETED, "exit code 0")
    assert not await store.end_run(began.run_id, outcome="COMPLETED", exit_code=0, then=late)
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.CANCELLED
    (run,) = await store.runs(t.id)
    assert run.ended_at is not None
    # No state change carries the run's end: it has a journal row of its own.
    last = seen[-1]
    assert (last.kind, last.reason, last.data["run_id"]) == ("run_ended", "COMPLETED", run.id)


async def test_a_write_alone_in_its_transaction_that_fails_midway_changes_nothing(
    store: Store,
) -> None:
    # A write with no other write beside it runs without a savepoint: its failure must take
    # back what it wrote before failing, and leave no transaction open for the next call.
    seen: list[EventRecord] = []
    store.on_event = seen.append
    a = _task("a")
    twin = _task("twin").model_copy(update={"id": a.id})  # the second insert of the call fails
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        await store.insert_tasks([a, twin], approved=True)
    assert await store.list_tasks() == []
    assert seen == []
    b = _task("b")
    await store.insert_tasks([b], approved=True)
    assert [r.name for r in await store.list_tasks()] == ["b"]
    assert [ev.task_id for ev in seen] == [b.id]


async def _running(store: Store, name: str) -> int:
    t = _task(name)
    await store.insert_tasks([t], approved=True)
    await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.begin_run(t.id, "engine")
    assert began is not None
    return began[0]


def _stored_pid(store: Store, run_id: int) -> int | None:
    """The run's pid as another connection reads it: committed, not just written."""
    with sqlite3.connect(store.path) as conn:
        row = conn.execute("SELECT pid FROM runs WHERE id = ?", (run_id,)).fetchone()
    return row[0]


async def test_a_runs_process_rides_in_the_next_call_without_a_hop_of_its_own(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = await _running(store, "a")
    other = await _running(store, "b")
    hops = 0
    submit = store._db._thread.submit

    def counted(fn: Callable[[], Any]) -> asyncio.Future[Any]:
        nonlocal hops
        hops += 1
        return submit(fn)

    monkeypatch.setattr(store._db._thread, "submit", counted)
    store.note_run_process(run_id, 4242, 4242, lambda: 99)
    await store.set_run_session(other, "s")  # any call: the pid goes with it
    assert hops == 1
    assert _stored_pid(store, run_id) == 4242
    (run,) = [r for r in await store.runs(open_only=True) if r.id == run_id]
    assert (run.pid, run.pgid, run.proc_start) == (4242, 4242, 99)


async def test_a_runs_process_is_stored_alone_soon_when_no_call_comes(store: Store) -> None:
    run_id = await _running(store, "a")
    store.note_run_process(run_id, 4242, 4242, lambda: 99)
    assert _stored_pid(store, run_id) is None  # not before the loop has had a turn
    async with asyncio.timeout(5):  # RIDE_DELAY is 20 ms: a deadline, not a pause
        while _stored_pid(store, run_id) is None:
            await asyncio.sleep(0.005)


async def test_a_runs_end_writes_its_process_when_it_comes_first(store: Store) -> None:
    """A run that ends before its process was written: the end's statement writes it, with
    no statement of the process's own."""
    run_id = await _running(store, "a")
    updates: list[str] = []

    def trace(sql: str) -> None:
        if sql.startswith("UPDATE runs"):
            updates.append(sql)

    await store._db.run(lambda conn: conn.set_trace_callback(trace))
    store.note_run_process(run_id, 4242, 4242, lambda: 99)
    await store.end_run(run_id, outcome="COMPLETED", exit_code=0)
    await store.close()  # a rider still waiting would be written now
    assert len(updates) == 1  # the end's own
    with sqlite3.connect(store.path) as conn:
        row = conn.execute("SELECT pid, pgid, proc_start, outcome FROM runs").fetchone()
    assert row == (4242, 4242, 99, "COMPLETED")


async def test_a_runs_process_not_yet_stored_is_stored_by_close(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "tui.db")
    run_id = await _running(store, "a")
    store.note_run_process(run_id, 4242, 4242, lambda: 99)
    await store.close()
    assert _stored_pid(store, run_id) == 4242


async def test_a_failing_rider_takes_no_call_down(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    broken_run = await _running(store, "b")
    run_id = await _running(store, "a")

    def broken() -> int | None:
        raise sqlite3.OperationalError("no such thing")

    store.note_run_process(broken_run, 1, 1, broken)
    store.note_run_process(run_id, 4242, 4242, lambda: 99)
    await store.set_run_session(run_id, "s")
    assert _stored_pid(store, run_id) == 4242
    assert "no such thing" in caplog.text


async def test_a_rider_failing_again_and_again_is_one_error_until_riders_go_through(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """On a full disk the same rider is refused at every retry of its run's end: one error
    line, not one a second; once riders are stored again a new failure is an error again."""
    run_id = await _running(store, "a")

    def full(t: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    caplog.set_level(logging.DEBUG, logger="tui.store.tx")
    for _ in range(3):
        store._db.ride(full)
        await store.set_run_session(run_id, "s")
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in errors] == [
        "a write riding with others failed: database or disk is full"
    ]
    await store.set_run_session(run_id, "s")  # no rider in it: says nothing of riders
    assert "go through again" not in caplog.text
    store.note_run_process(run_id, 4242, 4242, lambda: 99)  # goes through
    await store.set_run_session(run_id, "s")
    assert _stored_pid(store, run_id) == 4242
    assert "go through again" in caplog.text
    store._db.ride(full)
    await store.set_run_session(run_id, "s")
    assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 2


async def test_a_rider_whose_statement_fails_takes_back_only_itself(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Riders get no savepoint: SQLite takes back the failed statement alone, and the calls
    and riders of the same transaction still commit."""
    run_id = await _running(store, "a")

    def clash(t: Any) -> None:  # the run's id again: refused by the primary key
        t.db.execute("INSERT INTO runs (id, task_id, attempt, engine_id, started_at) "
                     "SELECT id, task_id, attempt, engine_id, started_at FROM runs WHERE id = ?",
                     (run_id,))  # fmt: skip

    store._db.ride(clash)
    store.note_run_process(run_id, 4242, 4242, lambda: 99)
    await store.set_run_session(run_id, "s")
    assert _stored_pid(store, run_id) == 4242
    (run,) = await store.runs()
    assert run.session_id == "s"
    assert "UNIQUE" in caplog.text


async def test_calls_answered_together_all_resume_before_any_viewer_their_events_wake(
    store: Store,
) -> None:
    """Runs that end together start their next runs together (one frame to the keeper, one
    store batch): every caller of a batch resumes before the listeners its journal rows wake,
    and those still see the rows in commit order."""
    tasks = [_task(f"t{i}") for i in range(3)]
    await store.insert_tasks(tasks, approved=True)
    order: list[str] = []
    loop = asyncio.get_running_loop()

    def viewer(ev: EventRecord) -> None:  # woken by each row, it runs in a later step
        loop.call_soon(order.append, f"event {ev.task_id}")

    store.on_event = viewer

    async def move(t: Task) -> None:
        await store.transition(t.id, State.PENDING, State.QUEUED)
        order.append(f"caller {t.id}")

    await asyncio.gather(*(move(t) for t in tasks))
    await asyncio.sleep(0)  # the last viewer's step: queued before this one
    assert order == [f"caller {t.id}" for t in tasks] + [f"event {t.id}" for t in tasks]


async def test_tasks_inserted_queued_journal_as_if_moved_after_their_insert(
    tmp_path: Path,
) -> None:
    store = await Store.open(tmp_path / "q.db")
    seen: list[tuple[str, str | None, list[str]]] = []
    known: list[str] = []  # what the caller knew when each journal row was heard of
    store.on_event = lambda ev: seen.append((ev.kind, ev.to_state, list(known)))
    ready, waits = [_task("a"), _task("b")], _task("c")
    ids = [t.id for t in [*ready, waits]]
    recs = await store.insert_tasks(
        [*ready, waits],
        approved=True,
        queued=[t.id for t in ready],
        queued_reason="ready to run",
        first=lambda rs: known.extend(r.id for r in rs),
    )
    assert [(r.state, r.reason) for r in recs] == [
        (State.QUEUED, "ready to run"),
        (State.QUEUED, "ready to run"),
        (State.PENDING, ""),
    ]
    # Every row heard of after the caller had the records; submitted first, then the moves.
    assert seen == [("submitted", "PENDING", ids)] * 3 + [("state", "QUEUED", ids)] * 2
    await store.close()
    # A reader of the file sees the same: the tasks' states and the transitions in order.
    con = sqlite3.connect(tmp_path / "q.db")
    rows = con.execute("SELECT id, state, reason FROM tasks ORDER BY submit_seq").fetchall()
    assert rows == [
        (ids[0], "QUEUED", "ready to run"),
        (ids[1], "QUEUED", "ready to run"),
        (ids[2], "PENDING", ""),
    ]
    journal = con.execute("SELECT task_id, kind, from_state, to_state FROM events ORDER BY id")
    assert journal.fetchall() == [
        (ids[0], "submitted", None, "PENDING"),
        (ids[1], "submitted", None, "PENDING"),
        (ids[2], "submitted", None, "PENDING"),
        (ids[0], "state", "PENDING", "QUEUED"),
        (ids[1], "state", "PENDING", "QUEUED"),
    ]
    con.close()


async def test_new_tasks_journal_rows_reach_listeners_as_stored(store: Store) -> None:
    """A batch's journal rows (written by one statement) are heard with the ids and in the
    order the journal keeps them, even when ids were used by rows no longer there."""
    seen: list[EventRecord] = []
    store.on_event = seen.append
    await store.insert_tasks([_task("before")], approved=True)
    # Rows that were written and then went: the journal's ids never go back.
    await store._db.call(lambda t: t.db.execute("DELETE FROM events"))
    seen.clear()
    batch = [_task(f"t{i}") for i in range(4)]
    queued = {batch[1].id, batch[3].id}
    await store.insert_tasks(batch, approved=True, queued=queued, queued_reason="ready")
    stored = await store.read_events()
    assert seen == stored
    assert [(ev.task_id, ev.to_state) for ev in seen] == [
        *((t.id, State.PENDING.value) for t in batch),
        (batch[1].id, State.QUEUED.value),
        (batch[3].id, State.QUEUED.value),
    ]
    assert seen[0].id > 1  # after the deleted row's id


def test_the_journals_quick_event_record_is_the_dataclass_one() -> None:
    """``EventRecord.made`` (the journal's writes) fills every field, as the constructor does:
    a field added to the record without it would fail here, not go missing."""
    args = (7, "t", "state", "pending", "queued", "ready", {"name": "a"}, 1.5)
    made, built = EventRecord.made(*args), EventRecord(*args)
    assert made == built and repr(made) == repr(built)
    assert list(vars(made)) == [f.name for f in dataclasses.fields(EventRecord)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.reason = "changed"  # type: ignore[misc]
