"""LogView: the live output pane of the selected task.

A Line-API ``ScrollView`` (the approach of toolong and of textual's own ``Log``): nothing is
composed, ``render_line(y)`` paints one row at a time, and the widget only ever holds a small
window of the log.

Where the rows come from, the page cache, wrap and live lines: ``log_pages.LogPages``, its
base class. Here: keys, search, and painting rows (``render_line(y)``).
"""

from __future__ import annotations

import re
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.strip import Strip
from textual.worker import Worker

from tui.app.widgets import log_text
from tui.app.widgets.log_pages import (
    MAX_CACHED_LINES,
    PAGE_SIZE,
    LogPages,
    LogSource,
)
from tui.store.records import STDERR, OutputLine

SEARCH_CHUNK = 5_000
PAUSED_LABEL = "paused — G to follow"
__all__ = ["MAX_CACHED_LINES", "PAGE_SIZE", "PAUSED_LABEL", "LogSource", "LogView"]


class LogView(LogPages, can_focus=True):
    """Scrollable, searchable, live output of one task, read from a ``LogSource`` in pages."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("G,end", "follow", "Follow", key_display="G"),
        Binding("g,home", "top", "Top", show=False),
        Binding("w", "toggle_wrap", "Wrap"),
        Binding("n", "search_next", "Next match"),
        Binding("N", "search_prev", "Prev match"),
        Binding("j,down", "line_down", "Down", show=False),
        Binding("k,up", "line_up", "Up", show=False),
        Binding("pagedown,space", "page_down", "Page down", show=False),
        Binding("pageup,b", "page_up", "Page up", show=False),
        Binding("ctrl+d", "half_page_down", "Half page down", show=False),
        Binding("ctrl+u", "half_page_up", "Half page up", show=False),
        Binding("l,right", "column_right", "Right", show=False),
        Binding("h,left", "left_or_back", "Left", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "log-view--stderr",
        "log-view--separator",
        "log-view--placeholder",
        "log-view--match",
        "log-view--current-match",
    }

    DEFAULT_CSS = """
    LogView {
        background: $surface;
        color: $text;
        scrollbar-gutter: stable;
        & > .log-view--stderr { color: $text-error; }
        & > .log-view--separator { color: $text-muted; }
        & > .log-view--placeholder { color: $text-muted; }
        & > .log-view--match { text-style: reverse; }
        & > .log-view--current-match { text-style: reverse bold; }
    }
    """

    def __init__(self, source: LogSource, **widget: str | None) -> None:
        """``widget``: name, id, classes (as ``LogPages`` takes them)."""
        super().__init__(source, **widget)
        self._strips: LRUCache[int, Strip] = LRUCache(2048)
        self._styles: dict[str, Style] = {}
        self._term = ""
        self._regex: re.Pattern[str] | None = None
        self._match: tuple[int, int] | None = None  # (run_id, seq) of the current match
        self.search_status = ""

    # -- public API ----------------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        return self._task_id

    @property
    def search_term(self) -> str:
        return self._term

    @property
    def current_match(self) -> tuple[int, int] | None:
        """``(run_id, seq)`` of the highlighted search match."""
        return self._match

    async def show_task(self, task_id: str | None) -> None:
        """Show ``task_id``'s output (or nothing). Reads only the run index, not the lines."""
        self._gen += 1
        gen = self._gen
        self._task_id = task_id
        self._sections, self._by_run, self._total_rows, self._max_width = [], {}, 0, 0
        self._pages.clear()
        self._cached_lines = 0
        self._pending.clear()
        self._failed.clear()
        self._strips.clear()
        self._incoming = [ln for ln in self._incoming if ln.task_id == task_id]
        searched = bool(self._term)
        self._term, self._regex, self._match, self.search_status = "", None, None, ""
        if searched:  # n / N leave the footer
            self.refresh_bindings()
        self.workers.cancel_group(self, "log-search")
        self._version += 1
        self.follow = True
        self._set_scroll(0, 0)
        if task_id is None:
            self._sync_size()
            self.refresh()
            return
        self._loading = True
        try:
            index = await self._source.output_index(task_id)
        finally:
            if gen == self._gen:
                self._loading = False
        if gen != self._gen:
            return
        for run_id, count in index:
            self._add_section(run_id, count)
        self._version += 1
        self._after_change()
        self.refresh()
        if self._incoming:
            self._schedule_flush()

    def append(self, lines: list[OutputLine]) -> None:
        """Live lines from the engine; lines of other tasks are ignored. Coalesced per frame."""
        if self._task_id is None:
            return
        mine = [ln for ln in lines if ln.task_id == self._task_id]
        if mine:
            self._incoming.extend(mine)
            self._schedule_flush()

    def action_search(self, term: str) -> Worker[None] | None:
        """Find ``term`` (case-insensitive) from the top of the view on, wrapping around.

        Runs in a worker (returned) reading the source in chunks; the UI stays live."""
        self.workers.cancel_group(self, "log-search")
        self._term = term
        self.refresh_bindings()  # n / N join the footer (or leave it)
        self._regex = re.compile(re.escape(term), re.IGNORECASE) if term else None
        self._match = None
        self.search_status = ""
        self._strips.clear()
        self.refresh()
        if self._regex is None or not self._sections:
            return None
        start = self._position_at(self._top_row())
        return self._start_search(start, forward=True)

    def search_next(self) -> Worker[None] | None:
        return self._search_step(forward=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # n / N only once there is a search: until then they would take footer room for nothing.
        return bool(self._term) if action in ("search_next", "search_prev") else True

    def search_prev(self) -> Worker[None] | None:
        return self._search_step(forward=False)

    # -- actions -------------------------------------------------------------------------

    def action_search_next(self) -> None:
        self.search_next()

    def action_search_prev(self) -> None:
        self.search_prev()

    def action_follow(self) -> None:
        self.follow = True
        self._scroll_end()

    def action_top(self) -> None:
        self.follow = False
        self._user_scroll(y=0)

    def action_toggle_wrap(self) -> None:
        self.wrap = not self.wrap

    def action_line_down(self) -> None:
        self._user_scroll(y=self.scroll_y + 1)

    def action_line_up(self) -> None:
        self._user_scroll(y=self.scroll_y - 1)

    def action_page_down(self) -> None:
        self._user_scroll(y=self.scroll_y + self._view_height())

    def action_page_up(self) -> None:
        self._user_scroll(y=self.scroll_y - self._view_height())

    def action_half_page_down(self) -> None:
        self._user_scroll(y=self.scroll_y + max(1, self._view_height() // 2))

    def action_half_page_up(self) -> None:
        self._user_scroll(y=self.scroll_y - max(1, self._view_height() // 2))

    def action_column_right(self) -> None:
        self._user_scroll(x=self.scroll_x + 8)

    def action_column_left(self) -> None:
        self._user_scroll(x=self.scroll_x - 8)

    async def action_left_or_back(self) -> None:
        """Scroll left; at the left edge, back to the task list (as help says `h` does)."""
        if self.scroll_x > 0:
            self.action_column_left()
        else:
            await self.run_action("app.focus_left")

    # -- reactives and events ------------------------------------------------------------

    def watch_follow(self, follow: bool) -> None:
        self.border_subtitle = "" if follow else PAUSED_LABEL
        if follow:
            self._scroll_end()

    def watch_wrap(self, wrap: bool) -> None:
        self._keep_anchor(lambda: None)
        if wrap:
            self._set_scroll(0, None)
            self._load_all_if_small()
        self.refresh()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._programmatic or self._task_id is None:
            return
        at_end = round(new_value) >= self.max_scroll_y
        if new_value < old_value and not at_end:
            self.follow = False  # the user scrolled up: stop chasing new lines
        elif new_value > old_value and at_end and not self.follow:
            self.follow = True  # scrolled back down to the end: resume

    def on_resize(self) -> None:
        if self.wrap:
            self._keep_anchor(lambda: None)
        elif self.follow:
            self._scroll_end()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._strips.clear()

    # -- rendering -----------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = max(1, self.scrollable_content_region.width)
        base = self._style("base")
        vy = self.scroll_offset.y + y
        if not self._total_rows and self._task_id is not None and not self._loading:
            # A blank pane reads as broken: say there is nothing (yet) to show.
            if y == 0:
                return self._text_strip(
                    Text("no output", style=self._style("placeholder"), end="")
                ).crop_extend(0, width, base)
            return Strip.blank(width, base)
        if vy >= self.virtual_size.height:
            return Strip.blank(width, base)
        row, sub = self._layout().to_row(vy)
        strip = self._row_strip(row)
        # One segment per run of one style: each segment costs its own colour codes on the wire.
        if self.wrap:
            return strip.crop_extend(sub * width, (sub + 1) * width, base).simplify()
        x = self.scroll_offset.x
        return strip.crop_extend(x, x + width, base).simplify()

    def _row_strip(self, row: int) -> Strip:
        where = self._locate(row)
        if where is None:
            return Strip.blank(0)
        k, seq = where
        if seq == 0:
            return self._text_strip(
                Text(f"── attempt {k + 1} ──", style=self._style("separator"), end="")
            )
        sec = self._sections[k]
        key = (sec.run_id, (seq - 1) // PAGE_SIZE)
        page = self._pages.get(key)
        off = seq - (page.first_seq if page else 0)
        if page is None or off >= len(page.lines):
            self._request(key)
            return self._text_strip(Text("…", style=self._style("placeholder"), end=""))
        self._pages.move_to_end(key)
        line = page.lines[off]
        return Strip.blank(0) if line is None else self._line_strip(line)

    def _line_strip(self, line: OutputLine) -> Strip:
        cached = self._strips.get(line.id)
        if cached is not None:
            return cached
        style = self._style("stderr") if line.stream == STDERR else self._style("base")
        text = log_text.to_text(line.text, style)
        if self._regex is not None:
            current = self._match == (line.run_id, line.seq)
            mark = self._style("current-match" if current else "match")
            for m in self._regex.finditer(text.plain):
                text.stylize(mark, m.start(), m.end())
        strip = self._text_strip(text)
        self._strips[line.id] = strip
        return strip

    def _text_strip(self, text: Text) -> Strip:
        if text.spans:
            return Strip(text.render(self.app.console), text.cell_len)
        # Text.render drops the base style when there are no spans.
        style = text.style if isinstance(text.style, Style) else Style.parse(text.style)
        return Strip([Segment(text.plain, style)], text.cell_len)

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            base = self.rich_style
            if name == "base":
                style = base
            else:
                part = self.get_component_rich_style(f"log-view--{name}", partial=True)
                style = base + part
            self._styles[name] = style
        return style

    # -- search --------------------------------------------------------------------------

    def _search_step(self, forward: bool) -> Worker[None] | None:
        if self._regex is None or not self._sections:
            return None
        if self._match is not None and self._match[0] in self._by_run:
            k, seq = self._by_run[self._match[0]], self._match[1]
            if forward:
                k, seq = (k, seq + 1) if seq < self._sections[k].count else (k + 1, 1)
                if k >= len(self._sections):
                    k, seq = 0, 1
            else:
                seq -= 1
        else:
            k, seq = self._position_at(self._top_row())
        self.workers.cancel_group(self, "log-search")
        return self._start_search((k, seq), forward=forward)

    def _start_search(self, start: tuple[int, int], *, forward: bool) -> Worker[None]:
        self.search_status = "searching"
        return self.run_worker(
            self._search(self._gen, start, forward),
            group="log-search",
            exclusive=True,
            exit_on_error=False,
        )

    def _search_ranges(self, start: tuple[int, int], forward: bool) -> list[tuple[int, int, int]]:
        """(section, first seq, last seq) to scan, in scan order, wrapping around once."""
        counts = [s.count for s in self._sections]
        k0, s0 = start
        out: list[tuple[int, int, int]] = []
        if forward:
            for k in range(k0, len(counts)):
                out.append((k, s0 if k == k0 else 1, counts[k]))
            for k in range(0, k0 + 1):
                out.append((k, 1, s0 - 1 if k == k0 else counts[k]))
        else:
            # ``s0`` may be 0 (before the first line of section k0): nothing of k0 then.
            for k in range(k0, -1, -1):
                out.append((k, 1, s0 if k == k0 else counts[k]))
            for k in range(len(counts) - 1, k0 - 1, -1):
                out.append((k, s0 + 1 if k == k0 else 1, counts[k]))
        return [r for r in out if r[1] <= r[2]]

    async def _search(self, gen: int, start: tuple[int, int], forward: bool) -> None:
        regex = self._regex
        if regex is None:
            return
        for k, lo, hi in self._search_ranges(start, forward):
            run_id = self._sections[k].run_id
            chunks = range(lo, hi + 1, SEARCH_CHUNK)
            for a in chunks if forward else reversed(chunks):
                b = min(hi, a + SEARCH_CHUNK - 1)
                lines = await self._source.read_run_lines(run_id, a, b)
                if gen != self._gen or regex is not self._regex:
                    return
                for ln in lines if forward else reversed(lines):
                    if regex.search(log_text.plain(ln.text)):
                        self._goto_match(ln)
                        return
        self.search_status = "not found"
        self.notify(f"no match for {self._term!r}", severity="warning", timeout=3)

    def _goto_match(self, ln: OutputLine) -> None:
        self._match = (ln.run_id, ln.seq)
        self.search_status = "found"
        self._strips.clear()
        self.follow = False
        sec = self._sections[self._by_run[ln.run_id]]
        row = sec.start + ln.seq - 1
        vy = self._layout().to_vy(row)
        top = max(0, vy - self._view_height() // 3)
        x: int | None = None
        if not self.wrap:
            plain = log_text.plain(ln.text)
            m = self._regex.search(plain) if self._regex else None
            self._max_width = max(self._max_width, log_text.width(ln.text))
            self._sync_size()
            width = max(1, self.scrollable_content_region.width)
            if m is not None and not (
                self.scroll_x <= m.start() and m.end() <= self.scroll_x + width
            ):
                x = max(0, m.end() - width + 8) if m.end() > width else 0
        self._set_scroll(x, top)
        self.refresh()
