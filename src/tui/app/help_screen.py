"""`?`: every binding, generated from the same command table as the footer and the palette.

One row per key: the key, then the command's name, its whole description (wrapped to the
screen, never cut) and the id to remap it by. `j`/`k` and the arrows scroll."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

# Keys that belong to panes rather than to the app (documented here so `?` lists them too).
PANE_KEYS: tuple[tuple[str, str, str], ...] = (
    ("j / k, ↑ / ↓", "Move", "Up and down in the task list, the output, the DAG and this help"),
    ("g / G", "Top / bottom", "In the output, G also resumes following"),
    ("n / N", "Next / previous match", "After a search in the output"),
    ("h / l, ← / →", "Sideways", "In the output: scroll sideways; in the DAG: the next box"),
    ("Tab", "Next pane", "Cycle focus between panes; in the open prompt it completes paths"),
    ("1-9, Space, Enter", "Answer", "In a question: pick, toggle (multi-select), send"),
    ("y / n / a", "Allow / deny / always", "In an approval (y/n accept/reject a review)"),
    ("ctrl+p", "Command palette", "Every action by name, with its key"),
    ("Esc", "Back", "Close a prompt or this help, leave full screen"),
)

KEY_WIDTH = 12


def pretty_key(key: str) -> str:
    names = {
        "question_mark": "?",
        "colon": ":",
        "slash": "/",
        "escape": "Esc",
        "space": "Space",
        "left": "←",
        "right": "→",
        "minus": "-",
        "plus": "+",
    }
    return ", ".join(names.get(k.strip(), k.strip()) for k in key.split(","))


def help_row(key: str, title: str, text: str, command_id: str = "") -> Table:
    """One entry: the key in a fixed column, the rest wrapped beside it."""
    row = Table.grid(padding=(0, 1), expand=True)
    row.add_column(width=KEY_WIDTH, style="bold")
    row.add_column(ratio=1)
    what = Text.assemble((title, "bold"), "  ", text)
    if command_id:
        what.append(f"  ({command_id})", style="dim")
    row.add_row(key, what)
    return row


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 90%; max-width: 110; height: 90%; border: round $accent; background: $surface;
    }
    HelpScreen #help-title { padding: 0 1; background: $panel; }
    HelpScreen #help-body { height: 1fr; padding: 0 1; }
    HelpScreen .help-row { height: auto; }
    """
    # Its own footer: the main screen's would list keys that do nothing here.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close", show=True),
        Binding("j,down", "scroll(1)", "Scroll", key_display="j/k", show=True),
        Binding("k,up", "scroll(-1)", "Up", show=False),
        Binding("pagedown,space", "page(1)", show=False),
        Binding("pageup,b", "page(-1)", show=False),
        Binding("g,home", "edge(0)", show=False),
        Binding("G,end", "edge(1)", show=False),
    ]

    def __init__(self, commands: list[tuple[str, str, str, str]]) -> None:
        super().__init__()
        self._commands = commands

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(
                "[b]tui — keys[/b]   j/k scroll · Esc closes · remap in config.toml:"
                ' [settings.keys] cancel_task = "ctrl+k"',
                id="help-title",
            )
            with VerticalScroll(id="help-body"):
                for key, title, text, command_id in self._commands:
                    row = help_row(pretty_key(key), title, text, command_id)
                    yield Static(row, classes="help-row")
                for key, title, text in PANE_KEYS:
                    yield Static(help_row(key, title, text), classes="help-row")
        yield Footer(compact=True)

    @property
    def body(self) -> VerticalScroll:
        return self.query_one("#help-body", VerticalScroll)

    def action_scroll(self, lines: int) -> None:
        # immediate: a burst of keys (a held j) each moves from where the last one left it
        self.body.scroll_relative(y=lines, animate=False, immediate=True)

    def action_page(self, pages: int) -> None:
        body = self.body
        body.scroll_relative(y=pages * max(1, body.size.height - 1), animate=False, immediate=True)

    def action_edge(self, end: int) -> None:
        body = self.body
        body.scroll_to(y=body.max_scroll_y if end else 0, animate=False)
