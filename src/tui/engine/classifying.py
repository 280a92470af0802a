"""The classifier's answer applied (issue 12): a task that left ``agent.type`` out and that no
``[settings] classify`` rule classified waits PENDING — shown as classifying — on the task
``classify:NAME`` the loader added (tui.model.classifier_tasks). When its dependencies are
done, ``classified`` makes its spec with the agent (and model) the classifier answered,
checked as a task file's would be; the dispatcher stores it in the same transaction that
queues the task, so a crash never runs it with half of it.

The classifier itself gets the task to classify in its prompt (``describe``) and, for a
script, in the JSON file named by ``$TUI_CONTEXT_FILE``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from tui.model.agent_kinds import KINDS
from tui.model.classify import CLASSIFY_TYPES
from tui.model.error_text import human_error
from tui.model.states import State
from tui.model.system_parts import takes_system
from tui.model.task import Task
from tui.store.records import TaskRecord


def describe(task: Task) -> dict[str, Any]:
    """What the classifier is told about the task it classifies."""
    return {
        "name": task.name,
        "description": task.description,
        "tags": list(task.tags),
        "project_dir": task.agent.project_dir,
        "instructions": task.agent.instructions,
        "choices": list(CLASSIFY_TYPES),
    }


def block(task: Task) -> str:
    """The block placed before the classifier's prompt."""
    return "<task_to_classify>\n" + json.dumps(describe(task), indent=2) + "\n</task_to_classify>"


def classified(
    rec: TaskRecord, lookup: Callable[[str], TaskRecord | None]
) -> tuple[Task | None, str]:
    """(the task's spec with the classifier's answer, what was chosen) — or (None, why it
    cannot run) when the answer does not make a valid task."""
    by = lookup(rec.task.classify_by)
    base = rec.task.model_dump(mode="json", by_alias=True)
    base["classify_by"] = ""
    answer: Any = None
    if by is not None and by.state == State.COMPLETED:
        try:
            answer = by.parsed_result
        except ValueError:
            answer = None
    if not isinstance(answer, dict) or answer.get("agent") not in CLASSIFY_TYPES:
        # The classifier was skipped or answered nothing usable: the default agent stays.
        return Task.model_validate(base), f"not classified: the default agent {rec.task.agent.type}"
    agent = dict(base["agent"])
    agent["type"] = answer["agent"]
    model = answer.get("model")
    # A shell task takes no model: an answer's model is moot there.
    if (
        isinstance(model, str)
        and model
        and not rec.task.agent.model
        and KINDS[agent["type"]].models
    ):
        agent["model"] = model
    cannot = f"classified as {agent['type']}, which this task cannot be:"
    try:
        task = Task.model_validate({**base, "agent": agent})
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        message, fix = human_error(err)
        return None, f"{cannot} {message}; {fix}"
    if task.system and not takes_system(task.agent.type):  # the loader's check, for this type
        return None, f"{cannot} system does not apply to {task.agent.type} tasks; remove it"
    chosen = agent["type"] + (f" ({agent['model']})" if agent.get("model") else "")
    return task, f"classified as {chosen} by {by.name if by else 'its classifier'}"
