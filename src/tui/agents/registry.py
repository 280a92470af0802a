"""Which adapter runs which `agent.type`.

Each adapter's module is imported the first time a task of its type runs: a run of shell
tasks does not pay for loading the claude, gemini and codex protocols (and the MCP glue).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from tui.agents.base import Adapter

# agent.type → "module:class"
ADAPTERS: dict[str, str] = {
    "shell": "tui.agents.shell:ShellAdapter",
    "claude": "tui.agents.claude:ClaudeAdapter",
    "gemini": "tui.agents.gemini:GeminiAdapter",
    "codex": "tui.agents.codex:CodexAdapter",
    "taskfile": "tui.agents.taskfile:TaskfileAdapter",
}


class _Adapters(Mapping[str, Adapter]):
    """The default adapters, each made when first asked for."""

    def __init__(self) -> None:
        self._made: dict[str, Adapter] = {}

    def __getitem__(self, agent_type: str) -> Adapter:
        adapter = self._made.get(agent_type)
        if adapter is None:
            module, _, name = ADAPTERS[agent_type].partition(":")
            adapter = getattr(importlib.import_module(module), name)()
            self._made[agent_type] = adapter
        return adapter

    def __iter__(self) -> Iterator[str]:
        return iter(ADAPTERS)

    def __len__(self) -> int:
        return len(ADAPTERS)


def default_adapters() -> Mapping[str, Adapter]:
    return _Adapters()
