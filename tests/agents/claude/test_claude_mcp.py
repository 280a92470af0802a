"""tui's MCP tools reaching the real `claude` CLI: the scripted model calls
mcp__tui__run_user_task and mcp__tui__ask_user; the question appears in the engine like any
other, and the answer and the Taskfile task's output come back in the model's next requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.claude.conftest import claude_task, needs_cli
from tests.agents.claude.model_server import ModelServer, text, tool_use
from tests.agents.cli_support import settled
from tests.conftest import question, stored
from tests.taskfile.conftest import allow_agent_args, write_taskfile
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import Store

pytestmark = needs_cli

ASK = {"question": "Which database?", "options": ["SQLite", "PostgreSQL"]}
ARGS = ["it's", "$(touch pwned)"]


def tool_result_text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return str(content)


async def test_model_runs_a_user_task_and_asks_through_tui(
    engine: Engine,
    store: Store,
    model: ModelServer,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_taskfile(project)
    allow_agent_args(monkeypatch, tmp_path / "user-config", "echo-args")
    model.script(
        "zq-mcp",
        [
            tool_use("mcp__tui__run_user_task", {"name": "echo-args", "args": ARGS}),
            tool_use("mcp__tui__ask_user", ASK, say="Asking the user."),
            text("Using the answer."),
        ],
    )
    t = claude_task("mcp", "zq-mcp: use the tools", project)
    await engine.submit([t])

    q = await question(engine, t.id)
    assert q.kind == "question"
    assert q.payload["questions"][0]["question"] == "Which database?"
    assert [o["label"] for o in q.payload["questions"][0]["options"]] == ["SQLite", "PostgreSQL"]
    assert (await stored(engine, t.id)).state == State.READY
    await engine.answer(q.id, {"answers": {"Which database?": "PostgreSQL"}})
    await settled(engine, t.id)

    rec = await engine.get(t.id)
    assert rec is not None and rec.state == State.COMPLETED, rec and rec.reason
    requests = model.main_requests("zq-mcp")
    # The CLI defers MCP tools (ToolSearch) but names them to the model from the start.
    first = json.dumps(requests[0].body)
    assert "mcp__tui__ask_user" in first and "mcp__tui__run_user_task" in first

    ran = requests[1].tool_results()[-1]
    assert not ran.get("is_error"), ran
    out = json.loads(tool_result_text(ran))
    assert out["exit_code"] == 0
    assert out["stdout"].splitlines() == ["<it's>", "<$(touch pwned)>"]
    assert not (project / "pwned").exists()

    answered = requests[2].tool_results()[-1]
    assert not answered.get("is_error"), answered
    assert tool_result_text(answered) == "PostgreSQL"


async def test_mcp_false_gives_the_cli_no_tui_tools(
    engine: Engine, store: Store, model: ModelServer, project: Path
) -> None:
    model.script("zq-nomcp", [text("Nothing to do.")])
    t = claude_task("no-mcp", "zq-nomcp: plain", project, agent={"mcp": False})
    await engine.submit([t])
    await settled(engine, t.id)
    assert (await stored(engine, t.id)).state == State.COMPLETED
    assert "mcp__tui__" not in json.dumps(model.main_requests("zq-nomcp")[0].body)
