"""A task's project: the last part of its agent's project_dir ("" when it has none). Read
once per task (a spec never changes), so the status line can count thousands of tasks."""

from __future__ import annotations

import os

from tui.store.records import TaskRecord

_known: dict[str, str] = {}


def project_of(r: TaskRecord) -> str:
    name = _known.get(r.id)
    if name is None:
        (agent,) = r.spec_fields("agent")
        where = str((agent or {}).get("project_dir") or "")
        name = os.path.basename(os.path.normpath(os.path.expanduser(where))) if where else ""
        _known[r.id] = name
    return name
