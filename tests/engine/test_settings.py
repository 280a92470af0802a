"""How an engine's settings are chosen: given > stored > config (tui.engine.settings)."""

from __future__ import annotations

from pathlib import Path

from tui.engine.settings import EngineSettings, settle, settle_stored
from tui.store.db import Store, stored_settings

CONFIG = EngineSettings(concurrency=4, shell="bash")


def test_given_beats_stored_beats_config() -> None:
    none = {"concurrency": None, "shell": None}
    assert settle(none, {}, CONFIG, "db").settings == CONFIG
    stored = {"concurrency": 8, "shell": "sh"}
    assert settle(none, stored, CONFIG, "db").settings == EngineSettings(8, "sh")
    done = settle({"concurrency": 2, "shell": None}, stored, CONFIG, "db")
    assert done.settings == EngineSettings(2, "sh")
    assert done.save == {"concurrency": 2}
    assert done.notes == [
        "--concurrency 2 replaces the 8 stored for db; the engines started on it from now on use it"
    ]
    # The same value again is neither news nor a write.
    same = settle({"concurrency": 8, "shell": None}, stored, CONFIG, "db")
    assert same.save == {} and same.notes == []


def test_stored_values_of_the_wrong_kind_are_not_used() -> None:
    junk = {"concurrency": "lots", "shell": "", "unknown": 1}
    assert settle({}, junk, CONFIG, "db").settings == CONFIG
    assert settle({}, {"concurrency": 0}, CONFIG, "db").settings == CONFIG
    assert settle({}, {"concurrency": True}, CONFIG, "db").settings == CONFIG


async def test_they_are_stored_in_the_database_file(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    assert stored_settings(path) == {}  # no file: nothing, and nothing created
    assert not path.exists()
    store = await Store.open(path)
    try:
        chosen, _ = await settle_stored(store, {"concurrency": 6}, CONFIG)
        assert chosen == EngineSettings(6, "bash")
    finally:
        await store.close()
    assert stored_settings(path) == {"concurrency": 6}
    store = await Store.open(path)
    try:
        assert (await settle_stored(store, {}, CONFIG))[0] == EngineSettings(6, "bash")
    finally:
        await store.close()
