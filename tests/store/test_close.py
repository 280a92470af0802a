"""Closing a store twice (an app closes its engine's store, then its owner does) returns at
once, and a call after close is a clear error instead of a wait for a thread that is gone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import shell_task
from tui.store.db import Store
from tui.store.errors import StoreError


async def test_a_second_close_returns_and_later_calls_say_closed(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "tui.db")
    await store.insert_tasks([shell_task("a", "true")], approved=True)
    await store.close()
    async with asyncio.timeout(10):
        await store.close()
        with pytest.raises(StoreError, match="is closed"):
            await store.list_tasks()
    again = await Store.open(tmp_path / "tui.db")
    try:
        assert [r.name for r in await again.list_tasks()] == ["a"]
    finally:
        await again.close()
