"""People in the loop: `tui ask` from a real shell task, answers, expiry, cancel, review."""

import asyncio
from pathlib import Path

import pytest

from tests.conftest import owned_engine, shell_task, stored, wait_state
from tui.engine.events import Cursor, OutputBatch
from tui.engine.scheduler import Engine, EngineError
from tui.model.states import State
from tui.procs.groups import group_members
from tui.store.db import Store
from tui.store.records import QuestionRecord

ASK = 'tui ask "Which database?" --option SQLite --option PostgreSQL'


async def next_question(engine: Engine, task_id: str) -> QuestionRecord:
    async for ev in engine.events(Cursor()):
        if not isinstance(ev, OutputBatch) and ev.kind == "question" and ev.task_id == task_id:
            q = await engine.store.get_question(ev.data["question_id"])
            if q is not None and q.status == "open":
                return q
    raise AssertionError("stream ended")


async def output(store: Store, task_id: str) -> list[str]:
    return [ln.text for ln in await store.read_output(task_id)]


async def test_ask_round_trip(store: Store) -> None:
    async with owned_engine(store) as engine:
        t = shell_task("pick", f'choice=$({ASK}); echo "using $choice"')
        await engine.submit([t])
        q = await asyncio.wait_for(next_question(engine, t.id), 30)
        assert (await stored(engine, t.id)).state == State.READY
        item = q.payload["questions"][0]
        assert item["question"] == "Which database?"
        assert [o["label"] for o in item["options"]] == ["SQLite", "PostgreSQL"]
        assert item["multiSelect"] is False
        await engine.answer(q.id, {"answers": {"Which database?": "PostgreSQL"}})
        await engine.wait_settled([t.id])
        rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED
    assert "using PostgreSQL" in await output(store, t.id)
    moves = [(f, to) for _, f, to, _, _ in await store.transitions(t.id)]
    assert ("RUNNING", "READY") in moves and ("READY", "RUNNING") in moves
    assert (await store.get_question(q.id)).status == "answered"  # type: ignore[union-attr]


async def test_multiselect_answer_prints_one_label_per_line(store: Store) -> None:
    async with owned_engine(store) as engine:
        t = shell_task("many", 'tui ask "Which?" --option a --option b --option c --multi')
        await engine.submit([t])
        q = await asyncio.wait_for(next_question(engine, t.id), 30)
        assert q.payload["questions"][0]["multiSelect"] is True
        await engine.answer(q.id, {"answers": {"Which?": ["a", "c"]}})
        await engine.wait_settled([t.id])
    assert await output(store, t.id) == ["a", "c"]


async def test_an_answer_is_delivered_exactly_once(store: Store) -> None:
    async with owned_engine(store) as engine:
        t = shell_task("once", ASK)
        await engine.submit([t])
        q = await asyncio.wait_for(next_question(engine, t.id), 30)
        results = await asyncio.gather(
            engine.answer(q.id, {"answers": {"Which database?": "SQLite"}}),
            engine.answer(q.id, {"answers": {"Which database?": "PostgreSQL"}}),
            return_exceptions=True,
        )
        await engine.wait_settled([t.id])
    assert sum(isinstance(r, EngineError) for r in results) == 1
    assert await output(store, t.id) == ["SQLite"]


async def test_ask_timeout_gives_up_with_a_clear_exit(store: Store) -> None:
    async with owned_engine(store) as engine:
        t = shell_task("impatient", f'{ASK} --timeout 300ms; echo "exit $?"')
        await engine.submit([t])
        await engine.wait_settled([t.id])
        rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED
    assert "exit 3" in await output(store, t.id)
    lines = [ln.text for ln in await store.read_output(t.id, stream=2)]
    assert any("no answer within 300ms" in ln for ln in lines)
    qs = await store.questions(task_id=t.id, open_only=False)
    assert [q.status for q in qs] == ["expired"]


async def test_cancel_while_waiting_kills_the_task_and_closes_the_question(
    store: Store,
) -> None:
    async with owned_engine(store, kill_grace=1.0) as engine:
        t = shell_task("waits", ASK)
        await engine.submit([t])
        q = await asyncio.wait_for(next_question(engine, t.id), 30)
        await engine.cancel(t.id)
        rec = await engine.get(t.id)
        with pytest.raises(EngineError, match="already cancelled"):
            await engine.answer(q.id, {"answers": {"Which database?": "SQLite"}})
    assert rec is not None and rec.state == State.CANCELLED
    run = (await store.runs(t.id))[0]
    assert run.pgid is not None and group_members(run.pgid) == []


async def test_time_waiting_for_a_person_does_not_count_toward_the_timeout(
    store: Store,
) -> None:
    async with owned_engine(store) as engine:
        t = shell_task("patient", f"{ASK}; echo finished", timeout="3s")
        await engine.submit([t])
        q = await asyncio.wait_for(next_question(engine, t.id), 30)
        await asyncio.sleep(3.5)  # a person taking longer than the task's whole timeout
        assert (await stored(engine, t.id)).state == State.READY
        await engine.answer(q.id, {"answers": {"Which database?": "SQLite"}})
        await engine.wait_settled([t.id])
        rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED


async def test_review_reject_runs_again_with_the_comment_then_accept(
    store: Store, tmp_path: Path
) -> None:
    script = 'echo "draft ${TUI_REJECTION_COMMENT:-first}"'
    async with owned_engine(store) as engine:
        t = shell_task("essay", script, review=True)
        await engine.submit([t])
        await wait_state(engine, t.id, State.READY)
        [review] = await engine.questions(t.id)
        assert review.kind == "review" and review.payload["result"] == "draft first"
        with pytest.raises(EngineError, match="comment"):
            await engine.reject(t.id, "  ")
        await engine.reject(t.id, "shorter please")
        await wait_state(engine, t.id, State.READY)
        [review] = await engine.questions(t.id)
        assert review.payload["result"] == "draft shorter please"
        await engine.accept(t.id)
        rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED
    assert rec.rejection_comment == "shorter please"
    moves = [(f, to) for _, f, to, _, _ in await store.transitions(t.id)]
    assert ("READY", "PENDING") in moves and moves[-1] == ("READY", "COMPLETED")
