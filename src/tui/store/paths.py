"""Where our files live: the database (--db, then $TUI_DB, then the config's database, then
the user data dir) and the state dir (remembered UI choices, daemon logs; $TUI_STATE_DIR)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import platformdirs


def default_db_path(
    explicit: str | None = None, configured: Callable[[], str] | None = None
) -> Path:
    """``configured`` is asked only when neither --db nor $TUI_DB decides (so a task's own
    `tui ask`, which has $TUI_DB, never reads the config)."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("TUI_DB")
    if env:
        return Path(env).expanduser()
    configured_path = configured() if configured else ""
    if configured_path:
        return Path(configured_path).expanduser()
    return Path(platformdirs.user_data_dir("tui")) / "tui.db"


def state_dir() -> Path:
    override = os.environ.get("TUI_STATE_DIR")
    return Path(override).expanduser() if override else Path(platformdirs.user_state_dir("tui"))
