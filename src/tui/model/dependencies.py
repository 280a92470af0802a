"""Resolve depends_on references (ids, or names within one file) and find cycles."""

from __future__ import annotations

from collections.abc import Collection

from tui.model.entry import TaskEntry
from tui.model.issues import Issue
from tui.model.suggest import did_you_mean


def resolve_dependencies(entries: list[TaskEntry], known_ids: Collection[str]) -> list[Issue]:
    """Rewrite each valid task's depends_on to ids; report references that match nothing."""
    ids = {e.raw_id for e in entries if e.raw_id} | {e.task.id for e in entries if e.task}
    ids |= set(known_ids)
    names: dict[str, dict[str, TaskEntry]] = {}
    for e in entries:
        if e.raw_name is not None:
            names.setdefault(e.file, {}).setdefault(e.raw_name, e)

    issues: list[Issue] = []
    for e in entries:
        local = names.get(e.file, {})
        resolved: dict[str, int] = {}
        # Invalid tasks are still checked, so one load reports all their errors.
        refs = e.task.depends_on if e.task else e.raw_depends
        for index, ref in enumerate(refs):
            if ref in ids:
                target: str | None = ref
            elif ref in local:
                named = local[ref]
                # A named task that failed validation has its own errors; don't pile on.
                target = named.task.id if named.task else None
            else:
                issues.append(_unknown(e, index, ref, ids, local))
                continue
            if target is not None:
                resolved.setdefault(target, index)
        e.dep_index = resolved
        if e.task:
            e.task.depends_on = list(resolved)
    return issues


def resolve_worktree_from(entries: list[TaskEntry], known_ids: Collection[str]) -> list[Issue]:
    """``worktree: {from: TASK}`` names a task by id or by name in the same file: rewrite it to
    the id, and make it a dependency (two agents must not edit one worktree at once)."""
    ids = {e.task.id for e in entries if e.task} | set(known_ids)
    issues: list[Issue] = []
    for e in entries:
        spec = e.task.worktree if e.task else None
        if spec is None or not spec.from_:
            continue
        ref = spec.from_
        named = next((o for o in entries if o.file == e.file and o.raw_name == ref), None)
        target = ref if ref in ids else named.task.id if named and named.task else None
        if target is None or (e.task is not None and target == e.task.id):
            issues.append(
                e.issue(
                    ("worktree", "from"),
                    f"worktree.from '{ref}' is neither another task's id nor a task name in "
                    "this file",
                    "name the task whose branch this one continues",
                )
            )
            continue
        assert e.task is not None
        spec.from_ = target
        if target not in e.task.depends_on:
            e.task.depends_on.append(target)
    return issues


def _unknown(
    entry: TaskEntry, index: int, ref: str, ids: set[str], local: dict[str, TaskEntry]
) -> Issue:
    close = did_you_mean(ref, [*local, *ids])
    hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
    return entry.issue(
        ("depends_on", index),
        f"depends on '{ref}', which is neither a known task id nor a task name in this file",
        f"{hint}use the id of an existing task or the name of a task in the same file",
    )


def find_cycles(entries: list[TaskEntry]) -> list[Issue]:
    """One issue per dependency cycle among loaded tasks, showing the chain by name."""
    by_id: dict[str, TaskEntry] = {}
    for e in entries:
        if e.task is not None:
            by_id.setdefault(e.task.id, e)

    done: set[str] = set()
    reported: set[frozenset[str]] = set()
    issues: list[Issue] = []
    for start in by_id:
        if start in done:
            continue
        # Iterative DFS: ``chain`` is the current path, so a back edge closes a cycle on it.
        chain = [start]
        on_chain = {start}
        stack = [iter(_deps(by_id, start))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                on_chain.discard(chain[-1])
                done.add(chain.pop())
                stack.pop()
            elif nxt in on_chain:
                cycle = chain[chain.index(nxt) :]
                if frozenset(cycle) not in reported:
                    reported.add(frozenset(cycle))
                    issues.append(_cycle_issue(cycle, by_id))
            elif nxt not in done:
                chain.append(nxt)
                on_chain.add(nxt)
                stack.append(iter(_deps(by_id, nxt)))
    return issues


def _deps(by_id: dict[str, TaskEntry], task_id: str) -> list[str]:
    task = by_id[task_id].task
    return [d for d in task.depends_on if d in by_id] if task else []


def _cycle_issue(cycle: list[str], by_id: dict[str, TaskEntry]) -> Issue:
    first = by_id[cycle[0]]
    names = [t.name if (t := by_id[i].task) else i for i in cycle]
    text = " -> ".join([*names, names[0]])
    following = cycle[1] if len(cycle) > 1 else cycle[0]
    where = ("depends_on", first.dep_index.get(following, 0))
    if len(cycle) == 1:
        return first.issue(
            where,
            f"task depends on itself: {text}",
            f"remove '{names[0]}' from its own depends_on",
        )
    return first.issue(
        where,
        f"dependency cycle: {text}",
        "remove one of these depends_on entries so the chain has an end",
    )
