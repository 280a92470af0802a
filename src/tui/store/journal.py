"""The ``events`` table: every state change and every other engine event, in commit order.

State changes are the ``transitions`` view over it (kind ``state``)."""

from __future__ import annotations

import json
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any

from tui.model.states import State
from tui.store.records import EventRecord

if TYPE_CHECKING:
    from tui.store.batch import Tx

COLS = "id, task_id, kind, from_state, to_state, reason, data, at"
_VALUES = {s: s.value for s in State}  # a dict lookup is a quarter of ``.value``

# ``json.dumps(data)``'s text, by one encoder made once: ``dumps`` makes its C encoder anew
# each call (~half of its 1.4–2.5 µs for a journal row's data, two rows a run). No circular
# check: a row's data is plain values the engine made, never a structure that holds itself.
_iterencode = c_make_encoder and c_make_encoder(
    None, json.JSONEncoder().default, encode_basestring_ascii, None, ": ", ", ", False, False, True
)


def _dumps(data: dict[str, Any]) -> str:
    if _iterencode is None:  # a Python without the json module's C part
        return json.dumps(data)
    return "".join(_iterencode(data, 0))


def insert(
    tx: Tx,
    task_id: str,
    kind: str,
    frm: State | None,
    to: State | None,
    reason: str,
    data: dict[str, Any] | None,
    at: float,
) -> None:
    """Append a journal row (``Tx.event``); listeners get it once the transaction commits."""
    f, t = (_VALUES[frm] if frm else None), (_VALUES[to] if to else None)
    cur = tx.db.execute(
        "INSERT INTO events (task_id, kind, from_state, to_state, reason, data, at)"
        " VALUES (?,?,?,?,?,?,?)",
        (task_id, kind, f, t, reason, _dumps(data) if data else None, at),
    )
    tx.events.append(
        EventRecord.made(int(cur.lastrowid or 0), task_id, kind, f, t, reason, data or {}, at)
    )


# One journal row as :func:`insert` takes it: (task_id, kind, from, to, reason, data, at).
Row = tuple[str, str, State | None, State | None, str, dict[str, Any] | None, float]


def insert_many(tx: Tx, rows: list[Row]) -> None:
    """Append journal rows in this order, by one statement (``Tx.events_many``): a batch of
    new tasks writes two a task. Their ids are the last one's and those before it: the
    table's AUTOINCREMENT gives each new row the largest id it ever had plus one, so one
    statement's rows (the write lock held) take consecutive ids."""
    if not rows:
        return
    args = [
        (
            tid,
            kind,
            _VALUES[f] if f else None,
            _VALUES[to] if to else None,
            reason,
            _dumps(data) if data else None,
            at,
        )
        for tid, kind, f, to, reason, data, at in rows
    ]
    tx.db.executemany(
        "INSERT INTO events (task_id, kind, from_state, to_state, reason, data, at)"
        " VALUES (?,?,?,?,?,?,?)",
        args,
    )
    (last,) = tx.one("SELECT last_insert_rowid()")
    first = int(last) - len(args) + 1
    tx.events += [
        EventRecord.made(first + i, a[0], a[1], a[2], a[3], a[4], r[5] or {}, a[6])
        for i, (a, r) in enumerate(zip(args, rows, strict=True))
    ]


def read(t: Tx, after_id: int, limit: int) -> list[EventRecord]:
    rows = t.all(f"SELECT {COLS} FROM events WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit))
    return [EventRecord.from_row(r) for r in rows]


def transitions(t: Tx, task_id: str | None) -> list[tuple[str, str, str, str, float]]:
    """The state changes, of one task or all. One task's is a scan of the journal (no index
    by task: no viewer asks for it, and every journal row would pay for one; schema v10)."""
    sql = "SELECT task_id, from_state, to_state, reason, at FROM transitions"
    if task_id:
        return t.all(sql + " WHERE task_id = ? ORDER BY id", (task_id,))
    return t.all(sql + " ORDER BY id")


def last_id(t: Tx) -> int:
    (e,) = t.one("SELECT COALESCE(MAX(id), 0) FROM events")
    return int(e)
