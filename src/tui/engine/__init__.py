"""engine — the asyncio scheduler, its event stream and its command API (no UI imports)."""

from tui.engine.client import Client, LocalClient
from tui.engine.events import Cursor, Event, OutputBatch
from tui.engine.scheduler import Engine, EngineBusy, EngineError

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
