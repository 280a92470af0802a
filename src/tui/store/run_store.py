"""A run's life in the store: its start (with what the attempt needs to know), its process
(noted and written with the next transaction, or with the run's end), its end with the task's
next move in one transaction, or an end and the next start together. Part of
:class:`tui.store.db.Store`, kept apart from the facade over the other tables.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Required, TypedDict, Unpack

from tui.model.states import State
from tui.store import runs, tasks
from tui.store.batch import Tx
from tui.store.records import RunRecord, RunStart, TaskRecord
from tui.store.tasks import Move
from tui.store.tx import Database

_UNCOUNT_ATTEMPT: tasks.Sets = ("attempts = attempts - 1", ())


class _Kept(Exception):
    """``unstart_run``'s transaction taken back: the task was not RUNNING any more."""


class RunEndArgs(TypedDict, total=False):
    """How a run ended, as :meth:`RunStore.end_run` stores it (what is left out: none, zero,
    empty). ``then``: the task's next move in the same transaction; ``result``: the task's
    result (JSON) with it; ``base``: the caller's record of the task."""

    outcome: Required[str]
    exit_code: int | None
    error: str
    cost_usd: float
    tokens_in: int
    tokens_out: int
    session_id: str
    then: Move | None
    result: str | None
    base: TaskRecord | None


class RunStore:
    """The run methods of ``Store`` (its ``_db``; ``_procs`` holds the runs' processes noted
    and not yet written)."""

    _db: Database
    _procs: dict[int, runs.Process]

    # -- a run --------------------------------------------------------------------------------

    async def begin_run(self, task_id: str, engine_id: str) -> tuple[int, int] | None:
        """QUEUED → RUNNING plus a new run row, in one transaction. Returns (run_id, attempt)."""
        began = await self.start_run(task_id, engine_id)
        return (began.run_id, began.attempt) if began else None

    async def start_run(
        self, task_id: str, engine_id: str, base: TaskRecord | None = None
    ) -> RunStart | None:
        """``begin_run``, and in the same transaction what the new attempt may need to know:
        the task's earlier runs and every question asked about it."""
        now = time.time()
        deps = deps_of(base, task_id)
        began = await self._db.call(
            lambda t: runs.start(t, task_id, engine_id, now, deps), quick=True
        )
        if began is not None:
            with_spec(began.task, base)
        return began

    async def unstart_run(
        self, run_id: int, then: Move, base: TaskRecord | None = None
    ) -> TaskRecord | None:
        """A run sent ahead that never started (tui.procs.keeper_slots): its row deleted and
        its task moved by ``then`` (RUNNING → QUEUED) with the attempt it counted taken back,
        in one transaction — its next run is the same attempt, as if this one had never been
        stored (the journal keeps its two rows). Returns the task moved, or None."""
        self._procs.pop(run_id, None)  # no process: nothing noted, but never ride it
        now = time.time()
        deps = deps_of(base, then.task_id)

        def tx(t: Tx) -> TaskRecord | None:
            gone = t.db.execute(
                "DELETE FROM runs WHERE id = ? AND ended_at IS NULL AND pid IS NULL", (run_id,)
            )
            if gone.rowcount != 1:  # started or ended after all: not this to take back
                return None
            moved = tasks.transition(t, then, now, deps=deps, sets=_UNCOUNT_ATTEMPT)
            if moved is None:  # the task moved meanwhile: its run row stays
                raise _Kept
            return moved

        try:
            return with_spec(await self._db.call(tx, quick=True), base)
        except _Kept:
            return None

    async def set_run_process(
        self, run_id: int, pid: int, pgid: int, proc_start: int | Callable[[], int | None] | None
    ) -> None:
        """Record a run's process. ``proc_start`` may be a function: it is then called in the
        database thread (reading /proc for a child still in exec can wait a millisecond)."""
        await self._db.call(lambda t: runs.set_process(t, run_id, pid, pgid, proc_start))

    def note_run_process(
        self, run_id: int, pid: int, pgid: int, proc_start: Callable[[], int | None]
    ) -> None:
        """``set_run_process`` without a round trip of its own: written with the next
        transaction anyone makes (a run's end at the latest), or alone within
        ``tx.RIDE_DELAY``. Until then recovery finds the process by its run's marker. The
        run's end, if called first, writes it in its own statement: one fewer per run."""
        self._note_process(run_id, (pid, pgid, proc_start))

    def _note_process(self, run_id: int, proc: runs.Process) -> None:
        self._procs[run_id] = proc
        self._db.ride(lambda t: self._ride_process(t, run_id, proc))

    def _ride_process(self, t: Tx, run_id: int, proc: runs.Process) -> None:
        # With the batch (the thread, or the loop: tx). Not taken out here: a batch that fails
        # is run again, and this must then write it again. The run's end takes it out.
        if self._procs.get(run_id) is proc:
            runs.set_process(t, run_id, *proc)

    def _take_process(self, run_id: int) -> runs.Process | None:
        """The process noted for ``run_id`` and not written yet, for its end to write."""
        return self._procs.pop(run_id, None)

    def _give_back_process(self, run_id: int, proc: runs.Process | None) -> None:
        """The end that took it was not stored: the process rides again, as noted."""
        if proc is not None and not self._db.closed:
            self._note_process(run_id, proc)

    async def set_run_node(self, run_id: int, node: str) -> TaskRecord | None:
        """Where the run runs (a Ray node id), shown in the task list's NODE column."""
        now = time.time()
        return await self._db.call(lambda t: runs.set_node(t, run_id, node, now))

    async def set_summary(self, task_id: str, summary: str) -> None:
        """Keep a task's summary (JSON, tui.engine.summaries) for its dependents."""
        await self._db.call(lambda t: tasks.set_summary(t, task_id, summary))

    async def set_run_session(self, run_id: int, session_id: str) -> None:
        await self._db.call(lambda t: runs.set_session(t, run_id, session_id))

    async def end_run(self, run_id: int, **end: Unpack[RunEndArgs]) -> TaskRecord | None:
        """Close a run and add its cost and tokens to the task's totals; with ``then``, also
        make that transition in the same transaction (one round trip where two were), its
        journal row carrying the run's end (else a ``run_ended`` row does); with ``result``
        (JSON) store the task's result in it too: a crash never keeps a run's end without its
        result. Returns the task ``then`` moved (None without one, or if it did not happen)."""
        proc = self._take_process(run_id)
        try:
            return await self._db.call(self._end_job(run_id, end, time.time(), proc), quick=True)
        except BaseException:
            self._give_back_process(run_id, proc)
            raise

    async def end_run_then_start(
        self,
        run_id: int,
        start: tuple[str, str, TaskRecord | None],
        **end: Unpack[RunEndArgs],
    ) -> tuple[TaskRecord | None, RunStart | None]:
        """``end_run(run_id, **end)`` and ``start_run(*start)`` in one transaction: the slot
        the ended run leaves goes to the next task in the same store round trip. The new run's
        row is committed before its process is started, as with ``start_run``."""
        task_id, engine_id, base = start
        now = time.time()  # one instant: the new run starts as the last one ends
        proc = self._take_process(run_id)
        ended = self._end_job(run_id, end, now, proc)
        deps = deps_of(base, task_id)

        def tx(t: Any) -> tuple[TaskRecord | None, RunStart | None]:
            return ended(t), runs.start(t, task_id, engine_id, now, deps)

        try:
            moved, began = await self._db.call(tx, quick=True)
        except BaseException:
            self._give_back_process(run_id, proc)
            raise
        if began is not None:
            with_spec(began.task, base)
        return moved, began

    def _end_job(
        self, run_id: int, end: RunEndArgs, now: float, proc: runs.Process | None
    ) -> Callable[[Any], TaskRecord | None]:
        """The transaction of :meth:`end_run`, to run alone or with another; ``proc``, the
        run's process not yet written, is written with the end."""
        then, result, base = end.get("then"), end.get("result"), end.get("base")
        then_deps = deps_of(base, then.task_id) if then is not None else None
        likely = likely_of(base, then.task_id) if then is not None else None
        fields = {
            "outcome": end["outcome"],
            "exit_code": end.get("exit_code"),
            "error": end.get("error", ""),
            "cost_usd": end.get("cost_usd", 0.0),
            "tokens_in": end.get("tokens_in", 0),
            "tokens_out": end.get("tokens_out", 0),
            "session_id": end.get("session_id", ""),
        }

        def tx(t: Any) -> TaskRecord | None:
            # One journal row for both: the task's next state carries the run's end in its
            # data ({"run_id", "outcome", "exit_code", ...}); a run_ended row of its own only
            # when there is no such move or it did not happen. The run's totals and result
            # ride in its task's move too (one statement on the task's row, not two), or go
            # alone if the task does not move.
            ended = runs.end(
                t,
                run_id,
                fields,
                now,
                journal=then is None,
                result=result,
                totals=then is None,
                proc=proc,
            )
            if then is None:
                return None
            if ended is None:
                return with_spec(
                    tasks.transition(t, then, now, deps=then_deps, likely=likely), base
                )
            data = {k: v for k, v in ended.items() if k != "task_id"}
            ride = ended["task_id"] == then.task_id
            sets = runs.totals(fields, result) if ride else tasks.NO_SETS
            moved = tasks.transition(t, then, now, data, then_deps, likely, sets)
            if moved is None or not ride:
                runs.add_totals(t, ended["task_id"], fields, result)
            if moved is None:
                runs.journal_end(t, ended, now)
            return with_spec(moved, base)

        return tx

    async def runs(self, task_id: str | None = None, *, open_only: bool = False) -> list[RunRecord]:
        return await self._db.call(lambda t: runs.select(t, task_id, open_only), write=False)


def deps_of(base: TaskRecord | None, task_id: str) -> list[str] | None:
    """The dependencies of ``task_id`` as ``base`` holds them (they never change once stored)."""
    return base.depends_on if base is not None and base.id == task_id else None


def likely_of(base: TaskRecord | None, task_id: str) -> State | None:
    """The state ``base`` (the caller's record of ``task_id``) says the task is in."""
    return base.state if base is not None and base.id == task_id else None


def with_spec(rec: TaskRecord | None, base: TaskRecord | None) -> TaskRecord | None:
    """``rec`` with the spec ``base`` already parsed (specs never change once stored) while
    the task is in play. A settled task keeps the stored JSON it was read with (parsed again
    only if something reads it): a parsed spec is a few kB of models, and a daemon that has
    run 30,000 tasks must hold what one that just loaded them does."""
    if rec is None or base is None or isinstance(base.spec, str) or rec.settled:
        return rec
    rec.spec = base.spec
    return rec
