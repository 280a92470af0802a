"""Which adapter runs which `agent.type`."""

from __future__ import annotations

from tui.agents.base import Adapter
from tui.agents.claude import ClaudeAdapter
from tui.agents.codex import CodexAdapter
from tui.agents.gemini import GeminiAdapter
from tui.agents.shell import ShellAdapter
from tui.agents.taskfile import TaskfileAdapter


def default_adapters() -> dict[str, Adapter]:
    return {
        "shell": ShellAdapter(),
        "claude": ClaudeAdapter(),
        "gemini": GeminiAdapter(),
        "codex": CodexAdapter(),
        "taskfile": TaskfileAdapter(),
    }
