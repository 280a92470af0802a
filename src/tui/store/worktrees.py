"""The ``worktrees`` table: each worktree task's repository, branch, checkout and pinned base."""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields

from tui.store.batch import Tx


@dataclass
class WorktreeRecord:
    task_id: str
    repo: str
    subdir: str
    base_ref: str
    base_sha: str
    base_branch: str
    branch: str
    path: str
    status: str  # planned | active | merged | discarded
    created_at: float

    @property
    def live(self) -> bool:
        """Its branch and checkout are (or will be) there: not merged or discarded."""
        return self.status in ("planned", "active")


COLS = ", ".join(f.name for f in fields(WorktreeRecord))


def insert(t: Tx, rec: WorktreeRecord) -> None:
    marks = ",".join("?" * len(fields(WorktreeRecord)))
    t.db.execute(f"INSERT OR REPLACE INTO worktrees ({COLS}) VALUES ({marks})", astuple(rec))


def get(t: Tx, task_id: str) -> WorktreeRecord | None:
    row = t.one(f"SELECT {COLS} FROM worktrees WHERE task_id = ?", (task_id,))
    return WorktreeRecord(*row) if row else None


def select(t: Tx) -> list[WorktreeRecord]:
    return [WorktreeRecord(*r) for r in t.all(f"SELECT {COLS} FROM worktrees ORDER BY created_at")]


def set_status(t: Tx, path: str, status: str) -> None:
    """Every task sharing the checkout at ``path`` (a ``from:`` chain) moves together."""
    t.db.execute("UPDATE worktrees SET status = ? WHERE path = ?", (status, path))
