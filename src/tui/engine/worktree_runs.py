"""Where worktrees meet the engine: bases pinned at submit, each run in its task's worktree,
and what the agent left uncommitted committed to the branch when the run ends."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from tui.engine.adapter import RunResult
from tui.engine.errors import EngineError
from tui.engine.git import GitError
from tui.engine.runner import Run, RunHost
from tui.engine.worktrees import Worktrees
from tui.model.states import State, being
from tui.model.task import Task
from tui.store.records import STDERR, STDOUT, TaskRecord
from tui.store.worktrees import WorktreeRecord

if TYPE_CHECKING:
    from tui.engine.scheduler import Engine


async def plan_worktrees(worktrees: Worktrees, tasks: Sequence[Task]) -> None:
    """Pin and store the worktree of every task that asks for one (in order, so a ``from:``
    finds a task submitted with it). A base that does not exist refuses the whole batch."""
    planned: dict[str, WorktreeRecord] = {}
    for task in tasks:
        rec = await worktrees.plan(task, planned)
        if rec is not None:
            planned[task.id] = rec
    for rec in planned.values():
        await worktrees.store.put_worktree(rec)


def commit_message(rec: TaskRecord, attempt: int) -> str:
    return (
        f"tui: {rec.name}\n\nWhat the agent of task {rec.name} ({rec.id}) left uncommitted "
        f"when attempt {attempt} ended."
    )


@contextlib.asynccontextmanager
async def in_worktree(
    worktrees: Worktrees, rec: TaskRecord, run: Run, host: RunHost
) -> AsyncIterator[tuple[TaskRecord, RunResult | None]]:
    """The record to run (its project_dir the worktree), or a FAILED result when the worktree
    cannot be made; afterwards the agent's uncommitted edits are committed to its branch."""
    wt = await worktrees.store.get_worktree(rec.id) if rec.task.worktree is not None else None
    if wt is None:
        if rec.task.worktree is not None:
            note = "[tui] worktree: project_dir is not in a git repository; running there"
            await host.output_lines(run, STDOUT, [note])
        yield rec, None
        return
    try:
        cwd = await worktrees.prepare(wt)
    except GitError as e:
        yield rec, RunResult(State.FAILED, error=f"worktree: {e}")
        return
    await host.output_lines(run, STDOUT, [f"[tui] worktree {wt.path} on branch {wt.branch}"])
    agent = rec.task.agent.model_copy(update={"project_dir": cwd})
    try:
        yield dataclasses.replace(rec, spec=rec.task.model_copy(update={"agent": agent})), None
    finally:
        try:
            sha = await worktrees.save(wt, commit_message(rec, run.attempt))
        except GitError as e:
            await host.output_lines(run, STDERR, [f"[tui] could not commit the changes: {e}"])
        else:
            if sha:
                said = f"[tui] committed the agent's changes to {wt.branch} ({sha[:12]})"
                await host.output_lines(run, STDOUT, [said])


# States in which a task's agent may still be using its worktree.
_IN_USE = (State.QUEUED, State.RUNNING, State.READY)


async def worktree_of(
    engine: Engine, task_id: str, *, ending: bool = False
) -> tuple[TaskRecord, WorktreeRecord]:
    """The task and its worktree, or an error a person can act on. ``ending`` (merge,
    discard): refused while the task, or one sharing its worktree, may still use it."""
    rec = engine._get(task_id)
    wt = await engine.store.get_worktree(rec.id)
    if wt is None:
        why = "has no `worktree:`" if rec.task.worktree is None else "runs in place (no git)"
        raise EngineError(f"{rec.name} {why}: it has no worktree")
    if ending:
        sharing = {w.task_id for w in await engine.store.list_worktrees() if w.path == wt.path}
        busy = [r for r in await engine.get_many(sharing) if r.state in _IN_USE]
        if busy:
            names = ", ".join(f"{r.name} {being(r.state)}" for r in busy)
            raise EngineError(f"{names}: wait for it to finish, or cancel it first")
    return rec, wt
