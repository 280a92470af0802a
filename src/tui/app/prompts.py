"""Small modal screens that own the keyboard until they close: a one-line text prompt (with
path completion for files) and a y/N confirmation. Each returns its answer to a callback
through ``dismiss``, so no key typed into them reaches the task list underneath. Each has its
own footer: the main screen's would list keys that do nothing while they are open."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static


def complete_path(text: str) -> tuple[str, list[str]]:
    """Tab completion for ``text``: the longest unambiguous completion and the candidates'
    names (what a shell shows). A lone directory gets its trailing slash."""
    expanded = os.path.expanduser(text) if text.startswith("~") else text
    folder, _, stem = expanded.rpartition("/")
    base = Path(folder + "/" if folder or expanded.startswith("/") else ".")
    try:
        names = sorted(
            e.name + ("/" if e.is_dir() else "")
            for e in base.iterdir()
            if e.name.startswith(stem) and (stem.startswith(".") or not e.name.startswith("."))
        )
    except OSError:
        return text, []
    if not names:
        return text, []
    common = min(names)  # the names' common start, letter by letter (names, not paths)
    for name in names:
        while not name.startswith(common):
            common = common[:-1]
    prefix = text[: len(text) - len(stem)] if stem else text
    return prefix + common, names


class PathInput(Input):
    """An input whose Tab completes file paths instead of moving the focus."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("tab", "complete", "Complete")]

    def action_complete(self) -> None:
        value, names = complete_path(self.value)
        self.value = value
        self.cursor_position = len(value)
        screen = self.screen
        if isinstance(screen, TextPrompt):
            many = len(names) > 1 and not value.endswith("/")
            screen.hint("  ".join(names[:40]) if many else "")


class TextPrompt(ModalScreen[str | None]):
    """One line of text at the bottom: Enter returns it, Esc returns None."""

    DEFAULT_CSS = """
    TextPrompt { align: center bottom; background: $background 30%; }
    TextPrompt Toast { visibility: hidden; }  /* as Confirm: not over what is typed */
    TextPrompt > Vertical { height: auto; width: 100%; margin-bottom: 2; background: $panel; }
    TextPrompt #prompt-title { padding: 0 1; color: $text-muted; }
    TextPrompt #prompt-hint { padding: 0 1; color: $text-muted; display: none; }
    TextPrompt #prompt-hint.shown { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "leave", "Back", show=True)]

    def __init__(
        self, title: str, placeholder: str = "", *, paths: bool = False, value: str = ""
    ) -> None:
        """``value``: the text it opens with (the filter in force), all selected: typing
        replaces it, an arrow key keeps it to edit."""
        super().__init__()
        self._title = title
        self._placeholder = placeholder
        self._paths = paths
        self._value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._title, id="prompt-title", markup=False)
            kind = PathInput if self._paths else Input
            yield kind(self._value, placeholder=self._placeholder, id="prompt")
            yield Static("", id="prompt-hint", markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        prompt = self.query_one("#prompt", Input)
        prompt.focus()
        prompt.select_all()

    def hint(self, text: str) -> None:
        hint = self.query_one("#prompt-hint", Static)
        hint.update(text)
        hint.set_class(bool(text), "shown")

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        self.dismiss(message.value.strip())

    def action_leave(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """A y/N question: `y` says yes; `n`, Esc or Enter say no."""

    DEFAULT_CSS = """
    Confirm { align: center bottom; background: $background 30%; }
    /* The toasts (bottom right) would cover the question and its [y/N]: they wait, still
       listed, until it is answered. */
    Confirm Toast { visibility: hidden; }
    Confirm > Static {
        width: 100%; height: auto; margin-bottom: 2; padding: 0 1;
        background: $warning 20%; color: $text; text-style: bold;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", show=True),
        Binding("n,escape,enter", "answer(False)", "No", show=True),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self._question = question

    def compose(self) -> ComposeResult:
        yield Static(f"{self._question} [y/N]", markup=False)
        yield Footer(compact=True)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
