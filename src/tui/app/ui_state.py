"""Remembered UI choices (currently the theme) in a small JSON file.

The file is ``<user state dir>/ui.json`` (``$TUI_STATE_DIR/ui.json`` if that variable is set).
It is a convenience, never a requirement: a missing, unreadable or corrupt file reads as the
defaults, and a failed save is logged and reported by the return value instead of raising.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from tui.store.paths import state_dir

__all__ = [
    "UI_STATE_DEFAULTS",
    "load_ui_state",
    "save_ui_state",
    "ui_state_path",
]

log = logging.getLogger(__name__)

UI_STATE_DEFAULTS: dict[str, Any] = {"theme": None}

_FILE_NAME = "ui.json"


def ui_state_path() -> Path:
    return state_dir() / _FILE_NAME


def _read() -> dict[str, Any]:
    path = ui_state_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        log.warning("ignoring unreadable UI state file %s: %s", path, exc)
        return {}
    if not isinstance(data, dict):
        log.warning("ignoring UI state file %s: expected a JSON object", path)
        return {}
    return data


def load_ui_state() -> dict[str, Any]:
    """The remembered UI choices merged over :data:`UI_STATE_DEFAULTS` (a fresh dict)."""
    return {**UI_STATE_DEFAULTS, **_read()}


def save_ui_state(**changes: Any) -> bool:
    """Merge ``changes`` into the stored state and write it atomically.

    Returns ``True`` on success, ``False`` if the file could not be written (logged). Values
    must be JSON-serialisable (``TypeError`` otherwise, before anything is written). A key set
    to ``None`` is removed, so it falls back to its default.
    """
    state = _read()
    state.update(changes)
    state = {k: v for k, v in state.items() if v is not None}
    payload = json.dumps(state, indent=2, sort_keys=True) + "\n"

    path = ui_state_path()
    tmp_name: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=".ui-", suffix=".json.tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError as exc:
        log.warning("could not save UI state to %s: %s", path, exc)
        return False
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
    return True
