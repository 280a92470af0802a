"""`x` (reject a review) on a task that waits for no review says so at once, instead of
asking for a comment that can only be refused once typed."""

from __future__ import annotations

from tests.app.app_support import until
from tests.conftest import shell_task
from tui.app.prompts import TextPrompt
from tui.app.tui_app import TuiApp
from tui.engine.scheduler import Engine


async def test_x_on_a_task_without_a_review_says_so_before_asking(engine: Engine) -> None:
    t = shell_task("done", "true")
    await engine.submit([t])
    await engine.wait_settled([t.id])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app._list.selected_id == t.id, "the task selected")
        await pilot.press("x")
        await until(
            pilot,
            lambda: any("not waiting for a review" in str(n.message) for n in app._notifications),
            "the refusal",
        )
        assert not isinstance(app.screen, TextPrompt)


async def test_x_on_a_task_under_review_asks_why_and_sends_it_back(engine: Engine) -> None:
    t = shell_task("essay", 'echo "draft ${TUI_REJECTION_COMMENT:-one}"', review=True)
    await engine.submit([t])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=(80, 24)) as pilot:

        async def reviewed(result: str) -> bool:
            return [q.payload.get("result") for q in await engine.questions(t.id)] == [result]

        for _ in range(500):  # the first draft waits for its review
            if await reviewed("draft one"):
                break
            await pilot.pause(0.02)
        await until(pilot, lambda: app._list.selected_id == t.id, "the task selected")
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt), "the comment prompt")
        await pilot.press(*"two", "enter")
        for _ in range(500):
            if await reviewed("draft two"):
                break
            await pilot.pause(0.02)
        assert await reviewed("draft two")
