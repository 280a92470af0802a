"""`priority: critical` in the app: shown, sorted above high, and filtered by."""

from __future__ import annotations

from tests.app.app_support import screen_text, until, visible_text
from tests.conftest import shell_task
from tui.app.prompts import TextPrompt
from tui.app.tui_app import TuiApp
from tui.app.widgets.task_list import TaskList
from tui.engine.scheduler import Engine
from tui.store.db import Store

SIZE = (180, 40)  # wide enough for the priority column


async def test_critical_is_shown_sorted_first_and_filtered(store: Store) -> None:
    engine = Engine(store, auto_approve=False)  # tasks stay PENDING: no processes needed
    await engine.start()
    try:
        tasks = [
            shell_task("t-low", "true", priority="low"),
            shell_task("t-high", "true", priority="high"),
            shell_task("t-crit", "true", priority="critical"),
            shell_task("t-normal", "true"),
        ]
        await engine.submit(tasks)
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
        async with app.run_test(size=SIZE) as pilot:
            table = app.query_one(TaskList)
            await until(pilot, lambda: table.row_count == 4, "the tasks")
            crit_row = next(ln for ln in visible_text(table).splitlines() if "t-crit" in ln)
            assert "critical" in crit_row  # whole, not cut to the width of "normal"
            await pilot.press("s", "s", "s")  # submitted → state → name → priority
            await until(pilot, lambda: table.sort_key == "priority", "the priority sort")
            names = [table.records[table._shown[i]].name for i in range(table.row_count)]
            assert names == ["t-crit", "t-high", "t-normal", "t-low"]

            async def filter_by(query: str) -> set[str]:
                await pilot.press("colon", *query, "enter")
                await until(pilot, lambda: not isinstance(app.screen, TextPrompt), "the filter")
                await pilot.pause()
                return {table.records[table._shown[i]].name for i in range(table.row_count)}

            assert await filter_by("priority:critical") == {"t-crit"}
            assert await filter_by("prio:normal") == {"t-normal"}
            await filter_by("priority:urgent")
            assert any("no priority 'urgent'" in n.message for n in app._notifications)
            assert "Tasks 1/4 · prio:normal" in screen_text(app)
    finally:
        await engine.stop()


async def test_a_result_kept_unparsed_shows_its_note(store: Store) -> None:
    kept = shell_task(
        "kept", "echo plain words", output_format={"type": "json", "on_parse_error": "keep"}
    )
    plain = shell_task("plain", "echo fine")
    async with Engine(store) as engine:
        await engine.submit([kept, plain])
        await engine.wait_settled([kept.id, plain.id])
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
        async with app.run_test(size=SIZE) as pilot:
            table = app.query_one(TaskList)
            await until(pilot, lambda: table.row_count == 2, "the tasks")
            rows = visible_text(table).splitlines()
            kept_row = next(ln for ln in rows if " kept " in ln)
            plain_row = next(ln for ln in rows if " plain " in ln)
            assert "output_format: result is not JSON" in kept_row, kept_row
            assert "exit code" not in plain_row  # a plain completion still has no note
