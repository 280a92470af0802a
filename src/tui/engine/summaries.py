"""Summaries of upstream results for ``context: {transfer: summary}`` (issue 12).

The ``aggressive`` strategy needs no agent: one line, "NAME completed: success" (or
"failure"), read from the stored record so a run after a crash writes the same line. The
summary is kept with the upstream task (``tasks.summary``, JSON: strategy, summary, and the
sizes before and after in characters) and shown by ``tui ls --json``.
"""

from __future__ import annotations

import json
from typing import Any

from tui.model.states import State
from tui.model.workflow import Strategy, Summarizer

DEFAULT = Summarizer()


def aggressive_line(name: str, state: str) -> str:
    if state == State.SKIPPED.value:
        return f"{name} skipped"
    return f"{name} completed: {'success' if state == State.COMPLETED.value else 'failure'}"


def summarize(view: dict[str, Any], spec: Summarizer | None) -> dict[str, Any]:
    """The summary of one dependency's view (``tui.engine.workflow.dependency_view``)."""
    spec = spec or DEFAULT
    result = view.get("result")
    full = "" if result is None else result if isinstance(result, str) else json.dumps(result)
    if view.get("error"):
        full += view["error"]
    # Only aggressive loads today (the agent strategies are a load error until built), so
    # ``spec`` chooses nothing yet; it will name the agent, model and prompt.
    line = aggressive_line(view["name"], view["state"])
    return {
        "strategy": Strategy.AGGRESSIVE.value,
        "summary": line,
        "size_before": len(full),
        "size_after": len(line),
    }
