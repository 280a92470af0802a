"""A selected task with no output says so, instead of a blank pane that reads as broken."""

from __future__ import annotations

from tests.app.app_support import until, visible_text
from tests.conftest import shell_task
from tui.app.tui_app import TuiApp
from tui.app.widgets.log_view import LogView
from tui.engine.scheduler import Engine


async def test_a_task_without_output_says_no_output(engine: Engine) -> None:
    quiet, talker = shell_task("quiet", "true"), shell_task("talker", "echo hello")
    await engine.submit([quiet, talker])
    await engine.wait_settled([quiet.id, talker.id])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=(80, 24)) as pilot:
        log = app.query_one(LogView)
        await until(pilot, lambda: app._list.selected_id == quiet.id, "quiet selected")
        await until(pilot, lambda: visible_text(log).strip() == "no output", "the word")
        await pilot.press("j")
        await until(pilot, lambda: "hello" in visible_text(log), "talker's output")
        assert "no output" not in visible_text(log)
