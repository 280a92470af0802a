"""The project's Taskfile tasks as templates: `tui task NAME -- ARGS...` runs one with go-task,
`tui task --list` and the app's template picker show them (source ``taskfile``).

A Taskfile that cannot be loaded is one warning naming it; every other template stays listed.
"""

from __future__ import annotations

import shlex
from functools import cached_property
from pathlib import Path

from tui.config.template_types import TaskRequest, Template, TemplateError
from tui.model.task import Task
from tui.taskfile.listing import TaskfileError, TaskfileTask, find_taskfile, list_tasks
from tui.taskfile.running import to_task


class TaskfileTemplates:
    def __init__(self, project_dir: Path) -> None:
        self.project_dir = project_dir
        self.warnings: list[str] = []

    @cached_property
    def _entries(self) -> list[TaskfileTask]:
        try:
            return list_tasks(self.project_dir)  # [] without a Taskfile
        except TaskfileError as e:
            self.warnings.append(f"{e}\n(its tasks are not listed; the other templates are)")
            return []

    def templates(self) -> list[Template]:
        return [
            Template(
                e.name,
                e.aliases[0] if e.aliases else "",
                e.desc,
                "taskfile",
                label=e.label,
                wildcard=e.wildcard or any("*" in a for a in e.aliases),
                aliases=e.aliases[1:],
            )
            for e in self._entries
        ]

    def summary(self) -> str:
        """What this source contributed, for `tui doctor`."""
        path = find_taskfile(self.project_dir)
        if path is None:
            return "no Taskfile in .agent/ (optional)"
        entries = self._entries
        if self.warnings:
            return f"{path}: skipped (see the warning)"
        kinds = [
            f"{sum(1 for e in entries if e.wildcard)} wildcard",
            f"{sum(1 for e in entries if e.prompts)} with a prompt",
            f"{sum(1 for e in entries if e.requires)} with required vars",
        ]
        return f"{path}: {len(entries)} task(s) ({', '.join(kinds)})"

    async def make_task(self, name: str, request: TaskRequest) -> Task:
        if "*" in name:
            example = name.replace("*", "NAME")
            raise TemplateError(
                f"{name} is a pattern: run it by a name it matches, e.g. `tui task {example}`"
            )
        entry = next((e for e in self._entries if e.name == name), None)
        entry = entry or next((e for e in self._entries if e.matches(name)), None)
        if entry is None:
            raise TemplateError(f"the Taskfile has no task {name!r}")
        args = request.args
        if not args and request.instructions:
            # Typed text (the app's prompt, or `tui task NAME "a 'b c'"`) is the arguments,
            # split as a shell would but never run by one.
            try:
                args = shlex.split(request.instructions)
            except ValueError as e:
                raise TemplateError(f"{name}: arguments {request.instructions!r}: {e}") from e
        try:
            return to_task(
                entry, args, project_dir=self.project_dir, name=name, variables=request.vars
            )
        except ValueError as e:  # a bad variable name
            raise TemplateError(f"{name}: {e}") from None
