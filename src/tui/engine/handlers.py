"""One handler per message of ``tui.engine.api``: what ``Engine.handle`` runs. Every way a
command reaches the engine (in-process, the socket, the CLI with no engine running) ends here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from tui.engine import api, talk
from tui.engine.worktree_runs import worktree_of

if TYPE_CHECKING:
    from tui.engine.scheduler import Engine

M = TypeVar("M", bound=api.Message[Any])
Handler = Callable[["Engine", Any], Awaitable[api.Reply]]
HANDLERS: dict[type[api.Message[Any]], Handler] = {}


def handles(cls: type[M]) -> Callable[[Callable[[Engine, M], Awaitable[api.Reply]]], Handler]:
    def register(fn: Callable[[Engine, M], Awaitable[api.Reply]]) -> Handler:
        HANDLERS[cls] = fn
        return fn

    return register


async def handle(engine: Engine, msg: api.Message[Any]) -> api.Reply:
    handler = HANDLERS.get(type(msg))
    if handler is None:
        from tui.engine.scheduler import EngineError

        raise EngineError(f"{msg.op} is answered by the process that serves the socket")  # type: ignore[attr-defined]
    return await handler(engine, msg)


# -- commands ----------------------------------------------------------------------------------


@handles(api.Submit)
async def _submit(e: Engine, m: api.Submit) -> api.Submitted:
    return api.Submitted(ids=await e.submit(m.tasks, m.approved))


def task_command(cls: type[api.TaskCommand], act: Callable[[Engine, str], Awaitable[str]]) -> None:
    """A task-id command is one call of the engine, whose text is the reply."""

    async def handler(e: Engine, m: api.TaskCommand) -> api.Done:
        return api.Done(text=await act(e, m.task_id))

    HANDLERS[cls] = handler


task_command(api.Approve, lambda e, task_id: e.approve(task_id))
task_command(api.Cancel, lambda e, task_id: e.cancel(task_id))
task_command(api.Retry, lambda e, task_id: e.retry(task_id))
task_command(api.Accept, lambda e, task_id: e.accept(task_id))


@handles(api.Answer)
async def _answer(e: Engine, m: api.Answer) -> api.Done:
    return api.Done(text=await e.answer(m.question_id, m.answer))


@handles(api.Expire)
async def _expire(e: Engine, m: api.Expire) -> api.Done:
    return api.Done(text=await e.expire(m.question_id))


@handles(api.Reject)
async def _reject(e: Engine, m: api.Reject) -> api.Done:
    return api.Done(text=await e.reject(m.task_id, m.comment))


@handles(api.Ask)
async def _ask(e: Engine, m: api.Ask) -> api.Asked:
    question_id = await e.ask(m.task_id, m.run_id, m.kind, m.payload)
    if not m.wait:
        return api.Asked(question_id=question_id)
    waiter = e._waiters.get(question_id)
    if waiter is not None:
        try:
            async with asyncio.timeout(m.timeout or None):  # not wait_for: see daemon.remote
                await asyncio.shield(waiter)
        except TimeoutError:
            await _expire_quietly(e, question_id)
        except asyncio.CancelledError:
            # The asker hung up. If its run is being stopped (cancel, timeout), the run's end
            # closes the question as that; otherwise nobody waits for the answer any more.
            run = e._running.get(m.task_id)
            if run is not None and not run.kill_reason:
                await _expire_quietly(e, question_id)
            raise
    q = await e.store.get_question(question_id)
    if q is None:  # the store lost it: say so rather than pretend an answer
        return api.Asked(question_id=question_id, status="cancelled")
    return api.Asked(question_id=question_id, status=q.status, answer=q.answer)


async def _expire_quietly(e: Engine, question_id: str) -> None:
    from tui.engine.scheduler import EngineError

    with contextlib.suppress(EngineError):  # it may have closed meanwhile
        await e.expire(question_id)


async def _merge(e: Engine, task_id: str) -> str:
    rec, wt = await worktree_of(e, task_id, ending=True)
    return f"{rec.name}: {await e.worktrees.merge(wt, rec.name)}"


async def _discard(e: Engine, task_id: str) -> str:
    rec, wt = await worktree_of(e, task_id, ending=True)
    return f"{rec.name}: {await e.worktrees.discard(wt)}"


task_command(api.Merge, _merge)
task_command(api.Discard, _discard)


@handles(api.Send)
async def _send(e: Engine, m: api.Send) -> api.Done:
    return api.Done(text=await talk.send_message(e, m.task_id, m.text))


@handles(api.Continue)
async def _continue(e: Engine, m: api.Continue) -> api.Done:
    return api.Done(text=await talk.continue_task(e, m.task_id, m.text))


@handles(api.CollectWorktrees)
async def _gc(e: Engine, m: api.CollectWorktrees) -> api.Done:
    said = await e.worktrees.gc({r.id for r in await e.list_tasks()})
    return api.Done(text="\n".join(said) or "no worktree to remove")


# -- queries -----------------------------------------------------------------------------------


@handles(api.GetWorktree)
async def _worktree(e: Engine, m: api.GetWorktree) -> api.WorktreeReply:
    _rec, wt = await worktree_of(e, m.task_id)
    files: list[tuple[str, int | None, int | None]] = []
    diff = ""
    if m.diff and wt.live:  # a merged or discarded worktree has no diff left to show
        files = [(c.path, c.added, c.removed) for c in await e.worktrees.changes(wt)]
        diff = await e.worktrees.diff(wt, color=m.color)
    return api.WorktreeReply(
        path=wt.path,
        branch=wt.branch,
        base_branch=wt.base_branch,
        base_sha=wt.base_sha,
        status=wt.status,
        files=files,
        diff=diff,
    )


@handles(api.ListTasks)
async def _list_tasks(e: Engine, m: api.ListTasks) -> api.TaskList:
    cursor = e.cursor  # before the records: the stream reaches every change they show
    return api.TaskList(tasks=await e.list_tasks(), cursor=tuple(cursor))


@handles(api.GetMany)
async def _get_many(e: Engine, m: api.GetMany) -> api.TaskList:
    records = await e.get_many(m.task_ids)
    # After the records (memory follows the store, which published first): every event that
    # led to what they show is at or before this cursor.
    return api.TaskList(tasks=records, cursor=tuple(e.cursor))


@handles(api.GetQuestions)
async def _questions(e: Engine, m: api.GetQuestions) -> api.QuestionList:
    return api.QuestionList(questions=await e.questions(m.task_id))


@handles(api.OutputIndex)
async def _output_index(e: Engine, m: api.OutputIndex) -> api.OutputIndexReply:
    return api.OutputIndexReply(runs=await e.output_index(m.task_id))


@handles(api.ReadRunLines)
async def _read_run_lines(e: Engine, m: api.ReadRunLines) -> api.LinesReply:
    return api.LinesReply(lines=await e.read_run_lines(m.run_id, m.first_seq, m.last_seq))
