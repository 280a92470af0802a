"""LogView against a real Store on a temporary SQLite file: what a user sees on screen."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from rich.style import Style
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from tui.app.widgets.log_view import MAX_CACHED_LINES, PAGE_SIZE, LogView
from tui.engine.events import OutputBatch
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store
from tui.store.records import STDERR, STDOUT, OutputLine

SIZE = (80, 24)


class LogApp(App[None]):
    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store

    def compose(self) -> ComposeResult:
        yield LogView(self.store, id="log")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(tmp_path / "t.db")
    yield s
    await s.close()


async def new_task(store: Store, name: str = "t") -> str:
    task = Task.model_validate({"name": name, "agent": {"type": "shell", "instructions": "x"}})
    await store.insert_tasks([task], approved=True)
    await store.transition(task.id, State.PENDING, State.QUEUED)
    return task.id


async def new_run(store: Store, task_id: str) -> int:
    """Start a run; a running task first fails its current attempt and is re-queued."""
    if await store.transition(task_id, State.RUNNING, State.FAILED):
        await store.transition(task_id, State.FAILED, State.QUEUED)
    began = await store.begin_run(task_id, "e")
    assert began is not None
    return began[0]


async def write(
    store: Store,
    task_id: str,
    run_id: int,
    texts: list[str],
    *,
    first_seq: int = 1,
    stream: int = STDOUT,
) -> list[OutputLine]:
    now = time.time()
    out: list[OutputLine] = []
    for i in range(0, len(texts), 10_000):
        rows = [
            (task_id, run_id, stream, first_seq + i + j, now, t)
            for j, t in enumerate(texts[i : i + 10_000])
        ]
        first_id = await store.append_output(rows)
        out += OutputBatch(first_id, rows).lines
    return out


def visible(view: LogView) -> list[str]:
    return [view.render_line(y).text.rstrip() for y in range(view.scrollable_content_region.height)]


def line_styles(view: LogView, needle: str) -> list[Style]:
    for y in range(view.scrollable_content_region.height):
        strip = view.render_line(y)
        if needle in strip.text:
            return [seg.style for seg in strip if seg.text.strip() and seg.style is not None]
    raise AssertionError(f"{needle!r} not visible in {visible(view)}")


async def until(pilot: Pilot, cond: Callable[[], bool], what: str, tries: int = 400) -> None:
    for _ in range(tries):
        if cond():
            return
        await pilot.pause()
    raise AssertionError(f"timed out waiting for {what}")


def shows(view: LogView, text: str) -> Callable[[], bool]:
    return lambda: any(text == ln or ln.startswith(text + " ") for ln in visible(view))


async def test_shows_tail_of_runs_with_separator(store: Store) -> None:
    tid = await new_task(store)
    r1 = await new_run(store, tid)
    await write(store, tid, r1, [f"first {i}" for i in range(1, 6)])
    r2 = await new_run(store, tid)
    await write(store, tid, r2, [f"second {i}" for i in range(1, 6)])
    app = LogApp(store)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        await view.show_task(tid)
        await until(pilot, shows(view, "second 5"), "lines")
        lines = visible(view)
        assert lines[:11] == [
            *(f"first {i}" for i in range(1, 6)),
            "── attempt 2 ──",
            *(f"second {i}" for i in range(1, 6)),
        ]
        assert view.line_count == 10
        await view.show_task(None)
        await pilot.pause()
        assert all(not ln for ln in visible(view))


async def test_stderr_and_ansi_colours_and_tabs(store: Store) -> None:
    tid = await new_task(store)
    run = await new_run(store, tid)
    await write(store, tid, run, ["plain out", "\x1b[31mred words\x1b[0m after", "a\tb"])
    await write(store, tid, run, ["bad things"], first_seq=4, stream=STDERR)
    app = LogApp(store)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        await view.show_task(tid)
        await until(pilot, shows(view, "bad things"), "lines")
        lines = visible(view)
        assert "red words after" in lines
        assert not any("\x1b" in ln or "[31m" in ln for ln in lines)
        assert "a       b" in lines  # tab expanded to the next 8-column stop
        red = [s.color for s in line_styles(view, "red words") if s.color is not None]
        assert any(c.number == 1 for c in red)  # ANSI red (standard colour 1)
        out_colors = {s.color for s in line_styles(view, "plain out")}
        err_colors = {s.color for s in line_styles(view, "bad things")}
        assert err_colors and err_colors.isdisjoint(out_colors)


async def test_follow_appends_pause_and_resume(store: Store) -> None:
    tid = await new_task(store)
    run = await new_run(store, tid)
    await write(store, tid, run, [f"line {i}" for i in range(1, 51)])
    app = LogApp(store)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        view.focus()
        await view.show_task(tid)
        await until(pilot, shows(view, "line 50"), "tail")
        assert view.follow
        seq = 50
        for _ in range(5):
            batch = await write(
                store, tid, run, [f"line {seq + i}" for i in range(1, 21)], first_seq=seq + 1
            )
            seq += 20
            view.append(batch)
            await until(pilot, shows(view, f"line {seq}"), f"line {seq} after append")
        # Other tasks' lines are ignored.
        other = await new_task(store, "other")
        orun = await new_run(store, other)
        view.append(await write(store, other, orun, ["not mine"]))
        await pilot.pause()
        assert view.line_count == seq

        await pilot.press("k", "k", "pageup")
        await until(pilot, lambda: not view.follow, "follow paused")
        assert view.border_subtitle == "paused — G to follow"
        batch = await write(store, tid, run, ["while paused"], first_seq=seq + 1)
        view.append(batch)
        await until(pilot, lambda: view.line_count == seq + 1, "count grows")
        assert not shows(view, "while paused")()
        await pilot.press("G")
        await until(pilot, shows(view, "while paused"), "back at the bottom")
        assert view.follow and view.border_subtitle == ""

        # A new run starts a new section while following.
        run2 = await new_run(store, tid)
        view.append(await write(store, tid, run2, ["retry says hi"]))
        await until(pilot, shows(view, "retry says hi"), "new run")
        lines = visible(view)
        assert lines[lines.index("retry says hi") - 1] == "── attempt 2 ──"

        await pilot.press("g")
        await until(pilot, shows(view, "line 1"), "top")
        assert not view.follow


async def test_search_far_down_and_next_prev(store: Store) -> None:
    tid = await new_task(store)
    run = await new_run(store, tid)
    texts = [f"row {i}" for i in range(1, 10_001)]
    for i in (7000, 8000, 9000):
        texts[i - 1] = f"row {i} needle here"
    await write(store, tid, run, texts)
    app = LogApp(store)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        view.focus()
        await view.show_task(tid)
        await pilot.press("g")
        await until(pilot, shows(view, "row 1"), "top")
        worker = view.action_search("NEEDLE")
        assert worker is not None
        await worker.wait()
        await until(pilot, shows(view, "row 7000 needle here"), "first match")
        assert view.current_match == (run, 7000)
        styles = line_styles(view, "row 7000 needle")
        assert any(s.reverse for s in styles)
        await pilot.press("n")
        await until(pilot, shows(view, "row 8000 needle here"), "next match")
        await pilot.press("n")
        await until(pilot, lambda: view.current_match == (run, 9000), "third match")
        await pilot.press("n")  # wraps around
        await until(pilot, lambda: view.current_match == (run, 7000), "wrapped")
        await pilot.press("N")
        await until(pilot, lambda: view.current_match == (run, 9000), "previous wraps back")
        await until(pilot, shows(view, "row 9000 needle here"), "shown")
        await pilot.press("N")
        await until(pilot, lambda: view.current_match == (run, 8000), "previous")
        missing = view.action_search("nowhere")
        assert missing is not None
        await missing.wait()
        assert view.search_status == "not found"


async def test_wrap_toggle(store: Store) -> None:
    tid = await new_task(store)
    run = await new_run(store, tid)
    long = "".join(f"{i:03d}-" for i in range(60))  # 240 cells
    await write(store, tid, run, ["short", long, "end"])
    app = LogApp(store)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        view.focus()
        await view.show_task(tid)
        await until(pilot, shows(view, "end"), "lines")
        width = view.scrollable_content_region.width
        assert visible(view)[:3] == ["short", long[:width], "end"]
        await pilot.press("w")
        await until(pilot, lambda: view.wrap and visible(view)[1] == long[:width], "wrapped")
        rows = visible(view)
        wrapped = -(-len(long) // width)  # rows the long line takes
        assert wrapped > 1
        assert "".join(rows[1 : 1 + wrapped]) == long
        assert rows[1 + wrapped] == "end"
        assert view.virtual_size.height == 2 + wrapped
        await pilot.press("w")
        await until(pilot, lambda: visible(view)[2] == "end", "unwrapped")


async def test_large_log_is_paged(store: Store) -> None:
    tid = await new_task(store)
    run = await new_run(store, tid)
    n = 200_000
    await write(store, tid, run, [f"big {i}" for i in range(1, n + 1)])
    app = LogApp(store)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(LogView)
        view.focus()
        await view.show_task(tid)
        assert view.virtual_size.height == n
        await until(pilot, shows(view, f"big {n}"), "tail of the big log")
        assert view.cached_line_count <= PAGE_SIZE * 2
        await pilot.press("g")
        await until(pilot, shows(view, "big 1"), "top")
        for _ in range(40):  # jump through the log: the cache stays bounded
            await pilot.press("pagedown")
            view.scroll_to(y=view.scroll_y + 5_000, animate=False)
            await pilot.pause()
        assert view.cached_line_count <= MAX_CACHED_LINES
        await pilot.press("G")
        await until(pilot, shows(view, f"big {n}"), "last line after jumping to the end")
        assert view.cached_line_count <= MAX_CACHED_LINES
