"""The app's one screen: what its footer lists, and when it lists nothing."""

from __future__ import annotations

from textual.binding import ActiveBinding
from textual.keys import REPLACED_KEYS, key_to_character
from textual.screen import Screen
from textual.widgets import Footer


class MainScreen(Screen[None]):
    """The app's screen; its footer starts with `?` and `q`, so a narrow terminal never
    cuts them off whatever pane adds its own keys."""

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        bindings = super().active_bindings
        focused = self.focused
        if focused is not None:  # typing into an answer's Input: its keys are letters there
            # Textual leaves the keys it renamed ("slash" for "/") listed: it finds no
            # character for them, so it cannot tell that the Input takes them.
            bindings = {
                k: b
                for k, b in bindings.items()
                if not focused.check_consume_key(k, key_to_character(REPLACED_KEYS.get(k, k)))
            }
        first = {k: b for k, b in bindings.items() if b.binding.action in ("help", "quit")}
        return {**first, **{k: b for k, b in bindings.items() if k not in first}}

    # Under another screen (the palette, help, a prompt) these keys do nothing: the footer
    # goes blank there (help and the prompts draw their own). Hidden, not undisplayed, so
    # nothing underneath moves.
    def on_screen_suspend(self) -> None:
        for footer in self.query(Footer):
            footer.styles.visibility = "hidden"

    def on_screen_resume(self) -> None:
        for footer in self.query(Footer):
            footer.styles.visibility = "visible"
