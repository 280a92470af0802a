"""agent.max_turns with the real `claude` CLI against the scripted model server."""

from __future__ import annotations

from pathlib import Path

from tests.agents.claude.conftest import claude_task, needs_cli
from tests.agents.claude.model_server import ModelServer, text, tool_use
from tests.agents.cli_support import settled
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import Store

pytestmark = needs_cli


async def test_max_turns_stops_the_agent_after_its_turns(
    engine: Engine, store: Store, model: ModelServer, project: Path
) -> None:
    bash = {"command": "echo turn >> turns.txt", "description": "count"}
    model.script("zq-turns", [tool_use("Bash", bash), tool_use("Bash", bash), text("all done")])
    agent = {"max_turns": 1, "allowed_tools": ["Bash"]}
    t = claude_task("turns", "zq-turns", project, agent=agent)
    await engine.submit([t])
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.FAILED, rec and rec.state
    assert "turns" in rec.reason.lower(), rec.reason
    # One turn ran its tool; the model was not asked for a second one.
    assert (project / "turns.txt").read_text() == "turn\n"
    assert len(model.main_requests("zq-turns")) == 1


async def test_enough_turns_complete(engine: Engine, model: ModelServer, project: Path) -> None:
    bash = {"command": "echo turn >> turns.txt", "description": "count"}
    model.script("zq-turns-ok", [tool_use("Bash", bash), text("all done")])
    agent = {"max_turns": 3, "allowed_tools": ["Bash"]}
    t = claude_task("turns-ok", "zq-turns-ok", project, agent=agent)
    await engine.submit([t])
    await settled(engine, t.id)
    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
