"""Asking a person from inside a running task, from another process: `tui ask` and the MCP
tool `ask_user` both go through here (the engine's command inbox, then the question row)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tui.engine.client import InboxClient, live_engine_pid
from tui.engine.scheduler import EngineError
from tui.store.db import Store
from tui.store.records import QuestionRecord

ANSWER_POLL = 0.1  # seconds between looks at the question row while waiting


def question_payload(text: str, options: list[str], multi: bool, header: str = "") -> dict:
    """QuestionJSON, the same shape Claude's AskUserQuestion uses."""
    return {
        "questions": [
            {
                "question": text,
                "header": header,
                "options": [{"label": o, "description": ""} for o in options],
                "multiSelect": multi,
            }
        ]
    }


async def ask_person(
    store: Store,
    task_id: str,
    run_id: int,
    payload: dict[str, Any],
    *,
    timeout: float = 0.0,
    stop: asyncio.Event | None = None,
) -> QuestionRecord | None:
    """Raise a question for the task's running attempt through the live engine and wait until
    it is closed (answered, expired...). None when ``stop`` was set, or ``timeout`` seconds
    passed (the question is then expired). EngineError when no engine runs the database."""
    pid = await live_engine_pid(store)
    if pid is None:
        raise EngineError("no tui engine is running this task's database")
    client = InboxClient(store, pid)
    question_id = await client.ask(task_id, run_id, "question", payload)
    deadline = time.monotonic() + timeout if timeout else None
    while stop is None or not stop.is_set():
        q = await store.get_question(question_id)
        if q is not None and q.status != "open":
            return q
        if deadline is not None and time.monotonic() >= deadline:
            await client.expire(question_id)
            return None
        await asyncio.sleep(ANSWER_POLL)  # the engine (another process) commits the answer
    return None


def answer_values(q: QuestionRecord, text: str) -> list[str] | None:
    """What the person chose or wrote for question ``text``; None if it closed unanswered."""
    if q.status != "answered" or not q.answer:
        return None
    value = q.answer.get("answers", {}).get(text, "")
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]
