"""`tui run FILE` / `tui open FILE` of tasks already waiting or running in the database:
asked (or, without a terminal, refused with the flag that forces it) rather than silently
run twice; a name the new copy makes ambiguous is reported with the ids to use instead."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from tui.cli.common import err
from tui.model.task import Task
from tui.store.db import Store
from tui.store.records import TaskRecord


def _same_spec(task: Task) -> str:
    # Ids (and the ids dependencies point at) are fresh for every load of a file.
    return json.dumps(task.model_dump(mode="json", exclude={"id", "depends_on"}), sort_keys=True)


async def go_ahead(store: Store, tasks: Sequence[Task], *, force: bool) -> bool:
    """True when ``tasks`` may be submitted: none is already there unfinished, the person
    said yes, or ``force``. Prints why not, and which names become ambiguous."""
    if not tasks:
        return True
    records = await store.list_tasks()
    unfinished: dict[str, TaskRecord] = {}
    for r in records:
        if not r.settled:
            unfinished.setdefault(_same_spec(r.task), r)
    # (No stored task unfinished, as in a fresh database: nothing to compare the new ones to.)
    copies = (
        [(t, unfinished[k]) for t in tasks if (k := _same_spec(t)) in unfinished]
        if unfinished
        else []
    )
    if copies and not force:
        shown = ", ".join(f"{t.name} ({r.id[:8]}, {r.state.value})" for t, r in copies[:5])
        more = f" and {len(copies) - 5} more" if len(copies) > 5 else ""
        what = (
            f"{len(copies)} of these tasks are already in the database, unfinished: {shown}{more}"
        )
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            err(f"{what}; nothing submitted — pass --force to submit another copy")
            return False
        print(what, file=sys.stderr)
        try:
            answer = input("submit another copy? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            err("nothing submitted")
            return False
    by_name: dict[str, list[str]] = {}
    for r in records:
        by_name.setdefault(r.name, []).append(r.id)
    for t in tasks:
        if t.name in by_name:
            ids = ", ".join(i[:8] for i in by_name[t.name])
            err(f"note: {t.name!r} now names several tasks: use an id ({ids}, new {t.id[:8]})")
    return True
