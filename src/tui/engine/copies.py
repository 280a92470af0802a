"""Tasks submitted again while a copy of them (same spec, ids aside) is still unfinished, and
names a new copy makes ambiguous: what `tui run FILE` / `tui open FILE` ask about and the
app's `o` prompt asks about the same way."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tui.model.states import label
from tui.model.task import Task
from tui.store.records import TaskRecord


def _same_spec(task: Task) -> str:
    # Ids (and the ids dependencies point at) are fresh for every load of a file.
    return json.dumps(task.model_dump(mode="json", exclude={"id", "depends_on"}), sort_keys=True)


def unfinished_copies(
    records: Sequence[TaskRecord], tasks: Sequence[Task]
) -> list[tuple[Task, TaskRecord]]:
    """(new task, the unfinished stored task it repeats) for each task already there."""
    if not tasks:
        return []
    unfinished: dict[str, TaskRecord] = {}
    for r in records:
        if not r.settled:
            unfinished.setdefault(_same_spec(r.task), r)
    if not unfinished:  # a fresh database: nothing to compare the new ones to
        return []
    return [(t, unfinished[k]) for t in tasks if (k := _same_spec(t)) in unfinished]


def copies_text(copies: Sequence[tuple[Task, TaskRecord]]) -> str:
    shown = ", ".join(f"{t.name} ({r.id[:8]}, {label(r.state)})" for t, r in copies[:5])
    more = f" and {len(copies) - 5} more" if len(copies) > 5 else ""
    return f"{len(copies)} of these tasks are already in the database, unfinished: {shown}{more}"


def ambiguous_names(records: Sequence[TaskRecord], tasks: Sequence[Task]) -> list[str]:
    """A note for each new task whose name some stored task already has."""
    by_name: dict[str, list[str]] = {}
    for r in records:
        by_name.setdefault(r.name, []).append(r.id)
    return [
        f"{t.name!r} now names several tasks: use an id "
        f"({', '.join(i[:8] for i in by_name[t.name])}, new {t.id[:8]})"
        for t in tasks
        if t.name in by_name
    ]
