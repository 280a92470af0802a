"""The task list's query language: what `/` filters by and what `s` sorts by."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tui.app.projects import project_of
from tui.app.state_style import STATE_WORDS
from tui.model.states import State
from tui.model.task import Priority, priority_rank
from tui.store.records import TaskRecord

SORTS: dict[str, Callable[[TaskRecord], Any]] = {
    "submitted": lambda r: r.submit_seq,
    "state": lambda r: (list(State).index(r.state), r.submit_seq),
    "name": lambda r: (r.name.lower(), r.submit_seq),
    "priority": lambda r: (priority_rank(r.spec_fields("priority")[0] or ""), r.submit_seq),
}


class FilterError(ValueError):
    """A filter that names something that does not exist (say, an unknown state)."""


@dataclass(frozen=True)
class TaskFilter:
    """`text state:failed tag:ci project:api priority:critical` — every part must match;
    several states (or projects, or priorities): any of them."""

    words: tuple[str, ...] = ()
    states: frozenset[State] = frozenset()
    tags: tuple[str, ...] = ()
    query: str = ""
    projects: frozenset[str] = frozenset()
    priorities: frozenset[str] = frozenset()  # "" stands for normal (unset)

    @staticmethod
    def parse(query: str) -> TaskFilter:
        words, states, tags, projects = [], set[State](), [], set[str]()
        priorities = set[str]()
        for part in query.split():
            key, _, value = part.partition(":")
            if key in ("state", "s") and value:
                found = STATE_WORDS.get(value.lower())
                if found is None:
                    known = ", ".join(w for w in STATE_WORDS if "_" not in w)
                    raise FilterError(f"no state {value!r}: use one of {known}")
                states |= found
            elif key in ("tag", "t") and value:
                tags.append(value)
            elif key in ("project", "p") and value:
                projects.add(value)
            elif key in ("priority", "prio") and value:
                named = [p.value for p in Priority if p.value]
                if value.lower() not in named:
                    raise FilterError(f"no priority {value!r}: use one of {', '.join(named)}")
                priorities.add("" if value.lower() == "normal" else value.lower())
            else:
                words.append(part.lower())
        return TaskFilter(
            tuple(words),
            frozenset(states),
            tuple(tags),
            " ".join(query.split()),
            frozenset(projects),
            frozenset(priorities),
        )

    def __bool__(self) -> bool:
        return bool(self.words or self.states or self.tags or self.projects or self.priorities)

    def matches(self, r: TaskRecord) -> bool:
        if self.states and r.state not in self.states:
            return False
        if self.projects and project_of(r) not in self.projects:
            return False
        if not self.tags and not self.words and not self.priorities:
            return True  # no need to read the task's spec
        tags, description, priority = r.spec_fields("tags", "description", "priority")
        if self.priorities and (priority or "").replace("normal", "") not in self.priorities:
            return False
        if self.tags and not all(t in (tags or ()) for t in self.tags):
            return False
        hay = f"{r.name} {r.id} {description or ''}".lower()
        return all(w in hay for w in self.words)
