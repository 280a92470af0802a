"""The paging half of the log view (``LogView`` is the other): which rows a task's log has,
which pages of it are cached, how wrapped rows map to lines, and live lines coming in.

Rows. The log of a task is its runs, oldest first, with a one-row muted separator
``── attempt N ──`` before every run but the first. ``show_task`` reads only the run index
(``(run_id, line_count)`` per run) so the virtual height is known at once, whatever the size.

Pages. Lines are read from the source in pages of ``PAGE_SIZE`` lines of one run (page ``p``
of a run holds seqs ``p*PAGE_SIZE+1 .. (p+1)*PAGE_SIZE``). Pages live in an LRU bounded by
``MAX_CACHED_LINES`` lines in total, so memory does not grow with the log. ``render_line`` paints
from the cache; a row whose page is missing shows a dim placeholder and schedules one fetch
(a worker) for that page; when it lands, only the rows of that page that are on screen are
refreshed. Fetches for pages scrolled far away before their turn are dropped.

Live lines. ``append`` queues the engine's lines of the shown task; they are applied at most
once per frame (~30 fps): counts grow, the cached tail page is extended in place, a new run
starts a new section, and in follow mode the view stays at the bottom.

Wrap. With ``wrap`` on, a line of ``w`` cells takes ``ceil(w / width)`` rows (hard wrap at the
cell boundary, as a terminal does), so ``height`` is only known for lines whose page is
cached. The virtual height is the exact wrapped height of cached pages plus one row per line
of every other page — exact for logs that fit in the cache (logs up to
``WRAP_EXACT_LIMIT`` lines are loaded whole when wrap is on) and an estimate, still bounded in
memory, for bigger ones. When the estimate changes (a page arrives or is evicted, the width
changes) the line at the top of the view is kept in place (or the bottom, when following).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from time import monotonic
from typing import Protocol

from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.timer import Timer

from tui.app.widgets import log_text
from tui.app.widgets.virtual_size import set_virtual_size
from tui.store.records import OutputLine

PAGE_SIZE = 500
MAX_CACHED_LINES = 16_000  # 32 full pages; a screen needs at most two or three
WRAP_EXACT_LIMIT = 10_000
FRAME_SECONDS = 1 / 30


class LogSource(Protocol):
    """Where the lines come from. ``tui.store.db.Store`` satisfies it as is."""

    async def output_index(self, task_id: str) -> list[tuple[int, int]]: ...

    async def read_run_lines(
        self, run_id: int, first_seq: int, last_seq: int
    ) -> list[OutputLine]: ...


@dataclass
class _Section:
    run_id: int
    count: int  # lines in the run (highest seq seen)
    start: int = 0  # row of its first line


@dataclass
class _Page:
    """Consecutive lines of one run, from ``first_seq``; ``None`` for a seq the store lacks."""

    first_seq: int
    lines: list[OutputLine | None]
    widths: list[int]
    _prefix_key: tuple[int, int] = (0, 0)
    _prefix: list[int] = field(default_factory=list)

    def add(self, line: OutputLine | None) -> None:
        self.lines.append(line)
        self.widths.append(log_text.width(line.text) if line else 0)

    def prefix(self, width: int) -> list[int]:
        """Cumulative wrapped heights (``len(lines) + 1`` entries) at ``width`` cells."""
        key = (width, len(self.lines))
        if self._prefix_key != key:
            acc = 0
            out = [0]
            for w in self.widths:
                acc += (w + width - 1) // width if w > width else 1
                out.append(acc)
            self._prefix, self._prefix_key = out, key
        return self._prefix


@dataclass
class _Layout:
    """Where the cached pages sit in wrapped rows (empty when wrap is off: rows are rows)."""

    key: tuple[int, int, bool]
    lstarts: list[int] = field(default_factory=list)  # first logical row of each cached page
    vstarts: list[int] = field(default_factory=list)  # its first virtual row
    prefixes: list[list[int]] = field(default_factory=list)
    extra_through: list[int] = field(default_factory=list)  # extra rows up to and incl. page
    extra: int = 0

    def to_row(self, vy: int) -> tuple[int, int]:
        """Virtual row → (logical row, wrapped sub-row)."""
        i = bisect_right(self.vstarts, vy) - 1
        if i < 0:
            return vy, 0
        prefix = self.prefixes[i]
        off = vy - self.vstarts[i]
        if off < prefix[-1]:
            j = bisect_right(prefix, off) - 1
            return self.lstarts[i] + j, off - prefix[j]
        return vy - self.extra_through[i], 0

    def to_vy(self, row: int) -> int:
        """Logical row → its first virtual row."""
        i = bisect_right(self.lstarts, row) - 1
        if i < 0:
            return row
        prefix = self.prefixes[i]
        off = row - self.lstarts[i]
        if off < len(prefix) - 1:
            return self.vstarts[i] + prefix[off]
        return row + self.extra_through[i]


class LogPages(ScrollView):
    """A ScrollView over a task's log, read from a ``LogSource`` in cached pages."""

    follow: reactive[bool] = reactive(True, init=False)
    """Keep the newest line in view; scrolling up pauses it, ``G`` resumes it."""
    wrap: reactive[bool] = reactive(False, init=False)
    """Wrap long lines to the width instead of cropping them (horizontal scroll)."""

    def __init__(
        self,
        source: LogSource,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._source = source
        self._task_id: str | None = None
        self._gen = 0  # bumped on every show_task: results for an older task are dropped
        self._loading = False
        self._sections: list[_Section] = []
        self._by_run: dict[int, int] = {}
        self._total_rows = 0
        self._max_width = 0
        self._pages: OrderedDict[tuple[int, int], _Page] = OrderedDict()
        self._cached_lines = 0
        self._pending: set[tuple[int, int]] = set()
        self._failed: set[tuple[int, int]] = set()
        self._version = 0  # bumped when pages or sections change (invalidates the layout)
        self._layout_obj = _Layout(key=(-1, 0, False))
        self._incoming: list[OutputLine] = []
        self._flush_timer: Timer | None = None
        self._flush_queued = False
        self._last_flush = 0.0
        self._programmatic = 0

    @property
    def line_count(self) -> int:
        """Output lines of the shown task (separators not counted)."""
        return sum(s.count for s in self._sections)

    @property
    def cached_line_count(self) -> int:
        """Lines held in memory right now (at most ``MAX_CACHED_LINES``)."""
        return self._cached_lines

    # -- rows ----------------------------------------------------------------------------

    def _add_section(self, run_id: int, count: int) -> None:
        start = self._total_rows + (1 if self._sections else 0)
        self._by_run[run_id] = len(self._sections)
        self._sections.append(_Section(run_id, count, start))
        self._total_rows = start + count

    def _restart_sections(self) -> None:
        row = 0
        for i, sec in enumerate(self._sections):
            row += 1 if i else 0
            sec.start = row
            row += sec.count
        self._total_rows = row

    def _locate(self, row: int) -> tuple[int, int] | None:
        """Row → (section index, seq); seq 0 is the separator before the section."""
        secs = self._sections
        if not secs or row < 0 or row >= self._total_rows:
            return None
        lo, hi = 0, len(secs)
        while lo < hi:  # last section starting at or before row
            mid = (lo + hi) // 2
            if secs[mid].start <= row:
                lo = mid + 1
            else:
                hi = mid
        k = lo - 1
        off = row - secs[k].start
        if off < secs[k].count:
            return k, off + 1
        return k + 1, 0

    def _page_rows(self, key: tuple[int, int]) -> tuple[int, int]:
        sec = self._sections[self._by_run[key[0]]]
        first = sec.start + key[1] * PAGE_SIZE
        return first, min(sec.start + sec.count, first + PAGE_SIZE)

    def _top_row(self) -> int:
        return self._layout().to_row(round(self.scroll_y))[0]

    def _position_at(self, row: int) -> tuple[int, int]:
        """(section, seq) at or just after ``row`` (a separator counts as its run's start)."""
        where = self._locate(min(max(row, 0), self._total_rows - 1))
        if where is None:
            return 0, 1
        k, seq = where
        return k, max(seq, 1)

    def _view_height(self) -> int:
        return max(1, self.scrollable_content_region.height)

    # -- layout, size, scrolling ---------------------------------------------------------

    def _layout(self) -> _Layout:
        width = max(1, self.scrollable_content_region.width)
        key = (self._version, width, bool(self.wrap))
        if self._layout_obj.key == key:
            return self._layout_obj
        lay = _Layout(key=key)
        if self.wrap:
            placed = sorted(
                (self._page_rows(k)[0], page)
                for k, page in self._pages.items()
                if k[0] in self._by_run
            )
            for lstart, page in placed:
                prefix = page.prefix(width)
                lay.lstarts.append(lstart)
                lay.vstarts.append(lstart + lay.extra)
                lay.prefixes.append(prefix)
                lay.extra += prefix[-1] - (len(prefix) - 1)
                lay.extra_through.append(lay.extra)
        self._layout_obj = lay
        return lay

    def _sync_size(self) -> None:
        height = self._total_rows + self._layout().extra
        size = Size(0 if self.wrap else self._max_width, height)
        set_virtual_size(self, size)

    def _keep_anchor(self, change: Callable[[], None]) -> None:
        """Apply ``change`` to what decides wrapped heights, keeping the top line still."""
        old = self._layout_obj
        row, sub = old.to_row(round(self.scroll_y))
        change()
        self._version += 1
        self._sync_size()
        if self.follow:
            self._scroll_end()
        else:
            self._set_scroll(None, self._layout().to_vy(row) + sub)

    def _after_change(self) -> None:
        """Pages or sections changed: new virtual size, and stay at the bottom if following."""
        if self.wrap:
            self._keep_anchor(lambda: None)
        else:
            self._sync_size()
            if self.follow:
                self._scroll_end()

    def _user_scroll(self, x: float | None = None, y: float | None = None) -> None:
        # force: scrollbars (hence allow_*_scroll) lag a layout behind a new virtual size.
        self.scroll_to(x=x, y=y, animate=False, force=True)

    def _set_scroll(self, x: float | None, y: float | None) -> None:
        self._programmatic += 1
        try:
            self.scroll_to(x=x, y=y, animate=False, force=True)
        finally:
            self._programmatic -= 1

    def _scroll_end(self) -> None:
        self._set_scroll(None, self.max_scroll_y)
        # Scrollbars may come and go with the new size: check again once laid out.
        self.call_after_refresh(self._settle_end)

    def _settle_end(self) -> None:
        if self.follow and self.scroll_y != self.max_scroll_y:
            self._set_scroll(None, self.max_scroll_y)

    # -- pages ---------------------------------------------------------------------------

    def _request(self, key: tuple[int, int]) -> None:
        if key in self._pending or key in self._failed:
            return
        self._pending.add(key)
        self.run_worker(self._fetch(self._gen, key), group="log-pages", exit_on_error=False)

    def _wanted(self, key: tuple[int, int]) -> bool:
        """Is the page still worth reading (on or near the screen, or wrap needs all)?"""
        if key[0] not in self._by_run:
            return False
        if self.wrap and self.line_count <= WRAP_EXACT_LIMIT:
            return True
        first, last = self._page_rows(key)
        lay = self._layout()
        top = lay.to_row(round(self.scroll_y))[0]
        bottom = lay.to_row(round(self.scroll_y) + self._view_height())[0]
        margin = PAGE_SIZE + self._view_height()
        return first <= bottom + margin and last >= top - margin

    async def _fetch(self, gen: int, key: tuple[int, int]) -> None:
        try:
            if gen != self._gen or not self._wanted(key):
                return
            run_id, number = key
            first = number * PAGE_SIZE + 1
            count = self._sections[self._by_run[run_id]].count
            last = min(count, first + PAGE_SIZE - 1)
            if last < first:
                return
            try:
                lines = await self._source.read_run_lines(run_id, first, last)
            except Exception as e:  # a closed or broken store: show placeholders, don't loop
                self.log.error(f"log view: reading run {run_id} failed: {e!r}")
                if gen == self._gen:
                    self._failed.add(key)
                return
            if gen != self._gen:
                return
            got: list[OutputLine | None] = [None] * (last - first + 1)
            for ln in lines:
                if first <= ln.seq <= last:
                    got[ln.seq - first] = ln
            old = self._pages.get(key)
            if old is not None and len(old.lines) > len(got):
                got.extend(old.lines[len(got) :])  # live lines that arrived meanwhile
            self._put_page(key, got)
        finally:
            if gen == self._gen:
                self._pending.discard(key)

    def _put_page(self, key: tuple[int, int], lines: list[OutputLine | None]) -> None:
        def change() -> None:
            page = _Page(key[1] * PAGE_SIZE + 1, [], [])
            for ln in lines:
                page.add(ln)
            self._insert(key, page)

        if self.wrap:
            self._keep_anchor(change)
            self.refresh()
        else:
            change()
            self._version += 1
            self._sync_size()
            first, last = self._page_rows(key)
            self.refresh_lines(first, last - first)

    def _insert(self, key: tuple[int, int], page: _Page) -> None:
        old = self._pages.pop(key, None)
        if old is not None:
            self._cached_lines -= len(old.lines)
        self._pages[key] = page
        self._cached_lines += len(page.lines)
        if page.widths:
            self._max_width = max(self._max_width, max(page.widths))
        self._evict(keep=key)

    def _evict(self, keep: tuple[int, int]) -> None:
        """Drop least recently used pages until the cache is within its line budget."""
        while self._cached_lines > MAX_CACHED_LINES and len(self._pages) > 1:
            old_key, evicted = self._pages.popitem(last=False)
            if old_key == keep:
                self._pages[keep] = evicted
                continue
            self._cached_lines -= len(evicted.lines)

    def _load_all_if_small(self) -> None:
        if not self.wrap or self.line_count > WRAP_EXACT_LIMIT:
            return
        for sec in self._sections:
            for number in range((sec.count + PAGE_SIZE - 1) // PAGE_SIZE):
                key = (sec.run_id, number)
                page = self._pages.get(key)
                if page is None or len(page.lines) < min(PAGE_SIZE, sec.count - number * PAGE_SIZE):
                    self._request(key)

    # -- live lines ----------------------------------------------------------------------

    def _schedule_flush(self) -> None:
        if self._loading or self._flush_queued or self._flush_timer is not None:
            return
        delay = self._last_flush + FRAME_SECONDS - monotonic()
        if delay <= 0:
            self._flush_queued = True
            self.call_after_refresh(self._flush)
        else:
            self._flush_timer = self.set_timer(delay, self._flush)

    def _flush(self) -> None:
        self._flush_queued = False
        self._flush_timer = None
        self._last_flush = monotonic()
        batch, self._incoming = self._incoming, []
        batch = [ln for ln in batch if ln.task_id == self._task_id]
        if not batch or self._loading:
            self._incoming = batch + self._incoming
            return
        old_rows = self._total_rows
        shifted = False

        def change() -> None:
            nonlocal shifted
            shifted = self._apply_live(batch)

        if self.wrap:
            self._keep_anchor(change)
            self._load_all_if_small()
            self.refresh()
            return
        change()
        self._version += 1
        self._sync_size()
        if self.follow:
            self._scroll_end()
        if shifted:
            self.refresh()
        else:
            self.refresh_lines(max(0, old_rows - 1), self._total_rows - old_rows + 1)

    def _apply_live(self, batch: list[OutputLine]) -> bool:
        """Grow runs, start new ones, fill cached pages. True if earlier rows moved."""
        shifted = False
        for ln in batch:
            k = self._by_run.get(ln.run_id)
            if k is None:
                self._add_section(ln.run_id, 0)
                k = len(self._sections) - 1
            sec = self._sections[k]
            if ln.seq > sec.count:
                sec.count = ln.seq
                if k == len(self._sections) - 1:
                    self._total_rows = sec.start + sec.count
                else:
                    shifted = True
            self._take_live(ln)
        if shifted:
            self._restart_sections()
        return shifted

    def _take_live(self, ln: OutputLine) -> None:
        """Put a live line into its cached page when that keeps the page contiguous."""
        key = (ln.run_id, (ln.seq - 1) // PAGE_SIZE)
        off = (ln.seq - 1) % PAGE_SIZE
        page = self._pages.get(key)
        if page is None:
            if off == 0:
                page = _Page(ln.seq, [], [])
                page.add(ln)
                self._insert(key, page)
            return
        if off == len(page.lines):
            page.add(ln)
            self._cached_lines += 1
            self._max_width = max(self._max_width, page.widths[-1])
            self._pages.move_to_end(key)
            self._evict(keep=key)
        elif off < len(page.lines) and page.lines[off] is None:
            page.lines[off] = ln
            page.widths[off] = log_text.width(ln.text)
            page._prefix_key = (0, 0)
