"""`?`: every binding, generated from the same command table as the footer and the palette."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

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
    HelpScreen { align: center middle; layout: vertical; }
    HelpScreen > Static { width: 90%; max-width: 110; padding: 0 1; background: $surface; }
    HelpScreen > DataTable {
        width: 90%; max-width: 110; height: 80%; border: round $accent; background: $surface;
    }
    """
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close", show=True),
        Binding("j", "cursor_down", show=False),
        Binding("k", "cursor_up", show=False),
    ]

    def __init__(self, commands: list[tuple[str, str, str, str]]) -> None:
        super().__init__()
        self._commands = commands

    def compose(self) -> ComposeResult:
        yield Static(
            '[b]tui — keys[/b]  remap in config.toml: [settings.keys] cancel_task = "ctrl+k"',
            markup=True,
        )
        table: DataTable[str] = DataTable(cursor_type="row", zebra_stripes=True)
        table.add_columns("Key", "Command", "Id", "What it does")
        for key, title, text, command_id in self._commands:
            table.add_row(_pretty(key), title, command_id, text)
        for key, title, text in PANE_KEYS:
            table.add_row(key, title, "", text)
        yield table

    def action_cursor_down(self) -> None:
        self.query_one(DataTable).action_cursor_down()

    def action_cursor_up(self) -> None:
        self.query_one(DataTable).action_cursor_up()
