"""The config's `worktree = true` reaches tasks the app makes: a file opened with `o` and a
template run from the palette, as `tui open FILE` and `tui task` do."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.app_support import screen_text, until
from tests.worktree.git_support import make_repo, show
from tui.app.prompts import TextPrompt
from tui.app.tui_app import TuiApp
from tui.engine.scheduler import Engine

SIZE = (120, 40)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository, the current directory, with `worktree = true` in the config."""
    monkeypatch.setenv("TUI_STATE_DIR", str(tmp_path / "state"))
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text(
        "[settings]\nworktree = true\n\n"
        '[agents.sh]\ntype = "shell"\nscript = "echo templated > shared.txt"\n\n'
        '[tasks.edit]\nagent = "sh"\nprompt = "edit {instructions}"\n'
    )
    monkeypatch.setenv("TUI_CONFIG_DIR", str(config))
    project = make_repo(tmp_path / "repo")
    monkeypatch.chdir(project)
    return project


async def settled_branch(engine: Engine, app: TuiApp) -> str:
    (rec,) = app._list.records.values()
    await engine.wait_settled([rec.id])
    wt = await engine.store.get_worktree(rec.id)
    assert wt is not None, "the task got no worktree"
    return wt.branch


async def test_a_file_opened_with_o_gets_the_worktree_setting(engine: Engine, repo: Path) -> None:
    (repo / "jobs").mkdir()
    (repo / "jobs" / "edit.yaml").write_text(
        "tasks:\n  - name: from-file\n"
        f"    agent: {{type: shell, instructions: echo app > shared.txt, project_dir: {repo}}}\n"
    )
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt), "the prompt")
        await pilot.press(*"jo", "tab", "tab", "enter")  # jobs/ then its one file
        await until(pilot, lambda: len(app._list.records) == 1, "the file's task")
        branch = await settled_branch(engine, app)
    assert (repo / "shared.txt").read_text() == "base\n"
    assert show(repo, branch, "shared.txt") == "app\n"


async def test_a_template_from_the_palette_gets_the_worktree_setting(
    engine: Engine, repo: Path
) -> None:
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("T")
        await until(pilot, lambda: "edit" in screen_text(app), "the template list")
        await pilot.press(*"edit", "enter")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt), "the prompt")
        await pilot.press("enter")
        await until(pilot, lambda: bool(app._list.records), "the task in the list")
        branch = await settled_branch(engine, app)
    assert (repo / "shared.txt").read_text() == "base\n"
    assert show(repo, branch, "shared.txt") == "templated\n"
