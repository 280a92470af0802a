"""The task list's tree: whose child each task is, which parents are folded, and each
parent's progress. Kept apart from drawing: the list asks it which rows to show, the DAG
which boxes to group. A task's parent never changes, so it is read once per task."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tui.model.states import SATISFIED, UNSUCCESSFUL, State
from tui.model.tree import tree_order
from tui.store.records import TaskRecord

# A parent with more children than this starts folded (a foreach of 10,000 items would
# bury the list and spread the DAG 10,000 boxes wide); the person's own folds win.
AUTO_FOLD = 50
_NO_PARENT = '"parent_task_id":""'  # how a stored spec without a parent says so


def parent_of(r: TaskRecord) -> str:
    """``r``'s parent id, without validating a stored spec (10,000 of them add up)."""
    spec = r.spec
    if isinstance(spec, str):
        return "" if _NO_PARENT in spec else str(r.spec_fields("parent_task_id")[0] or "")
    return spec.parent_task_id


@dataclass(frozen=True)
class Progress:
    done: int  # completed or skipped
    failed: int  # ended without completing (failed, timed out, cancelled…)
    total: int

    def __str__(self) -> str:
        return f"{self.done}/{self.total}" + (f" ✗{self.failed}" if self.failed else "")


class TaskTree:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}  # every task seen -> its parent id ("" for none)
        self.kids: dict[str, list[str]] = {}  # parent id -> child ids, in the order seen
        self.collapsed: set[str] = set()  # parents whose children are folded away
        self.touched: set[str] = set()  # parents the person folded or unfolded
        # Each parent's children by state, kept as they change: a foreach of 10,000 items
        # is not counted again whenever one of them moves.
        self._states: dict[str, Counter[State]] = {}
        self._counted: dict[str, State] = {}  # child -> the state it is counted in

    def add(self, records: Iterable[TaskRecord]) -> None:
        """Learn new tasks and count changed children in their parent's progress."""
        for r in records:
            parent = self.parent.get(r.id)
            if parent is None:
                parent = self.parent[r.id] = parent_of(r)
                if parent:
                    kids = self.kids.setdefault(parent, [])
                    kids.append(r.id)
                    if len(kids) == AUTO_FOLD + 1 and parent not in self.touched:
                        self.collapsed.add(parent)
            counted = self._counted.get(r.id)
            if parent and counted != r.state:
                states = self._states.setdefault(parent, Counter())
                if counted is not None:
                    states[counted] -= 1
                states[r.state] += 1
                self._counted[r.id] = r.state

    def has_kids(self, task_id: str) -> bool:
        return task_id in self.kids

    def progress(self, task_id: str) -> Progress:
        states = self._states.get(task_id, Counter())
        done = sum(n for s, n in states.items() if s in SATISFIED)
        failed = sum(n for s, n in states.items() if s in UNSUCCESSFUL)
        return Progress(done, failed, sum(states.values()))

    def ancestors(self, task_id: str) -> list[str]:
        """Parent, grandparent…; stops at a loop."""
        out: list[str] = []
        parent = self.parent.get(task_id, "")
        while parent and parent not in out and parent != task_id:
            out.append(parent)
            parent = self.parent.get(parent, "")
        return out

    def folded_under(self, task_id: str) -> str | None:
        """The outermost collapsed ancestor that hides ``task_id``, if any."""
        hidden = None
        for a in self.ancestors(task_id):
            if a in self.collapsed:
                hidden = a
        return hidden

    def rows(self, ordered: list[TaskRecord]) -> list[tuple[TaskRecord, int]]:
        """``ordered`` as a tree (each parent followed by its children, siblings kept in
        ``ordered``'s order) with each row's depth, children of folded parents left out."""
        if not self.kids:  # no subtasks anywhere (the usual list): nothing to arrange
            return [(r, 0) for r in ordered]
        out: list[tuple[TaskRecord, int]] = []
        fold_depth: int | None = None  # rows deeper than this are under a folded parent
        for r, depth in tree_order(ordered, lambda r: r.id, lambda r: self.parent.get(r.id, "")):
            if fold_depth is not None:
                if depth > fold_depth:
                    continue
                fold_depth = None
            out.append((r, depth))
            if r.id in self.collapsed and r.id in self.kids:
                fold_depth = depth
        return out

    def with_ancestors(
        self, matched: list[TaskRecord], records: Mapping[str, TaskRecord]
    ) -> list[TaskRecord]:
        """``matched`` and every ancestor of theirs, so a filtered child keeps its parent."""
        seen = {r.id for r in matched}
        out = list(matched)
        for r in matched:
            for a in self.ancestors(r.id):
                if a in seen or a not in records:
                    break
                seen.add(a)
                out.append(records[a])
        return out
