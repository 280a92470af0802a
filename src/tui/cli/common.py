"""Helpers shared by the CLI commands."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tui.store.db import Store
from tui.store.paths import default_db_path
from tui.store.records import EventRecord


@asynccontextmanager
async def open_store(db: str | None) -> AsyncIterator[Store]:
    store = await Store.open(default_db_path(db))
    try:
        yield store
    finally:
        await store.close()


def print_transition(ev: EventRecord, name: str, as_json: bool) -> None:
    if as_json:
        print(
            json.dumps(
                {
                    "at": ev.at,
                    "task_id": ev.task_id,
                    "name": name,
                    "from": ev.from_state,
                    "to": ev.to_state,
                    "reason": ev.reason,
                }
            ),
            flush=True,
        )
        return
    stamp = time.strftime("%H:%M:%S", time.localtime(ev.at))
    frm = ev.from_state or "new"
    reason = f"  {ev.reason}" if ev.reason else ""
    print(f"{stamp} {name:<24} {frm:>15} → {ev.to_state:<15}{reason}", flush=True)


def err(message: str) -> None:
    print(f"tui: {message}", file=sys.stderr)
