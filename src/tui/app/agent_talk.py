"""What `m` checks before asking for a message: whether the task's agent can take one."""

from __future__ import annotations

from tui.model.agent_kinds import KINDS
from tui.store.records import TaskRecord


def cannot_talk(rec: TaskRecord, running: bool) -> str:
    """Why `m` cannot message (running) or continue (ended) this task's agent; "" if it can."""
    kind = KINDS.get(rec.task.agent.type)
    if running and not (kind and kind.messages):
        able = ", ".join(k.name for k in KINDS.values() if k.messages)
        return f"{rec.name} is a {rec.task.agent.type} task: only {able} tasks take messages"
    if not running and not (kind and kind.resumes):
        able = ", ".join(k.name for k in KINDS.values() if k.resumes)
        return f"{rec.name} is a {rec.task.agent.type} task: only {able} sessions continue"
    return ""
