"""Several projects in one view: the project column, `project:NAME` in the filter, and tasks
per project in the status line — with real tasks run in real directories."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from tests.app.app_support import screen_text, until
from tests.conftest import owned_engine, shell_task
from tui.app.projects import project_of
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


async def test_project_read_from_stored_specs_without_being_fooled(store: Store) -> None:
    """The list tells an empty project from the stored spec's text when it can (10,000 tasks
    are not parsed for it): text that only looks like the field, in a description, and a spec
    stored with spaces (an older writer) give the project the spec says."""
    empty = shell_task("no-project", "true")
    empty.description = 'says "project_dir":"/srv/shop" in words'
    shop = shell_task("in-shop", "true")
    shop.agent.project_dir = "/srv/shop"
    shop.description = 'says "project_dir":"" in words'
    await store.insert_tasks([empty, shop], approved=True)
    records = {r.name: r for r in await store.list_tasks()}
    assert project_of(records["no-project"]) == ""
    assert project_of(records["in-shop"]) == "shop"
    spaced = shell_task("spaced", "true")
    spaced.agent.project_dir = "/srv/billing"
    rec = dataclasses.replace(
        records["in-shop"], id=spaced.id, spec=json.dumps(spaced.model_dump(mode="json"))
    )
    assert project_of(rec) == "billing"
