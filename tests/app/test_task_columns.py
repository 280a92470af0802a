"""Which task-list columns a pane of a given width shows."""

from __future__ import annotations

import itertools

import pytest

from tests.app.app_support import until, visible_text
from tests.conftest import shell_task, wait_state
from tui.app.tui_app import TuiApp
from tui.app.widgets import task_cells
from tui.app.widgets.task_columns import COLUMNS, PAD, fit_columns, fit_text, most_width
from tui.app.widgets.task_list import TaskList
from tui.engine.scheduler import Engine
from tui.model.states import State

CONTENT = {
    "state": 13,
    "name": 40,
    "agent": 12,
    "prio": 6,
    "time": 6,
    "try": 3,
    "cost": 5,
    "tags": 10,
    "note": 30,
}


def test_columns_go_by_priority_as_the_pane_narrows() -> None:
    seen = []
    for width in range(140, 10, -1):
        layout = fit_columns(CONTENT, width, 13)
        assert sum(w + 2 * PAD for w in layout.values()) <= width
        assert list(layout) == [c for c in COLUMNS if c in layout]  # display order kept
        seen.append(set(layout))
    dropped = []
    for before, after in itertools.pairwise(seen):
        dropped += sorted(before - after)
    # extras first, the note and the name last
    assert dropped.index("tags") < dropped.index("cost") < dropped.index("note")
    assert dropped.index("agent") < dropped.index("time")
    assert "name" in seen[-1] and "state" in seen[-1]


def test_wide_panes_show_the_whole_note_and_cap_the_name() -> None:
    layout = fit_columns(CONTENT, 140, 13)
    assert layout["note"] == 30 and layout["name"] == 28 and layout["state"] == 13


def test_cells_are_cut_with_an_ellipsis() -> None:
    assert fit_text("abcdef", 4) == "abc…"
    assert fit_text("ab", 4) == "ab  "
    assert fit_text("日本語テキスト", 5) == "日本…"


def test_the_name_gets_its_width_before_the_note_grows() -> None:
    """An 18-cell name (`  compact:per-file` under its parent) is whole in the list at 120×40
    (64 cells) and at 80×24 (40 beside the scrollbar); the note takes what is left."""
    content = {**CONTENT, "name": 18, "time": 4, "agent": 0, "prio": 0, "tags": 0, "cost": 0}
    for width in (64, 40):
        layout = fit_columns(content, width, 13)
        assert layout["name"] == 18 and "note" in layout and "time" in layout
        assert sum(w + 2 * PAD for w in layout.values()) == width  # the note took the rest


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_names_are_whole_in_the_app_while_the_note_has_room(
    engine: Engine, size: tuple[int, int]
) -> None:
    first = shell_task("integration-suite", "sleep 300")
    second = shell_task("migrate-database", "sleep 300")
    then = shell_task("publish-artifacts", "true", depends_on=[first.id, second.id])
    await engine.submit([first, second, then])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=size) as pilot:
        table = app.query_one(TaskList)
        await until(pilot, lambda: "waiting" in visible_text(table), "the note")
        text = visible_text(table)
        for name in ("integration-suite ", "migrate-database ", "publish-artifacts "):
            assert name in text


async def test_columns_refit_when_unfolding_brings_a_scrollbar(engine: Engine) -> None:
    """Unfolding every parent at 80×24 made the list taller than the pane: the scrollbar that
    came took two cells from a layout fitted without it, so notes were cut without "…" and
    the list scrolled sideways."""
    parents = [shell_task(f"group-{i}", "true") for i in range(3)]
    children = [
        shell_task(f"step-{i}-{j}", "true", parent_task_id=p.id)
        for i, p in enumerate(parents)
        for j in range(8)
    ]
    broken = shell_task("broken", "echo no; exit 3")
    await engine.submit([broken, *parents, *children])  # the first row
    await engine.wait_settled([t.id for t in [*parents, *children, broken]])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(TaskList)
        await until(pilot, lambda: len(table.records) == 28, "the tasks")
        await pilot.press("minus")
        await until(pilot, lambda: not table.show_vertical_scrollbar, "every parent folded")
        await pilot.press("plus")
        await until(pilot, lambda: table.show_vertical_scrollbar, "unfolded, taller than the pane")
        await pilot.pause()
        assert not table.show_horizontal_scrollbar
        used = sum(w + 2 * PAD for w in table._layout.values())
        assert used <= table.scrollable_content_region.width
        (row,) = [line for line in visible_text(table).splitlines() if "broken" in line]
        assert "exit code 3" in row or row.rstrip().endswith("…"), row


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_empty_lists_hint_is_whole(engine: Engine, size: tuple[int, int]) -> None:
    """At 80×24 a fresh database showed "no tasks yet — o opens a task file, T run…"."""
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=size) as pilot:
        table = app.query_one(TaskList)
        await until(pilot, lambda: "no tasks yet" in visible_text(table), "the hint")
        shown = " ".join(line.strip() for line in visible_text(table).splitlines()[1:])
        assert table.empty_text() in shown, shown
        assert "…" not in shown


def test_one_long_name_does_not_take_the_notes_room() -> None:
    """The name column grows to what most names need; the longest only once notes are whole."""
    assert most_width([17, 4, 4, 7, 50]) == 17 and most_width([8, 4, 10, 7]) == 10
    assert most_width([25, 25, 25, 25, 40]) == 25  # most names are long: they are whole
    assert most_width([12]) == 12 and most_width([]) == 0
    content = {**CONTENT, "name": 50, "note": 28, "agent": 0, "prio": 0, "tags": 0, "cost": 0}
    layout = fit_columns(content, 66, 13, name_most=17)
    assert layout["note"] == 28 and layout["name"] == 17
    wide = fit_columns(content, 140, 13, name_most=17)
    assert wide["name"] == 28 and wide["note"] == 28  # room for both: the long name whole-ish


async def test_a_long_name_leaves_the_other_rows_notes_whole_at_120x40(engine: Engine) -> None:
    """At 120×40 one 50-cell name widened the name column to its cap for every row and cut
    "waiting on integration-suite" on each of the others to "waiting on integ…"."""
    first = shell_task("integration-suite", "sleep 300")
    long = shell_task("regenerate-every-fixture-for-the-nightly-suite", "sleep 300")
    later = [shell_task(n, "true", depends_on=[first.id]) for n in ("lint", "docs", "package")]
    await engine.submit([first, long, *later])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(TaskList)
        await until(pilot, lambda: "waiting" in visible_text(table), "the notes")
        rows = visible_text(table).splitlines()
        for name in ("lint", "docs", "package"):
            (row,) = [r for r in rows if f" {name} " in r]
            assert "waiting on integration-suite" in row, row
        (row,) = [r for r in rows if "regenerate" in r]
        assert "…" in row  # the one long name is cut, not the others' notes


def test_a_column_shows_only_when_the_ones_before_it_fit() -> None:
    """Where TIME does not fit, TRY does not take its place: the note has those cells."""
    content = {**CONTENT, "name": 20, "note": 28, "agent": 0, "prio": 0, "tags": 0, "cost": 0}
    layout = fit_columns(content, 43, 13)  # the list's width at 80×24
    assert "time" not in layout and "try" not in layout
    assert layout["name"] == 20 and layout["note"] == 15
    assert fit_columns(content, 44, 13)["time"] == 6  # one cell more: TIME first


async def test_a_notes_words_at_80x24_when_time_is_long(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80×24, tasks of 20-cell names running for minutes ("12m05s"): TIME did not fit,
    TRY took three of its cells and the note showed "waiting o…"."""
    monkeypatch.setattr(task_cells, "elapsed", lambda r, now: "12m05s" if r.run_started_at else "")
    first = shell_task("integration-suite-ab", "sleep 300")
    second = shell_task("migrate-the-database", "sleep 300")
    then = shell_task("publish-the-artifact", "true", depends_on=[first.id, second.id])
    await engine.submit([first, second, then])
    # Both running (their TIME "12m05s") before the list is drawn: before that no row has a
    # TIME, and TRY rightly shows without it.
    for task in (first, second):
        await wait_state(engine, task.id, State.RUNNING)
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(TaskList)
        await until(pilot, lambda: "waiting" in visible_text(table), "the note")
        header, *rows = visible_text(table).splitlines()
        assert "TRY" not in header or "TIME" in header, header
        (row,) = [r for r in rows if "publish-the-artifact" in r]
        assert "waiting on int" in row, row
