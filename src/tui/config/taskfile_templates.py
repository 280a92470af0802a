"""The project's Taskfile tasks as templates: `tui task NAME -- ARGS...` runs one with go-task,
`tui task --list` and the app's template picker show them (source ``taskfile``)."""

from __future__ import annotations

import shlex
from functools import cached_property
from pathlib import Path

from tui.config.template_types import TaskRequest, Template, TemplateError
from tui.model.task import Task
from tui.taskfile import TaskfileError, TaskfileTask, list_tasks, to_task


class TaskfileTemplates:
    def __init__(self, project_dir: Path) -> None:
        self.project_dir = project_dir

    @cached_property
    def _entries(self) -> list[TaskfileTask]:
        try:
            return list_tasks(self.project_dir)  # [] without a Taskfile
        except TaskfileError as e:
            raise TemplateError(str(e)) from e

    def templates(self) -> list[Template]:
        return [Template(e.name, "", e.desc, "taskfile") for e in self._entries]

    async def make_task(self, name: str, request: TaskRequest) -> Task:
        entry = next(e for e in self._entries if e.name == name)
        args = request.args
        if not args and request.instructions:
            # Typed text (the app's prompt, or `tui task NAME "a 'b c'"`) is the arguments,
            # split as a shell would but never run by one.
            try:
                args = shlex.split(request.instructions)
            except ValueError as e:
                raise TemplateError(f"{name}: arguments {request.instructions!r}: {e}") from e
        return to_task(entry, args, project_dir=self.project_dir)
