"""Load-time checks of a task's workflow fields and a batch file's workflow defaults."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from tui.model.entry import TaskEntry, field_name
from tui.model.error_text import human_error
from tui.model.issues import Issue
from tui.model.needs import condition_problems, template_problems
from tui.model.workflow import FileDefaults, OnError
from tui.model.yaml_source import Path as KeyPath
from tui.model.yaml_source import line_of

DEFAULT_KEYS = tuple(FileDefaults.model_fields)


def workflow_issues(entry: TaskEntry) -> tuple[list[Issue], list[Issue]]:
    """(errors, warnings) for one loaded task: every ``needs`` reference must name a task in
    its depends_on (as written there: a name in the file, or an id)."""
    task = entry.task
    assert task is not None
    deps = entry.raw_depends
    errors: list[Issue] = []
    warnings: list[Issue] = []
    for key in ("instructions", "system_prompt_append"):
        for message, fix in template_problems(getattr(task.agent, key), deps):
            errors.append(entry.issue(("agent", key), message, fix))
    if task.when.strip():
        for message, fix in condition_problems(task.when, deps):
            errors.append(entry.issue(("when",), message, fix))
    elif task.when:
        errors.append(entry.issue(("when",), "when: is empty", "write a condition or remove it"))
    if task.context is not None and task.context.from_ != "all":
        for i, name in enumerate(task.context.from_):
            if name not in deps:
                fix = f"add '{name}' to depends_on, or list only its dependencies"
                message = f"context.from names '{name}', which is not in this task's depends_on"
                errors.append(entry.issue(("context", "from", i), message, fix))
    if task.on_error in (OnError.SKIP, OnError.FAIL) and task.retry.max_attempts > 1:
        warnings.append(
            entry.issue(
                ("on_error",),
                f"on_error: {task.on_error} ends the task at its first failure, so "
                f"retry.max_attempts: {task.retry.max_attempts} is never used",
                "use on_error: retry with on_max_retries, or drop retry.max_attempts",
                severity="warning",
            )
        )
    return errors, warnings


def file_defaults(
    data: dict[str, Any], filename: str, lines: dict[KeyPath, int], issues: list[Issue]
) -> FileDefaults:
    """A batch file's own ``on_error``, ``on_max_retries`` and ``hooks``, for its tasks."""
    given = {k: data[k] for k in DEFAULT_KEYS if data.get(k) is not None}
    try:
        return FileDefaults.model_validate(given)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            loc = tuple(err["loc"])
            message, fix = human_error(err)
            issues.append(Issue(filename, line_of(lines, loc), field_name(loc), message, fix))
    return FileDefaults()
