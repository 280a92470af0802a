"""Fixtures for driving the real `codex` CLI (installed by scripts/install-agent-clis) against
the scripted Responses API server in responses_server.py, through the engine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.cli_support import cli_path
from tests.agents.cli_support import needs_cli as needs_cli_named
from tests.agents.codex.responses_server import ResponsesServer
from tests.conftest import owned_engine
from tui.agents.codex import CodexAdapter
from tui.agents.shell import ShellAdapter
from tui.engine.scheduler import Engine
from tui.model.task import Task
from tui.store.db import Store

CODEX_BIN = cli_path("codex")
needs_cli = needs_cli_named("codex")


@pytest.fixture
def responses() -> Iterator[ResponsesServer]:
    with ResponsesServer() as server:
        yield server


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    h = tmp_path / "codex-home"
    h.mkdir()
    return h


def provider_args(url: str) -> list[str]:
    """`OPENAI_BASE_URL` is not enough offline: a provider pointing at the scripted server."""
    provider = f'{{name="mock",base_url="{url}/v1",wire_api="responses",env_key="OPENAI_API_KEY"}}'
    return ["-c", "model_provider=mock", "-c", f"model_providers.mock={provider}"]


@pytest.fixture
def adapter(responses: ResponsesServer, codex_home: Path) -> CodexAdapter:
    return CodexAdapter(
        bin=str(CODEX_BIN),
        extra_env={"OPENAI_API_KEY": "test", "CODEX_HOME": str(codex_home)},
        extra_args=provider_args(responses.url),
    )


@pytest.fixture
async def engine(store: Store, adapter: CodexAdapter) -> AsyncIterator[Engine]:
    # Owning the database as `tui run` does: the MCP tools of a run reach it over its socket.
    async with owned_engine(
        store, adapters={"codex": adapter, "shell": ShellAdapter()}, kill_grace=1.0
    ) as e:
        yield e


def codex_task(name: str, instructions: str, project: Path, **fields: Any) -> Task:
    agent = {
        "type": "codex",
        "instructions": instructions,
        "project_dir": str(project),
        "model": "gpt-5",  # its tool set includes exec_command (function calls)
    }
    agent.update(fields.pop("agent", {}))
    return Task.model_validate({"name": name, "agent": agent, **fields})
