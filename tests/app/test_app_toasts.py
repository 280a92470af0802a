"""Toasts at start: a burst of them must not cover the output pane (80×24)."""

from __future__ import annotations

from textual.widgets._toast import Toast

from tests.app.app_support import until
from tests.conftest import shell_task
from tui.app.app_toasts import MAX_TOASTS
from tui.app.tui_app import TuiApp
from tui.engine.scheduler import Engine


async def test_a_burst_of_toasts_at_start_leaves_the_output_pane_readable(engine: Engine) -> None:
    """Opening sample_tasks/ at 80×24 stacked six toasts of four rows each ("14 tasks
    completed", "2 tasks completed", "Waiting for you", "Failed", …) over the whole output
    pane and the task list's NOTE column."""
    quick = [shell_task(f"step-{i}", "true") for i in range(4)]
    broken = shell_task("broken", "exit 3")
    asks = shell_task("pick-db", 'tui ask "Which database?" --option SQLite --option PostgreSQL')
    app = TuiApp(
        engine,
        osc="off",
        remember_theme=False,
        toasts=True,
        notices=["the first notice from the command line", "and a second one"],
    )
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await until(pilot, lambda: len(app.screen.query(Toast)) == 2, "both notices")
        for task in [*quick, broken, asks]:  # one batch after another, as a run goes
            await engine.submit([task])
            await until(pilot, lambda: bool(app._list.records.keys() >= {task.id}), task.name)  # noqa: B023
        await until(pilot, lambda: app._panel.count == 1, "the question")
        await until(pilot, lambda: "has a question" in _toasts_text(app), "its toast")
        # A long one wraps inside the output pane instead of covering the list's border.
        app.notify("pick-db is a shell task: only claude, gemini, codex sessions continue")
        await until(pilot, lambda: "sessions continue" in _toasts_text(app), "the long one")
        toasts = list(app.screen.query(Toast))
        assert len(toasts) <= MAX_TOASTS
        right = app.query_one("#right").region
        status = app.query_one("#status").region
        for toast in toasts:
            region = toast.region
            assert region.x >= right.x, "a toast covers the task list"
            assert not region.overlaps(status), "a toast covers the status line"
            assert region.height <= 3, "a toast takes blank rows"
        log = app.query_one("#log").region
        assert sum(t.region.height for t in toasts) <= log.height // 3 + 1


def _toasts_text(app: TuiApp) -> str:
    return " ".join(str(t.render()) for t in app.screen.query(Toast))
