"""The task list's folds, remembered per database in the UI state file (tui.app.ui_state):
a parent folded or unfolded by hand is shown so again when the app next opens that database.

Only the person's own folds are kept (a big foreach folded by size is folded again anyway),
for tasks the database still holds, and within bounds: the file stays small whatever the
databases and however many parents `-` folded.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection
from typing import Any

from tui.app.ui_state import load_ui_state, save_ui_state

KEY = "folds"  # in ui.json: {database path: {"folded": [ids], "unfolded": [ids], "at": time}}
MAX_DATABASES = 20  # the most recently saved are kept
MAX_IDS = 2000  # per database and kind


def db_key(db_path: str) -> str:
    """One key per database file, however its path was spelt."""
    return os.path.realpath(db_path) if db_path else ""


def _remembered() -> dict[str, Any]:
    folds = load_ui_state().get(KEY)
    return folds if isinstance(folds, dict) else {}


def _ids(value: Any) -> set[str]:
    return {i for i in value if isinstance(i, str)} if isinstance(value, list) else set()


def load_folds(db: str) -> tuple[set[str], set[str]]:
    """(folded, unfolded) by hand in ``db``'s task list; empty when nothing (readable) is
    remembered."""
    entry = _remembered().get(db) if db else None
    if not isinstance(entry, dict):
        return set(), set()
    return _ids(entry.get("folded")), _ids(entry.get("unfolded"))


def save_folds(db: str, folded: Collection[str], unfolded: Collection[str]) -> bool:
    """Remember ``db``'s folds (the most recent database first); False if the file could not
    be written (logged by ui_state)."""
    if not db:
        return True
    kept = {k: v for k, v in _remembered().items() if k != db and isinstance(v, dict)}
    if folded or unfolded:
        kept[db] = {
            "folded": sorted(folded)[:MAX_IDS],
            "unfolded": sorted(unfolded)[:MAX_IDS],
            "at": time.time(),
        }
    newest = sorted(kept, key=lambda k: _at(kept[k]), reverse=True)[:MAX_DATABASES]
    return save_ui_state(**{KEY: {k: kept[k] for k in newest} or None})


def _at(entry: dict[str, Any]) -> float:
    at = entry.get("at")
    return float(at) if isinstance(at, int | float) else 0.0
