"""Keys that come in a burst (a held key's repeat, a paste, a slow link catching up) each do
their work: a scroll that reads where the view is before the last one was applied moved one
line for twelve presses."""

from __future__ import annotations

from textual import events

from tests.app.app_support import until, visible_text
from tests.conftest import shell_task
from tui.app.help_screen import HelpScreen
from tui.app.tui_app import TuiApp
from tui.app.widgets.log_view import LogView
from tui.engine.scheduler import Engine


async def test_twelve_js_at_once_scroll_the_help_twelve_lines(engine: Engine) -> None:
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        body = help_screen.body
        await until(pilot, lambda: body.max_scroll_y > 20, "the help laid out")
        for _ in range(12):  # in one read from the terminal: no refresh between them
            app.post_message(events.Key("j", "j"))
        await until(pilot, lambda: body.scroll_y >= 12, "twelve lines scrolled", rounds=50)
        assert body.scroll_y == 12
        for _ in range(5):
            app.post_message(events.Key("k", "k"))
        await until(pilot, lambda: body.scroll_y <= 7, "five lines back", rounds=50)
        assert body.scroll_y == 7


async def test_twelve_js_at_once_scroll_the_output_twelve_lines(engine: Engine) -> None:
    t = shell_task("numbers", 'for i in $(seq 1 500); do echo "line $i"; done')
    await engine.submit([t])
    await engine.wait_settled([t.id])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=(80, 24)) as pilot:
        log = app.query_one(LogView)
        await until(pilot, lambda: "line 500" in visible_text(log), "the end of the log")
        await pilot.press("1", "g")
        await until(pilot, lambda: log.scroll_y == 0, "the top")
        for _ in range(12):
            app.post_message(events.Key("j", "j"))
        await until(pilot, lambda: log.scroll_y >= 12, "twelve lines scrolled", rounds=50)
        assert log.scroll_y == 12
        assert visible_text(log).splitlines()[0].rstrip() == "line 13"
