"""engine — the asyncio scheduler, its event stream and its command API (no UI imports).

The names below are loaded on first use: importing a light module of this package (say
``tui.engine.errors``) must not build the whole engine and its pydantic models (``tui
--version`` and the CLI's error boundary need only the exception classes)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
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


class _OnFirstUse(types.ModuleType):
    """A submodule imported but not executed yet: it is executed (once, under a lock, for
    threads may race to it: the app is imported on a thread) when an attribute it does not
    have yet is first asked for. importlib's LazyLoader does this without the lock in 3.11."""

    def __getattr__(self, name: str) -> Any:
        with _executing:
            if type(self) is _OnFirstUse and self.__name__ not in _running:
                _running.add(self.__name__)  # its own code asking for a name not there yet
                try:
                    loader = self.__spec__.loader if self.__spec__ else None
                    assert loader is not None
                    loader.exec_module(self)
                    self.__class__ = types.ModuleType  # type: ignore[assignment]
                finally:
                    _running.discard(self.__name__)
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


_executing = threading.RLock()
_running: set[str] = set()


def _on_first_use(name: str) -> None:
    """``tui.engine.NAME`` imported now, executed on its first use (``_OnFirstUse``). For
    ``api``: its ~40 message classes took ~9 ms of every `tui run`'s start, which builds or
    reads a message only once another client talks to it."""
    full = f"{__name__}.{name}"
    spec = importlib.util.find_spec(full)
    if full in sys.modules or spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _OnFirstUse
    sys.modules[full] = module
    globals()[name] = module


_on_first_use("api")
