"""One task mapping as read from a file: where it is, and the Task it became (if valid)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tui.model.classify import Classifier
from tui.model.issues import Issue
from tui.model.task import Task
from tui.model.yaml_source import Path, line_of


def field_name(path: Path) -> str:
    """("tasks", 2, "agent", "type") -> "tasks[2].agent.type"."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


@dataclass
class TaskEntry:
    file: str
    path: Path  # where the task mapping sits: ("tasks", 2) in a batch, () for a single task
    lines: dict[Path, int]
    raw_id: str | None = None  # as written, kept even when the task is invalid,
    raw_name: str | None = None  # so references to it are not reported as unknown
    raw_depends: list[str] = field(default_factory=list)
    task: Task | None = None
    # The classifier that picks its agent (agent.type left out, no classify rule matched).
    classifier: Classifier | None = None
    # Resolved dependency id -> index of the depends_on entry that named it.
    dep_index: dict[str, int] = field(default_factory=dict)

    def issue(
        self,
        rel: Path,
        message: str,
        fix: str,
        severity: Literal["error", "warning"] = "error",
    ) -> Issue:
        """An issue at ``rel`` (a path inside this task), with its line looked up."""
        full = (*self.path, *rel)
        return Issue(self.file, line_of(self.lines, full), field_name(full), message, fix, severity)
