"""The keeper's (tui.procs.keeper) slots: how many of the engine's runs have an agent alive,
against the engine's concurrency, and the starts it sent ahead held until one of them exits.

Why: with quick commands a slot's round through the engine (the exit read, the end stored, the
next start stored, its spawn sent) left the cores idle between two agents for most of its
~5 ms. The engine sends a few runs ahead instead (tui.engine.dispatch), each run's row already
committed; the keeper starts one the moment a counted agent exits. A held start that finds no
slot within ``HOLD`` seconds is given back, never started (``withdrawn``), and the engine puts
its task back in the queue: a run shows RUNNING without an agent for at most that long.

Imported by keeper.py, which runs as ``python -I -S``: the standard library only.
"""

from __future__ import annotations

import collections
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tui.procs.keeper_starts import Start

HOLD_ENV = "TUI_KEEPER_HOLD"  # seconds a held start waits for a slot (tests shorten it)
DEFAULT_HOLD = 0.1


def _hold() -> float:
    try:
        return max(0.0, float(os.environ.get(HOLD_ENV) or DEFAULT_HOLD))
    except ValueError:
        return DEFAULT_HOLD


class Slots:
    def __init__(self) -> None:
        self.limit = 0  # the engine's concurrency, as its last counted spawn said
        self.live: set[int] = set()  # keys of counted agents starting or alive
        self.held: collections.deque[tuple[float, Start]] = collections.deque()  # FIFO
        self.hold = _hold()

    def admit(self, start: Start, limit: int, hold: bool) -> bool:
        """A counted start (one per run: its agent's first): True to start it now, False if
        it is held (``hold`` and every slot taken)."""
        self.limit = limit
        if hold and len(self.live) >= limit:
            self.held.append((time.monotonic() + self.hold, start))
            return False
        self.live.add(start.key)
        return True

    def freed(self, key: int) -> list[Start]:
        """Agent ``key`` exited (or never started): the held starts to begin now."""
        if key not in self.live:
            return []
        self.live.discard(key)
        now: list[Start] = []
        while self.held and len(self.live) < self.limit:
            start = self.held.popleft()[1]
            self.live.add(start.key)
            now.append(start)
        return now

    def drop(self, key: int) -> bool:
        """Forget held start ``key`` (its run was cancelled); whether it was held."""
        for i, (_, start) in enumerate(self.held):
            if start.key == key:
                del self.held[i]
                return True
        return False

    def expired(self) -> list[int]:
        """The held starts whose time is up, taken out: their keys."""
        now = time.monotonic()
        keys = []
        while self.held and self.held[0][0] <= now:
            keys.append(self.held.popleft()[1].key)
        return keys

    def wait(self) -> float:
        """Seconds until the first held start's time is up; -1 when none is held."""
        if not self.held:
            return -1.0
        return max(0.0, self.held[0][0] - time.monotonic())

    def clear(self) -> list[int]:
        """Every held start taken out (the engine stops or is gone): their keys."""
        keys = [start.key for _, start in self.held]
        self.held.clear()
        return keys
