"""What every source of runnable templates deals in (the config's [tasks.NAME] tables, the
project's Taskfile): a request, a listed template, the source protocol and its error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from tui.model.task import Task


class TemplateError(Exception):
    """A request that cannot be met (unknown template, role, agent); says what to do."""


@dataclass(frozen=True)
class TaskRequest:
    instructions: str = ""
    role: str = ""  # "" = the template's, else settings.default_role, else the first role
    agent: str = ""  # likewise for agents (else claude)
    model: str = ""  # a short name from the agent's models table, or a model id
    vars: dict[str, str] = field(default_factory=dict)  # NAME=VALUE from the command line
    args: list[str] = field(default_factory=list)  # after `--`: a Taskfile task's CLI_ARGS


@dataclass(frozen=True)
class Template:
    name: str
    alias: str
    description: str
    source: str  # global | local | taskfile

    def as_json(self) -> dict[str, str]:
        return {
            "name": self.name,
            "alias": self.alias,
            "description": self.description,
            "source": self.source,
        }


class TemplateSource(Protocol):
    def templates(self) -> list[Template]: ...

    async def make_task(self, name: str, request: TaskRequest) -> Task: ...
