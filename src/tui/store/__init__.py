"""store — the durable state: tasks, runs, the event journal and output lines in SQLite.

The names below are loaded on first use, so importing a light module of this package (say
``tui.store.errors``) does not open the whole store and its models."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui.store.db import Store, StoreError
    from tui.store.paths import default_db_path
    from tui.store.records import (
        STDERR,
        STDOUT,
        EventRecord,
        OutputLine,
        RunRecord,
        TaskRecord,
    )

_WHERE = {
    "Store": "db",
    "StoreError": "db",
    "default_db_path": "paths",
    "STDERR": "records",
    "STDOUT": "records",
    "EventRecord": "records",
    "OutputLine": "records",
    "RunRecord": "records",
    "TaskRecord": "records",
}

__all__ = [
    "STDERR",
    "STDOUT",
    "EventRecord",
    "OutputLine",
    "RunRecord",
    "Store",
    "StoreError",
    "TaskRecord",
    "default_db_path",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
