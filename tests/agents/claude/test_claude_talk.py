"""Talking to a claude agent (real CLI, scripted model server): `tui send` while it runs is a
new user turn the model sees; `tui continue` after it ended resumes its session."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.agents.claude.conftest import claude_task, needs_cli
from tests.agents.claude.model_server import ModelServer, text
from tests.agents.cli_support import output, settled
from tests.conftest import wait_state
from tui.engine import api
from tui.engine.scheduler import Engine, EngineError
from tui.model.states import State
from tui.store.db import Store

pytestmark = needs_cli


async def test_send_reaches_the_running_session_as_a_user_turn(
    engine: Engine, store: Store, model: ModelServer, project: Path
) -> None:
    gate = threading.Event()
    first = text("Working on it.", block=gate)
    model.script("zq-send", [first, text("Noted: use tabs.")])
    t = claude_task("talk", "zq-send: tidy the code", project)
    await engine.submit([t])
    await model.wait_reached(first)
    reply = await engine.handle(api.Send(task_id=t.id, text="also: use tabs"))
    assert reply.text == "sent to talk"  # type: ignore[attr-defined]
    gate.set()
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    last = model.main_requests("zq-send")[-1].flat_text()
    assert "also: use tabs" in last and "Working on it." in last
    lines = await output(store, t.id)
    assert "› you: also: use tabs" in lines
    assert lines.index("› you: also: use tabs") < lines.index("Noted: use tabs.")
    [run] = await store.runs(t.id)  # one CLI process, both turns
    assert run.outcome == "COMPLETED"


async def test_send_to_a_task_that_is_not_running_says_what_to_do(
    engine: Engine, model: ModelServer, project: Path
) -> None:
    model.script("zq-done", [text("Done.")])
    t = claude_task("done", "zq-done", project)
    await engine.submit([t])
    await settled(engine, t.id)
    with pytest.raises(EngineError, match="not running; `tui continue done TEXT`"):
        await engine.handle(api.Send(task_id=t.id, text="hello?"))


async def test_continue_resumes_the_stored_session_with_the_message(
    engine: Engine, store: Store, model: ModelServer, project: Path
) -> None:
    model.script("zq-cont", [text("First answer."), text("Second answer.")])
    t = claude_task("cont", "zq-cont: explain the module", project)
    await engine.submit([t])
    await settled(engine, t.id)
    reply = await engine.handle(api.Continue(task_id=t.id, text="now add an example"))
    assert reply.text == "continuing cont's session"  # type: ignore[attr-defined]
    await wait_state(engine, t.id, State.QUEUED, State.RUNNING, State.COMPLETED)
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    first, second = await store.runs(t.id)
    assert first.session_id and second.session_id == first.session_id  # --resume SESSION
    resumed = model.main_requests("zq-cont")[-1].flat_text()
    assert "First answer." in resumed and "now add an example" in resumed
    lines = await output(store, t.id)
    assert lines.index("First answer.") < lines.index("› you: now add an example")
    assert lines.index("› you: now add an example") < lines.index("Second answer.")
    with pytest.raises(EngineError, match="only claude, codex and gemini"):
        from tests.conftest import shell_task

        sh = shell_task("sh", "true")
        await engine.submit([sh])
        await settled(engine, sh.id)
        await engine.handle(api.Continue(task_id=sh.id, text="more"))
