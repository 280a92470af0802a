"""Where our files live: the database (--db, then $TUI_DB, then the user data dir) and the
state dir (remembered UI choices, daemon logs; $TUI_STATE_DIR overrides it)."""

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


def state_dir() -> Path:
    override = os.environ.get("TUI_STATE_DIR")
    return Path(override).expanduser() if override else Path(platformdirs.user_state_dir("tui"))
