"""The errors the engine's commands raise (shared by every engine module and its clients)."""

from __future__ import annotations


class EngineError(Exception):
    """A command that cannot be carried out; the message says why and what to do."""


class EngineBusy(EngineError):
    """Another live engine already schedules this database."""
