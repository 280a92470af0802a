"""What each column of a task's row says (the text, not how it is drawn: ``task_list``):
its state, its name indented under its parent, the TIME column, its note."""

from __future__ import annotations

from collections.abc import Mapping

from tui.app.projects import project_of
from tui.app.state_style import style_for
from tui.app.widgets.task_tree import TaskTree
from tui.model.output_format import KEPT
from tui.model.states import ENDED, SATISFIED, State
from tui.model.tree import short_name
from tui.store.records import TaskRecord

Cells = tuple[str, ...]  # one string per column (task_columns.COLUMNS)

LIVE = frozenset({State.RUNNING, State.READY, State.BLOCKED})  # a run is under way


def elapsed(r: TaskRecord, now: float) -> str:
    """TIME: a live task's time since this attempt started; a finished one's run duration."""
    start, end = r.run_started_at, r.run_ended_at
    if start is None:
        return ""
    if r.state in LIVE and end is None:
        return duration(now - start)
    if r.state in ENDED and end is not None:
        return duration(end - start)
    return ""  # queued or pending again: the next attempt has not started


def span(r: TaskRecord, start: float | None, end: float | None, now: float) -> str:
    """TIME of a parent: from the first run under it (or its own) to the last one's end;
    while it is not over yet, to now."""
    if start is None:
        return ""
    if r.state not in ENDED:
        return duration(now - start)
    return duration(end - start) if end is not None else ""


def duration(seconds: float) -> str:
    secs = max(0, int(seconds))
    if secs >= 3600:
        return f"{secs // 3600}h{secs % 3600 // 60:02d}m"
    return f"{secs // 60}m{secs % 60:02d}s" if secs >= 60 else f"{secs}s"


def shown_name(r: TaskRecord, records: Mapping[str, TaskRecord], tree: TaskTree, depth: int) -> str:
    """Indented by depth, by its name under its parent; a parent with ▾ (▸ folded) and
    how many of its children are done ("▾ research 1/2"; a task with only helper tasks
    under it, "▾ brief")."""
    name = r.name
    if depth:
        parent = records.get(tree.shown_parent(r.id))
        name = short_name(name, parent.name if parent else "")
    if not tree.foldable(r.id):
        return "  " * depth + name
    mark = "▸" if r.id in tree.collapsed else "▾"
    progress = f" {tree.progress(r.id)}" if tree.has_kids(r.id) else ""
    return f"{'  ' * depth}{mark} {name}{progress}"


def row_cells(
    r: TaskRecord,
    now: float,
    records: Mapping[str, TaskRecord],
    tree: TaskTree,
    name: str,
    *,
    several_projects: bool,
    approve_key: str,
) -> Cells:
    """The text of each column in the row of ``r`` (``name``: its ``shown_name``)."""
    st = style_for(r.state)
    task = r.task
    agent = task.agent.type + (f"/{task.agent.model}" if task.agent.model else "")
    # Not "exit code 0" on every row; a result kept unparsed is worth a note, though.
    note = "" if r.state == State.COMPLETED and not r.reason.endswith(KEPT) else r.reason
    if r.state == State.PENDING:
        waiting = [
            records[d].name if d in records else d[:8]
            for d in r.depends_on
            if d not in records or records[d].state not in SATISFIED
        ]
        if waiting:
            note = "waiting on " + ", ".join(waiting)
        elif not r.approved:
            note = f"waiting for approval — {approve_key}"
    parent = tree.has_kids(r.id)
    return (
        f"{st.symbol} {r.phase or st.label}",  # "classifying": PENDING on its classifier
        name,
        project_of(r) if several_projects else "",  # a column only with several
        agent,
        r.run_node[:12],  # a Ray node id is 56 hex digits; its start tells nodes apart
        task.priority.value or "normal",
        span(r, *tree.span(r), now) if parent else elapsed(r, now),
        # A parent that never ran itself (a foreach, a group) has no tries of its own.
        "" if parent and not r.attempts else f"{r.attempt_in_round}/{task.retry.max_attempts}",
        f"${r.cost_usd:.2f}" if r.cost_usd else "",
        " ".join(task.tags),
        note,
    )
