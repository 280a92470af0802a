"""Running the real app on a real engine and store, and reading what it shows."""

from __future__ import annotations

from collections.abc import Callable

from textual.dom import DOMNode
from textual.pilot import Pilot
from textual.widget import Widget


async def until(pilot: Pilot, condition: Callable[[], bool], what: str, rounds: int = 400) -> None:
    """Let the app run until ``condition`` holds (bounded; no fixed sleeps)."""
    for _ in range(rounds):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def visible_text(widget: Widget) -> str:
    """The text a person sees in a Line-API widget, row by row."""
    return "\n".join(widget.render_line(y).text for y in range(widget.size.height))


def screen_text(node: DOMNode) -> str:
    """Everything the current screen shows, as text (reads Textual's compositor).

    ``node``: the app itself or any widget in it.
    """
    return "\n".join(strip.text for strip in node.app.screen._compositor.render_strips())
