"""The run queue: QUEUED tasks by priority then submission, and the slots they start in.

Pure, no I/O. A slot is one of ``concurrency`` global slots, further limited per agent type
(``agent_limits``, e.g. at most 2 claude runs at once). ``pick`` chooses what starts now; a task
held back by its agent type's limit keeps its place for the next pick.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Mapping


class RunQueue:
    def __init__(self, concurrency: int, agent_limits: Mapping[str, int] | None = None) -> None:
        self.concurrency = max(1, concurrency)
        self.agent_limits = dict(agent_limits or {})
        self._heap: list[tuple[int, int, str]] = []  # (priority rank, submit seq, id)

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, rank: int, seq: int, task_id: str) -> None:
        heapq.heappush(self._heap, (rank, seq, task_id))

    def pick(
        self,
        busy: Mapping[str, int],
        agent_type: Callable[[str], str],
        runnable: Callable[[str], bool],
        most: int | None = None,
    ) -> list[str]:
        """Task ids to start now, best first.

        ``busy`` counts the runs going on, per agent type; ``agent_type`` gives a task's;
        ``runnable`` says whether a queued id is still QUEUED and not running (an entry can
        be stale: cancelled, or queued twice after a retry), stale entries are dropped.
        ``most``: pick at most that many.
        """
        picked: list[str] = []
        free = self.concurrency - sum(busy.values())
        if most is not None:
            free = min(free, most)
        if not self.agent_limits:  # no type is held back: the first runnable ones, in order
            while self._heap and len(picked) < free:
                task_id = heapq.heappop(self._heap)[2]
                if task_id not in picked and runnable(task_id):
                    picked.append(task_id)
            return picked
        taken: Counter[str] = Counter()
        held: list[tuple[int, int, str]] = []
        while self._heap and len(picked) < free:
            item = heapq.heappop(self._heap)
            task_id = item[2]
            if task_id in picked or not runnable(task_id):
                continue
            kind = agent_type(task_id)
            limit = self.agent_limits.get(kind)
            if limit is not None and busy.get(kind, 0) + taken[kind] >= limit:
                held.append(item)
                continue
            taken[kind] += 1
            picked.append(task_id)
        for item in held:
            heapq.heappush(self._heap, item)
        return picked
