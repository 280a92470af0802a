"""Running a config.toml template from the app: pick it, type instructions, it runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.app_support import screen_text, until, visible_text
from tui.app.tui_app import TuiApp
from tui.app.widgets.log_view import LogView
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import Store

SIZE = (120, 40)
CONFIG = """
[agents.echo]
type = "shell"
script = 'printf "%s\\n" "$TUI_PROMPT"'

[tasks.greet]
alias = "hi"
description = "Say hello"
agent = "echo"
prompt = "Hello, {instructions}!"

[tasks.other]
agent = "echo"
prompt = "other"
"""


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("TUI_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TUI_CONFIG_DIR", str(config))
    monkeypatch.chdir(tmp_path)
    return config


@pytest.fixture
async def engine(store: Store) -> Engine:
    e = Engine(store, kill_grace=1.0)
    await e.start()
    yield e  # type: ignore[misc]
    await e.stop()


def make_app(engine: Engine) -> TuiApp:
    return TuiApp(engine, osc="off", remember_theme=False, toasts=True)


async def test_run_template_from_the_palette(engine: Engine, _isolated_dirs: Path) -> None:
    (_isolated_dirs / "config.toml").write_text(CONFIG, encoding="utf-8")
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("T")
        await until(pilot, lambda: "Say hello" in screen_text(app), "the template list")
        await pilot.press(*"greet", "enter")
        await until(pilot, lambda: app.query_one("#prompt").has_class("visible"), "the prompt")
        await pilot.press(*"world $(x) 'q'", "enter")
        await until(pilot, lambda: bool(app._list.records), "the task in the list")
        (rec,) = app._list.records.values()
        await engine.wait_settled([rec.id])
        assert (await engine.get(rec.id)).state == State.COMPLETED  # type: ignore[union-attr]
        log = app.query_one(LogView)
        await until(
            pilot, lambda: "Hello, world $(x) 'q'!" in visible_text(log), "the task's output"
        )


async def test_a_broken_config_is_reported_not_raised(engine: Engine, _isolated_dirs: Path) -> None:
    (_isolated_dirs / "config.toml").write_text('[tasks.x]\nprompt = "{nope}"\n')
    app = make_app(engine)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("T")
        await until(
            pilot,
            lambda: any("unknown placeholder {nope}" in n.message for n in app._notifications),
            "the problem to be shown",
        )
        assert not app._list.records
