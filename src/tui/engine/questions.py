"""Questions, approvals and reviews: a task waits (READY) on a person, and the answer is
delivered exactly once — to the agent still waiting, or to the next run when it is gone.

A part of ``Engine`` (mixed in): it uses the engine's task records, moves and runs, declared
in tui.engine.core, and nothing else of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

from tui.engine.core import EngineCore
from tui.engine.errors import EngineError
from tui.engine.runner import Run
from tui.model.states import State, being
from tui.store.records import QuestionRecord, TaskRecord


class Questions(EngineCore):
    def __init__(self) -> None:
        # The agent waiting on each open question it asked (by question id).
        self._waiters: dict[str, asyncio.Future[dict[str, Any] | None]] = {}

    # -- commands ------------------------------------------------------------------------------

    async def questions(self, task_id: str | None = None) -> list[QuestionRecord]:
        """Open questions, newest first."""
        return await self.store.questions(task_id=task_id)

    async def answer(self, question_id: str, answer: dict[str, Any]) -> str:
        """Deliver a person's answer exactly once (a second answer is refused)."""
        q = await self._open_question(question_id)
        if q.kind == "review":
            accept = bool(answer.get("accept"))
            return await (
                self.accept(q.task_id)
                if accept
                else self.reject(q.task_id, str(answer.get("comment", "")))
            )
        if not await self.store.close_question(q.id, "answered", answer):
            raise EngineError("that question was answered meanwhile")
        await self._question_closed(q, answer)
        return f"answered {self._get(q.task_id).name}"

    async def expire(self, question_id: str) -> str:
        """Give up waiting for an answer (the asker timed out)."""
        q = await self._open_question(question_id)
        if await self.store.close_question(q.id, "expired"):
            await self._question_closed(q, None)
        return "expired"

    async def accept(self, task_id: str) -> str:
        rec, q = await self._review_of(task_id)
        if not await self.store.close_question(q.id, "answered", {"accept": True}):
            raise EngineError("that review was answered meanwhile")
        if await self._move(task_id, State.READY, State.COMPLETED, "accepted in review"):
            await self._dependents_may_run(task_id)
        return f"accepted {rec.name}"

    async def reject(self, task_id: str, comment: str) -> str:
        rec, q = await self._review_of(task_id)
        if not comment.strip():
            raise EngineError("say what to change: a rejection needs a comment")
        if not await self.store.close_question(
            q.id, "answered", {"accept": False, "comment": comment}
        ):
            raise EngineError("that review was answered meanwhile")
        # Runs again (adapters resume the session with the comment) in a fresh round of attempts.
        await self._move(
            task_id,
            State.READY,
            State.PENDING,
            "rejected in review",
            rejection_comment=comment,
            attempt_base=rec.attempts,
        )
        await self._check_pending(task_id)
        return f"rejected {rec.name}; it runs again with your comment"

    async def ask(self, task_id: str, run_id: int, kind: str, payload: dict[str, Any]) -> str:
        """A question from inside a running task (``tui ask``); returns the question id."""
        run = self._running.get(task_id)
        if run is None or run.run_id != run_id:
            raise EngineError("that task run is not running under this engine")
        return await self._raise(task_id, run, kind, payload)

    # -- for runs (RunHost) ------------------------------------------------------------------

    async def ask_person(
        self, run: Run, kind: str, payload: dict[str, Any]
    ) -> dict[str, Any] | None:
        """An agent's question: READY until a person answers; None if it expired."""
        question_id = await self._raise(run.task_id, run, kind, payload)
        waiter = self._waiters.get(question_id)
        if waiter is None:
            return None
        try:
            return await asyncio.shield(waiter)
        except asyncio.CancelledError:
            # The agent withdrew the request (or the run ended): nobody waits any more.
            with contextlib.suppress(EngineError):
                await self.expire(question_id)
            raise

    # -- inside ------------------------------------------------------------------------------

    async def _open_question(self, question_id: str) -> QuestionRecord:
        q = await self.store.get_question(question_id)
        if q is None:
            raise EngineError(f"no question with id {question_id!r}")
        if q.status != "open":
            raise EngineError(f"that question is already {q.status}")
        return q

    async def _review_of(self, task_id: str) -> tuple[TaskRecord, QuestionRecord]:
        rec = self._get(task_id)
        reviews = [q for q in await self.store.questions(task_id=task_id) if q.kind == "review"]
        rec = self._get(task_id)
        if rec.state != State.READY or not reviews:
            raise EngineError(f"{rec.name} {being(rec.state)} and not waiting for a review")
        return rec, reviews[0]

    async def _raise(
        self, task_id: str, run: Run | None, kind: str, payload: dict[str, Any]
    ) -> str:
        """Store an open question and put the task in READY; returns the question id."""
        rec = self._get(task_id)
        question_id = uuid.uuid4().hex
        new = await self.store.raise_question(
            question_id,
            task_id,
            run.run_id if run else None,
            kind,
            payload,
            expected=(State.RUNNING, State.READY),
            base=rec,
        )
        if new is None:
            rec = self._get(task_id)
            raise EngineError(f"{rec.name} {being(rec.state)}; it cannot ask now")
        # Memory changes before the next await, so viewers woken by the journal see it.
        self._took(new)
        if run is not None:
            run.open_questions.add(question_id)
            run.pause_clock()
            self._waiters[question_id] = asyncio.get_running_loop().create_future()
        self._changed_now()
        return question_id

    async def _question_closed(self, q: QuestionRecord, answer: dict[str, Any] | None) -> None:
        waiter = self._waiters.pop(q.id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(answer)
        run = self._running.get(q.task_id)
        if run is not None and q.id in run.open_questions:
            run.open_questions.discard(q.id)
            if not run.open_questions:
                await self._move(
                    q.task_id,
                    State.READY,
                    State.RUNNING,
                    "answered" if answer is not None else "no answer in time",
                )
                run.resume_clock()
            else:
                self._changed_now()
        elif self._get(q.task_id).state == State.READY and answer is not None:
            # The agent that asked is gone (e.g. the engine restarted): run the task again;
            # adapters that keep sessions resume with the answer.
            await self._move(
                q.task_id,
                State.READY,
                State.PENDING,
                "answered after the agent stopped; running again",
                attempt_base=self._get(q.task_id).attempts,
            )
            await self._check_pending(q.task_id)
        else:
            self._changed_now()

    async def _close_run_questions(self, run: Run, status: str) -> None:
        for question_id in list(run.open_questions):
            await self.store.close_question(question_id, status)
            waiter = self._waiters.pop(question_id, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        run.open_questions.clear()
