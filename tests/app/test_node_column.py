"""The task list's NODE column: where a run was placed (a Ray node), stored with the run.

The executor here is the local one plus the one call a cluster executor makes when it knows the
node (`RunHost.node_started`); the real Ray placement is tested in tests/cli/test_ray_executor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.app.app_support import until, visible_text
from tests.conftest import shell_task
from tui.app.tui_app import TuiApp
from tui.app.widgets.task_columns import fit_columns
from tui.app.widgets.task_list import TaskList
from tui.engine.adapter import RunResult, declared_adapters
from tui.engine.runner import LocalExecutor, Run, RunHost
from tui.engine.scheduler import Engine
from tui.store.db import Store
from tui.store.records import RunStart, TaskRecord

NODE = "4f2a9c81d0e3" + "7" * 44  # a Ray node id is 56 hex digits


class PlacedExecutor(LocalExecutor):
    """Runs locally, reporting a node first, as the Ray executor does."""

    async def run(self, run: Run, rec: TaskRecord, began: RunStart, host: RunHost) -> RunResult:
        await host.node_started(run, NODE)
        return await super().run(run, rec, began, host)


@pytest.fixture
async def engine(store: Store) -> AsyncIterator[Engine]:
    e = Engine(store, executor=PlacedExecutor(declared_adapters(), kill_grace=1.0))
    await e.start()
    try:
        yield e
    finally:
        await e.stop()


async def test_the_node_is_stored_with_the_run_and_shown_in_the_list(engine: Engine) -> None:
    t = shell_task("placed", "echo hi")
    await engine.submit([t])
    await engine.wait_settled([t.id])
    (run,) = await engine.store.runs(t.id)
    assert run.node == NODE
    stored = await engine.store.get_task(t.id)
    assert stored is not None and stored.run_node == NODE
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=(120, 24)) as pilot:
        table = pilot.app.query_one(TaskList)
        await until(pilot, lambda: "NODE" in visible_text(table), "the NODE column")
        header, row = visible_text(table).splitlines()[:2]
        assert row[header.index("NODE") :].startswith(NODE[:12])


def test_no_node_column_while_no_run_was_placed() -> None:
    content = {
        "state": 13,
        "name": 10,
        "agent": 5,
        "node": 0,
        "prio": 6,
        "time": 3,
        "try": 3,
        "cost": 0,
        "tags": 0,
        "note": 0,
    }
    assert "node" not in fit_columns(content, 200, 13)
    assert fit_columns({**content, "node": 12}, 200, 13)["node"] == 12
