"""A real daemon process per test, on a real database file, and viewers attached over its
socket the way the app and the CLI attach."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tui.daemon.lifecycle import ensure
from tui.daemon.remote import RemoteEngine


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "tui.db"


@pytest.fixture
async def viewer(db: Path) -> AsyncIterator[RemoteEngine]:
    """The first viewer: starting it starts the daemon (the autouse runtime fixture stops it)."""
    remote = await ensure(db, concurrency=4)
    yield remote
    await remote.aclose()
