"""A y/N question stays readable while toasts are up: at 80 columns the toasts (bottom right)
covered the end of the question, its `[y/N]` among it ("Cancel x? Its running pr▌")."""

from __future__ import annotations

from tests.app.app_support import screen_text, until
from tests.conftest import shell_task
from tui.app.prompts import Confirm, TextPrompt
from tui.app.tui_app import TuiApp
from tui.engine.scheduler import Engine
from tui.model.states import State


async def test_the_cancel_question_is_not_hidden_by_toasts(engine: Engine) -> None:
    t = shell_task("choose-database", "sleep 60")
    await engine.submit([t])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await until(pilot, lambda: app._list.selected_id == t.id, "the task selected")
        running = app._list.records
        await until(pilot, lambda: running[t.id].state == State.RUNNING, "the task running")
        for i in range(3):  # what a person may have just been told, still on screen
            app.notify(f"note {i}: something happened to a task a while ago", timeout=30)
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, Confirm), "the question")
        await pilot.pause()
        question = "Cancel choose-database? Its running process is killed. [y/N]"
        assert question in screen_text(app), screen_text(app)
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, Confirm), "the question gone")
        # A prompt's line too: what is typed stays readable to its end.
        await pilot.press("colon")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt), "the filter prompt")
        typed = "text that runs all the way across to the right edge of the prompt"
        await pilot.press(*typed)
        await pilot.pause()
        assert typed in screen_text(app), screen_text(app)
        await pilot.press("escape")
    await engine.cancel(t.id)
