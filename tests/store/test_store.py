import asyncio
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Move, Store, StoreError, engine_sockets
from tui.store.schema import MIGRATIONS


def _task(name: str, **kw: object) -> Task:
    return Task.model_validate(
        {"name": name, "agent": {"type": "shell", "instructions": "true"}, **kw}
    )


async def test_new_database_is_wal_owner_only_and_migrated(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "sub" / "t.db")
    await s.close()
    path = tmp_path / "sub" / "t.db"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


async def test_reopen_keeps_tasks_and_does_not_migrate_twice(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    await s.insert_tasks([_task("a")], approved=True)
    await s.close()
    s = await Store.open(tmp_path / "t.db")
    assert [r.name for r in await s.list_tasks()] == ["a"]
    await s.close()


async def test_newer_schema_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    await (await Store.open(path)).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="newer tui"):
        await Store.open(path)


async def test_transition_checks_the_table_and_logs(store: Store) -> None:
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    assert not await store.transition(t.id, State.PENDING, State.COMPLETED, "skip ahead")
    assert await store.transition(t.id, State.PENDING, State.QUEUED, "go")
    assert not await store.transition(t.id, State.PENDING, State.QUEUED, "again")
    rec = await store.get_task(t.id)
    assert rec is not None and rec.state == State.QUEUED and rec.reason == "go"
    log = await store.transitions(t.id)
    # Only the move that happened is logged; the refused ones leave no trace.
    assert [(frm, to, why) for _, frm, to, why, _ in log] == [("PENDING", "QUEUED", "go")]


async def test_two_writers_racing_one_transition_only_one_wins(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    a, b = await Store.open(path), await Store.open(path)
    tasks = [_task(f"t{i}") for i in range(20)]
    await a.insert_tasks(tasks, approved=True)
    for t in tasks:
        results = await asyncio.gather(
            a.transition(t.id, State.PENDING, State.QUEUED, "writer a"),
            b.transition(t.id, State.PENDING, State.CANCELLED, "writer b"),
        )
        assert sorted(r is not None for r in results) == [False, True]
        rec = await a.get_task(t.id)
        assert rec is not None
        assert rec.state == (State.QUEUED if results[0] else State.CANCELLED)
        winner = results[0] or results[1]
        assert winner is not None and winner.state == rec.state  # the record as stored
        assert len(await a.transitions(t.id)) == 1  # only the winner is logged
    await a.close()
    await b.close()


async def test_duplicate_ids_are_refused_and_nothing_is_stored(store: Store) -> None:
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    with pytest.raises(StoreError, match="already stored"):
        await store.insert_tasks([_task("b"), t], approved=True)
    assert [r.name for r in await store.list_tasks()] == ["a"]


async def test_output_batches_get_commit_ordered_ids(store: Store) -> None:
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.begin_run(t.id, "engine")
    assert began is not None
    run_id, attempt = began
    assert attempt == 1
    first = await store.append_output([(t.id, run_id, 1, i, 0.0, f"l{i}") for i in (1, 2)])
    second = await store.append_output([(t.id, run_id, 2, 3, 0.0, "err")])
    assert (first, second) == (1, 3)  # each batch's first id, in commit order
    assert [ln.id for ln in await store.read_output(t.id)] == [1, 2, 3]
    lines = await store.read_output(t.id, after_id=1)
    assert [(ln.text, ln.stream_name) for ln in lines] == [("l2", "stdout"), ("err", "stderr")]
    assert [ln.text for ln in await store.read_output(t.id, stream=2)] == ["err"]


async def test_reader_in_another_connection_reads_while_a_write_is_open(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    s = await Store.open(path)
    await s.insert_tasks([_task("a")], approved=True)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE tasks SET reason = 'uncommitted'")
    # WAL: the reader sees the last committed state instead of waiting for the writer.
    recs = await asyncio.wait_for(s.list_tasks(), 5)
    assert recs[0].reason == ""
    writer.execute("ROLLBACK")
    await s.close()


async def test_resolve_by_prefix_and_name(store: Store) -> None:
    a, b = _task("alpha", id="abc-1"), _task("beta", id="abd-2")
    await store.insert_tasks([a, b], approved=True)
    assert await store.resolve("abc") == "abc-1"
    assert await store.resolve("beta") == "abd-2"
    with pytest.raises(StoreError, match="matches 2 tasks"):
        await store.resolve("ab")
    with pytest.raises(StoreError, match="no task matches"):
        await store.resolve("zzz")


async def test_run_totals_add_up_per_task(store: Store) -> None:
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    for n in range(2):
        await store.transition(t.id, (State.PENDING, State.FAILED), State.QUEUED)
        began = await store.begin_run(t.id, "e")
        assert began is not None
        await store.end_run(
            began[0],
            outcome="FAILED",
            cost_usd=0.25,
            tokens_in=10,
            tokens_out=5,
            session_id=f"s{n}",
        )
        await store.transition(t.id, State.RUNNING, State.FAILED)
    rec = await store.get_task(t.id)
    assert rec is not None
    assert (rec.cost_usd, rec.tokens_in, rec.tokens_out, rec.attempts) == (0.5, 20, 10, 2)
    assert [r.session_id for r in await store.runs(t.id)] == ["s0", "s1"]


async def test_listed_tasks_parse_their_spec_only_when_read(tmp_path: Path) -> None:
    s = await Store.open(tmp_path / "t.db")
    try:
        tasks = [
            _task("b", tags=["ci"], description="second", priority="high"),
            _task("a", retry={"max_attempts": 3}),
        ]
        await s.insert_tasks(tasks, approved=True)
        recs = await s.list_tasks()
        assert [(r.id, r.name) for r in recs] == [(t.id, t.name) for t in tasks]  # submit order
        assert all(isinstance(r.spec, str) for r in recs)  # nothing validated yet
        assert recs[0].spec_fields("tags", "description", "priority") == (
            ["ci"],
            "second",
            "high",
        )
        assert isinstance(recs[0].spec, str)  # reading fields does not validate either
        assert recs[1].task == tasks[1]  # validated on first use, then kept
        assert recs[1].spec is recs[1].task
        assert recs[1].spec_fields("tags", "priority") == ([], "")
        assert (await s.list_tasks(tag="ci"))[0].id == tasks[0].id
    finally:
        await s.close()


async def test_a_question_goes_through_the_state_table(store: Store) -> None:
    """READY is reached only from a state the table allows: a PENDING task cannot ask, even
    when the caller says it expects PENDING, and the refusal stores no question."""
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    refused = await store.raise_question("q0", t.id, None, "question", {}, expected=[State.PENDING])
    assert refused is None
    assert await store.questions(task_id=t.id) == []
    assert (await store.get_task(t.id)).state == State.PENDING  # type: ignore[union-attr]

    await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.start_run(t.id, "engine")
    assert began is not None
    asked = await store.raise_question(
        "q1", t.id, began.run_id, "approval", {"tool": "Bash"}, expected=[State.RUNNING]
    )
    assert asked is not None and asked.state == State.READY
    assert asked.reason == "waiting for an approval" and asked.question_json == '{"tool": "Bash"}'
    # A second question while READY leaves the state (and the transition log) alone.
    again = await store.raise_question(
        "q2", t.id, began.run_id, "question", {}, expected=[State.RUNNING, State.READY]
    )
    assert again is not None and again.state == State.READY
    log = [(frm, to, why) for _, frm, to, why, _ in await store.transitions(t.id)]
    assert log[-2:] == [("QUEUED", "RUNNING", "attempt 1"), ("RUNNING", "READY", asked.reason)]
    assert len(await store.questions(task_id=t.id)) == 2


async def test_a_run_starts_through_the_checked_transition(store: Store) -> None:
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    assert await store.start_run(t.id, "engine") is None  # PENDING: not startable
    assert await store.runs(t.id) == []
    await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.start_run(t.id, "engine")
    assert began is not None and began.task is not None
    # A running task shows no reason; the transition log says which attempt it is.
    assert (began.task.state, began.task.attempts, began.task.reason) == (State.RUNNING, 1, "")
    assert (await store.transitions(t.id))[-1][2:4] == ("RUNNING", "attempt 1")
    assert await store.start_run(t.id, "engine") is None  # already RUNNING: once only
    assert [r.id for r in await store.runs(t.id)] == [began.run_id]


async def test_a_run_that_never_started_is_taken_back_whole(store: Store) -> None:
    # A run sent ahead and given back unstarted (tui.engine.dispatch): its row goes, its task
    # is queued again, and its next run is the same attempt.
    t = _task("a")
    await store.insert_tasks([t], approved=True)
    await store.transition(t.id, State.PENDING, State.QUEUED)
    began = await store.start_run(t.id, "engine")
    assert began is not None
    back = Move(t.id, State.RUNNING, State.QUEUED, "not started: no slot came free in time")
    rec = await store.unstart_run(began.run_id, back)
    assert rec is not None and (rec.state, rec.attempts) == (State.QUEUED, 0)
    assert await store.runs(t.id) == []
    again = await store.start_run(t.id, "engine")
    assert again is not None and again.attempt == 1 and again.previous_runs == []
    log = [(frm, to, why) for _, frm, to, why, _ in await store.transitions(t.id)][-3:]
    assert log == [
        ("QUEUED", "RUNNING", "attempt 1"),
        ("RUNNING", "QUEUED", "not started: no slot came free in time"),
        ("QUEUED", "RUNNING", "attempt 1"),
    ]
    # One whose process was recorded did start: it is not taken back.
    await store.set_run_process(again.run_id, 123, 123, 1)
    assert await store.unstart_run(again.run_id, back) is None
    assert [r.id for r in await store.runs(t.id)] == [again.run_id]
    assert (await store.get_task(t.id)).state == State.RUNNING  # type: ignore[union-attr]
    # Nor one whose task moved meanwhile (a cancel): its row stays, its attempt counted.
    u = _task("b")
    await store.insert_tasks([u], approved=True)
    await store.transition(u.id, State.PENDING, State.QUEUED)
    third = await store.start_run(u.id, "engine")
    assert third is not None
    await store.transition(u.id, State.RUNNING, State.CANCELLED, "cancelled by user")
    assert await store.unstart_run(third.run_id, Move(u.id, State.RUNNING, State.QUEUED)) is None
    assert [r.id for r in await store.runs(u.id)] == [third.run_id]
    assert (await store.get_task(u.id)).attempts == 1  # type: ignore[union-attr]


async def test_engine_sockets_are_read_from_a_path_with_uri_characters(tmp_path: Path) -> None:
    # A folder named with `?`, `#` and `%` is a name, not SQLite URI syntax: the viewer finds
    # the engine serving that database instead of reading some other file (or none).
    path = tmp_path / "a?mode=rwc#x%41" / "tui.db"
    s = await Store.open(path)
    try:
        await s.register_engine("e1", os.getpid(), None)
        await s.set_engine_socket("e1", "/run/tui/e1.sock")
    finally:
        await s.close()
    assert engine_sockets(path) == [(os.getpid(), None, "/run/tui/e1.sock")]
    assert not (tmp_path / "a").exists()


async def test_a_version_9_database_keeps_its_rows_without_the_two_unread_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v9.db"
    with monkeypatch.context() as m:  # a database as tui wrote it at v9, with its rows
        m.setattr("tui.store.tx.MIGRATIONS", MIGRATIONS[:9])
        s = await Store.open(path)
        old = _task("old")
        await s.insert_tasks([old], approved=True)
        assert await s.transition(old.id, State.PENDING, State.QUEUED, "go")
        await s.close()

    def indexes() -> set[str]:
        con = sqlite3.connect(path)
        try:
            return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        finally:
            con.close()

    assert {"tasks_state", "events_task"} <= indexes()
    s = await Store.open(path)
    try:
        assert not {"tasks_state", "events_task"} & indexes()
        [rec] = await s.list_tasks(states=[State.QUEUED])
        assert rec.id == old.id and rec.reason == "go"
        log = await s.transitions(old.id)
        assert [(frm, to, why) for _, frm, to, why, _ in log] == [("PENDING", "QUEUED", "go")]
        assert [e.kind for e in await s.read_events()] == ["submitted", "state"]
    finally:
        await s.close()
