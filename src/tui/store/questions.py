"""The ``questions`` table: what a task waits on a person for (question, approval, review)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection
from typing import Any

from tui.model.states import State
from tui.store import tasks
from tui.store.batch import Tx
from tui.store.errors import StoreError
from tui.store.records import QuestionRecord, TaskRecord

COLS = "id, task_id, run_id, kind, payload, status, answer, created_at, answered_at"

WAITING_REASON = {
    "question": "waiting for an answer",
    "approval": "waiting for an approval",
    "review": "waiting for a review",
}


def waiting_reason(kind: str) -> str:
    return WAITING_REASON.get(kind, f"waiting for {kind}")


def raise_(
    t: Tx,
    question_id: str,
    task_id: str,
    run_id: int | None,
    kind: str,
    payload: dict[str, Any],
    expected: Collection[State],
    now: float,
) -> TaskRecord | None:
    """Store an open question and move the task to READY through the checked transition.
    A task already READY (a second question while the first is open) stays READY."""
    rec = tasks.get(t, task_id)
    if rec is None or rec.state not in expected:
        return None
    body = json.dumps(payload)
    if rec.state != State.READY:
        move = tasks.Move(
            task_id, rec.state, State.READY, waiting_reason(kind), {"question_json": body}
        )
        moved = tasks.transition(t, move, now)
        if moved is None:  # the table forbids READY from here
            return None
        rec = moved
    t.db.execute(
        f"INSERT INTO questions ({COLS}) VALUES (?,?,?,?,?,'open',NULL,?,NULL)",
        (question_id, task_id, run_id, kind, body, now),
    )
    data = {"question_id": question_id, "kind": kind, "payload": payload}
    t.event(task_id, "question", None, None, kind, data, now)
    return rec


def close(t: Tx, question_id: str, status: str, answer: dict[str, Any] | None, now: float) -> bool:
    """open → answered | expired | cancelled, exactly once (compare-and-set)."""
    cur = t.db.execute(
        "UPDATE questions SET status = ?, answer = ?, answered_at = ?"
        " WHERE id = ? AND status = 'open'",
        (status, json.dumps(answer) if answer is not None else None, now, question_id),
    )
    if cur.rowcount != 1:
        return False
    (task_id,) = t.one("SELECT task_id FROM questions WHERE id = ?", (question_id,))
    t.db.execute(
        "UPDATE tasks SET question_json = NULL WHERE id = ? AND NOT EXISTS"
        " (SELECT 1 FROM questions WHERE task_id = ? AND status = 'open')",
        (task_id, task_id),
    )
    data = {"question_id": question_id, "status": status, "answer": answer}
    t.event(task_id, "answered", None, None, status, data, now)
    return True


def select(t: Tx, task_id: str | None, open_only: bool) -> list[QuestionRecord]:
    sql = f"SELECT {COLS} FROM questions WHERE 1=1"
    args: list[Any] = []
    if open_only:
        sql += " AND status = 'open'"
    if task_id is not None:
        sql += " AND task_id = ?"
        args.append(task_id)
    rows = t.all(sql + " ORDER BY created_at DESC, rowid DESC", args)
    return [QuestionRecord.from_row(r) for r in rows]


def of_task(t: Tx, task_id: str) -> list[QuestionRecord]:
    """Every question about a task, newest first."""
    return select(t, task_id, open_only=False)


def get(t: Tx, question_id: str) -> QuestionRecord | None:
    """By id or unique id prefix."""
    rows = t.all(
        f"SELECT {COLS} FROM questions WHERE id = ? OR id LIKE ? ESCAPE '\\'",
        (question_id, tasks.like_prefix(question_id)),
    )
    if len(rows) > 1:
        rows = [r for r in rows if r[0] == question_id]
        if not rows:
            raise StoreError(f"question id {question_id!r} is ambiguous; give more of it")
    return QuestionRecord.from_row(rows[0]) if rows else None


def message(
    t: Tx, task_id: str, run_id: int | None, text: str, then: tasks.Move | None, now: float
) -> TaskRecord | bool | None:
    """A person's message to a task's agent (`tui send`, `tui continue`), kept with its
    questions (kind ``message``, answered at once: the text) and in the journal; with
    ``then``, the task's move in the same transaction. False (nothing stored) when ``then``
    was refused; else the moved task, or None without a move."""
    moved = None
    if then is not None:
        moved = tasks.transition(t, then, now)
        if moved is None:
            return False
    body = json.dumps({"text": text})
    t.db.execute(
        f"INSERT INTO questions ({COLS}) VALUES (?,?,?,'message',?,'answered',?,?,?)",
        (uuid.uuid4().hex, task_id, run_id, body, body, now, now),
    )
    t.event(task_id, "message", None, None, "from the user", {"text": text}, now)
    return moved
