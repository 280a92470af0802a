"""The footer at 80 columns: when a pane's keys overflow it, the command palette's hint stays
whole at the right edge (Textual's compact footer gave it a one-cell margin, through which the
hidden keys showed: "^p paletten")."""

from __future__ import annotations

from textual.command import CommandPalette
from textual.widgets import Input

from tests.app.app_support import screen_text, until
from tests.conftest import shell_task
from tui.app.help_screen import HelpScreen
from tui.app.prompts import Confirm, TextPrompt
from tui.app.tui_app import TuiApp
from tui.app.widgets.log_view import LogView
from tui.app.widgets.question_panel import QuestionPanel
from tui.engine.scheduler import Engine


async def test_the_palette_hint_ends_the_footer_when_keys_overflow(engine: Engine) -> None:
    t = shell_task("one", "echo hi")
    await engine.submit([t])
    await engine.wait_settled([t.id])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("1")  # the output: its keys (follow, wrap, matches…) overflow 80
        await until(pilot, lambda: isinstance(app.focused, LogView), "the output focused")
        await pilot.press("slash", "h", "i", "enter")  # a search: n / N join the footer
        await until(pilot, lambda: "Prev match" in screen_text(app), "the output's keys")
        footer = screen_text(app).splitlines()[-1]
        assert footer.rstrip().endswith("▏^p palette"), repr(footer)
        assert len(footer.rstrip()) == 80, repr(footer)  # at the edge, nothing after it


async def test_the_help_screens_footer_lists_its_own_keys(engine: Engine) -> None:
    """Under the help, the footer listed the main screen's keys (Cancel, Retry…), which do
    nothing there; it shows the help's: close and scroll."""
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "r Retry" in screen_text(app).splitlines()[-1], "the footer")
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        await until(pilot, lambda: "Close" in screen_text(app).splitlines()[-1], "its footer")
        footer = screen_text(app).splitlines()[-1]
        assert "esc Close" in footer and "j/k Scroll" in footer, footer
        for main_key in ("Retry", "Cancel", "Quit", "palette"):
            assert main_key not in footer, footer
        await pilot.press("escape")
        await until(pilot, lambda: "r Retry" in screen_text(app).splitlines()[-1], "back")


async def test_a_prompt_and_a_confirmation_show_their_own_keys(engine: Engine) -> None:
    """The open prompt and a y/N question list what they take, not the task list's keys."""
    t = shell_task("long", "echo started; sleep 300")
    await engine.submit([t])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)

    def footer() -> str:
        return screen_text(app).splitlines()[-1]

    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "started" in screen_text(app), "the task to start")
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, Confirm), "the y/N question")
        await until(pilot, lambda: "y Yes" in footer(), "its footer")
        assert "n No" in footer() and "Retry" not in footer(), footer()
        await pilot.press("n")
        await until(pilot, lambda: "r Retry" in footer(), "the main footer back")
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt), "the open prompt")
        await until(pilot, lambda: "esc Back" in footer(), "its footer")
        assert "tab Complete" in footer() and "Retry" not in footer(), footer()
        await pilot.press("escape")
        await until(pilot, lambda: "r Retry" in footer(), "the main footer back")


async def test_no_main_screen_keys_under_the_command_palette(engine: Engine) -> None:
    """Under the palette (typing goes into its search) the task list's keys were listed."""
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)

    def footer() -> str:
        return screen_text(app).splitlines()[-1]

    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "r Retry" in footer(), "the footer")
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), "the palette")
        await until(pilot, lambda: "Retry" not in footer(), "no task-list keys", rounds=50)
        assert "Quit" not in footer() and "Help" not in footer(), footer()
        await pilot.press("escape")
        await until(pilot, lambda: "r Retry" in footer(), "the main footer back")


async def test_n_and_n_join_the_footer_with_a_search(engine: Engine) -> None:
    """Next/Prev match took a fifth of an 80-column footer before there was anything to find
    (and pushed Approve, Cancel and Retry off it)."""
    t, u = shell_task("one", "echo hi"), shell_task("two", "echo ho")
    await engine.submit([t, u])
    await engine.wait_settled([t.id, u.id])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)

    def footer() -> str:
        return screen_text(app).splitlines()[-1]

    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("1")
        await until(pilot, lambda: "w Wrap" in footer(), "the output's keys")
        assert "match" not in footer() and "r Retry" in footer(), footer()
        await pilot.press("slash", "h", "i", "enter")
        await until(pilot, lambda: "n Next match" in footer(), "n / N once searched")
        await pilot.press("h", "j", "1")  # another task's output: the search is gone
        await until(pilot, lambda: app.query_one(LogView).task_id == u.id, "two's output")
        await until(pilot, lambda: "match" not in footer(), "n / N gone again")


async def test_typing_an_answer_lists_no_key_that_types_a_letter(engine: Engine) -> None:
    """In a question's "Other" box `/` types a slash, yet the footer listed "/ Find"."""
    t = shell_task("pick", 'tui ask "Which?" --option A --option B')
    await engine.submit([t])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)

    def footer() -> str:
        return screen_text(app).splitlines()[-1]

    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.query_one(QuestionPanel).count == 1, "the question")
        await pilot.press("a", "3")  # Other: a box to type into
        await until(pilot, lambda: isinstance(app.focused, Input), "the answer box")
        await pilot.pause()
        assert "Find" not in footer(), footer()
        await pilot.press("slash")
        assert isinstance(app.focused, Input) and app.focused.value == "/"
