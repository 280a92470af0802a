"""``foreach:``: a task expanded at run time into one child per item of a JSON array — a
literal list, or one ``{{needs.X.result...}}`` reference to a dependency's result. Each child
sees ``{{item}}`` and ``{{index}}``: in a prompt as text, in a script as ``$TUI_ITEM`` /
``$TUI_INDEX`` (never spliced into the shell text). Checked here at load."""

from __future__ import annotations

import re
from typing import Any

from tui.model.entry import TaskEntry
from tui.model.issues import Issue
from tui.model.needs import NEEDS_USE, condition_problems, template_problems

MAX_ITEMS = 10_000  # children one foreach may make: more is a mistake, not a plan
ITEM_USE = re.compile(r"\{\{\s*(item|index)\s*\}\}")
ENV_ITEM, ENV_INDEX = "TUI_ITEM", "TUI_INDEX"


def is_reference(value: str) -> bool:
    return NEEDS_USE.fullmatch(value.strip()) is not None


def foreach_issues(entry: TaskEntry) -> list[Issue]:
    task = entry.task
    assert task is not None
    value: Any = task.foreach
    out: list[Issue] = until_issues(entry)
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


UNTIL_NAMES = ("result", "iteration")  # until: sees these besides needs
PREVIOUS_USE = re.compile(r"\{\{\s*previous\.result\s*\}\}")


def until_issues(entry: TaskEntry) -> list[Issue]:
    """``until:`` is a condition over ``result`` (this run's), ``iteration`` (from 1) and
    ``needs``; ``{{previous.result}}`` only means something in a loop."""
    task = entry.task
    assert task is not None
    out: list[Issue] = []
    if task.until.strip():
        for message, fix in condition_problems(task.until, entry.raw_depends, UNTIL_NAMES):
            out.append(entry.issue(("until",), message, fix))
        if task.group or task.foreach is not None:
            message = "until: re-runs a task's own agent; this task runs none itself"
            out.append(entry.issue(("until",), message, "put until: on a task with an agent"))
    elif task.until:
        out.append(entry.issue(("until",), "until: is empty", "write a condition or remove it"))
    elif PREVIOUS_USE.search(task.agent.instructions):
        fix = "add until: to the task, or write it differently"
        message = "{{previous.result}} without until:"
        out.append(entry.issue(("agent", "instructions"), message, fix))
    return out
