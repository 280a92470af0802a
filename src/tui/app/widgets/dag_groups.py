"""The DAG's boxes with subtasks grouped under their parent, folded as the task list is.

An unfolded parent's children hang below it, and its dependents below them: a child with
no sibling to wait on gets an edge from its parent, the dependencies it shares with its
parent (a foreach child's copy of them) are left to the parent's edges, and a dependent of
the parent is drawn waiting on the group's last children (the parent completes when they
do). So a group reads as one stretch of the graph between its parent and what comes after.
A folded parent is one box, "per-file (5 children: 3 done)", taking the edges of everything
under it.
"""

from __future__ import annotations

from collections.abc import Mapping

from tui.app.widgets.dag_view import DagNode
from tui.app.widgets.task_tree import TaskTree
from tui.store.records import TaskRecord


def grouped_nodes(records: Mapping[str, TaskRecord], tree: TaskTree) -> list[DagNode]:
    shown_as = {tid: tree.folded_under(tid) or tid for tid in records}
    nodes = []
    siblings: dict[str, set[str]] = {}  # parent -> its children (a foreach may have 10,000)
    ends: dict[str, list[str]] = {}  # unfolded parent -> the children no sibling waits on
    for r in records.values():
        if shown_as[r.id] != r.id:
            continue  # drawn as the folded parent it is under
        parent = tree.parent.get(r.id, "")
        inherited = set(records[parent].depends_on) if parent in records else set()
        deps = dict.fromkeys(
            shown_as.get(d, d) for d in r.depends_on if d not in inherited and d != r.id
        )
        # Everything under a folded box waits on what its members wait on (outside it).
        for member in _members(r.id, tree) if r.id in tree.collapsed else ():
            rec = records.get(member)
            for d in rec.depends_on if rec else ():
                deps.setdefault(shown_as.get(d, d))
        for d in [d for d in deps if d in tree.kids and d not in tree.collapsed]:
            if parent != d:  # a dependent of the group: after its last children
                del deps[d]
                deps.update(dict.fromkeys(_ends(d, tree, records, ends)))
        deps.pop(r.id, None)
        if parent in records and not _kid_set(siblings, parent, tree).intersection(deps):
            deps[parent] = None  # the group hangs below its parent
        folded = r.id in tree.collapsed and tree.has_kids(r.id)
        nodes.append(DagNode(r.id, _label(r, tree, records), r.state, tuple(deps), folded))
    return nodes


def _kid_set(cache: dict[str, set[str]], parent: str, tree: TaskTree) -> set[str]:
    found = cache.get(parent)
    if found is None:
        found = cache[parent] = set(tree.kids.get(parent, ()))
    return found


def _ends(
    task_id: str,
    tree: TaskTree,
    records: Mapping[str, TaskRecord],
    cache: dict[str, list[str]],
    seen: frozenset[str] = frozenset(),
) -> list[str]:
    """The boxes a dependent of unfolded ``task_id`` waits on: its children that no sibling
    waits on (an unfolded one's own ends in its place); the parent itself without any."""
    found = cache.get(task_id)
    if found is not None:
        return found
    kids = [k for k in tree.kids.get(task_id, ()) if k in records]
    waited_on = {d for k in kids for d in records[k].depends_on}
    found = []
    for k in kids:
        if k in waited_on:
            continue
        nested = k in tree.kids and k not in tree.collapsed and k not in seen
        found += _ends(k, tree, records, cache, seen | {task_id}) if nested else [k]
    found = cache[task_id] = found or [task_id]
    return found


def _members(task_id: str, tree: TaskTree) -> list[str]:
    out, todo = [], list(tree.kids.get(task_id, ()))
    while todo:
        kid = todo.pop()
        if kid not in out and kid != task_id:
            out.append(kid)
            todo += tree.kids.get(kid, ())
    return out


def _label(r: TaskRecord, tree: TaskTree, records: Mapping[str, TaskRecord]) -> str:
    if not tree.has_kids(r.id):
        return r.name
    p = tree.progress(r.id)
    if r.id not in tree.collapsed:
        return f"{r.name} {p}"
    failed = f", {p.failed} failed" if p.failed else ""
    return f"{r.name} ({p.total} children: {p.done} done{failed})"
