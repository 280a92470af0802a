"""Where the database lives: --db, then $TUI_DB, then the user data dir."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def default_db_path(explicit: str | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("TUI_DB")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("tui")) / "tui.db"
