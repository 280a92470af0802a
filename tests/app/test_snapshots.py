"""Layout snapshots of the main states at 80×24 and 120×40 (pytest-textual-snapshot).

Each app owns an engine on a fresh database inside the snapshot's own event loop. Ids are
fixed and the running clock is pinned, so the pictures only change when the layout does.
Update after a deliberate change with: scripts/test tests/app/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.app.app_support import until
from tests.conftest import shell_task
from tui.app import tui_app
from tui.app.widgets import task_cells
from tui.app.widgets.question_panel import QuestionPanel
from tui.daemon.paths import daemon_paths
from tui.daemon.server import DaemonServer
from tui.engine.scheduler import Engine
from tui.model.loader import load_task_text
from tui.model.states import ENDED, State
from tui.model.task import Task
from tui.store.db import Store

SIZES = [(80, 24), (120, 40)]


@pytest.fixture(autouse=True)
def _stable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("SSH_CONNECTION", raising=False)
    monkeypatch.setattr(
        task_cells, "elapsed", lambda r, now: "12s" if r.state == State.RUNNING else ""
    )
    # A parent's span: running, as a running task's time; over, a fixed length.
    monkeypatch.setattr(
        task_cells,
        "span",
        lambda r, start, end, now: "" if start is None else "12s" if r.state not in ENDED else "3s",
    )


def app_with(
    db: Path, tasks: list[Task], after: Callable[[Engine], Awaitable[None]] | None = None
) -> tui_app.TuiApp:
    async def start() -> Engine:
        engine = Engine(await Store.open(db), kill_grace=0.5)
        await engine.start()
        # The app's own engine serves the database's socket, as `tui --foreground` does, so
        # the `tui ask` of a task reaches it. (The test's runtime dir goes with the socket.)
        await DaemonServer(engine, daemon_paths(db), lambda: None, foreground=True).start()
        if tasks:
            await engine.submit(tasks)
        if after is not None:
            await after(engine)
        return engine

    return tui_app.TuiApp(start, osc="off", remember_theme=False, toasts=False)


def dag_tasks() -> list[Task]:
    root = shell_task("checkout", "echo cloning; sleep 300", id="t-checkout")
    return [
        root,
        shell_task("lint", "true", id="t-lint", depends_on=["t-checkout"], tags=["check"]),
        shell_task("unit-tests", "true", id="t-tests", depends_on=["t-checkout"], priority="high"),
        shell_task("package", "true", id="t-package", depends_on=["t-lint", "t-tests"]),
    ]


async def settle(pilot: Pilot, what: Callable[[tui_app.TuiApp], bool]) -> None:
    app = pilot.app
    assert isinstance(app, tui_app.TuiApp)
    await until(pilot, lambda: app.engine is not None and what(app), "the scene")
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_empty(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:
    async def ready(pilot: Pilot) -> None:
        await settle(pilot, lambda app: True)

    assert snap_compare(app_with(tmp_path / "t.db", []), terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_running_dag(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:
    async def ready(pilot: Pilot) -> None:
        await settle(
            pilot,
            lambda app: (
                app._list.records.get("t-checkout") is not None
                and app._list.records["t-checkout"].state == State.RUNNING
                and len(app._list.records) == 4
            ),
        )
        await pilot.press("2")
        await pilot.pause()

    assert snap_compare(
        app_with(tmp_path / "t.db", dag_tasks()), terminal_size=size, run_before=ready
    )


def tree_tasks() -> list[Task]:
    """A group with a running child and a done one, a finished foreach, and a dependent."""
    return load_task_text(
        """
tasks:
  - name: build
    id: t-build
    subtasks:
      - {name: lint, agent: {type: shell, instructions: "true"}}
      - {name: unit-tests, agent: {type: shell, instructions: "echo testing; sleep 300"}}
  - name: each
    id: t-each
    foreach: [api, web]
    agent: {type: shell, instructions: "echo {{item}}"}
  - name: deploy
    id: t-deploy
    depends_on: [build, each]
    agent: {type: shell, instructions: "true"}
""",
        "tree.yaml",
    ).tasks


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_subtask_tree(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:
    """The list as a tree (the foreach folded with space) and the DAG grouping children."""

    def scene(app: tui_app.TuiApp) -> bool:
        states = {i: r.state for i, r in app._list.records.items()}
        return (
            states.get("t-build.unit-tests") == State.RUNNING
            and states.get("t-build.lint") == State.COMPLETED
            and states.get("t-each") == State.COMPLETED
        )

    async def ready(pilot: Pilot) -> None:
        await settle(pilot, scene)
        app = pilot.app
        assert isinstance(app, tui_app.TuiApp)
        app._list.select_id("t-each")
        await pilot.press("space", "2")
        await pilot.pause()

    assert snap_compare(
        app_with(tmp_path / "t.db", tree_tasks()), terminal_size=size, run_before=ready
    )


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_question_open(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:
    ask = shell_task(
        "choose-db",
        'tui ask "Which database should the service use?" --option SQLite --option PostgreSQL',
        id="t-ask",
    )

    async def ready(pilot: Pilot) -> None:
        await settle(pilot, lambda app: app.query_one(QuestionPanel).count == 1)
        await pilot.press("a")
        await pilot.pause()

    assert snap_compare(app_with(tmp_path / "t.db", [ask]), terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_approval_open(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:
    task = shell_task("cleanup", "echo working; sleep 300", id="t-cleanup")

    async def raise_approval(engine: Engine) -> None:
        while not (await engine.store.runs("t-cleanup")):
            await engine.store.cursor()  # one round trip; the run row appears right away
        run = (await engine.store.runs("t-cleanup"))[0]
        await engine.ask(
            "t-cleanup",
            run.id,
            "approval",
            {
                "tool": "Bash",
                "input": {"command": "rm -rf build/ && make dist"},
                "summary": "rm -rf build/ && make dist",
                "detail": "rm -rf build/ && make dist",
                "suggestions": [],
            },
        )

    async def ready(pilot: Pilot) -> None:
        await settle(pilot, lambda app: app.query_one(QuestionPanel).count == 1)
        await pilot.press("a")
        await pilot.pause()

    assert snap_compare(
        app_with(tmp_path / "t.db", [task], raise_approval), terminal_size=size, run_before=ready
    )


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_help_screen(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:
    async def ready(pilot: Pilot) -> None:
        await settle(pilot, lambda app: True)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(app_with(tmp_path / "t.db", []), terminal_size=size, run_before=ready)
