"""Summaries of upstream results for ``context: {transfer: summary}`` (issue 12).

``aggressive`` needs no agent: one line, "NAME completed: success" (or "failure", or
"NAME skipped"), read from the stored record so a run after a crash writes the same line.
``moderate`` and ``comprehensive`` read the result of the upstream's summariser task (made by
the loader, tui.model.summaries): the object {summary, key_outputs, decisions, errors}. Compaction
(``summarizer.compaction``) is decided here too: whether a ``compact:U`` task runs, and the
compacted form its answer gives U's dependents. Each
summary is kept with the upstream task (``tasks.summary``, JSON: strategy, summary, the sizes
before and after in characters, and the summariser task's id) and shown by ``tui ls --json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tui.model.states import State
from tui.model.workflow import Strategy, Summarizer
from tui.store.records import TaskRecord

COMPACTED = "compacted"  # the `strategy` kept with an upstream task whose result was compacted


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


def result_size(rec: TaskRecord) -> int:
    try:
        return _size(rec.parsed_result)
    except ValueError:
        return _size(rec.result)


def compaction_decision(
    rec: TaskRecord, lookup: Callable[[str], TaskRecord | None], decided: int
) -> tuple[State, str]:
    """Whether the compaction task ``rec`` runs (QUEUED) or is SKIPPED, and why: its
    upstream's result against the trigger; ``decided`` is how many compactions feeding the
    same dependents were decided before it (``trigger: every`` counts them)."""
    spec = rec.task.summarizer.compaction if rec.task.summarizer is not None else None
    up = lookup(rec.task.compacts)
    if spec is None or up is None or up.state != State.COMPLETED or up.result is None:
        return State.SKIPPED, "skipped: no result to compact"
    size = result_size(up)
    if spec.wanted(size, decided + 1):
        return State.QUEUED, f"compacting {up.name}'s result ({size} characters)"
    if spec.trigger.value == "every":
        why = f"completion {decided + 1} is not a multiple of every: {spec.every}"
    else:
        why = f"at most the threshold of {spec.threshold}"
    return State.SKIPPED, f"skipped: {up.name}'s result is {size} characters, {why}"


def compacted(view: dict[str, Any], by: TaskRecord | None) -> dict[str, Any] | None:
    """The compacted form of one dependency's result, with its sizes, when its compaction
    task ran and answered; None when the result travels whole."""
    if by is None or by.state != State.COMPLETED:
        return None
    try:
        answer = by.parsed_result
    except ValueError:
        answer = by.result
    if answer is None:
        return None
    return {
        "strategy": COMPACTED,
        "summary": answer,
        "by": by.id,
        "size_before": _size(view.get("result")),
        "size_after": _size(answer),
    }
