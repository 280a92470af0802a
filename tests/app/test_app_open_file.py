"""The app's `o` loads a task file as `tui run FILE` does (tui.config.task_files): what the
command refuses, the app refuses with the same words, and submits nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.app.app_support import until
from tui.app.prompts import TextPrompt
from tui.app.tui_app import TuiApp
from tui.config.task_files import load_files
from tui.engine.scheduler import Engine
from tui.model.issues import TaskFileError

SIZE = (120, 40)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current directory, with one task file whose task would leave a marker."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.yaml").write_text(
        "tasks:\n  - name: a\n    agent: {type: shell, instructions: touch ran}\n"
    )
    return tmp_path


async def open_with_o(app: TuiApp, pilot: Pilot[None], path: str) -> None:
    await pilot.press("o")
    await until(pilot, lambda: isinstance(app.screen, TextPrompt), "the prompt")
    await pilot.press("ctrl+u", *path, "enter")


async def test_a_bad_summarizer_table_refuses_the_file_as_tui_run_does(
    engine: Engine, project: Path
) -> None:
    (project / ".tui").mkdir()
    (project / ".tui" / "config.toml").write_text('[summarizer]\nagent = "robot"\n')
    with pytest.raises(TaskFileError) as refused:  # what `tui run t.yaml` prints, line by line
        load_files(["t.yaml"])
    said = str(refused.value.issues[0])
    assert "summarizer.agent" in said
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_with_o(app, pilot, "t.yaml")
        await until(
            pilot,
            lambda: any(said in str(n.message) for n in app._notifications),
            "the config's problem",
        )
        notes = [n for n in app._notifications if said in str(n.message)]
        assert "1 problem(s) in config.toml" in [n.title for n in notes]
        assert not app._list.records  # nothing submitted
    assert not (project / "ran").exists()


async def test_enter_on_an_empty_open_prompt_says_nothing_was_opened(
    engine: Engine, project: Path
) -> None:
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_with_o(app, pilot, "")  # the example path shown is not typed in
        await until(
            pilot,
            lambda: any("nothing opened" in str(n.message) for n in app._notifications),
            "a word that nothing was opened",
        )
        assert not app._list.records


async def test_opening_a_file_says_how_many_tasks_it_submitted(
    engine: Engine, project: Path
) -> None:
    """ "submitted 1 task(s) from t.yaml": the count's own word, as the status line says it."""
    (project / "two.yaml").write_text(
        "tasks:\n"
        "  - name: b\n    agent: {type: shell, instructions: 'true'}\n"
        "  - name: c\n    agent: {type: shell, instructions: 'true'}\n"
    )
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)

    def said() -> list[str]:
        return [str(n.message) for n in app._notifications]

    async with app.run_test(size=SIZE) as pilot:
        await open_with_o(app, pilot, "t.yaml")
        await until(pilot, lambda: "submitted 1 task from t.yaml" in said(), "one task")
        await open_with_o(app, pilot, "two.yaml")
        await until(pilot, lambda: "submitted 2 tasks from two.yaml" in said(), "two tasks")
