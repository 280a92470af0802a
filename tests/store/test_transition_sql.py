"""The checked transition costs one UPDATE and its journal row, and checks no less for it: a
move the state table forbids is refused whatever the caller expects or believes, the journal
names the state really left, and a run's totals and questions are kept as before."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Move, Store, StoreError
from tui.store.records import EventRecord, TaskRecord


def _task(name: str) -> Task:
    return Task.model_validate({"name": name, "agent": {"type": "shell", "instructions": "true"}})


@asynccontextmanager
async def _statements(store: Store) -> AsyncIterator[list[str]]:
    """The SQL statements the store executes meanwhile (its connection's trace callback)."""
    seen: list[str] = []
    trace: Callable[[str], None] = seen.append
    await store._db.run(lambda c: c.set_trace_callback(trace))
    try:
        yield seen
    finally:
        await store._db.run(lambda c: c.set_trace_callback(None))


def _writes(seen: list[str]) -> list[str]:
    """The statements but the transaction's own (BEGIN, COMMIT, savepoints) and the
    connection's settings (whether the loop or the thread runs it: tui.store.tx)."""
    own = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE", "ROLLBACK", "PRAGMA")
    return [s.split()[0] + " " + s.split()[1] for s in seen if not s.startswith(own)]


async def test_a_move_the_table_forbids_is_refused_even_from_a_state_the_caller_expects(
    store: Store,
) -> None:
    """PENDING → COMPLETED is not in the table: expecting (PENDING, RUNNING) lets the task
    leave RUNNING only, so a PENDING task stays PENDING and nothing is journaled."""
    seen: list[EventRecord] = []
    store.on_event = seen.append
    t = _task("a")
    (rec,) = await store.insert_tasks([t], approved=True)
    seen.clear()
    forbidden = (State.PENDING, State.RUNNING)
    assert await store.transition(t.id, forbidden, State.COMPLETED, "skip ahead") is None
    # The caller's record saying PENDING (a state it may not leave that way) changes nothing.
    assert await store.transition(t.id, forbidden, State.COMPLETED, base=rec) is None
    assert await store.transition(t.id, State.QUEUED, State.PENDING) is None  # not in table
    got = await store.get_task(t.id)
    assert got is not None and got.state == State.PENDING
    assert seen == []
    assert await store.transitions(t.id) == []


async def test_a_caller_wrong_about_the_state_still_moves_it_and_the_journal_says_from_where(
    store: Store,
) -> None:
    """The end of a run expects RUNNING or READY; the engine's record says RUNNING but the
    agent asked a question meanwhile (READY): the move is made, from READY."""
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.start_run(t.id, "engine")
    assert began is not None and began.task is not None
    stale = began.task  # RUNNING, as the engine last saw it
    asked = await store.raise_question(
        "q1", t.id, began.run_id, "question", {}, expected=[State.RUNNING]
    )
    assert asked is not None and asked.state == State.READY
    done = Move(t.id, (State.RUNNING, State.READY), State.COMPLETED, "exit code 0")
    moved = await store.end_run(
        began.run_id, outcome="COMPLETED", exit_code=0, then=done, base=stale
    )
    assert moved is not None and moved.state == State.COMPLETED
    log = [(frm, to) for _, frm, to, _, _ in await store.transitions(t.id)]
    assert log[-1] == ("READY", "COMPLETED")


async def test_a_runs_life_is_one_statement_per_row_it_writes(store: Store) -> None:
    """Queue, start and end (with the task's next state) of a first attempt nobody asked
    about: the task moved by one UPDATE each time (no read first), the run's totals and result
    ride in the last one, no read of earlier runs or questions."""
    t = _task("a")
    (rec,) = await store.insert_tasks([t], approved=True)
    async with _statements(store) as seen:
        queued = await store.transition(t.id, State.PENDING, State.QUEUED, "go", base=rec)
        assert queued is not None
        began = await store.start_run(t.id, "engine", queued)
        assert began is not None and began.task is not None
        done = Move(t.id, (State.RUNNING, State.READY), State.COMPLETED, "exit code 0")
        moved = await store.end_run(
            began.run_id, outcome="COMPLETED", exit_code=0, then=done, result='"ok"',
            cost_usd=0.5, tokens_in=3, tokens_out=4, base=began.task,
        )  # fmt: skip
    assert _writes(seen) == [
        "UPDATE tasks",  # PENDING → QUEUED
        "INSERT INTO",  # its journal row
        "UPDATE tasks",  # QUEUED → RUNNING, the attempt counted
        "INSERT INTO",  # the run
        "INSERT INTO",  # its journal row
        "UPDATE runs",  # the run closed
        "UPDATE tasks",  # RUNNING → COMPLETED with the run's totals and result
        "INSERT INTO",  # one journal row for both
    ]
    assert moved is not None and moved.state == State.COMPLETED
    assert (moved.cost_usd, moved.tokens_in, moved.tokens_out, moved.result) == (0.5, 3, 4, '"ok"')
    assert (moved.attempts, began.attempt, began.questions, began.previous_runs) == (1, 1, [], [])


async def test_a_refused_end_move_still_adds_the_runs_totals_and_result(store: Store) -> None:
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.start_run(t.id, "engine")
    assert began is not None
    assert await store.transition(t.id, State.RUNNING, State.CANCELLED, "cancelled by user")
    late = Move(t.id, State.RUNNING, State.COMPLETED, "exit code 0")
    assert not await store.end_run(
        began.run_id, outcome="COMPLETED", then=late, result='"r"', cost_usd=0.25, tokens_in=2
    )
    rec = await store.get_task(t.id)
    assert rec is not None
    assert (rec.state, rec.cost_usd, rec.tokens_in, rec.result) == (State.CANCELLED, 0.25, 2, '"r"')


async def test_a_move_that_sets_the_result_itself_wins_over_the_runs(store: Store) -> None:
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.start_run(t.id, "engine")
    assert began is not None
    then = Move(t.id, State.RUNNING, State.COMPLETED, "done", {"result": '"the move\'s"'})
    moved = await store.end_run(began.run_id, outcome="COMPLETED", then=then, result='"run"')
    assert moved is not None and moved.result == '"the move\'s"'


async def test_a_start_reads_the_questions_and_runs_there_are(store: Store) -> None:
    """A message sent before the task first ran, and earlier attempts: a new attempt still
    gets them (read only when there are any)."""
    t = _task("a")
    (rec,) = await store.insert_tasks([t], approved=True)
    await store.add_message(t.id, None, "mind the tests")
    await store.transition(t.id, State.PENDING, State.QUEUED)
    first = await store.start_run(t.id, "engine", rec)
    assert first is not None and first.task is not None
    assert [q.kind for q in first.questions] == ["message"] and first.previous_runs == []
    again = Move(t.id, State.RUNNING, State.FAILED, "exit code 1")
    failed = await store.end_run(first.run_id, outcome="FAILED", exit_code=1, then=again)
    assert failed is not None
    await store.transition(t.id, State.FAILED, State.QUEUED, base=failed)
    second = await store.start_run(t.id, "engine", failed)
    assert second is not None and second.task is not None
    assert (second.attempt, second.task.attempts) == (2, 2)
    assert [r.id for r in second.previous_runs] == [first.run_id]
    assert [q.kind for q in second.questions] == ["message"]


async def test_a_batch_of_writes_needs_no_savepoints_unless_one_fails(store: Store) -> None:
    """Calls made together commit in one transaction with no savepoint each; when one of them
    fails, the batch runs again job by job: the others still commit, once, their journal rows
    delivered once and in call order."""
    seen: list[EventRecord] = []
    store.on_event = seen.append
    tasks = [_task(f"t{i}") for i in range(4)]
    await store.insert_tasks(tasks, approved=True)
    async with _statements(store) as together:
        moved = await asyncio.gather(
            *(store.transition(t.id, State.PENDING, State.QUEUED) for t in tasks[:2])
        )
    assert all(m is not None for m in moved)
    assert not [s for s in together if s.startswith(("SAVEPOINT", "RELEASE"))]
    seen.clear()
    twin = _task("twin").model_copy(update={"id": tasks[0].id})  # refused: id stored
    got = await asyncio.gather(
        store.transition(tasks[2].id, State.PENDING, State.QUEUED),
        store.insert_tasks([twin], approved=True),
        store.transition(tasks[3].id, State.PENDING, State.QUEUED),
        return_exceptions=True,
    )
    assert isinstance(got[1], StoreError)
    assert [r.state for r in (got[0], got[2]) if isinstance(r, TaskRecord)] == [State.QUEUED] * 2
    assert [(ev.task_id, ev.to_state) for ev in seen] == [
        (tasks[2].id, "QUEUED"),
        (tasks[3].id, "QUEUED"),
    ]
    assert [r.name for r in await store.list_tasks()] == [t.name for t in tasks]
