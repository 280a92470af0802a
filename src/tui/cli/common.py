"""Helpers shared by the CLI commands."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tui.store.db import Store
from tui.store.paths import default_db_path
from tui.store.records import EventRecord

if TYPE_CHECKING:
    from tui.config.schema import Settings


def db_path(db: str | None) -> Path:
    """The database a command works on: --db, $TUI_DB, the config's, the default."""
    return default_db_path(db, lambda: _settings().database)


@asynccontextmanager
async def open_store(db: str | None) -> AsyncIterator[Store]:
    store = await Store.open(db_path(db))
    try:
        yield store
    finally:
        await store.close()


def _settings() -> Settings:
    # Imported on use: a task's `tui ask` (which has $TUI_DB) never needs the config.
    from tui.config.load import settings_or_raise

    return settings_or_raise()


def engine_settings(args: argparse.Namespace) -> tuple[int, str]:
    """(concurrency, shell): the command-line flag, else the config, else the built-in."""
    from tui.config.schema import DEFAULT_CONCURRENCY, DEFAULT_SHELL

    settings = _settings()
    concurrency = args.concurrency or settings.concurrency or DEFAULT_CONCURRENCY
    return concurrency, args.shell or settings.shell or DEFAULT_SHELL


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
