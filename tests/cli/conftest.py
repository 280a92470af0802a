"""Fixtures for the end-to-end CLI tests (helpers live in ``cli_support``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.cli_support import Tui


@pytest.fixture
def tui(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Tui]:
    # The user's own config.toml must not change what the tests see.
    monkeypatch.setenv("TUI_CONFIG_DIR", str(tmp_path / "user-config"))
    t = Tui(tmp_path)
    try:
        yield t
    finally:
        t.cleanup()
