"""Which adapter runs which `agent.type`."""

from __future__ import annotations

from tui.agents.base import Adapter
from tui.agents.shell import ShellAdapter
from tui.agents.taskfile import TaskfileAdapter


def default_adapters() -> dict[str, Adapter]:
    return {"shell": ShellAdapter(), "taskfile": TaskfileAdapter()}
