"""All the app asks of an engine: the engine API's one client (``tui.engine.client.Client``:
``send`` plus conveniences built from the messages, the event stream and its cursor). The
in-process ``Engine`` offers the same methods, so the same app runs embedded or attached."""

from __future__ import annotations

from typing import TypeAlias

from tui.engine.client import Client
from tui.engine.scheduler import Engine

AppEngine: TypeAlias = Client | Engine
