"""Talking to an agent (issue 15): a message to a running agent (`tui send`), and a new
attempt that resumes a finished agent's session with a message (`tui continue`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tui.engine.errors import EngineError
from tui.engine.output import OutputBuffer
from tui.engine.runner import Run
from tui.model.agent_kinds import KINDS
from tui.model.states import ENDED, State, being
from tui.store.records import STDOUT, RunStart
from tui.store.tasks import Move

if TYPE_CHECKING:
    from tui.engine.scheduler import Engine

DELIVERY_TIMEOUT = 10.0  # seconds an adapter may take to hand a message to its agent
YOU = "› you: "  # how the output pane shows a person's message in the conversation


async def send_message(engine: Engine, task_id: str, text: str) -> str:
    rec = engine._get(task_id)
    kind = KINDS.get(rec.task.agent.type)
    if kind is None or not kind.messages:
        raise EngineError(
            f"{rec.name} is a {rec.task.agent.type} task: only claude tasks take messages "
            "while they run"
        )
    run = engine._running.get(task_id)
    if run is None or rec.state not in (State.RUNNING, State.READY):
        hint = f"; `tui continue {rec.name} TEXT` resumes its session" if rec.state in ENDED else ""
        raise EngineError(f"{rec.name} {being(rec.state)}, not running{hint}")
    if not text.strip():
        raise EngineError("the message is empty")
    delivered: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    run.inbox.put_nowait((text, delivered))
    try:
        async with asyncio.timeout(DELIVERY_TIMEOUT):  # not wait_for (ruff)
            ok = await asyncio.shield(delivered)
    except TimeoutError:
        ok = False
    if not ok:
        raise EngineError(
            f"{rec.name}'s agent was finishing and did not take the message; "
            f"`tui continue {rec.name} TEXT` once it has ended"
        )
    await engine.store.add_message(task_id, run.run_id, text)
    await engine.output.add(run, STDOUT, [f"{YOU}{line}" for line in text.splitlines()])
    return f"sent to {rec.name}"


async def show_continuation(output: OutputBuffer, run: Run, began: RunStart) -> None:
    """A run that continues a session shows the person's message first, in the output."""
    last_end = max((r.ended_at or 0 for r in began.previous_runs), default=0)
    for q in began.questions:
        if q.kind == "message" and (q.answered_at or 0) > last_end:
            said = str((q.answer or {}).get("text", ""))
            await output.add(run, STDOUT, [f"{YOU}{line}" for line in said.splitlines()])


async def continue_task(engine: Engine, task_id: str, text: str) -> str:
    rec = engine._get(task_id)
    kind = KINDS.get(rec.task.agent.type)
    if kind is None or not kind.resumes:
        raise EngineError(
            f"{rec.name} is a {rec.task.agent.type} task: only claude, codex and gemini "
            "sessions can be continued"
        )
    if rec.state not in ENDED or rec.retry_at is not None:
        hint = " (`tui send` talks to it while it runs)" if kind.messages else ""
        raise EngineError(f"{rec.name} {being(rec.state)}: wait for it to end{hint}")
    if not text.strip():
        raise EngineError("the message is empty")
    if not any(r.session_id for r in await engine.store.runs(task_id)):
        raise EngineError(f"{rec.name} has no agent session to resume; `tui retry` runs it again")
    wt = await engine.store.get_worktree(task_id)
    if wt is not None and not wt.live:
        raise EngineError(f"{rec.name}'s worktree was {wt.status}: there is no work to continue")
    # A new round of attempts, as a manual retry gives; the message goes to the next run.
    updates = {"attempt_base": rec.attempts, "retry_at": None, "rejection_comment": ""}
    move = Move(task_id, rec.state, State.QUEUED, "continued by user", updates)
    new = await engine.store.add_message(task_id, None, text, then=move, base=rec)
    if not isinstance(new, type(rec)):
        raise EngineError(f"{rec.name} changed state meanwhile; try again")
    if rec.state == State.COMPLETED:
        engine.graph.reopened(task_id)
    engine._took(new)
    engine._enqueue(new)
    engine._changed_now()
    return f"continuing {rec.name}'s session"
