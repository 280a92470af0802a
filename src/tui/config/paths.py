"""Where configuration lives: ``$TUI_CONFIG_DIR`` or the user config dir, and ``.tui/`` in
the project."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

CONFIG_FILE = "config.toml"
LOCAL_DIR = ".tui"


def user_config_dir() -> Path:
    """``$TUI_CONFIG_DIR`` or the platform's user config dir for tui."""
    override = os.environ.get("TUI_CONFIG_DIR")
    return Path(override).expanduser() if override else Path(platformdirs.user_config_dir("tui"))


def global_config_path() -> Path:
    return user_config_dir() / CONFIG_FILE


def local_config_path(project_dir: Path) -> Path:
    return project_dir / LOCAL_DIR / CONFIG_FILE
