"""The task list: one row per task, updated in batches, filtered and sorted in place.

A Line-API ``ScrollView`` (like ``LogView``): ``render_line(y)`` paints one screen row, so
only the rows on screen are ever turned into cells, whatever the number of tasks. Row 0 is
the column header, pinned while the rows scroll under it. Column widths only grow, from the
header and the rows painted so far (names from every task: that is cheap), so the columns do
not jump while scrolling. Each painted row remembers what it showed; a batch of changed tasks
or the running-time tick repaints only the screen rows whose text changed, which keeps the
bytes sent to a remote terminal low.
"""

from __future__ import annotations

import textwrap
import time
from collections import Counter
from collections.abc import Iterable
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.app.projects import project_of
from tui.app.state_style import STATE_STYLES
from tui.app.task_query import SORTS, TaskFilter
from tui.app.widgets.task_cells import Cells, row_cells, shown_name
from tui.app.widgets.task_columns import (
    COLUMNS,
    PAD,
    SYMBOL_WIDTH,
    fit_columns,
    fit_text,
    most_width,
)
from tui.app.widgets.task_tree import TaskTree
from tui.app.widgets.virtual_size import set_virtual_size
from tui.model.states import State
from tui.store.records import TaskRecord

STATE_WIDTH = 2 + max(len(s.label) for s in STATE_STYLES.values())
OPTIONAL_EMPTY = frozenset(
    {"time", "cost", "tags", "note", "project", "node"}
)  # hidden while no row has any


def _width(text: str) -> int:
    """Cells ``text`` takes; ``len`` for ASCII (most names), which is 10x cheaper."""
    return len(text) if text.isascii() else cell_len(text)


RowKey = tuple[State, Cells, bool]  # what a painted row shows: state (its colour), text, cursor


class TaskList(ScrollView, can_focus=True):
    """Rows keyed by task id, drawn only where they are on screen."""

    DEFAULT_CSS = (
        """
    TaskList {
        height: 1fr;
        background: $surface;
        color: $foreground;
        &:focus { background-tint: $foreground 5%; }
        & > .task-list--header { text-style: bold; background: $panel; color: $foreground; }
        & > .task-list--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .task-list--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """
        # Each state in its theme colour (a Textual variable, so "auto 60%" works too).
        + "".join(
            f"TaskList > .task-list--{state.name.lower()} {{ color: ${st.color}; }}\n"
            for state, st in STATE_STYLES.items()
        )
    )
    COMPONENT_CLASSES: ClassVar[set[str]] = {"task-list--header", "task-list--cursor"} | {
        f"task-list--{state.name.lower()}" for state in STATE_STYLES
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "cursor_down", show=False),
        Binding("k,up", "cursor_up", show=False),
        Binding("g,home", "scroll_top", show=False),
        Binding("G,end", "scroll_bottom", show=False),
        Binding("pagedown", "page_down", show=False),
        Binding("pageup", "page_up", show=False),
    ]  # left / right / space fold subtasks: app commands (actions.py), so they can be remapped

    class RowHighlighted(Message):
        """The cursor moved to another task (or the list under it changed)."""

        def __init__(self, task_list: TaskList, task_id: str | None) -> None:
            super().__init__()
            self.task_list = task_list
            self.task_id = task_id

        @property
        def control(self) -> TaskList:
            return self.task_list

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.records: dict[str, TaskRecord] = {}
        self.projects: Counter[str] = Counter()  # tasks per project ("" = none)
        self.filter = TaskFilter()
        self.sort_key = "submitted"
        self.approve_key = "p"  # named in "waiting for approval — p" (the app sets a remap)
        self._shown: list[str] = []
        self._index: dict[str, int] = {}
        self.task_tree = TaskTree()  # parents and children; which parents are folded
        self._depth: dict[str, int] = {}  # subtasks' depth under their parent (0: left out)
        self._matched: set[str] = set()  # tasks the filter lets through (not their parents)
        self._cursor = 0
        self._highlighted: str | None = None  # the id last announced by RowHighlighted
        self._widths = {c: len(c) for c in COLUMNS}
        self._widths["state"] = STATE_WIDTH
        self._widths["note"] = 0
        self._name_most = 0  # what most shown names need (task_columns.most_width)
        self._layout: dict[str, int] = {}  # the visible columns and their widths
        self._filled: set[str] = set()  # columns some painted row has text in
        self._styles: dict[str, Style] = {}
        self._strips: LRUCache[RowKey, Strip] = LRUCache(512)
        self._painted: dict[int, RowKey] = {}  # screen row → what it shows
        self.folds_changed = False  # a fold by the person, not saved yet (the app saves)

    # -- data --------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._shown)

    @property
    def cursor_row(self) -> int:
        return self._cursor if self._shown else -1

    def set_records(self, records: Iterable[TaskRecord]) -> None:
        self.records = {r.id: r for r in records}
        self.task_tree.add(self.records.values())
        self.projects = Counter(project_of(r) for r in self.records.values())
        self.rebuild()

    def upsert(self, records: Iterable[TaskRecord]) -> None:
        """Apply a batch of changed tasks; rebuilds only when order or membership changes."""
        sort = SORTS[self.sort_key]
        needs_rebuild = False
        for r in records:
            old = self.records.get(r.id)
            # The engine hands out its live records, so ``old`` may be ``r`` already; the
            # order then may have moved without our noticing: state sort always rebuilds.
            moved = old is not None and (
                self.sort_key == "state" if old is r else sort(old) != sort(r)
            )
            if old is None:
                self.projects[project_of(r)] += 1
            self.records[r.id] = r
            self.task_tree.add((r,))  # its parent's progress changes with it
            if self.filter.matches(r) != (r.id in self._matched) or (
                self.sort_key != "submitted" and moved
            ):
                needs_rebuild = True
        if needs_rebuild:
            self.rebuild()
        else:
            self._update_title()
            self._refresh_changed()

    def rebuild(self) -> None:
        """Filter and sort again, keeping the selected task under the cursor when it stays
        (or its nearest shown parent, when a fold hid it)."""
        selected = self.selected_id
        rows = list(self.records.values())
        if self.filter:
            rows = [r for r in rows if self.filter.matches(r)]
        self._matched = {r.id for r in rows}
        if self.filter:  # a child found keeps its parents around it
            rows = self.task_tree.with_ancestors(rows, self.records)
        # Whatever the sort, subtasks sit under their parent, indented, sorted among siblings.
        tree = self.task_tree.rows(sorted(rows, key=SORTS[self.sort_key]))
        self._depth = {r.id: d for r, d in tree if d}
        self._shown = [r.id for r, _ in tree]
        self._index = {tid: i for i, tid in enumerate(self._shown)}
        names = [_width(self._shown_name(r)) for r, _ in tree]
        self._widths["name"] = max([len("name"), *names])
        self._name_most = most_width(names)
        if selected is not None and selected not in self._index:
            shown = (a for a in self.task_tree.ancestors(selected, True) if a in self._index)
            selected = next(shown, None)
        self._cursor = self._index.get(selected or "", 0)
        self._update_title()
        self._sync_size()
        self._scroll_to_cursor()
        self._painted.clear()
        self.refresh()
        self._announce()

    def _update_title(self) -> None:
        """ "Tasks 3/8 · state:failed · by name": what is shown of how many, and why."""
        total = len(self.records)
        parts = [f"Tasks {len(self._matched)}/{total}" if self.filter else f"Tasks {total}"]
        if self.filter:
            parts.append(self.filter.query)
        if self.sort_key != "submitted":
            parts.append(f"by {self.sort_key}")
        title = " · ".join(parts)
        if title != self.border_title:
            self.border_title = title

    def empty_text(self) -> str:
        """What the list says when it shows no row."""
        if self.records:
            return "no task matches — : or / changes the filter, empty clears it"
        return "no tasks yet — o opens a task file, T runs a template"

    def refresh_running(self) -> None:
        """Tick the running times: repaints only rows whose text changed."""
        self._refresh_changed()

    # -- selection ---------------------------------------------------------------------------

    @property
    def selected_id(self) -> str | None:
        if not self._shown or not 0 <= self._cursor < len(self._shown):
            return None
        return self._shown[self._cursor]

    def select_id(self, task_id: str) -> None:
        if task_id in self._index:
            self.move_cursor(self._index[task_id])

    def move_cursor(self, row: int) -> None:
        if not self._shown:
            return
        row = min(max(row, 0), len(self._shown) - 1)
        if row == self._cursor:
            return
        old, self._cursor = self._cursor, row
        self._refresh_row(old)
        self._refresh_row(row)
        self._scroll_to_cursor()
        self._announce()

    def action_cursor_down(self) -> None:
        self.move_cursor(self._cursor + 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self._cursor - 1)

    def action_scroll_top(self) -> None:
        self.move_cursor(0)

    def action_scroll_bottom(self) -> None:
        self.move_cursor(len(self._shown) - 1)

    def action_page_down(self) -> None:
        self.move_cursor(self._cursor + self._page())

    def action_page_up(self) -> None:
        self.move_cursor(self._cursor - self._page())

    # -- folding subtasks -------------------------------------------------------------------

    def remember_folds(self, folded: set[str], unfolded: set[str]) -> None:
        """Folds the person made in an earlier session (before any task is added)."""
        self.task_tree.touched = folded | unfolded
        self.task_tree.collapsed = set(folded)

    def hand_folds(self) -> tuple[set[str], set[str]]:
        """(folded, unfolded) by the person, of the tasks listed: what is worth keeping."""
        tree = self.task_tree
        touched = {t for t in tree.touched if t in self.records}
        return touched & tree.collapsed, touched - tree.collapsed

    def fold(self, task_id: str, folded: bool) -> bool:
        """Fold (or unfold) ``task_id``'s children away; False when it has none."""
        if not self.task_tree.foldable(task_id):
            return False
        self.folds_changed = True
        self.task_tree.touched.add(task_id)
        if folded != (task_id in self.task_tree.collapsed):
            self.task_tree.collapsed.symmetric_difference_update({task_id})
            self.rebuild()
        return True

    def fold_all(self, folded: bool) -> None:
        self.folds_changed = True
        self.task_tree.touched = self.task_tree.fold_targets()
        self.task_tree.collapsed = self.task_tree.fold_targets() if folded else set()
        self.rebuild()

    def collapse_or_parent(self) -> None:
        """``left``: fold the selected parent; on a child (or a folded parent), its parent."""
        task_id = self.selected_id
        if task_id is None:
            return
        if task_id in self.task_tree.collapsed or not self.fold(task_id, True):
            self.select_id(self.task_tree.shown_parent(task_id))

    def expand_or_child(self) -> None:
        """``right``: unfold the selected parent; unfolded already, its first child."""
        task_id = self.selected_id
        if task_id is None or not self.task_tree.foldable(task_id):
            return
        if task_id in self.task_tree.collapsed:
            self.fold(task_id, False)
        elif self._cursor + 1 < len(self._shown):
            below = self._shown[self._cursor + 1]
            if self.task_tree.shown_parent(below) == task_id:
                self.move_cursor(self._cursor + 1)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)  # inside the border
        if offset is not None and offset.y >= 1:  # row 0 is the header
            self.move_cursor(round(self.scroll_y) + offset.y - 1)

    def _announce(self) -> None:
        selected = self.selected_id
        if selected != self._highlighted:
            self._highlighted = selected
            self.post_message(self.RowHighlighted(self, selected))

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 2)

    def _scroll_to_cursor(self) -> None:
        rows = max(1, self.scrollable_content_region.height - 1)  # under the header
        top = round(self.scroll_y)
        if self._cursor < top:
            top = self._cursor
        elif self._cursor >= top + rows:
            top = self._cursor - rows + 1
        if top != round(self.scroll_y):
            self.scroll_to(y=top, animate=False, force=True)

    # -- painting ----------------------------------------------------------------------------

    def on_resize(self) -> None:
        self._painted.clear()
        self._sync_size()
        self._scroll_to_cursor()

    def notify_style_update(self) -> None:
        # Focus, blur and theme changes land here once the CSS is applied.
        super().notify_style_update()
        self._styles.clear()
        self._strips.clear()
        self._painted.clear()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width = max(1, self.scrollable_content_region.width)
        base = self._style("base")
        x = round(self.scroll_x)
        if y == 0:
            return self._header_strip().crop_extend(x, x + width, base).simplify()
        row = round(self.scroll_y) + y - 1
        if not 0 <= row < len(self._shown):
            self._painted.pop(y, None)
            if not self._shown:  # the hint, wrapped: a narrow pane cut its keys off
                hint = textwrap.wrap(self.empty_text(), max(1, width - 1))
                if y - 1 < len(hint):
                    text = " " + fit_text(hint[y - 1], width - 1)
                    return Strip([Segment(text, self._style("pending"))])  # the muted colour
            return Strip.blank(width, base)
        key = self._row_key(row, time.time())
        self._painted[y] = key
        strip = self._strips.get(key)
        if strip is None:
            strip = self._row_strip(*key)
            self._strips[key] = strip
        fill = self._style("cursor" if key[2] else "base")
        return strip.crop_extend(x, x + width, fill).simplify()  # fewer colour codes to send

    def render_lines(self, crop: Region) -> list[Strip]:
        # Widen columns for what is about to be painted, before any row of it is drawn.
        top = round(self.scroll_y)
        now = time.time()
        grew = False
        for row in range(top + max(0, crop.y - 1), min(len(self._shown), top + crop.bottom)):
            cells = self._cells(self.records[self._shown[row]], now)
            for col, text in zip(COLUMNS, cells, strict=True):
                if text and col not in self._filled:
                    self._filled.add(col)
                    grew = True
                if cell_len(text) > self._widths[col]:
                    self._widths[col] = cell_len(text)
                    grew = True
        if grew:
            self._strips.clear()
            self._sync_size()
        return super().render_lines(crop)

    def _refresh_changed(self) -> None:
        """Repaint the screen rows whose text differs from what they show."""
        top = round(self.scroll_y)
        now = time.time()
        for y in range(1, self.scrollable_content_region.height):
            row = top + y - 1
            if row >= len(self._shown):
                if y in self._painted:
                    self.refresh(Region(0, y, self.size.width, 1))
                continue
            if self._painted.get(y) != self._row_key(row, now):
                self.refresh(Region(0, y, self.size.width, 1))

    def _refresh_row(self, row: int) -> None:
        y = row - round(self.scroll_y) + 1
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _sync_size(self) -> None:
        """Fit the columns to the pane (never wider: no sideways scrolling)."""
        # Columns nobody has filled (no cost, no tags, no note yet) take no room.
        content = {
            c: w if c not in OPTIONAL_EMPTY or c in self._filled else 0
            for c, w in self._widths.items()
        }
        for _ in range(2):  # a scrollbar that comes or goes with the new height: fit again
            width = self.scrollable_content_region.width
            layout = fit_columns(content, width, STATE_WIDTH, self._name_most) if width > 0 else {}
            if layout != self._layout:
                self._layout = layout
                self._strips.clear()
                self._painted.clear()
                self.refresh()
            set_virtual_size(self, Size(max(1, width), len(self._shown) + 1))
            if self.scrollable_content_region.width == width:
                break

    def _header_strip(self) -> Strip:
        labels = tuple("" if c == "state" else c.upper() for c in COLUMNS)
        return self._strip(labels, [self._style("header")] * len(COLUMNS))

    def _row_key(self, row: int, now: float) -> RowKey:
        r = self.records[self._shown[row]]
        return r.state, self._cells(r, now), row == self._cursor

    def _row_strip(self, state: State, cells: Cells, cursor: bool) -> Strip:
        base = self._style("cursor" if cursor else "base")
        # The cursor's colours win over the state's, as they did in the DataTable.
        first = base if cursor else self._style(state.name.lower())
        return self._strip(cells, [first] + [base] * (len(COLUMNS) - 1))

    def _strip(self, cells: Iterable[str], styles: list[Style]) -> Strip:
        segments = []
        layout = self._layout
        for col, text, style in zip(COLUMNS, cells, styles, strict=True):
            width = layout.get(col)
            if width is None:
                continue
            if col == "state" and width == SYMBOL_WIDTH:
                text = text[:1]  # a narrow pane: the symbol alone
            segments.append(Segment(" " * PAD + fit_text(text, width) + " " * PAD, style))
        return Strip(segments)

    def _shown_name(self, r: TaskRecord) -> str:
        return shown_name(r, self.records, self.task_tree, self._depth.get(r.id, 0))

    def _cells(self, r: TaskRecord, now: float) -> Cells:
        """The text of each column in the row of ``r``."""
        return row_cells(
            r,
            now,
            self.records,
            self.task_tree,
            self._shown_name(r),
            several_projects=len(self.projects) > 1,
            approve_key=self.approve_key,
        )

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self.rich_style
            if name != "base":
                style += self.get_component_rich_style(f"task-list--{name}", partial=False)
            self._styles[name] = style
        return style
