"""Subtasks: a parent waits in BLOCKED on its children and ends as ``completion`` says.

A part of ``Engine`` (mixed in, as ``run_end`` is). A parent is a file's group (it runs
nothing; PENDING -> BLOCKED once its dependencies are done) or an agent's task whose run
created children through the MCP ``create_subtask`` tool (RUNNING -> BLOCKED when its run
completes with children unfinished). Children run only while their parent is RUNNING or
BLOCKED. ``completion: all``: every child satisfied completes the parent, a child failed for
good fails it. ``any``: the first COMPLETED child completes it. Either way the children
still unfinished are cancelled (running ones killed with their process group).

Work is driven by ``_took``: each record a transaction returns marks its task and its
parent to be looked at; the schedule loop settles them (``_settle_subtasks``) before it
starts anything, so the decision is made from the stored states, and again after a crash
(recovery marks every parent).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Collection
from typing import Any

from tui.engine import foreach
from tui.engine.children import Children
from tui.engine.core import EngineCore
from tui.engine.errors import EngineError
from tui.engine.graph import failed_for_good
from tui.engine.workflow import WorkflowError
from tui.model.states import ENDED, SATISFIED, State, label
from tui.model.subtasks import Completion
from tui.store.db import StoreError
from tui.store.records import TaskRecord

# A child may start while its parent is in one of these.
PARENT_LETS_RUN = frozenset({State.RUNNING, State.BLOCKED, State.READY})


class Subtasks(EngineCore):
    def _index_children(self, records: Collection[TaskRecord]) -> None:
        for r in records:
            # A stored spec is read as JSON, not validated: a settled record keeps it unparsed.
            parent = (
                r.spec_fields("parent_task_id")[0]
                if isinstance(r.spec, str)
                else r.task.parent_task_id
            )
            if not parent:
                continue
            self._parent[r.id] = parent
            if self._children.setdefault(parent, Children()).add(r):
                self._subtask_dirty.add(parent)

    def _mark_subtask(self, rec: TaskRecord) -> None:
        """``rec`` changed: it and its parent may have something to settle."""
        if rec.id in self._children:
            self._subtask_dirty.add(rec.id)
        parent = self._parent.get(rec.id)
        if parent:
            self._children[parent].update(rec)
            self._subtask_dirty.add(parent)

    def _parent_lets_run(self, rec: TaskRecord) -> bool:
        """Whether the parent lets ``rec`` leave PENDING now; within its ``max_parallel``
        the slot is reserved at once (callers check several children before any moves)."""
        parent_id = self._parent.get(rec.id)
        parent = self._tasks.get(parent_id) if parent_id else None
        if parent is None:
            return True
        if parent.state not in PARENT_LETS_RUN:
            return False
        bound = parent.task.max_parallel
        if bound:
            kids = self._children[parent.id]
            if kids.busy >= bound:
                return False
            kids.reserved.add(rec.id)
        return True

    async def _as_parent(self, rec: TaskRecord, to: State, reason: str) -> tuple[State, str]:
        """Where a task that may run goes when it is a parent: a group or a foreach (its
        children made and stored first, once) waits on its children in BLOCKED."""
        if to != State.QUEUED or not (rec.task.group or rec.task.foreach is not None):
            return to, reason
        if rec.task.group:
            return State.BLOCKED, "waiting on its subtasks"
        try:
            items = foreach.items_of(rec, self._tasks.get)
            if rec.id not in self._children and items:  # not again after a crash
                made = await self.store.insert_tasks(foreach.children(rec, items), approved=True)
                self._index(made)
        except (WorkflowError, StoreError) as e:
            return State.FAILED, f"{rec.name}: {e}"
        return State.BLOCKED, f"waiting on its {len(items)} foreach items"

    def _waits_on_children(self, task_id: str) -> bool:
        """A parent whose own run just completed still has children to wait for (a group or
        a foreach always ends through BLOCKED, where its result is made)."""
        if self._tasks[task_id].task.group or self._tasks[task_id].task.foreach is not None:
            return True
        kids = self._children.get(task_id)
        if not kids:
            return False
        if self._tasks[task_id].task.completion == Completion.ANY:
            return not kids.completed
        return kids.over - kids.lost < len(kids)  # not every one satisfied

    async def _settle_subtasks(self) -> None:
        while self._subtask_dirty:
            parent_id = self._subtask_dirty.pop()
            parent = self._tasks.get(parent_id)
            if parent is not None and parent_id in self._children:
                await self._settle_parent(parent)

    async def _settle_parent(self, parent: TaskRecord) -> None:
        # Each look costs O(1) in the number of children (their counts), so a parent of many
        # settles in linear time; only its final move (and a cancel) walks them all, once.
        kids = self._children[parent.id]
        if parent.state == State.BLOCKED:
            await self._blocked_parent(parent, kids)
        elif parent.state == State.SKIPPED:
            for k in list(kids.pending):
                await self._move(k, State.PENDING, State.SKIPPED, f"{parent.name} was skipped")
        elif (
            kids.live
            and parent.state in ENDED
            and (parent.state in SATISFIED or failed_for_good(parent))
        ):
            await self._cancel_children(kids, f"{parent.name} ended {label(parent.state)}")

    async def _blocked_parent(self, parent: TaskRecord, kids: Children) -> None:
        bound = parent.task.max_parallel
        for k in list(kids.pending):  # the parent now lets them run
            if bound and kids.busy >= bound:
                break  # the rest wait for a slot: the next child to end frees one
            await self._check_pending(k)
        over = kids.over == len(kids)
        updates: dict[str, Any] = {}
        if parent.task.completion == Completion.ANY:
            if kids.completed:
                done = self._first_of(kids, lambda k: k.state == State.COMPLETED)
                to, reason = State.COMPLETED, f"subtask {done.name} done (completion: any)"
                if parent.task.group or parent.task.foreach is not None:
                    updates["result"] = done.result
            elif over:
                to, reason = State.FAILED, "no subtask done (completion: any)"
            else:
                return
        elif kids.lost:
            lost = self._first_of(kids, failed_for_good)
            to, reason = State.FAILED, f"subtask {lost.name} ended {label(lost.state)}"
        elif over:
            to, reason = State.COMPLETED, _all_done(len(kids))
            recs = [self._tasks[k] for k in kids]
            if parent.task.foreach is not None:
                updates["result"] = json.dumps([_value(k) for k in recs])
            elif parent.task.group:
                updates["result"] = json.dumps({k.name.rsplit(".", 1)[-1]: _value(k) for k in recs})
        else:
            return
        new = await self._move(parent.id, State.BLOCKED, to, reason, **updates)
        if new is None:
            return
        await self._cancel_children(kids, reason)
        if to == State.COMPLETED:
            await self._dependents_may_run(parent.id)
        else:
            await self._cascade_failure(parent.id)

    def _first_of(self, kids: Children, test: Callable[[TaskRecord], bool]) -> TaskRecord:
        """The first child (in submit order) that passes ``test``; the counts say one does."""
        return next(r for r in (self._tasks[k] for k in kids) if test(r))

    async def _cancel_children(self, kids: Children, why: str) -> None:
        """Cancel every child not yet ended (a running one is killed, its group with it)."""
        reason = f"cancelled: {why}"
        live = [k for k in kids if self._tasks[k].state not in ENDED]
        if not live:
            return

        async def one(child_id: str) -> None:
            with contextlib.suppress(EngineError):
                await self.cancel(child_id, reason)

        await asyncio.gather(*(one(c) for c in live))


def _value(rec: TaskRecord) -> Any:
    """A child's result inside its group's (results are stored as JSON)."""
    return rec.parsed_result


def _all_done(n: int) -> str:
    """The parent's reason in the list's words ("done", as `tui ls` and the app say)."""
    return "its subtask done" if n == 1 else f"all {n} subtasks done"
