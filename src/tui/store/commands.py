"""The ``commands`` inbox: commands for the engine that owns the database, from other
processes. Kept apart so that it can go as a whole once every command reaches the engine
over its socket."""

from __future__ import annotations

import json
from typing import Any

from tui.store.tx import Tx


def enqueue(t: Tx, kind: str, payload: dict[str, Any], now: float) -> int:
    cur = t.db.execute(
        "INSERT INTO commands (kind, payload, created_at) VALUES (?,?,?)",
        (kind, json.dumps(payload), now),
    )
    return int(cur.lastrowid or 0)


def pending(t: Tx) -> list[tuple[int, str, dict[str, Any]]]:
    rows = t.all("SELECT id, kind, payload FROM commands WHERE done_at IS NULL ORDER BY id")
    return [(i, k, json.loads(p)) for i, k, p in rows]


def finish(t: Tx, command_id: int, ok: bool, reply: str, now: float) -> bool:
    """Mark a command done; False if it was already done (exactly once)."""
    cur = t.db.execute(
        "UPDATE commands SET done_at = ?, ok = ?, reply = ? WHERE id = ? AND done_at IS NULL",
        (now, int(ok), reply, command_id),
    )
    return cur.rowcount == 1


def reply(t: Tx, command_id: int) -> tuple[bool, str] | None:
    row = t.one("SELECT done_at, ok, reply FROM commands WHERE id = ?", (command_id,))
    if not row or row[0] is None:
        return None
    return bool(row[1]), row[2] or ""
