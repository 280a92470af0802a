"""A task's project: the last part of its agent's project_dir ("" when it has none). Read
once per task (a spec never changes), so the status line can count thousands of tasks."""

from __future__ import annotations

import os

from tui.app.spec_head import spec_head
from tui.store.records import TaskRecord

_known: dict[str, str] = {}


def project_of(r: TaskRecord) -> str:
    name = _known.get(r.id)
    if name is None and isinstance(r.spec, str) and _no_project(r.spec):
        name = _known[r.id] = ""
    if name is None:
        (agent,) = spec_head(r, "agent")
        where = str((agent or {}).get("project_dir") or "")
        name = os.path.basename(os.path.normpath(os.path.expanduser(where))) if where else ""
        _known[r.id] = name
    return name


def _no_project(spec: str) -> bool:
    """A stored spec whose only ``project_dir`` key is empty (most tasks): told without parsing
    it. A quote inside a JSON string is escaped, so the key is counted only where it is one."""
    return spec.count('"project_dir"') == 1 and '"project_dir":""' in spec
