"""``until:`` loops: a task that completes runs again until its condition holds, at most
``max_iterations`` times (README, task files).

Each iteration is a run that ends COMPLETED; the task itself moves RUNNING -> QUEUED (the
run's result stored with it) while the condition is false, so its dependents see only the
last one. The iteration number is the count of its COMPLETED runs, read from the store: an
iteration interrupted by a crash is not counted and runs again, a completed one never.
The previous result reaches the next run as ``{{previous.result}}``: text in a prompt,
``$TUI_PREVIOUS_RESULT`` for a script (never spliced into its text).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from tui.engine.conditions import holds
from tui.engine.workflow import ENV_VALUE_MAX, WorkflowError, as_text, dependency_view, needs_of
from tui.model.agent_kinds import KINDS
from tui.model.foreach import PREVIOUS_USE
from tui.model.states import State
from tui.store.db import Move
from tui.store.records import TaskRecord

ENV_PREVIOUS = "TUI_PREVIOUS_RESULT"


def with_previous(rec: TaskRecord) -> TaskRecord:
    """The task as this iteration sees it: ``{{previous.result}}`` filled."""
    task = rec.task
    if not task.until:
        return rec
    agent = task.agent
    script = KINDS[agent.type].script if agent.type in KINDS else False
    previous = as_text(dependency_view(rec)["result"]) if rec.result else ""
    changes: dict[str, object] = {}
    for key in ("instructions", "system_prompt_append"):
        text = getattr(agent, key)
        if PREVIOUS_USE.search(text):
            fill = "${" + ENV_PREVIOUS + "}" if script else previous
            changes[key] = PREVIOUS_USE.sub(fill.replace("\\", "\\\\"), text)
    if script:
        if len(previous.encode()) > ENV_VALUE_MAX:
            raise WorkflowError(
                f"{{{{previous.result}}}} is {len(previous.encode()) // 1024} KiB, too big for "
                f"${ENV_PREVIOUS} (at most {ENV_VALUE_MAX // 1024} KiB)"
            )
        changes["env"] = {**agent.env, ENV_PREVIOUS: previous.replace("\0", "")}
    new_task = task.model_copy(update={"agent": agent.model_copy(update=changes)})
    return replace(rec, spec=new_task)


def until_move(
    rec: TaskRecord,
    move: Move,
    stored: str | None,
    completed_before: int,
    lookup: Callable[[str], TaskRecord | None],
) -> Move:
    """Where a completed iteration takes the task: COMPLETED when ``until`` holds or the
    bound is reached, QUEUED for the next iteration, FAILED when it cannot be evaluated."""
    task = rec.task
    iteration = completed_before + 1
    names = {"result": json.loads(stored) if stored else None, "iteration": iteration}
    try:
        done = holds(task.until, needs_of(rec, lookup), names, "until")
    except WorkflowError as e:
        return Move(rec.id, move.expected, State.FAILED, f"{rec.name}: {e}", move.updates)
    if done:
        why = f"until: {task.until} holds (iteration {iteration})"
        return Move(rec.id, move.expected, State.COMPLETED, why, move.updates)
    if iteration >= task.max_iterations:
        why = f"stopped at max_iterations ({task.max_iterations}); until: {task.until} is false"
        return Move(rec.id, move.expected, State.COMPLETED, why, move.updates)
    why = (
        f"until: {task.until} is false; iteration {iteration + 1} of at most {task.max_iterations}"
    )
    # Each iteration gets its own round of retries.
    updates = {**move.updates, "attempt_base": rec.attempts}
    return Move(rec.id, move.expected, State.QUEUED, why, updates)
