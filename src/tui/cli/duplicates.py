"""`tui run FILE` / `tui open FILE` of tasks already waiting or running in the database:
asked (or, without a terminal, refused with the flag that forces it) rather than silently
run twice; a name the new copy makes ambiguous is reported with the ids to use instead."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tui.cli.common import err
from tui.engine.copies import ambiguous_names, copies_text, unfinished_copies
from tui.model.task import Task
from tui.store.db import Store


async def go_ahead(store: Store, tasks: Sequence[Task], *, force: bool) -> bool:
    """True when ``tasks`` may be submitted: none is already there unfinished, the person
    said yes, or ``force``. Prints why not, and which names become ambiguous."""
    if not tasks:
        return True
    records = await store.list_tasks()
    copies = unfinished_copies(records, tasks)
    if copies and not force:
        what = copies_text(copies)
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
    for note in ambiguous_names(records, tasks):
        err(f"note: {note}")
    return True
