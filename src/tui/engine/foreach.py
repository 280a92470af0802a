"""A ``foreach:`` task's items and children (tui.model.foreach), made when it comes to run.

The children are stored in one transaction before their parent moves to BLOCKED, with ids
fixed by the parent's and the index (``scan.0``, ``scan.1``...): an engine killed in between
finds them stored and does not make them again.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from typing import Any

from tui.engine.workflow import ENV_VALUE_MAX, WorkflowError, as_text, needs_of, value_of
from tui.model.agent_kinds import KINDS
from tui.model.foreach import ENV_INDEX, ENV_ITEM, ITEM_USE, MAX_ITEMS
from tui.model.needs import template_refs
from tui.model.task import Task
from tui.store.records import TaskRecord


def items_of(rec: TaskRecord, lookup: Callable[[str], TaskRecord | None]) -> list[Any]:
    """The JSON array ``rec`` expands over; WorkflowError when it is not one."""
    source = rec.task.foreach
    if isinstance(source, list):
        return source
    assert isinstance(source, str)
    [ref] = template_refs(source)
    value = value_of(needs_of(rec, lookup), ref)
    if isinstance(value, str):  # a shell task's result is its stdout: JSON text, perhaps
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    if not isinstance(value, list):
        kind = type(value).__name__ if value is not None else "nothing"
        raise WorkflowError(f"foreach: {ref.text} is {kind}, not a JSON array")
    if len(value) > MAX_ITEMS:
        raise WorkflowError(f"foreach: {ref.text} has {len(value)} items; at most {MAX_ITEMS}")
    return value


def children(rec: TaskRecord, items: list[Any]) -> list[Task]:
    """One child per item: the parent's task without its foreach, ``{{item}}``/``{{index}}``
    filled (for a script: references to $TUI_ITEM / $TUI_INDEX, set in its environment)."""
    task = rec.task
    script = KINDS[task.agent.type].script if task.agent.type in KINDS else False
    out = []
    for index, item in enumerate(items):
        text = as_text(item)
        if script and len(text.encode()) > ENV_VALUE_MAX:
            raise WorkflowError(
                f"foreach: item {index} is {len(text.encode()) // 1024} KiB, too big for "
                f"${ENV_ITEM} (at most {ENV_VALUE_MAX // 1024} KiB)"
            )
        values = {"item": text, "index": str(index)}
        agent = task.agent
        changes: dict[str, Any] = {}
        for key in ("instructions", "system_prompt_append"):
            changes[key] = ITEM_USE.sub(_filler(script, values), getattr(agent, key))
        if script:
            changes["env"] = {**agent.env, ENV_ITEM: text.replace("\0", ""), ENV_INDEX: str(index)}
        out.append(
            task.model_copy(
                update={
                    "id": f"{rec.id}.{index}",
                    "name": f"{rec.name}[{index}]",
                    "parent_task_id": rec.id,
                    "agent": agent.model_copy(update=changes),
                    "foreach": None,
                    "max_parallel": 0,
                    "when": "",
                }
            )
        )
    return out


def _filler(script: bool, values: dict[str, str]) -> Callable[[re.Match[str]], str]:
    if script:
        names = {"item": ENV_ITEM, "index": ENV_INDEX}
        return lambda m: "${" + names[m.group(1)] + "}"
    return lambda m: values[m.group(1)]
