"""Asking a person from inside a running task, from another process: `tui ask` and the MCP
tool ``ask_user``. One request, held open by the engine until the question closes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tui.daemon.lifecycle import attach
from tui.engine import api
from tui.engine.scheduler import EngineError


async def ask_person(
    db: Path,
    task_id: str,
    run_id: int,
    payload: dict[str, Any],
    *,
    timeout: float = 0.0,
    stop: asyncio.Event | None = None,
) -> api.Asked | None:
    """Raise a question for the task's running attempt and wait until it closes (answered, or
    expired after ``timeout`` seconds; 0 = no limit). None when ``stop`` was set first (the
    question then expires: the engine sees the asker hang up). EngineError when no engine runs
    the database."""
    client = await attach(db)
    if client is None:
        raise EngineError("no tui engine is running this task's database")
    try:
        msg = api.Ask(task_id=task_id, run_id=run_id, payload=payload, wait=True, timeout=timeout)
        request = asyncio.ensure_future(client.send(msg))
        if stop is None:
            return await request
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait({request, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if request.done():
            return request.result()
        request.cancel()
        return None
    finally:
        await client.aclose()
