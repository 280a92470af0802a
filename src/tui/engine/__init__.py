"""engine — the asyncio scheduler, its event stream and its command API (no UI imports).

The names below are loaded on first use: importing a light module of this package (say
``tui.engine.errors``) must not build the whole engine and its pydantic models (``tui
--version`` and the CLI's error boundary need only the exception classes)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui.engine.client import Client, LocalClient
    from tui.engine.events import Cursor, Event, OutputBatch
    from tui.engine.scheduler import Engine, EngineBusy, EngineError

_WHERE = {
    "Client": "client",
    "LocalClient": "client",
    "Cursor": "events",
    "Event": "events",
    "OutputBatch": "events",
    "Engine": "scheduler",
    "EngineBusy": "scheduler",
    "EngineError": "scheduler",
}

__all__ = [
    "Client",
    "Cursor",
    "Engine",
    "EngineBusy",
    "EngineError",
    "Event",
    "LocalClient",
    "OutputBatch",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
