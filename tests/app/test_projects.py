"""Several projects in one view: the project column, `project:NAME` in the filter, and tasks
per project in the status line — with real tasks run in real directories."""

from __future__ import annotations

from pathlib import Path

from tests.app.app_support import screen_text, until
from tests.conftest import owned_engine, shell_task
from tui.app.tui_app import TuiApp
from tui.app.widgets.task_list import TaskList
from tui.store.db import Store


async def test_project_column_filter_and_counts(store: Store, tmp_path: Path) -> None:
    tasks = []
    for project, names in (("webshop", ("build-web", "test-web")), ("billing", ("build-pay",))):
        (tmp_path / project).mkdir()
        for name in names:
            t = shell_task(name, "true")
            t.agent.project_dir = str(tmp_path / project)
            tasks.append(t)
    async with owned_engine(store, kill_grace=1.0) as engine:
        await engine.submit(tasks)
        await engine.wait_settled(t.id for t in tasks)
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.query_one(TaskList)
            await until(pilot, lambda: table.row_count == 3, "the tasks")
            shown = screen_text(app)
            assert "PROJECT" in shown
            assert any("build-pay" in ln and "billing" in ln for ln in shown.splitlines())
            assert "webshop 2 billing 1" in shown  # the status line
            await pilot.press("colon", *"project:billing", "enter")
            await until(pilot, lambda: table.row_count == 1, "the project filter")
            assert table.selected_id == tasks[2].id


async def test_one_project_shows_no_column_or_counts(store: Store, tmp_path: Path) -> None:
    t = shell_task("solo", "true")
    t.agent.project_dir = str(tmp_path)
    async with owned_engine(store, kill_grace=1.0) as engine:
        await engine.submit([t])
        await engine.wait_settled([t.id])
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: "solo" in screen_text(app), "the task")
            assert "PROJECT" not in screen_text(app)
