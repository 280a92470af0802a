"""Growing a Line-API view without re-laying out the whole screen."""

from __future__ import annotations

from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widget import Widget


def set_virtual_size(view: ScrollView, size: Size) -> None:
    """Give ``view`` a new virtual size, updating only its own scrollbars and rows.

    ``virtual_size`` is a layout reactive: setting it re-lays out the whole screen, and on every
    layout Textual repaints the scrollbars of every ``ScrollView`` on it. With the log growing
    thirty times a second that was a fifth of the bytes sent to the terminal. A view's region
    does not depend on its virtual size, so its scrollbars and rows are all that need updating;
    a scrollbar that appears or goes still triggers a layout (``show_*_scrollbar`` do)."""
    if view.virtual_size == size:
        return
    scroll_update = getattr(view, "_scroll_update", None)  # Textual's own step after a layout
    if scroll_update is None or not view.is_mounted or not view.container_size:
        view.virtual_size = size
        return
    view.set_reactive(Widget.virtual_size, size)
    scroll_update(size)
    view.refresh()
