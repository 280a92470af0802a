"""``foreach:``: a task expanded at run time into one child per item of a JSON array — a
literal list, or one ``{{needs.X.result...}}`` reference to a dependency's result. Each child
sees ``{{item}}`` and ``{{index}}``: in a prompt as text, in a script as ``$TUI_ITEM`` /
``$TUI_INDEX`` (never spliced into the shell text). Checked here at load."""

from __future__ import annotations

import re
from typing import Any

from tui.model.entry import TaskEntry
from tui.model.issues import Issue
from tui.model.needs import NEEDS_USE, template_problems

MAX_ITEMS = 10_000  # children one foreach may make: more is a mistake, not a plan
ITEM_USE = re.compile(r"\{\{\s*(item|index)\s*\}\}")
ENV_ITEM, ENV_INDEX = "TUI_ITEM", "TUI_INDEX"


def is_reference(value: str) -> bool:
    return NEEDS_USE.fullmatch(value.strip()) is not None


def foreach_issues(entry: TaskEntry) -> list[Issue]:
    task = entry.task
    assert task is not None
    value: Any = task.foreach
    out: list[Issue] = []
    if value is None:
        if ITEM_USE.search(task.agent.instructions):
            fix = "add foreach: (a list, or {{needs.X.result}}), or write it differently"
            out.append(entry.issue(("agent", "instructions"), "{{item}} without foreach:", fix))
        return out
    if task.group:
        message = "a task has either subtasks: or foreach:, not both"
        out.append(entry.issue(("foreach",), message, "move one of them into its own task"))
    if isinstance(value, str):
        if not is_reference(value):
            message = (
                f"foreach must be a list or one {{{{needs.X.result}}}} reference; got {value!r}"
            )
            fix = "write a YAML list, or `foreach: '{{needs.scan.result.files}}'`"
            out.append(entry.issue(("foreach",), message, fix))
        for message, fix in template_problems(value, entry.raw_depends):
            out.append(entry.issue(("foreach",), message, fix))
    elif len(value) > MAX_ITEMS:
        message = f"foreach has {len(value)} items; at most {MAX_ITEMS}"
        out.append(entry.issue(("foreach",), message, "split the list over several tasks"))
    return out
