"""The Changes tab: a worktree task's files and diff, merge, discard (asks), copy the path —
on a real engine, a real git repository and real shell agents."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events
from textual.widgets import RichLog

from tests.app.app_support import screen_text, until
from tests.conftest import owned_engine, shell_task
from tests.worktree.git_support import git, make_repo, show
from tui.app.prompts import Confirm
from tui.app.tui_app import TuiApp
from tui.app.widgets.changes_view import ChangesView
from tui.store.db import Store


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_changes_merge_discard_and_copy_path(
    store: Store, tmp_path: Path, size: tuple[int, int]
) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": "one\ntwo\n", "README": "hi\n"})
    keep = shell_task("keep-me", "printf 'one\\nTWO\\nthree\\n' > app.py", worktree=True)
    drop = shell_task("drop-me", "echo bye > README", worktree=True)
    for t in (keep, drop):
        t.agent.project_dir = str(repo)
    async with owned_engine(store, kill_grace=1.0) as engine:
        await engine.submit([keep, drop])
        await engine.wait_settled([keep.id, drop.id])
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
        async with app.run_test(size=size) as pilot:
            view = app.query_one(ChangesView)
            await pilot.press("4")
            await until(pilot, lambda: "1 file changed, +2 −1" in screen_text(app), "the summary")
            shown = screen_text(app)
            assert "app.py" in shown and "+TWO" in shown and "-two" in shown
            assert f"tui/{keep.id[:8]}-keep-me" in shown

            await pilot.press("C")
            wt = await store.get_worktree(keep.id)
            assert wt is not None
            await until(pilot, lambda: app.clipboard == wt.path, "the path copied")

            await pilot.press("M")
            await until(pilot, lambda: "merged" in screen_text(app), "the merge")
            assert show(repo, "main", "app.py") == "one\nTWO\nthree\n"
            assert not Path(wt.path).exists()

            app.query_one("#tasks").focus()
            await pilot.press("j")
            await until(pilot, lambda: view.task_id == drop.id and view.path != "", "drop-me")
            await until(pilot, lambda: "+bye" in screen_text(app), "drop-me's diff")
            await pilot.press("D")
            await until(pilot, lambda: isinstance(app.screen, Confirm), "the confirmation")
            await pilot.press("n")  # no: nothing happens
            await until(pilot, lambda: not isinstance(app.screen, Confirm), "the answer")
            assert Path(view.path).exists()
            await pilot.press("D")
            await until(pilot, lambda: isinstance(app.screen, Confirm), "the confirmation")
            await pilot.press("y")
            await until(pilot, lambda: "discarded" in screen_text(app), "the discard")
    assert git(repo, "branch", "--list", "tui/*") == ""
    assert show(repo, "main", "README") == "hi\n"


async def test_a_task_without_a_worktree_says_so(store: Store) -> None:
    t = shell_task("plain", "true")
    async with owned_engine(store, kill_grace=1.0) as engine:
        await engine.submit([t])
        await engine.wait_settled([t.id])
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("4")
            await until(pilot, lambda: "it has no worktree" in screen_text(app), "the note")


async def test_a_running_task_shows_the_files_it_has_not_added(
    store: Store, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    release = tmp_path / "release"
    busy = shell_task(
        "busy",
        "echo brand-new > fresh.txt && touch ready\n"
        f'while [ ! -e "{release}" ]; do sleep 0.01; done',
        worktree=True,
    )
    busy.agent.project_dir = str(repo)
    async with owned_engine(store, kill_grace=1.0) as engine:
        await engine.submit([busy])
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                wt = await store.get_worktree(busy.id)  # planned at submit
                assert wt is not None
                await until(pilot, lambda: (Path(wt.path) / "ready").exists(), "its new file")
                await pilot.press("4")
                await until(pilot, lambda: "+brand-new" in screen_text(app), "the new file")
                assert "fresh.txt" in screen_text(app)
                assert "?? fresh.txt" in git(wt.path, "status", "--porcelain")
        finally:
            release.touch()
        await engine.wait_settled([busy.id])
    assert show(repo, wt.branch, "fresh.txt") == "brand-new\n"


async def test_a_long_diff_opens_at_its_top_and_scrolls_a_line_per_j(
    store: Store, tmp_path: Path
) -> None:
    """A diff longer than the pane opened at its end (the log followed its own writes); twelve
    j in one read from the terminal (a held key) scroll it twelve lines."""
    repo = make_repo(tmp_path / "repo")
    long = shell_task("long", "seq 1 300 > numbers.txt", worktree=True)
    long.agent.project_dir = str(repo)
    async with owned_engine(store, kill_grace=1.0) as engine:
        await engine.submit([long])
        await engine.wait_settled([long.id])
        app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("4")
            diff = app.query_one("#changes-diff", RichLog)
            await until(pilot, lambda: diff.max_scroll_y > 100, "the diff")
            assert app.focused is not None and diff in (app.focused, *app.focused.ancestors)
            assert diff.scroll_y == 0, "the diff opens at its top"
            for _ in range(12):
                app.post_message(events.Key("j", "j"))
            await until(pilot, lambda: diff.scroll_y >= 12, "twelve lines scrolled", rounds=50)
            assert diff.scroll_y == 12
            for _ in range(5):
                app.post_message(events.Key("k", "k"))
            await until(pilot, lambda: diff.scroll_y <= 7, "five lines back", rounds=50)
            assert diff.scroll_y == 7
