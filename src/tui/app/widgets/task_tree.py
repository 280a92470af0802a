"""The task list's tree: whose child each task is, which parents are folded, and each
parent's progress and time span. Kept apart from drawing: the list asks it which rows to
show, the DAG which boxes to group. A task's parent never changes, so it is read once per
task.

The tasks a loaded file adds to serve another (``classify:T``, ``summarize:U``,
``compact:U``: tui.model.classifier_tasks, tui.model.summaries) are no subtasks: they run
before the task they serve, not inside it. The list still shows each under the task it
serves (``classify:T`` under T, a summariser under the first dependent that waits on it),
foldable with it; the DAG and the progress counts leave them out (they keep their edges)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tui.app.spec_head import spec_head
from tui.model.states import SATISFIED, UNSUCCESSFUL, State
from tui.model.tree import tree_order
from tui.store.records import TaskRecord

# A parent with more children than this starts folded (a foreach of 10,000 items would
# bury the list and spread the DAG 10,000 boxes wide); the person's own folds win.
AUTO_FOLD = 50
_NO_PARENT = '"parent_task_id":""'  # how a stored spec without a parent says so
# The spec fields naming the task a helper task serves, and how a stored spec says "none".
_SERVES = ("classifies", "summarizes", "compacts")
_SERVES_NONE = tuple(f'"{k}":""' for k in _SERVES)


def parent_of(r: TaskRecord) -> str:
    """``r``'s parent id, without validating a stored spec (10,000 of them add up)."""
    spec = r.spec
    if isinstance(spec, str):
        return "" if _NO_PARENT in spec else str(spec_head(r, "parent_task_id")[0] or "")
    return spec.parent_task_id


def serves(r: TaskRecord) -> tuple[str, str]:
    """(what ``r`` is for, the id it names) for a task a loaded file added to serve another:
    ("classifies", T) — it picks T's agent; ("summarizes" or "compacts", U) — it shortens
    U's result for U's dependents. ("", "") for any other task."""
    spec = r.spec
    if isinstance(spec, str):
        if all(none in spec for none in _SERVES_NONE):
            return "", ""
        values = spec_head(r, *_SERVES)
    else:
        values = (spec.classifies, spec.summarizes, spec.compacts)
    return next(((k, str(v)) for k, v in zip(_SERVES, values, strict=True) if v), ("", ""))


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
        # Each parent's earliest run start and latest run end among its descendants.
        self._first_start: dict[str, float] = {}
        self._last_end: dict[str, float] = {}
        # Helper tasks (see the module's docstring), in the list only.
        self.host: dict[str, str] = {}  # helper -> the task it is shown under
        self.served: dict[str, list[str]] = {}  # task -> the helpers shown under it
        self._unhosted: set[str] = set()  # summarisers no dependent was seen waiting on yet
        self._waited_on: dict[str, str] = {}  # a dependency not seen yet -> its first dependent

    def add(self, records: Iterable[TaskRecord]) -> None:
        """Learn new tasks and count changed children in their parent's progress and span."""
        new: list[TaskRecord] = []
        for r in records:
            parent = self.parent.get(r.id)
            if parent is None:
                new.append(r)
                parent = self.parent[r.id] = parent_of(r)
                if parent:
                    kids = self.kids.setdefault(parent, [])
                    kids.append(r.id)
                    if len(kids) == AUTO_FOLD + 1 and parent not in self.touched:
                        self.collapsed.add(parent)
            if not parent:
                continue
            counted = self._counted.get(r.id)
            if counted != r.state:
                states = self._states.setdefault(parent, Counter())
                if counted is not None:
                    states[counted] -= 1
                states[r.state] += 1
                self._counted[r.id] = r.state
            if r.run_started_at is not None or r.run_ended_at is not None:
                self._spread(r)
        for r in new:  # helpers first, then who they serve (in one batch, in any order)
            dependent = self._waited_on.pop(r.id, "")
            if not self.parent[r.id]:
                kind, target = serves(r)
                if kind == "classifies":
                    self._host(r.id, target)
                elif kind and dependent:
                    self._host(r.id, dependent)
                elif kind:
                    self._unhosted.add(r.id)
        for r in new:
            for dep in r.depends_on:
                if dep in self._unhosted:
                    self._unhosted.discard(dep)
                    self._host(dep, r.id)
                elif dep not in self.parent:
                    self._waited_on.setdefault(dep, r.id)

    def _host(self, helper: str, task_id: str) -> None:
        if helper != task_id:
            self.host[helper] = task_id
            self.served.setdefault(task_id, []).append(helper)

    def _spread(self, r: TaskRecord) -> None:
        """Widen the time span of every ancestor of ``r`` to cover its run."""
        start, end = r.run_started_at, r.run_ended_at
        for a in self.ancestors(r.id):
            if start is not None and start < self._first_start.get(a, start + 1):
                self._first_start[a] = start
            if end is not None and end > self._last_end.get(a, end - 1):
                self._last_end[a] = end

    def span(self, r: TaskRecord) -> tuple[float | None, float | None]:
        """(first start, last end) of the runs of parent ``r`` and everything under it."""
        starts = [t for t in (self._first_start.get(r.id), r.run_started_at) if t is not None]
        ends = [t for t in (self._last_end.get(r.id), r.run_ended_at) if t is not None]
        return (min(starts) if starts else None), (max(ends) if ends else None)

    @property
    def any_folds(self) -> bool:
        """Whether some row has rows under it (the fold keys then apply)."""
        return bool(self.kids or self.served)

    def foldable(self, task_id: str) -> bool:
        """Whether the list shows rows under ``task_id`` (subtasks or helpers)."""
        return task_id in self.kids or task_id in self.served

    def shown_parent(self, task_id: str) -> str:
        """The row ``task_id`` is shown under in the list: its parent, or the task it serves."""
        return self.parent.get(task_id) or self.host.get(task_id, "")

    def fold_targets(self) -> set[str]:
        return set(self.kids) | set(self.served)

    def has_kids(self, task_id: str) -> bool:
        return task_id in self.kids

    def progress(self, task_id: str) -> Progress:
        states = self._states.get(task_id, Counter())
        done = sum(n for s, n in states.items() if s in SATISFIED)
        failed = sum(n for s, n in states.items() if s in UNSUCCESSFUL)
        return Progress(done, failed, sum(states.values()))

    def ancestors(self, task_id: str, shown: bool = False) -> list[str]:
        """Parent, grandparent…; stops at a loop. ``shown``: as the list nests them (a
        helper under the task it serves)."""
        up = self.shown_parent if shown else (lambda t: self.parent.get(t, ""))
        out: list[str] = []
        parent = up(task_id)
        while parent and parent not in out and parent != task_id:
            out.append(parent)
            parent = up(parent)
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
        if not self.any_folds:  # no subtasks anywhere (the usual list): nothing to arrange
            return [(r, 0) for r in ordered]
        out: list[tuple[TaskRecord, int]] = []
        fold_depth: int | None = None  # rows deeper than this are under a folded parent
        for r, depth in tree_order(ordered, lambda r: r.id, lambda r: self.shown_parent(r.id)):
            if fold_depth is not None:
                if depth > fold_depth:
                    continue
                fold_depth = None
            out.append((r, depth))
            if r.id in self.collapsed and self.foldable(r.id):
                fold_depth = depth
        return out

    def with_ancestors(
        self, matched: list[TaskRecord], records: Mapping[str, TaskRecord]
    ) -> list[TaskRecord]:
        """``matched`` and every ancestor of theirs, so a filtered child keeps its parent."""
        seen = {r.id for r in matched}
        out = list(matched)
        for r in matched:
            for a in self.ancestors(r.id, shown=True):
                if a in seen or a not in records:
                    break
                seen.add(a)
                out.append(records[a])
        return out
