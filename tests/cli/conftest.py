"""Fixtures for the end-to-end CLI tests (helpers live in ``cli_support``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Tui


@pytest.fixture
def tui(tmp_path: Path) -> Iterator[Tui]:
    t = Tui(tmp_path)
    try:
        yield t
    finally:
        t.cleanup()
