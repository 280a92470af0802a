"""Nested ``subtasks:`` in a task file: a parent (a group that runs nothing itself) and its
children, flattened into ordinary tasks whose ids and names are qualified by the parent's
(``research`` -> ``research.web``) and whose ``parent_task_id`` names it."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from tui.model.choices import one_of


class Completion(StrEnum):
    ALL = "all"  # the parent completes when every child has (a failed child fails it)
    ANY = "any"  # the first child to complete completes it; the others are cancelled


def check_completion(value: Any) -> Any:
    return one_of("completion", value, tuple(c.value for c in Completion), optional=True)


MAX_NESTING = 5  # parent -> child -> grandchild ...: deeper is a file mistake, not a plan
_ID_LIKE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def split(raw: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """(the task's own keys, its ``subtasks`` value or None)."""
    own = {k: v for k, v in raw.items() if k != "subtasks"}
    return own, raw.get("subtasks")


def shape_problem(subtasks: Any, has_agent: bool, depth: int) -> tuple[str, str] | None:
    """(message, fix) when ``subtasks:`` cannot be read as a group's children."""
    if not isinstance(subtasks, list) or not subtasks:
        return (
            "subtasks must be a non-empty list of tasks",
            "write each subtask as a '- name: ...' item under `subtasks:`",
        )
    if has_agent:
        return (
            "a task with subtasks runs no agent itself; it completes through its subtasks",
            "move its agent: into a subtask (or remove agent:)",
        )
    if depth >= MAX_NESTING:
        return (
            f"subtasks are nested more than {MAX_NESTING} levels deep",
            "flatten the tree: use depends_on between sibling tasks instead",
        )
    return None


def qualify_child(
    child: dict[str, Any],
    parent_id: str | None,
    parent_name: str | None,
    siblings: list[dict[str, Any]],
) -> dict[str, Any]:
    """The child as a top-level task: ``parent.child`` id and name; depends_on naming a
    sibling (by name or id) rewritten to that sibling's qualified name or id."""
    out = dict(child)
    name, own_id = child.get("name"), child.get("id")
    if isinstance(name, str) and parent_name:
        out["name"] = f"{parent_name}.{name}"
    short = own_id if isinstance(own_id, str) else name
    if parent_id and isinstance(short, str) and _ID_LIKE.fullmatch(short):
        out["id"] = f"{parent_id}.{short}"
    names = {s["name"] for s in siblings if isinstance(s.get("name"), str)}
    ids = {s["id"] for s in siblings if isinstance(s.get("id"), str)}
    deps = child.get("depends_on")
    deps = [deps] if isinstance(deps, str) else deps
    if isinstance(deps, list):
        fixed: list[Any] = []
        for d in deps:
            if d in ids and parent_id:
                fixed.append(f"{parent_id}.{d}")
            elif d in names and parent_name:
                fixed.append(f"{parent_name}.{d}")
            else:
                fixed.append(d)
        out["depends_on"] = fixed
    return out
