"""One attempt from its start to what follows its end: the task as the run sees it
(tui.engine.workflow), the executor, then the run's end, its result and the task's next state
stored in one transaction (decided by tui.engine.attempts), and the dependents freed or
cancelled.

A part of ``Engine`` (mixed in, as ``questions`` is): it uses the engine's records, moves and
runs, declared in tui.engine.core, and nothing else of it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from dataclasses import replace
from pathlib import Path

from tui.engine.adapter import RunResult
from tui.engine.attempts import Policy, attempt_move, interrupted_move, task_result
from tui.engine.core import EngineCore
from tui.engine.end_log import STALL_ENV, Ended
from tui.engine.runner import Run, RunHost, ended_as
from tui.engine.workflow import WorkflowError, prepare
from tui.engine.worktree_runs import in_worktree
from tui.model.states import UNSUCCESSFUL, State
from tui.procs.kept_child import KeptChild
from tui.store.db import DiskFullError, Move, RunEndArgs
from tui.store.records import STDERR, RunStart, TaskRecord

log = logging.getLogger(__name__)

# Each state's text by a dict lookup: ``.value`` is a Python-level descriptor call (a run's end).
_VALUES = {s: s.value for s in State}
DISK_FULL_RETRY = 1.0  # seconds between attempts to store a run's end while the disk is full
_STALL = os.environ.get(STALL_ENV, "")  # tests only: see tui.engine.end_log


async def _stall(run_id: int) -> None:
    """The test hook of tui.engine.end_log: die, or wait forever, with the end recorded."""
    if _STALL == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    (Path(_STALL) / str(run_id)).touch()
    await asyncio.Future()


class EndLeft(Exception):
    """The engine is stopping and a full disk refuses a run's end: its end is left to the
    next engine, which finishes the run from whatever holds it (``Run.end_held``)."""


def _kept_by_keeper(run: Run) -> bool:
    """Whether the run's end outlives this engine without the end log: an adoptable agent's
    keeper keeps its exit and its output not acknowledged until the end is stored and the
    child released (``_finish``), and the next engine finishes it from there as this one
    would (tui.engine.adoption: the outcome follows from the exit code and the output). Not
    when the engine decided the outcome (a timeout, a cancel, a full disk, a lost keeper):
    the exit code would not say it. The end log's JSON and write were ~7 % of the main
    thread's CPU on a DAG of quick commands."""
    proc = run.proc
    return isinstance(proc, KeptChild) and proc.kept_on and not run.kill_reason


class RunEnd(EngineCore):
    # -- one attempt ---------------------------------------------------------------------------

    async def _execute(self, run: Run, began: RunStart, host: RunHost) -> None:
        rec = self._tasks[run.task_id]
        task = rec.task  # a property of the record: read once
        if task.group or task.foreach is not None:
            # A parent retried by hand runs nothing: it goes back to waiting on its children.
            await self._finish(run, RunResult(State.COMPLETED, exit_code=0))
            return
        # talk and loops are imported by the runs that use them alone: a plain run never does.
        if began.questions:  # a message of a person's to show first (most runs have none)
            from tui.engine.talk import show_continuation

            await show_continuation(self.output, run, began)
        if task.until:  # an iteration: {{previous.result}} filled
            from tui.engine.loops import with_previous

            rec = with_previous(rec)
        try:
            prepared = prepare(rec, self._tasks.get)
        except WorkflowError as e:
            await self._finish(run, RunResult(State.FAILED, error=str(e)))
            return
        for dep_id, summary in prepared.summaries.items():
            # Kept with the upstream task (made again the same if this run is started again).
            await self.store.set_summary(dep_id, summary)
            if dep_id in self._tasks:
                self._tasks[dep_id] = replace(self._tasks[dep_id], summary=summary)
        try:
            if prepared.rec.task.worktree is None:  # no context manager's steps to go through
                result = await self.executor.run(run, prepared.rec, began, host)
            else:
                async with in_worktree(self.worktrees, prepared.rec, run, host) as (here, failed):
                    result = failed or await self.executor.run(run, here, began, host)
        finally:
            prepared.cleanup()
        await self._finish(run, result)

    async def _requeue_interrupted(self, task_id: str) -> None:
        move = interrupted_move(self._get(task_id))
        new = await self._move(task_id, move.expected, move.to, move.reason, **move.updates)
        if new is not None:
            self._enqueue(new)

    async def _attempt_moved(self, task_id: str, outcome: State, retrying: bool) -> None:
        if outcome in (State.COMPLETED, State.SKIPPED):
            await self._dependents_may_run(task_id)
        elif outcome == State.QUEUED:  # an until: loop's next iteration
            self._enqueue(self._tasks[task_id])
        elif not retrying and outcome in UNSUCCESSFUL:
            await self._cascade_failure(task_id)

    async def _finish(self, run: Run, result: RunResult) -> None:
        self._paced(run)
        task_id = run.task_id
        rec = self._tasks[task_id]
        task = rec.task  # a property of the record: read once
        outcome, error = ended_as(run, rec, result)
        if outcome == State.COMPLETED and task.output_format is not None:
            outcome, error, stored = await self._check_output(run, result)
        else:
            outcome, error, stored = task_result(task, outcome, error, result)
        if run.open_questions:
            await self._close_run_questions(run, "cancelled")
        if self._tasks[task_id].state == State.READY and outcome != State.CANCELLED:
            # The agent ended while waiting on a person; READY only leaves through RUNNING.
            await self._move(task_id, State.READY, State.RUNNING, "the agent stopped while waiting")
        if error and outcome != State.COMPLETED and run.kill_reason != "unstarted":
            # Not for a run given back unstarted: nothing of it ran, and the task's log would
            # open with it before the output of the run that did (the journal says why).
            await self.output.add(run, STDERR, [f"[tui] {error}"])
        # The agent is done and its output read: from here a kill -9 must not make the next
        # engine run it again (tui.engine.end_log), unless its keeper keeps the end already.
        kept = _kept_by_keeper(run)
        recorded = not kept and self._record_end(run, outcome, error, stored, result)
        run.end_held = "keeper" if kept else "log" if recorded else ""
        if _STALL and (recorded or kept):
            await _stall(run.run_id)
        left = False
        try:
            await self.output.flush()
            if run.kill_reason == "disk_full" and outcome != State.FAILED:
                # Its last lines met a full disk after it ended: it cannot count as done with
                # output missing (the reason names the file and what to do).
                outcome, error, stored = State.FAILED, run.kill_error, None
            if run.recorded is not None:
                try:
                    await run.recorded
                except Exception:  # the run row lacks its pid; recovery then leaves it alone
                    log.exception("could not store the process of run %s", run.run_id)
            await self._finish_stored(run, outcome, error, stored, result)
        except EndLeft:  # in the end log for the next engine, or an interrupted run
            left = True
        finally:
            if recorded and self.end_log is not None and not left:
                self.end_log.done()
            self.output.forget(run.run_id)
            if isinstance(run.proc, KeptChild):  # its end is stored: the keeper may forget it
                run.proc.release()

    async def _finish_stored(
        self, run: Run, outcome: State, error: str, stored: str | None, result: RunResult
    ) -> None:
        """The end of a run whose output is stored, the outcome decided: the run's end and the
        task's next state committed, then what follows for others. Also recovery's way to
        finish a run the end log names (tui.engine.end_log)."""
        task_id = run.task_id
        rec = self._tasks[task_id]
        if run.kill_reason == "unstarted" and await self._unstarted(run, rec, error):
            return
        task = rec.task  # a property of the record: read once
        interrupted = run.interrupted and outcome != State.COMPLETED
        review = outcome == State.COMPLETED and task.review and not interrupted
        # The run's end, the result and the task's next state share one transaction.
        move: Move | None
        if interrupted:
            move, retrying, stored = interrupted_move(rec), False, None
        elif review:
            move, retrying = None, False
        else:
            move, retrying = attempt_move(
                rec,
                outcome,
                error or "exit code 0",
                policy=Policy.of(task, self.defaults),
                now=self.clock.now(),
                rng=self.rng,
            )
            if move.to == State.COMPLETED and task.until:
                from tui.engine.loops import until_move

                done = [r for r in await self.store.runs(task_id) if r.outcome == "COMPLETED"]
                move = until_move(rec, move, stored, len(done), self._tasks.get)
            if move.to == State.COMPLETED and self._waits_on_children(task_id):
                why = "its run completed; waiting on its subtasks"
                move = Move(task_id, move.expected, State.BLOCKED, why, move.updates)
        # The slot this run leaves goes to the next queued task in the same transaction.
        nxt = None if interrupted or review else self._next_for_slot(task_id)
        new, began = await self._end_run(
            run, outcome, interrupted, error, result, move, stored, rec, nxt
        )
        self._running.pop(task_id, None)
        if new is not None:
            self._took(new)
        if began is not None:  # into the slot just left, before anything else may look at it
            await self._launch(began)
        if new is None and not review:  # the task moved meanwhile; its totals did change
            fresh = await self.store.get_task(task_id)
            if fresh is not None:
                self._took(fresh)
        if review:
            await self._raise(task_id, None, "review", {"result": result.result or ""})
            return
        if new is not None and interrupted:
            self._enqueue(new)  # for the next engine: this one is stopping
        elif new is not None:
            self._changed_now(schedule=self._loop_has_work(task_id))
            await self._attempt_moved(task_id, new.state, retrying)
        if outcome == State.CANCELLED:
            await self._cascade_failure(task_id)
        self._changed_now(schedule=self._loop_has_work(task_id))

    async def _unstarted(self, run: Run, rec: TaskRecord, why: str) -> bool:
        """A run sent ahead that never started: taken back whole (its row, its attempt), the
        task queued again to wait for a slot as it did. False if it could not be (the task
        moved meanwhile): it then ends as any interrupted run."""
        move = Move(rec.id, State.RUNNING, State.QUEUED, why)
        new = await self.store.unstart_run(run.run_id, move, base=rec)
        if new is None:
            return False
        self._running.pop(rec.id, None)
        self._took(new)
        self._enqueue(new)
        self._changed_now()
        return True

    def _loop_has_work(self, task_id: str) -> bool:
        """Whether the schedule loop may have something to do after ``task_id``'s run ended:
        a slot free (its successor not started in the end's transaction, or one free
        already), a retry to time, a parent to settle. An end that handed its slot to the
        next queued task, every slot taken, leaves it nothing: not woken, it saves a wake-up
        and ~9 calls a task. What else the end causes wakes it by itself (``_enqueue``, a
        ``_move``, a cascade)."""
        return (
            len(self._running) < self.queue.concurrency + self._ahead()
            or task_id in self._retrying
            or bool(self._subtask_dirty)
        )

    def _record_end(
        self, run: Run, outcome: State, error: str, stored: str | None, result: RunResult
    ) -> bool:
        """The end in the end log, before it is stored; True if it is there."""
        if self.end_log is None:
            return False
        chunks, raw = self.output.unstored(run.run_id)
        return self.end_log.write(
            Ended(
                run.run_id, run.task_id, run.attempt, outcome, error, stored, result,
                run.kill_reason, run.seq, run.raw_seq, chunks, raw,
            )
        )  # fmt: skip

    def _end_logged(
        self, run: Run, outcome: State, error: str, stored: str | None, result: RunResult
    ) -> bool:
        """The run's end is in the end log: it was, or it is now (a kept agent's, whose
        keeper is about to be stopped)."""
        if run.end_held != "log" and self._record_end(run, outcome, error, stored, result):
            run.end_held = "log"
        return run.end_held == "log"

    async def _finish_ended(self, ended: Ended) -> None:
        """Recovery: a dead engine's run whose agent had exited and whose end was recorded
        (tui.engine.end_log) ends as it was about to, with its real exit code; the lines it
        had not stored are stored now (those it had are not stored twice)."""
        rec = self._tasks.get(ended.task_id)
        if rec is None or rec.state != State.RUNNING:
            await self.store.end_run(ended.run_id, outcome="interrupted", error="interrupted")
            return
        text_seq, raw_seq = await self.store.run_stored(ended.run_id)
        self.output.restore(
            [c for c in ended.chunks if c[3] > text_seq],
            [r for r in ended.raw if r[2] > raw_seq],
        )
        await self.output.flush()
        outcome, error, stored = ended.outcome, ended.error, ended.stored
        if ended.chunks and (await self.store.run_stored(ended.run_id))[0] < ended.seq:
            # Its last lines still meet a full disk: not done with output missing.
            outcome, error, stored = State.FAILED, "its last lines could not be stored", None
        run = Run(ended.task_id, ended.run_id, ended.seq, ended.raw_seq, attempt=ended.attempt)
        run.kill_reason = ended.kill_reason
        await self._finish_stored(run, outcome, error, stored, ended.result)

    async def _check_output(self, run: Run, result: RunResult) -> tuple[State, str, str | None]:
        """(COMPLETED, a kept parse error or "", the checked result as JSON), or (FAILED, why,
        None) — retry applies. See tui.engine.validation."""
        rec = self._tasks[run.task_id]
        assert rec.task.output_format is not None
        # Imported by tasks with an output_format alone: a plain run never loads it.
        from tui.engine.validation import check_result, validator_cwd, validator_env

        env = validator_env(rec, run.run_id, run.attempt, self.engine_id, self.db_path)
        checked = await check_result(
            rec.task.output_format, result.result, cwd=validator_cwd(rec.task), env=env
        )
        if checked.lines:
            await self.output.add(run, STDERR, [f"[validate] {ln}" for ln in checked.lines])
        if checked.error:
            return State.FAILED, checked.error, None
        if checked.note:
            await self.output.add(run, STDERR, [f"[tui] {checked.note}"])
            await self.store.add_event(run.task_id, "note", {"note": checked.note})
        return State.COMPLETED, checked.note, json.dumps(checked.value)

    async def _end_run(
        self,
        run: Run,
        outcome: State,
        interrupted: bool,
        error: str,
        result: RunResult,
        move: Move | None,
        stored: str | None,
        rec: TaskRecord,
        nxt: str | None,
    ) -> tuple[TaskRecord | None, RunStart | None]:
        """Store the run's end (and start ``nxt``'s run with it): the task ``move`` moved,
        and the next run as started (None if ``nxt`` was not QUEUED any more)."""
        end: RunEndArgs = {
            "outcome": "interrupted" if interrupted else _VALUES[outcome],
            "exit_code": result.exit_code,
            "error": error,
            "cost_usd": result.cost_usd,
            "tokens_in": result.tokens_in,
            "tokens_out": result.tokens_out,
            "session_id": result.session_id,
            "then": move,
            "result": stored,
            "base": rec,
        }
        while True:
            try:
                if nxt is None:
                    return await self.store.end_run(run.run_id, **end), None
                start = (nxt, self.engine_id, self._tasks.get(nxt))
                return await self.store.end_run_then_start(run.run_id, start, **end)
            except DiskFullError as e:  # the run's end is stored once there is room again
                if nxt is not None:  # not started meanwhile: back to the queue
                    self._enqueue(self._tasks[nxt])
                    nxt = None
                if self.room is not None and self.room.give_back():  # tui.engine.room
                    log.error("%s; the room kept for run ends is given back", e)
                    continue
                if self._stopping and (
                    interrupted or self._end_logged(run, outcome, error, stored, result)
                ):
                    # Waiting for room would hold the stop (`tui daemon stop`) for as long as
                    # the disk stays full: the next engine finishes the run from the end log
                    # (which keeps room of its own), or runs an interrupted one again.
                    then = "run again" if interrupted else "finished from the end log"
                    log.error("%s; run %s is left to the next engine (%s)", e, run.run_id, then)
                    self._ends_left.append(run)
                    raise EndLeft(run.run_id) from None
                if not run.waiting_room:  # once, not at each try: a disk may stay full for hours
                    log.error("%s; run %s ends when it can be stored", e, run.run_id)
                run.waiting_room = True
                await asyncio.sleep(DISK_FULL_RETRY)
