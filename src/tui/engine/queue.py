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
        ahead: int = 0,
        holdable: Callable[[str], bool] | None = None,
    ) -> list[str]:
        """Task ids to start now, best first.

        ``busy`` counts the runs going on, per agent type; ``agent_type`` gives a task's;
        ``runnable`` says whether a queued id is still QUEUED and not running (an entry can
        be stale: cancelled, or queued twice after a retry), stale entries are dropped.
        ``most``: pick at most that many. ``ahead`` (only without agent limits): that many
        more than the free slots may be picked, sent ahead to wait for one, as long as the
        next in line is ``holdable``; the first that is not keeps its place and ends it.
        """
        picked: list[str] = []
        in_use = sum(busy.values())
        free = self.concurrency - in_use
        if not self.agent_limits:  # no type is held back: the first runnable ones, in order
            room = free + ahead if holdable is not None else free
            if most is not None:
                room = min(room, most)
            heap = self._heap
            while heap and len(picked) < room:
                task_id = heap[0][2]
                if task_id in picked or not runnable(task_id):
                    heapq.heappop(heap)
                    continue
                if len(picked) >= free and not (holdable is not None and holdable(task_id)):
                    break  # no slot free for it: it waits for one in its place
                heapq.heappop(heap)
                picked.append(task_id)
            return picked
        if most is not None:
            free = min(free, most)
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
