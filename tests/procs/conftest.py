"""A real keeper process for a test, closed after it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tui.procs.keeper_client import Keeper


@pytest.fixture
async def keeper() -> AsyncIterator[Keeper]:
    k = Keeper()
    k.start()
    try:
        yield k
    finally:
        await k.close()
