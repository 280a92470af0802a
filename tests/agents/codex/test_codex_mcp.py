"""tui's MCP tools reaching the real `codex` CLI: the scripted model calls run_user_task and
ask_user in the `mcp__tui` tool namespace; the question appears in the engine, and the
Taskfile task's output and the person's answer come back as the calls' outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.cli_support import settled
from tests.agents.codex.conftest import codex_task, needs_cli
from tests.agents.codex.responses_server import ResponsesServer, call, say
from tests.conftest import answered_run, stored
from tests.taskfile.conftest import allow_agent_args, write_taskfile
from tui.engine.scheduler import Engine
from tui.model.states import State

pytestmark = needs_cli


async def test_codex_asks_and_runs_a_user_task_through_tui(
    engine: Engine,
    responses: ResponsesServer,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_taskfile(project)
    allow_agent_args(monkeypatch, tmp_path / "user-config", "echo-args")
    responses.script(
        "zc-mcp",
        [
            call(
                "run_user_task",
                {"name": "echo-args", "args": ["a b", "$(x)"]},
                namespace="mcp__tui",
            ),
            call(
                "ask_user",
                {"question": "Which database?", "options": ["SQLite"]},
                namespace="mcp__tui",
            ),
            say("Done."),
        ],
    )
    t = codex_task("mcp", "zc-mcp: use the tools", project)
    rec = await answered_run(engine, t, "Which database?", "SQLite")
    assert rec.state == State.COMPLETED, rec.reason
    requests = responses.turn_requests("zc-mcp")
    assert '"name": "mcp__tui"' in json.dumps(requests[0].body["tools"])  # offered at once
    last = json.dumps(requests[-1].body)
    assert "<a b>" in last and "<$(x)>" in last and "SQLite" in last


async def test_codex_without_mcp_gets_no_tui_tools(
    engine: Engine, responses: ResponsesServer, project: Path
) -> None:
    responses.script("zc-nomcp", [say("Nothing.")])
    t = codex_task("nomcp", "zc-nomcp: plain", project, agent={"mcp": False})
    await engine.submit([t])
    await settled(engine, t.id)
    assert (await stored(engine, t.id)).state == State.COMPLETED
    assert "mcp__tui" not in json.dumps(responses.turn_requests("zc-nomcp")[0].body)
