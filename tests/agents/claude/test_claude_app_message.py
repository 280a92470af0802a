"""The app's `m` on a running claude task (real CLI, scripted model server): the text
reaches the session as a user turn, and the output pane shows it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.agents.claude.conftest import claude_task, needs_cli
from tests.agents.claude.model_server import ModelServer, text
from tests.agents.cli_support import settled
from tests.app.app_support import screen_text, until
from tests.conftest import stored
from tui.app.tui_app import TuiApp
from tui.engine.scheduler import Engine
from tui.model.states import State

pytestmark = needs_cli


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUI_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TUI_CONFIG_DIR", str(tmp_path / "config"))


async def test_m_sends_a_running_claude_task_a_message(
    engine: Engine, model: ModelServer, project: Path
) -> None:
    gate = threading.Event()
    first = text("Thinking.", block=gate)
    model.script("zq-app-m", [first, text("Understood, in French.")])
    t = claude_task("chatty", "zq-app-m: write the docs", project)
    await engine.submit([t])
    await model.wait_reached(first)
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("m")
        await until(pilot, lambda: "Message chatty" in screen_text(app), "the prompt")
        await pilot.press(*"in French", "enter")
        await until(pilot, lambda: "› you: in French" in screen_text(app), "the message shown")
        gate.set()
        await settled(engine, t.id)
        await until(pilot, lambda: "Understood, in French." in screen_text(app), "the answer")
    assert (await stored(engine, t.id)).state == State.COMPLETED
    assert "in French" in model.main_requests("zq-app-m")[-1].flat_text()
