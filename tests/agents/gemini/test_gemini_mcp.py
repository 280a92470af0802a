"""tui's MCP tools reaching the real `gemini` CLI: the scripted model calls mcp_tui_ask_person
(the question appears in the engine, the answer is the function response) and
mcp_tui_run_user_task (the Taskfile task's output comes back)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.cli_support import settled
from tests.agents.gemini.conftest import gemini_task, needs_cli
from tests.agents.gemini.gemini_server import GeminiServer, call, say
from tests.conftest import answered_run
from tests.taskfile.conftest import allow_agent_args, write_taskfile
from tui.engine.scheduler import Engine
from tui.model.states import State

pytestmark = needs_cli


async def test_gemini_asks_and_runs_a_user_task_through_tui(
    engine: Engine,
    gemini: GeminiServer,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_taskfile(project)
    allow_agent_args(monkeypatch, tmp_path / "user-config", "echo-args")
    gemini.script(
        "zg-mcp",
        [
            call("mcp_tui_run_user_task", {"name": "echo-args", "args": ["a b", "$(x)"]}),
            call("mcp_tui_ask_person", {"question": "Which database?", "options": ["SQLite"]}),
            say("Done."),
        ],
    )
    t = gemini_task("mcp", "zg-mcp: use the tools", project)
    rec = await answered_run(engine, t, "Which database?", "SQLite")
    assert rec.state == State.COMPLETED, rec.reason

    turns = gemini.turn_requests("zg-mcp")
    responses = {r["name"]: json.dumps(r["response"]) for r in turns[-1].function_responses()}
    assert "<a b>" in responses["mcp_tui_run_user_task"]
    assert "<$(x)>" in responses["mcp_tui_run_user_task"]
    assert "SQLite" in responses["mcp_tui_ask_person"]


async def test_gemini_without_mcp_is_offered_no_tui_tool(
    engine: Engine, gemini: GeminiServer, project: Path
) -> None:
    gemini.script("zg-nomcp", [say("Nothing.")])
    t = gemini_task("nomcp", "zg-nomcp: plain", project, agent={"mcp": False})
    await engine.submit([t])
    await settled(engine, t.id)
    assert "mcp_tui_" not in json.dumps(gemini.turn_requests("zg-nomcp")[0].body)
