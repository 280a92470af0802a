"""The app attached to a daemon, as a person uses it: it shows what the daemon runs, commands
reach the daemon, a second viewer sees the same, and quitting leaves the run going."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from tests.app.app_support import until, visible_text
from tests.conftest import shell_task
from tests.daemon.conftest import db_rows
from textual.widgets import Static

from tui.app.tui_app import TuiApp
from tui.app.widgets.log_view import LogView
from tui.app.widgets.task_list import TaskList
from tui.daemon.lifecycle import attach, stop
from tui.daemon.remote import RemoteEngine
from tui.model.states import State

SIZE = (120, 40)


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_CONFIG_DIR", str(tmp_path / "config"))


def attached_app(db: Path) -> TuiApp:
    async def connect() -> RemoteEngine:
        remote = await attach(db)
        assert remote is not None
        return remote

    return TuiApp(connect, osc="off", remember_theme=False, toasts=False)


async def test_quitting_the_app_leaves_the_run_going(
    viewer: RemoteEngine, db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gate = tmp_path / "go"
    script = f"echo working; until [ -e {gate} ]; do sleep 0.05; done; echo done"
    [tid] = await viewer.submit([shell_task("long", script)])

    app = attached_app(db)
    async with app.run_test(size=SIZE) as pilot:
        tasks = app.query_one(TaskList)
        await until(pilot, lambda: tid in tasks.records, "the daemon's task in the list")
        await until(pilot, lambda: tasks.records[tid].state == State.RUNNING, "the task to run")
        log = app.query_one(LogView)
        await until(pilot, lambda: "working" in visible_text(log), "its live output")
        await pilot.press("q")

    assert "1 unfinished task goes on in the daemon" in capsys.readouterr().err
    # The app is gone; the daemon and the task are not.
    [rec] = await viewer.get_many([tid])
    assert rec.state == State.RUNNING
    gate.touch()

    # Open it again: the full history, and the run finishing live.
    app = attached_app(db)
    async with app.run_test(size=SIZE) as pilot:
        tasks = app.query_one(TaskList)
        await until(pilot, lambda: tid in tasks.records, "the task after reattaching")
        await until(
            pilot, lambda: tasks.records[tid].state == State.COMPLETED, "the task to finish"
        )
        log = app.query_one(LogView)
        await until(pilot, lambda: "done" in visible_text(log), "the output of both halves")
        assert "working" in visible_text(log)


async def test_a_cancel_in_the_app_reaches_the_daemon(viewer: RemoteEngine, db: Path) -> None:
    [tid] = await viewer.submit([shell_task("sleeper", "sleep 300")])
    app = attached_app(db)
    async with app.run_test(size=SIZE) as pilot:
        tasks = app.query_one(TaskList)
        await until(
            pilot,
            lambda: tid in tasks.records and tasks.records[tid].state == State.RUNNING,
            "the task to run",
        )
        await pilot.press("c", "y")  # a running task: confirmed
        await until(
            pilot, lambda: tasks.records[tid].state == State.CANCELLED, "the list to show it"
        )
    [rec] = await viewer.get_many([tid])  # another viewer agrees
    assert rec.state == State.CANCELLED


async def test_the_app_outlives_a_daemon_crash(viewer: RemoteEngine, db: Path) -> None:
    """kill -9 of the daemon under the app: it says so, starts a new daemon, and goes on
    showing the (recovered) run without the person doing anything."""
    [tid] = await viewer.submit([shell_task("sleeper", "sleep 300")])
    app = attached_app(db)
    async with app.run_test(size=SIZE) as pilot:
        tasks = app.query_one(TaskList)
        await until(
            pilot,
            lambda: tid in tasks.records and tasks.records[tid].state == State.RUNNING,
            "the task to run",
        )
        old = viewer.pid
        os.kill(old, signal.SIGKILL)
        status = app.query_one("#status", Static)
        await until(pilot, lambda: "lost the daemon" in str(status.render()), "the notice", 1000)
        await until(pilot, lambda: "lost the daemon" not in str(status.render()), "reconnected")
        again = await attach(db)
        assert again is not None and again.pid != old
        await again.aclose()
        # The new daemon adopted the run the dead one's keeper kept: the same attempt goes on.
        assert tasks.records[tid].state == State.RUNNING and tasks.records[tid].attempts == 1
    moves = db_rows(
        db, f"SELECT from_state, to_state, reason FROM transitions WHERE task_id = '{tid}'"
    )
    assert ("RUNNING", "QUEUED", "interrupted") not in moves
    assert db_rows(db, "SELECT count(*) FROM runs") == [(1,)]


async def test_daemon_stop_ends_the_app_with_a_message(
    viewer: RemoteEngine, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = attached_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.query_one(TaskList) is not None, "the app")
        await stop(db)
        await until(pilot, lambda: app.return_code is not None, "the app to end")
    assert "the daemon was stopped" in capsys.readouterr().err
