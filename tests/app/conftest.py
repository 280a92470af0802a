"""What every app test shares: the user's real config and state dirs are never read or
written, and an engine owning the test's database (so `tui ask` in tasks reaches it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import owned_engine
from tui.engine.scheduler import Engine
from tui.store.db import Store


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TUI_CONFIG_DIR", str(tmp_path / "config"))


@pytest.fixture
async def engine(store: Store) -> AsyncIterator[Engine]:
    async with owned_engine(store, kill_grace=1.0) as e:
        yield e
