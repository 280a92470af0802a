"""Tasks in tree order: each parent followed by its subtasks (depth-first), for listings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def tree_order(
    items: Sequence[T], key: Callable[[T], str], parent: Callable[[T], str]
) -> list[tuple[T, int]]:
    """``items`` (in their order) with each one's depth; a child whose parent is not among
    them stays where it was, at depth 0. A parent loop cannot hide a task: every item is
    returned exactly once."""
    ids = {key(i) for i in items}
    kids: dict[str, list[T]] = {}
    roots: list[T] = []
    for i in items:
        p = parent(i)
        if p and p in ids and p != key(i):
            kids.setdefault(p, []).append(i)
        else:
            roots.append(i)
    out: list[tuple[T, int]] = []
    seen: set[str] = set()
    stack = [(r, 0) for r in reversed(roots)]
    while stack:
        item, depth = stack.pop()
        if key(item) in seen:
            continue
        seen.add(key(item))
        out.append((item, depth))
        stack += [(c, depth + 1) for c in reversed(kids.get(key(item), []))]
    out += [(i, 0) for i in items if key(i) not in seen]  # members of a parent loop
    return out


def short_name(name: str, parent_name: str) -> str:
    """``research.web`` under ``research`` -> ``web``; any other name as it is."""
    prefix = parent_name + "."
    return name[len(prefix) :] if parent_name and name.startswith(prefix) else name
