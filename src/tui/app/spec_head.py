"""The top-level spec fields the task list reads of every task (its parent, the task a helper
serves, its agent's project), read from one ``json.loads`` of a stored spec and kept: with
10,000 tasks, reading them field by field parsed every spec three times before the first frame."""

from __future__ import annotations

from typing import Any

from tui.store.records import TaskRecord

KEYS = ("parent_task_id", "classifies", "summarizes", "compacts", "agent")
# Stored spec text -> its KEYS values. Keyed by the text itself, so a record that comes again
# (an update from the engine) finds its fields, and a changed spec is never answered stale.
_heads: dict[str, tuple[Any, ...]] = {}


def spec_head(r: TaskRecord, *keys: str) -> tuple[Any, ...]:
    """``r.spec_fields(*keys)`` for keys among KEYS, parsing a stored spec at most once."""
    spec = r.spec
    if not isinstance(spec, str):
        return r.spec_fields(*keys)
    values = _heads.get(spec)
    if values is None:
        values = _heads[spec] = r.spec_fields(*KEYS)
    return tuple(values[KEYS.index(k)] for k in keys)
