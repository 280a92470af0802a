"""A real keeper process for a test, closed after it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tui.procs.keeper_client import Keeper


@pytest.fixture
def keeper_env() -> None:
    """What a test module sets in the environment before its keepers start (none here)."""


@pytest.fixture
async def keeper(keeper_env: None) -> AsyncIterator[Keeper]:
    k = Keeper()
    k.start()
    try:
        yield k
    finally:
        await k.close()
