"""The dependency graph: who waits on whom, and what a task's end means for its dependents.

Pure bookkeeping, no I/O: the engine asks this module which tasks may now run and which must be
cancelled, then makes those transitions in the store. This is where a task waits for its
dependencies: ``open_deps`` counts, per task, the dependencies not yet COMPLETED, so a task is
runnable when its count is 0 (a fan-in of n costs O(n), not O(n²)).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from tui.model.states import SATISFIED, UNSUCCESSFUL, State


class Node(Protocol):
    """What the graph reads of a task (a ``TaskRecord`` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def state(self) -> State: ...
    @property
    def retry_at(self) -> float | None: ...
    @property
    def depends_on(self) -> list[str]: ...


def failed_for_good(node: Node | None) -> bool:
    """Ended badly with no automatic retry coming: its dependents can never run."""
    return node is not None and node.state in UNSUCCESSFUL and node.retry_at is None


class Graph:
    def __init__(self) -> None:
        self._dependents: dict[str, set[str]] = {}
        self._open: dict[str, int] = {}  # dependencies not yet COMPLETED, per task

    def add(self, nodes: Sequence[Node], lookup: Callable[[str], Node | None]) -> None:
        """Index new tasks. ``lookup`` finds any known task (these included) by id."""
        for n in nodes:
            for dep in n.depends_on:
                self._dependents.setdefault(dep, set()).add(n.id)
            self._open[n.id] = sum(1 for d in n.depends_on if not _completed(lookup(d)))

    def open_deps(self, task_id: str) -> int:
        """How many dependencies of ``task_id`` have not COMPLETED yet."""
        return self._open.get(task_id, 0)

    def dependents(self, task_id: str) -> list[str]:
        """Tasks that depend directly on ``task_id``, in a stable order."""
        return sorted(self._dependents.get(task_id, ()))

    def completed(self, task_id: str) -> list[str]:
        """``task_id`` just COMPLETED: its dependents that now wait on nothing more."""
        freed = []
        for dep_id in self.dependents(task_id):
            left = self._open[dep_id] = max(0, self._open.get(dep_id, 0) - 1)
            if left == 0:
                freed.append(dep_id)
        return freed

    def reopened(self, task_id: str) -> None:
        """``task_id`` left COMPLETED (continued): dependents still waiting wait on it again."""
        for dep_id in self.dependents(task_id):
            self._open[dep_id] = self._open.get(dep_id, 0) + 1

    def blocking(self, node: Node, lookup: Callable[[str], Node | None]) -> Node | None:
        """A dependency of ``node`` that failed for good (so ``node`` can never run), if any."""
        for dep_id in node.depends_on:
            dep = lookup(dep_id)
            if failed_for_good(dep):
                return dep
        return None

    def cascade(self, failed_id: str, is_pending: Callable[[str], bool]) -> list[tuple[str, str]]:
        """Everything a failure of ``failed_id`` cancels: (task id, the dependency that
        failed or was cancelled before it), each once, causes before their dependents.

        Iterative (a worklist, not recursion): a chain of 100,000 tasks is one pass.
        Only PENDING tasks are cancelled, and only those are walked through.
        """
        out: list[tuple[str, str]] = []
        seen = {failed_id}
        # (task, its cause), reversed onto the stack so dependents come off in sorted order.
        stack = [(d, failed_id) for d in reversed(self.dependents(failed_id))]
        while stack:
            task_id, cause = stack.pop()
            if task_id in seen or not is_pending(task_id):
                continue
            seen.add(task_id)
            out.append((task_id, cause))
            stack += [(d, task_id) for d in reversed(self.dependents(task_id))]
        return out

    def unfinished(self, node: Node, lookup: Callable[[str], Node | None]) -> list[str]:
        """Dependencies of ``node`` that have not COMPLETED (or are unknown)."""
        return [d for d in node.depends_on if not _completed(lookup(d))]


def _completed(node: Node | None) -> bool:
    return node is not None and node.state in SATISFIED
