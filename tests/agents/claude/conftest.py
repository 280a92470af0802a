"""Fixtures for driving the real `claude` CLI (installed by scripts/install-agent-clis)
against the scripted model server in model_server.py, through the engine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.claude.model_server import ModelServer
from tests.agents.cli_support import cli_path
from tests.agents.cli_support import needs_cli as needs_cli_named
from tests.conftest import owned_engine
from tui.agents.claude import ClaudeAdapter
from tui.agents.shell import ShellAdapter
from tui.engine.scheduler import Engine
from tui.model.task import Task
from tui.store.db import Store

CLAUDE_BIN = cli_path("claude")
needs_cli = needs_cli_named("claude")


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


@pytest.fixture
def adapter(model: ModelServer, tmp_path: Path) -> ClaudeAdapter:
    home = tmp_path / "home"
    home.mkdir()
    return ClaudeAdapter(
        bin=str(CLAUDE_BIN),
        extra_env={
            "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": "test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "HOME": str(home),
        },
    )


@pytest.fixture
async def engine(store: Store, adapter: ClaudeAdapter) -> AsyncIterator[Engine]:
    # Owning the database as `tui run` does: the MCP tools of a run reach it over its socket.
    async with owned_engine(
        store, adapters={"claude": adapter, "shell": ShellAdapter()}, kill_grace=1.0
    ) as e:
        yield e


def claude_task(name: str, instructions: str, project: Path, **fields: Any) -> Task:
    agent: dict[str, Any] = {
        "type": "claude",
        "instructions": instructions,
        "project_dir": str(project),
    }
    agent.update(fields.pop("agent", {}))
    agent.setdefault("skip_planning", True)
    return Task.model_validate({"name": name, "agent": agent, **fields})
