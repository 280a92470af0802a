"""Fixtures for driving the real `gemini` CLI (installed by scripts/install-agent-clis) against
the scripted Gemini API server in gemini_server.py, through the engine."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.cli_support import cli_path
from tests.agents.cli_support import needs_cli as needs_cli_named
from tests.agents.gemini.gemini_server import GeminiServer
from tests.conftest import owned_engine
from tui.agents.gemini import GeminiAdapter
from tui.agents.shell import ShellAdapter
from tui.engine.scheduler import Engine
from tui.model.task import Task
from tui.store.db import Store

GEMINI_BIN = cli_path("gemini")
needs_cli = needs_cli_named("gemini")


@pytest.fixture
def gemini() -> Iterator[GeminiServer]:
    with GeminiServer() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".gemini").mkdir(parents=True)
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (h / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return h


@pytest.fixture
def adapter(gemini: GeminiServer, home: Path) -> GeminiAdapter:
    return GeminiAdapter(
        bin=str(GEMINI_BIN),
        extra_env={
            "GEMINI_API_KEY": "test",
            "GOOGLE_GEMINI_BASE_URL": gemini.url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "HOME": str(home),
        },
    )


@pytest.fixture
async def engine(store: Store, adapter: GeminiAdapter) -> AsyncIterator[Engine]:
    # Owning the database as `tui run` does: the MCP tools of a run reach it over its socket.
    async with owned_engine(
        store, adapters={"gemini": adapter, "shell": ShellAdapter()}, kill_grace=1.0
    ) as e:
        yield e


def gemini_task(name: str, instructions: str, project: Path, **fields: Any) -> Task:
    agent = {
        "type": "gemini",
        "instructions": instructions,
        "project_dir": str(project),
        "model": "gemini-2.5-flash",  # a named model: no routing-classifier request
    }
    agent.update(fields.pop("agent", {}))
    return Task.model_validate({"name": name, "agent": agent, **fields})
