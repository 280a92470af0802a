"""Summaries of upstream results for ``context: {transfer: summary}`` (issue 12).

``aggressive`` needs no agent: one line, "NAME completed: success" (or "failure", or
"NAME skipped"), read from the stored record so a run after a crash writes the same line.
``moderate`` and ``comprehensive`` read the result of the upstream's summariser task (made by
the loader, tui.model.summaries): the object {summary, key_outputs, decisions, errors}. Each
summary is kept with the upstream task (``tasks.summary``, JSON: strategy, summary, the sizes
before and after in characters, and the summariser task's id) and shown by ``tui ls --json``.
"""

from __future__ import annotations

import json
from typing import Any

from tui.model.states import State
from tui.model.workflow import Strategy, Summarizer
from tui.store.records import TaskRecord


def aggressive_line(name: str, state: str) -> str:
    if state == State.SKIPPED.value:
        return f"{name} skipped"
    return f"{name} completed: {'success' if state == State.COMPLETED.value else 'failure'}"


def _size(value: Any) -> int:
    if value is None:
        return 0
    return len(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def summarize(
    view: dict[str, Any], spec: Summarizer | None, by: TaskRecord | None = None
) -> dict[str, Any]:
    """The summary of one dependency's view (``tui.engine.workflow.dependency_view``);
    ``by`` is its summariser task, when the strategy has one."""
    before = _size(view.get("result")) + _size(view.get("error") or None)
    made: dict[str, Any] = {}
    if spec is not None and spec.strategy != Strategy.AGGRESSIVE and by is not None:
        try:
            summary = by.parsed_result
        except ValueError:
            summary = by.result
        if summary is not None:  # else the summariser was skipped: the one line instead
            made = {"strategy": spec.strategy.value, "summary": summary, "by": by.id}
    if not made:
        # No agent strategy, or a task made without the loader (no summariser task).
        made = {
            "strategy": Strategy.AGGRESSIVE.value,
            "summary": aggressive_line(view["name"], view["state"]),
        }
    made["size_before"] = before
    made["size_after"] = _size(made["summary"])
    return made
