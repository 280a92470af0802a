"""The ``engines`` table: engines that have scheduled this database; a live one owns it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tui.store.batch import Tx
from tui.store.tx import sqlite_uri


def register(t: Tx, engine_id: str, pid: int, proc_start: int | None, now: float) -> None:
    t.db.execute(
        "INSERT INTO engines (id, pid, proc_start, started_at) VALUES (?,?,?,?)",
        (engine_id, pid, proc_start, now),
    )


def unregister(t: Tx, engine_id: str, now: float) -> None:
    t.db.execute("UPDATE engines SET stopped_at = ? WHERE id = ?", (now, engine_id))


def live(t: Tx) -> list[tuple[str, int, int | None]]:
    """(id, pid, process start time) of engines that have not said they stopped."""
    return t.all(
        "SELECT id, pid, proc_start FROM engines WHERE stopped_at IS NULL ORDER BY started_at"
    )


def set_socket(t: Tx, engine_id: str, socket: str) -> None:
    t.db.execute("UPDATE engines SET socket = ? WHERE id = ?", (socket, engine_id))


def engine_sockets(path: Path) -> list[tuple[int, int | None, str]]:
    """(pid, process start time, socket) of engines of the database at ``path`` that have not
    said they stopped, read without creating or migrating anything (none if it does not exist
    or predates the socket column)."""
    if not path.exists():
        return []
    try:
        con = sqlite3.connect(sqlite_uri(path, "ro"), uri=True, timeout=5)
        try:
            return con.execute(
                "SELECT pid, proc_start, socket FROM engines"
                " WHERE stopped_at IS NULL AND socket IS NOT NULL ORDER BY started_at"
            ).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return []


def settings(t: Tx) -> dict[str, Any]:
    """The settings stored for this database's engines (name → value)."""
    rows = t.all("SELECT name, value FROM engine_settings")
    return {name: json.loads(value) for name, value in rows}


def save_settings(t: Tx, values: dict[str, Any], now: float) -> None:
    t.db.executemany(
        "INSERT INTO engine_settings (name, value, set_at) VALUES (?,?,?)"
        " ON CONFLICT(name) DO UPDATE SET value = excluded.value, set_at = excluded.set_at",
        [(name, json.dumps(value), now) for name, value in values.items()],
    )


def stored_settings(path: Path) -> dict[str, Any]:
    """``settings`` of the database at ``path``, read without creating or migrating anything
    (none if it does not exist or predates the table)."""
    if not path.exists():
        return {}
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            rows = con.execute("SELECT name, value FROM engine_settings").fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return {}
    return {name: json.loads(value) for name, value in rows}
