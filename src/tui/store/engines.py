"""The ``engines`` table: engines that have scheduled this database; a live one owns it."""

from __future__ import annotations

from tui.store.tx import Tx


def register(t: Tx, engine_id: str, pid: int, proc_start: int | None, now: float) -> None:
    t.db.execute(
        "INSERT INTO engines (id, pid, proc_start, started_at) VALUES (?,?,?,?)",
        (engine_id, pid, proc_start, now),
    )


def unregister(t: Tx, engine_id: str, now: float) -> None:
    t.db.execute("UPDATE engines SET stopped_at = ? WHERE id = ?", (now, engine_id))


def live(t: Tx) -> list[tuple[str, int, int | None]]:
    """(id, pid, process start time) of engines that have not said they stopped."""
    return t.all(  # type: ignore[return-value]
        "SELECT id, pid, proc_start FROM engines WHERE stopped_at IS NULL ORDER BY started_at"
    )
