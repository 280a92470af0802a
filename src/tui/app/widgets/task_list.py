"""The task list: one row per task, updated in batches, filtered and sorted in place."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from tui.app.state_style import STATE_STYLES, style_for
from tui.model.states import State
from tui.store.records import TaskRecord

STATE_WIDTH = 2 + max(len(s.label) for s in STATE_STYLES.values())
COLUMNS = ("state", "name", "agent", "prio", "time", "try", "cost", "tags", "note")
SORTS: dict[str, Callable[[TaskRecord], object]] = {
    "submitted": lambda r: r.submit_seq,
    "state": lambda r: (list(State).index(r.state), r.submit_seq),
    "name": lambda r: (r.name.lower(), r.submit_seq),
    "priority": lambda r: (
        {"high": 0, "": 1, "normal": 1, "low": 2}[r.task.priority.value],
        r.submit_seq,
    ),
}


@dataclass(frozen=True)
class TaskFilter:
    """`text state:failed tag:ci` — every part must match."""

    words: tuple[str, ...] = ()
    states: tuple[State, ...] = ()
    tags: tuple[str, ...] = ()

    @staticmethod
    def parse(query: str) -> TaskFilter:
        words, states, tags = [], [], []
        for part in query.split():
            key, _, value = part.partition(":")
            if key in ("state", "s") and value:
                states += [s for s in State if s.value.startswith(value.upper())]
            elif key in ("tag", "t") and value:
                tags.append(value)
            else:
                words.append(part.lower())
        return TaskFilter(tuple(words), tuple(states), tuple(tags))

    def __bool__(self) -> bool:
        return bool(self.words or self.states or self.tags)

    def matches(self, r: TaskRecord) -> bool:
        if self.states and r.state not in self.states:
            return False
        if self.tags and not all(t in r.task.tags for t in self.tags):
            return False
        hay = f"{r.name} {r.id} {r.task.description}".lower()
        return all(w in hay for w in self.words)


def _elapsed(r: TaskRecord, now: float) -> str:
    if r.state != State.RUNNING:
        return ""
    secs = int(now - r.updated_at)
    return f"{secs // 60}m{secs % 60:02d}s" if secs >= 60 else f"{secs}s"


class TaskList(DataTable):
    """Rows keyed by task id. ``upsert`` only touches the cells that changed."""

    DEFAULT_CSS = """
    TaskList { height: 1fr; }
    """
    BINDINGS = [
        Binding("j", "cursor_down", show=False),
        Binding("k", "cursor_up", show=False),
        Binding("g", "scroll_top", show=False),
        Binding("G", "scroll_bottom", show=False),
    ]

    def __init__(self, **kw: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kw)  # type: ignore[arg-type]
        self.records: dict[str, TaskRecord] = {}
        self.filter = TaskFilter()
        self.sort_key = "submitted"
        self._shown: list[str] = []
        self._index: dict[str, int] = {}

    def on_mount(self) -> None:
        for col in COLUMNS:
            # The state column is sized for its longest label so updates never clip it.
            width = STATE_WIDTH if col == "state" else None
            self.add_column(col.upper() if col != "state" else "", key=col, width=width)

    # -- data --------------------------------------------------------------------------------

    def set_records(self, records: Iterable[TaskRecord]) -> None:
        self.records = {r.id: r for r in records}
        self.rebuild()

    def upsert(self, records: Iterable[TaskRecord]) -> None:
        """Apply a batch of changed tasks; rebuilds only when order or membership changes."""
        needs_rebuild = False
        for r in records:
            old = self.records.get(r.id)
            self.records[r.id] = r
            visible = self.filter.matches(r)
            if visible != (r.id in self._index) or (
                self.sort_key != "submitted"
                and old is not None
                and SORTS[self.sort_key](old) != SORTS[self.sort_key](r)
            ):
                needs_rebuild = True
            elif visible:
                self._update_row(r)
        if needs_rebuild:
            self.rebuild()

    def rebuild(self) -> None:
        selected = self.selected_id
        rows = sorted(
            (r for r in self.records.values() if self.filter.matches(r)), key=SORTS[self.sort_key]
        )
        self.clear()
        now = time.time()
        names = {r.id: r.name for r in self.records.values()}
        for r in rows:
            self.add_row(*self._cells(r, names, now), key=r.id)
        self._shown = [r.id for r in rows]
        self._index = {tid: i for i, tid in enumerate(self._shown)}
        if selected in self._index:
            self.move_cursor(row=self._index[selected], animate=False)

    def refresh_running(self) -> None:
        """Tick the elapsed-time cells of running tasks."""
        now = time.time()
        for tid in self._shown:
            r = self.records[tid]
            if r.state == State.RUNNING:
                self.update_cell(tid, "time", _elapsed(r, now))

    def _update_row(self, r: TaskRecord) -> None:
        names = {t.id: t.name for t in self.records.values()}
        for col, value in zip(COLUMNS, self._cells(r, names, time.time()), strict=True):
            self.update_cell(r.id, col, value)

    def _cells(self, r: TaskRecord, names: dict[str, str], now: float) -> list[object]:
        st = style_for(r.state)
        color = self.app.theme_variables.get(st.color, "") if self.is_attached else ""
        state = Text(f"{st.symbol} {st.label}", style=color or "")
        agent = r.task.agent.type + (f"/{r.task.agent.model}" if r.task.agent.model else "")
        note = r.reason
        if r.state == State.PENDING:
            waiting = [
                names.get(d, d[:8])
                for d in r.depends_on
                if d not in self.records or self.records[d].state != State.COMPLETED
            ]
            if waiting:
                note = "waiting on " + ", ".join(waiting)
        tries = f"{r.attempt_in_round}/{r.task.retry.max_attempts}"
        cost = f"${r.cost_usd:.2f}" if r.cost_usd else ""
        return [
            state,
            r.name,
            agent,
            r.task.priority.value or "normal",
            _elapsed(r, now),
            tries,
            cost,
            " ".join(r.task.tags),
            note,
        ]

    # -- selection ---------------------------------------------------------------------------

    @property
    def selected_id(self) -> str | None:
        if not self._shown or self.cursor_row < 0 or self.cursor_row >= len(self._shown):
            return None
        return self._shown[self.cursor_row]

    def select_id(self, task_id: str) -> None:
        if task_id in self._index:
            self.move_cursor(row=self._index[task_id], animate=False)
