"""A parent's children and counts of them by what settling the parent asks, kept up to date
as each child changes: settling a parent of 10,000 children after each one's change then
costs one look, not a rescan of all of them (which made a big group quadratic).

Built from the records (``add``) when the engine loads, so a restart after ``kill -9``
rebuilds them from the store; ``update`` follows every record a transaction returns.
"""

from __future__ import annotations

from collections.abc import Iterator

from tui.engine.graph import failed_for_good
from tui.model.states import ENDED, SATISFIED, State
from tui.store.records import TaskRecord

# A child holding one of its parent's max_parallel slots.
ACTIVE = frozenset({State.QUEUED, State.RUNNING, State.READY, State.BLOCKED})

_COMPLETED, _OVER, _LOST, _ACTIVE, _ENDED = 1, 2, 4, 8, 16


def _kind(rec: TaskRecord) -> int:
    lost = failed_for_good(rec)
    return (
        (_COMPLETED if rec.state == State.COMPLETED else 0)
        | (_OVER if rec.state in SATISFIED or lost else 0)
        | (_LOST if lost else 0)
        | (_ACTIVE if rec.state in ACTIVE else 0)
        | (_ENDED if rec.state in ENDED else 0)
    )


class Children:
    """One parent's children in submit order, with their counts."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._kind: dict[str, int] = {}
        self._counts = [0] * 5  # per flag, in the order of the bits above
        self.pending: dict[str, None] = {}  # PENDING children, in the order they became so
        self.reserved: set[str] = set()  # let out of PENDING under max_parallel, not moved yet

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, rec: TaskRecord) -> bool:
        """Count ``rec`` (again, when already known); whether it is a new child."""
        new = rec.id not in self._kind
        if new:
            self.ids.append(rec.id)
            self._kind[rec.id] = 0
        self.update(rec)
        return new

    def update(self, rec: TaskRecord) -> None:
        if rec.state == State.PENDING:
            self.pending[rec.id] = None
        else:
            self.pending.pop(rec.id, None)
            self.reserved.discard(rec.id)
        old, new = self._kind[rec.id], _kind(rec)
        if old == new:
            return
        self._kind[rec.id] = new
        for bit in range(5):
            self._counts[bit] += ((new >> bit) & 1) - ((old >> bit) & 1)

    @property
    def completed(self) -> int:
        return self._counts[0]

    @property
    def over(self) -> int:
        """Children satisfied or failed for good: nothing more will come of them."""
        return self._counts[1]

    @property
    def lost(self) -> int:
        """Children failed for good."""
        return self._counts[2]

    @property
    def busy(self) -> int:
        """Children holding a max_parallel slot, or about to."""
        return self._counts[3] + len(self.reserved)

    @property
    def live(self) -> int:
        """Children not yet ended."""
        return len(self.ids) - self._counts[4]
