"""What runs next: the engine's record of each task (``_took``, ``_move``), dependencies met
or failed (``graph`` says what they mean; ``when:`` conditions), the queue of runnable tasks,
automatic retries coming due, and starting runs in free slots. A part of ``Engine``
(tui.engine.scheduler), kept apart from its commands, recovery and a run's end (``run_end``).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from tui.engine.adapter import RunResult
from tui.engine.core import EngineCore
from tui.engine.graph import Graph
from tui.engine.queue import RunQueue
from tui.engine.runner import Run
from tui.engine.workflow import WorkflowError, needs_of
from tui.model.states import UNSUCCESSFUL, State, label
from tui.model.task import Task, priority_rank
from tui.store.db import Move
from tui.store.records import TaskRecord

# Why a task whose dependencies are done queues (the journal's reason).
READY = "ready to run"
# Runs sent ahead of a free slot, at most (and at most the concurrency): their agents start at
# the keeper the moment one of the runs going on ends, without the engine's round trip
# (tui.procs.keeper_slots). Only while runs are quick: QUICK seconds from their agent's start
# to their end, the last ``concurrency`` of them in a row. A longer one stops it; then a run
# sent ahead would wait for long (shown RUNNING, its agent not started) or be given back.
AHEAD = 8
QUICK = 0.05
# After a run sent ahead was given back (runs are not all quick), twice as many quick runs in a
# row are needed before more are sent (up to this many times the concurrency); a long quick
# stretch earns the trust back. A steady mix of quick and slow runs then stops sending ahead
# after a withdrawal or two instead of giving a run back about once per slow run.
BACKOFF_MOST = 64

if TYPE_CHECKING:
    from tui.engine.hooks import HookRunner
    from tui.engine.runner import RunHost
    from tui.store.records import RunStart


class Dispatch(EngineCore):
    id: str
    graph: Graph
    queue: RunQueue
    _retrying: set[str]
    _runners: set[asyncio.Task[None]]
    _wake: asyncio.Event
    _batch: asyncio.Lock
    _started: bool
    _quick: int  # runs in a row that were quick (QUICK)
    _backoff: int  # the quick runs needed, in concurrencies (BACKOFF_MOST)
    _ahead_most: int  # AHEAD, or what the engine was made with
    _adopted_runs: int  # runs going on under a dead engine's keeper (tui.engine.adoption)
    _holds: Callable[[TaskRecord], bool] | None  # the executor's: a run may be sent ahead
    hooks: HookRunner

    def _took(self, rec: TaskRecord) -> None:
        """The store returned ``rec`` as a transaction left it: it replaces what we knew."""
        self._tasks[rec.id] = rec
        self._track_retry(rec)
        self._mark_subtask(rec)

    async def _move(
        self,
        task_id: str,
        expected: State | Collection[State],
        to: State,
        reason: str,
        **updates: Any,
    ) -> TaskRecord | None:
        """Compare-and-set ``task_id`` to ``to``; the updated record, or None if refused."""
        # A new spec (a classified task's) is read back from the store, not lent by ours.
        base = None if "spec" in updates else self._tasks.get(task_id)
        new = await self.store.transition(task_id, expected, to, reason, base=base, **updates)
        if new is not None:
            self._took(new)
            self._changed_now()
        return new

    def _track_retry(self, rec: TaskRecord) -> None:
        """Keep the set of tasks with a pending automatic retry (scanned on every wake)."""
        if rec.retry_at is not None and rec.state in UNSUCCESSFUL:
            self._retrying.add(rec.id)
        else:
            self._retrying.discard(rec.id)

    # -- dependencies (what they mean is in ``graph``) ---------------------------------------

    def _pending(self, task_id: str) -> bool:
        rec = self._tasks.get(task_id)
        return rec is not None and rec.state == State.PENDING

    async def _check_pending(self, task_id: str) -> None:
        """Queue a PENDING task whose dependencies are done, skip it if its condition is
        false, or cancel it if a dependency failed. A skip frees its own dependents: they are
        checked in the same pass (a worklist, so a long chain of skips needs no recursion)."""
        work = [task_id]
        while work:
            tid = work.pop()
            rec = self._tasks.get(tid)
            if rec is None or rec.state != State.PENDING:
                continue
            failed = self.graph.blocking(rec, self._tasks.get)
            if failed is not None:
                await self._cancel_dependents([(tid, failed.id)], tid)
                continue
            if not rec.approved or self.graph.open_deps(tid) or not self._parent_lets_run(rec):
                continue
            to, reason = await self._as_parent(rec, *self._condition(rec))
            updates: dict[str, Any] = {}
            if rec.task.classify_by:  # its classifier answered: its agent, stored as it queues
                # Imported by the tasks that classify alone: a plain run never does.
                from tui.engine.classifying import classified

                spec, said = classified(rec, self._tasks.get)
                if spec is None:
                    to, reason = State.FAILED, f"{rec.name}: {said}"
                else:
                    updates["spec"] = spec.model_dump_json()
                    reason = f"{said}; {reason}"
            new = await self._move(tid, State.PENDING, to, reason, **updates)
            if new is None:
                continue
            if to == State.QUEUED:
                self._enqueue(new)
            elif to == State.SKIPPED:
                work += reversed(self.graph.completed(tid))
            elif to == State.FAILED:
                await self._cascade_failure(tid)

    async def _check_pending_all(self, task_ids: Sequence[str]) -> None:
        """``_check_pending`` of each, together (their transitions share store round trips,
        in this order). When every one is plainly ready to run (see ``_plainly_ready``), as
        the tasks of a submitted file usually are, they queue in one store call and one
        wake-up, not one of each per task (~1,000 futures and loop turns for 1,000 tasks)."""
        plain: list[TaskRecord] = []
        for tid in task_ids:
            rec = self._tasks.get(tid)
            if rec is None or self._waits(rec):
                continue  # _check_pending would leave it as it is
            if not self._plainly_ready(rec):
                plain = []
                break
            plain.append(rec)
        if len(plain) < 2:
            await asyncio.gather(*(self._check_pending(tid) for tid in task_ids))
            return
        moves = [(Move(r.id, State.PENDING, State.QUEUED, READY), r) for r in plain]
        for new in await self.store.move_many(moves):
            if new is not None:
                self._took(new)
                self._enqueue(new)
        self._changed_now()

    def _waits(self, rec: TaskRecord) -> bool:
        """``_check_pending`` leaves ``rec`` as it is: not PENDING, or waiting (on its
        dependencies or an approval) with none of them failed."""
        return rec.state != State.PENDING or (
            (not rec.approved or self.graph.open_deps(rec.id) > 0)
            and self.graph.blocking(rec, self._tasks.get) is None
        )

    def _plainly_ready(self, rec: TaskRecord) -> bool:
        """``rec`` goes PENDING → QUEUED ("ready to run") with nothing else to decide: as
        ``_check_pending`` would move it, without a condition, classifier, compaction,
        subtasks or parent to ask."""
        return (
            rec.state == State.PENDING
            and rec.approved
            and _plain(rec.task)
            and rec.id not in self._parent
            and self.graph.open_deps(rec.id) == 0
            and self.graph.blocking(rec, self._tasks.get) is None
        )

    def _queued_at_submit(self, tasks: Sequence[Task], approved: bool) -> list[str]:
        """The tasks of a submission that ``_check_pending_all`` would queue in one store
        call right after their insert, decided from their specs so that the insert stores
        them QUEUED: every task is either plainly ready (no dependency) or waits on another
        task of the same submission. [] otherwise (a dependency stored before, a child of a
        parent, fewer than two ready): they are stored PENDING and checked once stored."""
        if not approved:
            return []
        new = {t.id for t in tasks}
        ready = []
        for t in tasks:
            if t.parent_task_id:
                return []
            if t.depends_on:
                if not new.issuperset(t.depends_on):
                    return []
            elif _plain(t):
                ready.append(t.id)
            else:
                return []
        return ready if len(ready) >= 2 else []

    def _condition(self, rec: TaskRecord) -> tuple[State, str]:
        """Where a task whose dependencies are done goes: QUEUED, or SKIPPED when its
        ``when:`` is false, or FAILED when the condition cannot be evaluated."""
        if rec.task.compacts:  # a compaction task: its trigger says whether it runs
            # Summaries and conditions are imported by the tasks that use them alone.
            from tui.engine.summaries import compaction_decision

            return compaction_decision(rec, self._tasks.get, self._compactions_decided(rec))
        when = rec.task.when
        if not when:
            return State.QUEUED, READY
        from tui.engine.conditions import holds

        try:
            if holds(when, needs_of(rec, self._tasks.get)):
                return State.QUEUED, f"ready to run (when: {when})"
        except WorkflowError as e:
            return State.FAILED, f"{rec.name}: {e}"
        return State.SKIPPED, f"skipped: when: {when} is false"

    def _compactions_decided(self, rec: TaskRecord) -> int:
        """How many compaction tasks feeding the same dependents as ``rec`` were decided (run
        or skipped) on a completed result already: the count ``trigger: every`` goes by."""
        seen: set[str] = set()
        for dependent in self.graph.dependents(rec.id):
            dep_rec = self._tasks.get(dependent)
            for other in dep_rec.depends_on if dep_rec is not None else ():
                o = self._tasks.get(other)
                if o is None or o.id == rec.id or not o.task.compacts:
                    continue
                up = self._tasks.get(o.task.compacts)
                done = up is not None and up.state == State.COMPLETED
                if done and o.state not in (State.PENDING, State.CANCELLED):
                    seen.add(o.id)
        return len(seen)

    async def _dependents_may_run(self, task_id: str) -> None:
        """``task_id`` just COMPLETED (or was skipped): each dependent waits on one fewer."""
        for dep_id in self.graph.completed(task_id):
            await self._check_pending(dep_id)

    async def _cascade_failure(self, task_id: str) -> None:
        """``task_id`` ended badly for good: cancel every PENDING task that waits on it."""
        await self._cancel_dependents([], task_id)

    async def _cancel_dependents(self, first: list[tuple[str, str]], root: str) -> None:
        """Cancel ``first`` (task, the dependency that failed) and everything the graph says
        waits on ``root`` through PENDING tasks: one store transaction, however many."""
        cancels = first + self.graph.cascade(root, self._pending)
        if not cancels:
            return
        cancelled = {tid for tid, _ in cancels}
        moves = []
        for tid, cause in cancels:
            dep = self._tasks[cause]
            state = State.CANCELLED if cause in cancelled else dep.state
            reason = f"dependency {dep.name} ended {label(state)}"
            moves.append((Move(tid, State.PENDING, State.CANCELLED, reason), self._tasks[tid]))
        for new in await self.store.move_many(moves):
            if new is not None:
                self._took(new)
        self._changed_now()

    def _enqueue(self, rec: TaskRecord) -> None:
        self.queue.push(priority_rank(rec.task.priority), rec.submit_seq, rec.id)
        self._wake.set()

    # -- scheduling ------------------------------------------------------------------------

    async def _schedule_loop(self) -> None:
        while True:
            self._wake.clear()
            async with self._batch:
                next_due = await self._due_retries()
                await self._settle_subtasks()
                await self._start_runnable()
            if next_due is None:  # the usual case: no tasks to make and cancel per wake
                await self._wake.wait()
                continue
            waits: list[asyncio.Task[Any]] = [
                asyncio.create_task(self._wake.wait()),
                asyncio.create_task(self._sleep_until(next_due)),
            ]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()

    async def _sleep_until(self, when: float) -> None:
        # The delay is taken when the sleep starts, not when it is scheduled: the clock may
        # move in between (a test's clock jumps).
        await self.clock.sleep(when - self.clock.now())

    async def _due_retries(self) -> float | None:
        now = self.clock.now()
        next_due: float | None = None
        for task_id in list(self._retrying):
            rec = self._tasks[task_id]
            if rec.retry_at is None or rec.state not in UNSUCCESSFUL:
                self._retrying.discard(task_id)
                continue
            if rec.retry_at <= now:
                new = await self._move(
                    task_id, rec.state, State.QUEUED, "automatic retry", retry_at=None
                )
                if new is not None:
                    self._enqueue(new)
            elif next_due is None or rec.retry_at < next_due:
                next_due = rec.retry_at
        return next_due

    async def _start_runnable(self) -> None:
        ahead = self._ahead()
        holdable = self._holdable if ahead else None
        picked = self.queue.pick(
            self._busy(), self._agent_type, self._runnable, ahead=ahead, holdable=holdable
        )
        # Started together, so their store calls share one round trip; a slot is taken only
        # once its run is stored, and nothing else starts tasks meanwhile (this loop is the
        # only caller, and it waits here).
        if picked:
            await asyncio.gather(*(self._start(task_id) for task_id in picked))

    async def _start(self, task_id: str) -> None:
        began = await self.store.start_run(task_id, self.id, self._tasks.get(task_id))
        await self._launch(began)

    def _next_for_slot(self, freeing: str) -> str | None:
        """The queued task that takes over the slot of ``freeing``'s run as it ends, so that
        its start rides in the end's transaction (one store round trip and no wake-up of the
        schedule loop per task); None when there is none or the schedule loop is picking
        (its picks are not yet counted in ``_running``), or the engine is stopping.
        The task is taken off the queue: it is started by the caller or put back."""
        if not self._started or self._batch.locked() or not len(self.queue):
            return None
        ahead = self._ahead()
        picked = self.queue.pick(
            self._busy(freeing),
            self._agent_type,
            self._runnable,
            most=1,
            ahead=ahead,
            holdable=self._holdable if ahead else None,
        )
        return picked[0] if picked else None

    def _ahead(self) -> int:
        """How many runs may be sent ahead of a free slot now (AHEAD): none with limits per
        agent type (the keeper counts one concurrency), an executor that cannot hold a start
        (Ray, no keeper), runs adopted from a dead engine still going on, or runs that were not
        quick of late."""
        c = self.queue.concurrency
        if self._quick < c * self._backoff or self._holds is None or self.queue.agent_limits:
            return 0
        if self._adopted_runs:  # their agents take slots this engine's keeper does not count
            return 0
        return min(c, self._ahead_most)

    def _holdable(self, task_id: str) -> bool:
        # Not a task with hooks: one sent ahead and given back would call its on_start twice.
        rec = self._tasks[task_id]
        return self._holds is not None and self._holds(rec) and self.hooks.hooks_of(rec) is None

    def _paced(self, run: Run) -> None:
        """``run`` ended: whether runs are quick enough to send some ahead (``_ahead``)."""
        if run.began:
            if time.monotonic() - run.began >= QUICK:
                self._quick = 0
                return
            self._quick += 1
            if self._backoff > 1 and self._quick >= 2 * self.queue.concurrency * self._backoff:
                self._backoff //= 2
        elif run.kill_reason == "unstarted":  # it waited for a slot in vain: runs are long
            self._quick = 0
            self._backoff = min(2 * self._backoff, BACKOFF_MOST)

    def _busy(self, freeing: str | None = None) -> Mapping[str, int]:
        """The runs going on (but ``freeing``'s) per agent type, as ``RunQueue.pick`` takes
        them; with no per-agent limits only their total counts (counting the types of the
        runs was ~5% of a run's end)."""
        if not self.queue.agent_limits:
            return {"": len(self._running) - (freeing in self._running)}
        return Counter(
            self._tasks[r.task_id].task.agent.type
            for tid, r in self._running.items()
            if tid != freeing
        )

    def _agent_type(self, task_id: str) -> str:
        return self._tasks[task_id].task.agent.type

    def _runnable(self, task_id: str) -> bool:
        rec = self._tasks.get(task_id)
        return rec is not None and rec.state == State.QUEUED and task_id not in self._running

    async def _launch(self, began: RunStart | None) -> None:
        """A run stored as started (its row committed): carry it out."""
        if began is None or began.task is None:
            return
        self._took(began.task)
        task_id = began.task.id
        run = Run(task_id, began.run_id, attempt=began.attempt)
        # Its start may wait at the keeper for a slot (it may have been sent ahead) only if it
        # may be given back: never, say, a task with hooks (its on_start would run twice).
        run.may_wait = self._holdable(task_id)
        self._running[task_id] = run
        if not self._started:
            # Stored in a run's end's transaction as the engine began to stop: `stop` does not
            # see this run, so it ends here, nothing started, as interrupted (queued again).
            run.kill_reason = "shutdown"
            await self._finish(run, RunResult(State.FAILED, error="interrupted"))
            return
        run.runner = asyncio.create_task(
            self._execute(
                run, began, cast("RunHost", self)
            )  # Engine is the host, name=f"run-{began.task.name}"
        )
        self._runners.add(run.runner)
        run.runner.add_done_callback(self._runners.discard)
        # A slot taken, nothing freed: the schedule loop is not woken for it (the caller is
        # that loop, or a run's end that wakes it if it has work: ``_loop_has_work``).
        self._changed_now(schedule=False)


def _plain(task: Task) -> bool:
    """Nothing to decide as ``task`` queues: no condition, classifier, compaction, subtasks."""
    return (
        not (task.when or task.classify_by or task.compacts or task.group) and task.foreach is None
    )
