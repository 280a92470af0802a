"""The classifier tasks of config's ``[classifier]`` (issue 12): for a task T that leaves
``agent.type`` out and that no ``[settings] classify`` rule classifies, the loader adds a task
``classify:T`` (tag ``classification``; queued, run, retried and costed like any) that runs the
classifier agent on T's description and answers ``{"agent", "model"}``. T depends on it and
names it in ``classify_by``: while it waits T is PENDING, shown as classifying, and when it
comes to run the engine applies the answer (tui.engine.classifying). Made at load time,
inside the one submit transaction: a crash never leaves half of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from tui.model.classify import CLASSIFIER_PROMPT, Classifier, answer_schema
from tui.model.entry import TaskEntry
from tui.model.task import AgentConfig, Task


def classifier_task(task: Task, spec: Classifier) -> Task:
    """The task that picks ``task``'s agent."""
    agent = AgentConfig(
        type=spec.agent,
        model=spec.model,
        instructions=spec.prompt or CLASSIFIER_PROMPT,
        project_dir=task.agent.project_dir,
        # It only reads and answers: no plan to approve first (claude plans by default).
        skip_planning=spec.agent == "claude",
    )
    return Task.model_validate(
        {
            "name": f"classify:{task.name}",
            "description": f"picks the agent of {task.name}",
            "agent": agent.model_dump(),
            "priority": task.priority.value,
            "output_format": {"type": "json", "schema": answer_schema()},
            "tags": ["classification"],
            "classifies": task.id,
            # It reads a description and answers: no checkout, whatever config.toml says.
            "worktree": None,
        }
    )


def add_classifiers(entries: Sequence[TaskEntry]) -> list[Task]:
    """The entries' tasks with a classifier task before each task the loader marked."""
    out: list[Task] = []
    for entry in entries:
        task = entry.task
        if task is None:
            continue
        if entry.classifier is not None:
            made = classifier_task(task, entry.classifier)
            out.append(made)
            task.depends_on.append(made.id)
            task.classify_by = made.id
        out.append(task)
    return out
