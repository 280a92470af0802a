"""Fixtures every real-CLI adapter test uses."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The agent's project_dir: an empty directory its real tools write into."""
    p = tmp_path / "project"
    p.mkdir()
    return p
