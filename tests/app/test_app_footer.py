"""The footer at 80 columns: when a pane's keys overflow it, the command palette's hint stays
whole at the right edge (Textual's compact footer gave it a one-cell margin, through which the
hidden keys showed: "^p paletten")."""

from __future__ import annotations

from tests.app.app_support import screen_text, until
from tests.conftest import shell_task
from tui.app.help_screen import HelpScreen
from tui.app.tui_app import TuiApp
from tui.app.widgets.log_view import LogView
from tui.engine.scheduler import Engine


async def test_the_palette_hint_ends_the_footer_when_keys_overflow(engine: Engine) -> None:
    t = shell_task("one", "echo hi")
    await engine.submit([t])
    await engine.wait_settled([t.id])
    app = TuiApp(engine, osc="off", remember_theme=False, toasts=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("1")  # the output: its keys (follow, wrap, matches…) overflow 80
        await until(pilot, lambda: isinstance(app.focused, LogView), "the output focused")
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
