"""The task list's folds outlive the app: remembered per database in the UI state file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.app.app_support import until
from tests.app.test_app_tree import names, rows
from tests.conftest import owned_engine, shell_task
from tui.app import fold_memory
from tui.app.fold_memory import load_folds, save_folds
from tui.app.tui_app import TuiApp
from tui.app.ui_state import ui_state_path
from tui.app.widgets.task_list import TaskList
from tui.engine.scheduler import Engine
from tui.model.task import Task
from tui.store.db import Store

SIZE = (100, 30)


def family(prefix: str, children: int = 2) -> list[Task]:
    parent = shell_task(f"{prefix}", "true", id=f"{prefix}-p")
    kids = [
        shell_task(f"{prefix}[{i}]", "true", id=f"{prefix}-{i}", parent_task_id=parent.id)
        for i in range(children)
    ]
    return [parent, *kids]


def make_app(engine: Engine) -> TuiApp:
    return TuiApp(engine, osc="off", remember_theme=False, toasts=False)


async def shown_names(engine: Engine, expected_rows: int) -> list[str]:
    """The NAME cells of a freshly started app on ``engine``, once it lists every task."""
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(rows(app)) >= expected_rows, "the list")
        await pilot.pause()
        return [n.strip() for n in names(app)]


async def test_a_fold_made_by_hand_is_there_after_a_restart(engine: Engine) -> None:
    tasks = family("alpha") + family("beta")
    await engine.submit(tasks, approved=False)  # nothing needs to run
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(names(app)) == 6, "the list")
        app.query_one(TaskList).select_id("beta-p")
        await pilot.press("space")
        await until(pilot, lambda: "beta[0]" not in names(app), "beta folded")
    # Saved as the app closed (and at the next tick after the fold), for this database only.
    assert load_folds(fold_memory.db_key(engine.db_path)) == ({"beta-p"}, set())
    assert await shown_names(engine, 4) == ["▾ alpha 0/2", "alpha[0]", "alpha[1]", "▸ beta 0/2"]


async def test_folds_are_kept_per_database(store: Store, tmp_path: Path) -> None:
    other = await Store.open(tmp_path / "other.db")
    try:
        async with owned_engine(store) as first, owned_engine(other) as second:
            await first.submit(family("alpha"), approved=False)
            await second.submit(family("alpha"), approved=False)  # the same ids, elsewhere
            app = make_app(first)
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: len(names(app)) == 3, "the list")
                await pilot.press("minus")  # fold every parent
                await until(pilot, lambda: len(names(app)) == 1, "folded")
            assert await shown_names(first, 1) == ["▸ alpha 0/2"]
            assert await shown_names(second, 3) == ["▾ alpha 0/2", "alpha[0]", "alpha[1]"]
    finally:
        await other.close()


async def test_a_big_parent_unfolded_by_hand_stays_unfolded(engine: Engine) -> None:
    big = family("big", children=51)  # starts folded: more than 50 children
    await engine.submit(big, approved=False)
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: names(app) == ["▸ big 0/51"], "big folded by size")
        await pilot.press("space")
        await until(pilot, lambda: len(names(app)) > 1, "big unfolded")
    assert (await shown_names(engine, 20))[:2] == ["▾ big 0/51", "big[0]"]


def test_the_remembered_folds_stay_small_and_a_bad_file_reads_as_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fold_memory, "MAX_DATABASES", 3)
    monkeypatch.setattr(fold_memory, "MAX_IDS", 5)
    for n in range(5):
        assert save_folds(f"/db/{n}", {f"p{i}" for i in range(9)}, {"u"})
    folds = json.loads(ui_state_path().read_text())["folds"]
    assert sorted(folds) == ["/db/2", "/db/3", "/db/4"]  # the most recently saved
    assert len(folds["/db/4"]["folded"]) == 5
    assert load_folds("/db/4") == ({f"p{i}" for i in range(5)}, {"u"})
    save_folds("/db/4", set(), set())  # nothing folded by hand: nothing kept
    assert load_folds("/db/4") == (set(), set())
    assert load_folds("/db/3")[1] == {"u"}
    ui_state_path().write_text('{"folds": {"/db/3": {"folded": "p1", "unfolded": [1, "u"]}}}')
    assert load_folds("/db/3") == (set(), {"u"})
    ui_state_path().write_text("not json")
    assert load_folds("/db/3") == (set(), set())
    assert save_folds("/db/3", {"p"}, set())  # and writing over it works
    assert load_folds("/db/3") == ({"p"}, set())
