"""The settings an engine runs with, chosen per database: a value given now (a flag) replaces
the one stored for the database and is stored; without one, the stored value is used again —
so a daemon that a viewer starts again (`tui open`, `tui run`, a client reconnecting) comes
back as it was started — and without that, the config's, then the built-in default."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tui.store.db import Store


@dataclass(frozen=True)
class EngineSettings:
    concurrency: int
    shell: str


NAMES = tuple(f.name for f in dataclasses.fields(EngineSettings))


@dataclass(frozen=True)
class Settled:
    settings: EngineSettings
    save: dict[str, Any]  # values given now that differ from the stored ones
    notes: list[str]  # what to tell the user (a given value replacing a stored one)


def _usable(name: str, value: Any) -> bool:
    """A stored value of the right kind (a database from a newer tui may hold anything)."""
    if name == "concurrency":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return isinstance(value, str) and value != ""


def settle(
    given: Mapping[str, Any], stored: Mapping[str, Any], fallback: EngineSettings, db: str
) -> Settled:
    """``given``: the flags (None = not given); ``fallback``: the config's or built-in."""
    values: dict[str, Any] = {}
    save: dict[str, Any] = {}
    notes: list[str] = []
    for name in NAMES:
        new, old = given.get(name), stored.get(name)
        old = old if _usable(name, old) else None
        if new is not None:
            values[name] = new
            if new != old:
                save[name] = new
            if old is not None and new != old:
                notes.append(
                    f"--{name} {new} replaces the {old} stored for {db}; "
                    "the engines started on it from now on use it"
                )
        else:
            values[name] = old if old is not None else getattr(fallback, name)
    return Settled(EngineSettings(**values), save, notes)


async def settle_stored(
    store: Store, given: Mapping[str, Any], fallback: EngineSettings
) -> tuple[EngineSettings, list[str]]:
    """``settle`` against what ``store`` holds, storing the values given now."""
    done = settle(given, await store.engine_settings(), fallback, str(store.path))
    if done.save:
        await store.save_engine_settings(done.save)
    return done.settings, done.notes
