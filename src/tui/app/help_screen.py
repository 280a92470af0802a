"""`?`: every binding, generated from the same command table as the footer and the palette."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# Keys that belong to panes rather than to the app (documented here so `?` lists them too).
PANE_KEYS: tuple[tuple[str, str, str], ...] = (
    ("j / k, ↑ / ↓", "Move", "Up and down in the task list, the output and the DAG"),
    ("g / G", "Top / bottom", "In the output, G also resumes following"),
    ("n / N", "Next / previous match", "After a search in the output"),
    ("Tab", "Next pane", "Cycle focus between panes"),
    ("1-9, Space, Enter", "Answer", "In a question: pick, toggle (multi-select), send"),
    ("y / n / a", "Allow / deny / always", "In an approval (y/n accept/reject a review)"),
    ("ctrl+p", "Command palette", "Every action by name"),
    ("Esc", "Back", "Close a prompt, leave full screen"),
)


def _pretty(key: str) -> str:
    names = {"question_mark": "?", "colon": ":", "slash": "/", "escape": "Esc"}
    return ", ".join(names.get(k.strip(), k.strip()) for k in key.split(","))


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close", show=True),
        Binding("j,down", "scroll_down", show=False),
        Binding("k,up", "scroll_up", show=False),
    ]

    def __init__(self, commands: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self._commands = commands

    def compose(self) -> ComposeResult:
        table = Table(box=None, expand=True, show_header=True, header_style="bold")
        table.add_column("Key", no_wrap=True, style="bold")
        table.add_column("Command", no_wrap=True)
        table.add_column("What it does", ratio=1)
        for key, title, text in self._commands:
            table.add_row(_pretty(key), title, text)
        table.add_section()
        for key, title, text in PANE_KEYS:
            table.add_row(key, title, text)
        with VerticalScroll():
            yield Static("[b]tui — keys[/b]  (remap them under [settings.keys] in config)\n")
            yield Static(table)

    def action_scroll_down(self) -> None:
        self.query_one(VerticalScroll).scroll_down()

    def action_scroll_up(self) -> None:
        self.query_one(VerticalScroll).scroll_up()
