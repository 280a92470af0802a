"""What every source of runnable templates deals in (the config's [tasks.NAME] tables, the
project's Taskfile): a request, a listed template, the source protocol and its error."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

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
    label: str = ""  # shown beside the name (a Taskfile task's `label:`); never run by
    wildcard: bool = False  # the name is a pattern (`release:*`): run it by a matching name
    aliases: tuple[str, ...] = ()  # more names it answers to (a Taskfile task's aliases)

    def matches(self, wanted: str) -> bool:
        names = (self.name, self.alias, *self.aliases)
        if wanted in names:
            return True
        if "_" in self.name and wanted == self.name.replace("_", "-"):
            return True  # an XML template's validate_input is also validate-input
        if not self.wildcard:
            return False
        for pattern in (n for n in names if "*" in n):
            parts = (re.escape(p) for p in pattern.split("*"))
            if re.fullmatch("(.*)".join(parts), wanted, re.DOTALL) is not None:
                return True
        return False

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "alias": self.alias,
            "description": self.description,
            "source": self.source,
        }
        if self.label:
            out["label"] = self.label
        if self.wildcard:
            out["wildcard"] = True
        return out


class TemplateSource(Protocol):
    warnings: list[str]  # problems that kept some of its templates out (shown, not fatal)

    def templates(self) -> list[Template]: ...

    async def make_task(self, name: str, request: TaskRequest) -> Task: ...
