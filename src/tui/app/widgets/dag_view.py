"""DagView: the task dependency graph, drawn as boxes and edges, scrollable both ways.

Layout is top to bottom: a task's dependencies sit in the layers above it, its dependents
below. In an 80-column pane that keeps chains vertical (the pane's long scrolling axis)
and shows three or four siblings side by side; wider layers scroll horizontally. The
layering comes from networkx (``topological_generations``), see ``dag_layout``.

It is a Line API widget (``ScrollView`` + ``render_line``): only the visible rows are
built, each from the boxes and edge cells of that row, so a 1000-node graph stays fast.
A state change only recolours; the graph is laid out again only when the set of nodes,
the edges, or a box's width changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, NamedTuple

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.app.state_style import STATE_STYLES
from tui.app.widgets.dag_layout import (
    BOX_HEIGHT,
    CROSSING,
    EDGE_GLYPHS,
    Box,
    DagLayout,
    box_width,
    layout,
)
from tui.model.states import State

EMPTY_HINT = "no tasks"

_PLAIN = ("┌", "─", "┐", "│", "└", "┘", "┬")
_SELECTED = ("╔", "═", "╗", "║", "╚", "╝", "╤")


class DagNode(NamedTuple):
    id: str
    name: str
    state: State
    depends_on: tuple[str, ...]
    group: bool = False  # a folded parent standing for its subtasks: its box may be wider


class DagView(ScrollView, can_focus=True):
    """Dependency graph of tasks; the keyboard walks along its edges."""

    DEFAULT_CSS = """
    DagView {
        height: 1fr;
        width: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move_up", "Dependency", show=False),
        Binding("down,j", "move_down", "Dependent", show=False),
        Binding("left,h", "move_left", "Left", show=False),
        Binding("right,l", "move_right", "Right", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
    ]

    selected: reactive[str | None] = reactive(None)

    class Selected(Message):
        """The user moved the selection to ``task_id``."""

        def __init__(self, dag_view: DagView, task_id: str) -> None:
            super().__init__()
            self.dag_view = dag_view
            self.task_id = task_id

        @property
        def control(self) -> DagView:
            return self.dag_view

    def __init__(
        self,
        nodes: Sequence[DagNode] = (),
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self._graph_nodes: dict[str, DagNode] = {}
        self._layout = DagLayout()
        self._layout_key: object = None
        self._row_layer: dict[int, int] = {}
        self._colors: dict[str, Color] = {}
        self._rows: dict[int, Strip] = {}
        self.layout_count = 0  # how many times the graph was laid out (tests, diagnostics)
        if nodes:
            self.set_graph(nodes)

    # ----------------------------------------------------------------- public API

    def set_graph(self, nodes: Sequence[DagNode]) -> None:
        """Show ``nodes``; re-layout only when nodes, edges or box widths changed."""
        self._graph_nodes = {n.id: n for n in nodes}
        ids = list(self._graph_nodes)
        edges = [(dep, n.id) for n in self._graph_nodes.values() for dep in n.depends_on]
        key = (
            frozenset((i, box_width(n.name, n.group)) for i, n in self._graph_nodes.items()),
            frozenset(e for e in edges if e[0] in self._graph_nodes),
        )
        if key != self._layout_key:
            self._layout_key = key
            names = {i: n.name for i, n in self._graph_nodes.items()}
            groups = {i for i, n in self._graph_nodes.items() if n.group}
            self._layout = layout(ids, edges, names, groups)
            self.layout_count += 1
            self._row_layer = {
                box.y + k: box.layer
                for layer in self._layout.layers
                for box in (self._layout.boxes[layer[0]],)
                for k in range(BOX_HEIGHT)
            }
            self.virtual_size = Size(self._layout.width, self._layout.height)
            if self.selected in self._graph_nodes:  # boxes moved: keep the selected one shown
                self.call_after_refresh(self._scroll_to_selected)
        if self.selected is not None and self.selected not in self._graph_nodes:
            self.selected = None
        self._invalidate()

    def select(self, task_id: str | None) -> None:
        """Select ``task_id`` (no message: that is for moves the user makes)."""
        self.selected = task_id if task_id in self._graph_nodes else None

    @property
    def graph_layout(self) -> DagLayout:
        return self._layout

    def box_region(self, task_id: str) -> Region | None:
        """Where ``task_id``'s box is, in graph (virtual) coordinates."""
        box = self._layout.boxes.get(task_id)
        return None if box is None else Region(box.x, box.y, box.width, BOX_HEIGHT)

    def render_text(self) -> str:
        """The whole graph as plain text (no colours), for tests and debugging."""
        if not self._graph_nodes:
            return EMPTY_HINT
        return "\n".join(self._row_strip(y).text.rstrip() for y in range(self._layout.height))

    # ------------------------------------------------------------------ rendering

    def on_mount(self) -> None:
        super().on_mount()
        self._theme_changed()  # colours resolved before mounting used no theme
        self.watch(self.app, "theme", self._theme_changed, init=False)

    def _theme_changed(self) -> None:
        self._colors.clear()
        self._invalidate()

    def _invalidate(self) -> None:
        self._rows.clear()
        self.refresh()

    def _color(self, variable: str) -> Color:
        color = self._colors.get(variable)
        if color is not None:
            return color
        variables = self.app.theme_variables if self.is_attached else {}
        background = Color.parse(variables.get("background", "#000000"))
        value = variables.get(variable) or variables.get("foreground") or "#c0c0c0"
        try:
            if value.startswith("auto"):  # e.g. text-muted = "auto 60%"
                parts = value.split()
                alpha = float(parts[1].rstrip("%")) / 100 if len(parts) > 1 else 0.95
                color = background + background.get_contrast_text(alpha)
            else:
                color = Color.parse(value)
                if color.a < 1:
                    color = background + color
        except Exception:
            color = Color.parse("#c0c0c0")
        self._colors[variable] = color
        return color

    def _box_segments(self, task_id: str, box: Box, row: int, base: Style) -> list[Segment]:
        node = self._graph_nodes[task_id]
        look = STATE_STYLES[State(node.state)]
        selected = task_id == self.selected
        tl, h, tr, v, bl, br, tee = _SELECTED if selected else _PLAIN
        style = base + Style(color=self._color(look.color).rich_color, bold=selected)
        w = box.width
        port = w // 2
        if row == 0:
            line = tl + h * (w - 2) + tr
            if box.in_ports:
                line = line[:port] + "▼" + line[port + 1 :]
            return [Segment(line, style)]
        if row == BOX_HEIGHT - 1:
            line = bl + h * (w - 2) + br
            if box.out_ports:
                line = line[:port] + tee + line[port + 1 :]
            return [Segment(line, style)]
        inner = w - 4
        avail = inner - cell_len(look.symbol) - 1
        label = node.name
        if cell_len(label) > avail:
            label = set_cell_size(label, max(avail - 1, 0)) + "…"
        text = set_cell_size(f"{look.symbol} {label}", inner)
        inner_style = style + Style(reverse=True) if selected else style
        return [
            Segment(f"{v} ", style),
            Segment(text, inner_style),
            Segment(f" {v}", style),
        ]

    def _row_strip(self, y: int) -> Strip:
        strip = self._rows.get(y)
        if strip is not None:
            return strip
        base = self.rich_style
        edge_style = base + Style(color=self._color("text-muted").rich_color)
        pieces: list[tuple[int, int, list[Segment]]] = []  # (x, cells, segments)
        layer = self._row_layer.get(y)
        if layer is not None:
            for task_id in self._layout.layers[layer]:
                box = self._layout.boxes[task_id]
                segs = self._box_segments(task_id, box, y - box.y, base)
                pieces.append((box.x, box.width, segs))
        for x, bits in self._layout.edge_cells.get(y, {}).items():
            glyph = "│" if bits & CROSSING else EDGE_GLYPHS[bits]
            pieces.append((x, 1, [Segment(glyph, edge_style)]))
        pieces.sort(key=lambda p: p[0])
        segments: list[Segment] = []
        at = 0
        for x, cells, segs in pieces:
            if x > at:
                segments.append(Segment(" " * (x - at), base))
            segments.extend(segs)
            at = x + cells
        strip = Strip(segments, at)
        self._rows[y] = strip
        return strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        if not self._graph_nodes:
            if y == 0 and scroll_y == 0:
                muted = base + Style(color=self._color("text-muted").rich_color, italic=True)
                return Strip([Segment(EMPTY_HINT, muted)]).crop_extend(0, width, base)
            return Strip.blank(width, base)
        row = y + scroll_y
        if row >= self._layout.height:
            return Strip.blank(width, base)
        return self._row_strip(row).crop_extend(scroll_x, scroll_x + width, base)

    # ------------------------------------------------------------------ selection

    def watch_selected(self, old: str | None, new: str | None) -> None:
        for task_id in (old, new):  # only the rows of the two boxes change
            box = self._layout.boxes.get(task_id) if task_id else None
            if box is not None:
                for y in range(box.y, box.y + BOX_HEIGHT):
                    self._rows.pop(y, None)
        self.refresh()
        if new is not None:
            self.call_after_refresh(self._scroll_to_selected)

    def _scroll_to_selected(self) -> None:
        region = self.box_region(self.selected) if self.selected else None
        if region is not None:
            self.scroll_to_region(region.grow((1, 2, 1, 2)), animate=False, immediate=True)

    def _move(self, task_id: str | None) -> None:
        if task_id is None or task_id == self.selected:
            return
        self.selected = task_id
        self.post_message(self.Selected(self, task_id))

    def _current(self) -> Box | None:
        if self.selected is None:
            return None
        return self._layout.boxes.get(self.selected)

    def _nearest(self, candidates: list[str], box: Box) -> str | None:
        boxes = self._layout.boxes
        return min(
            candidates,
            key=lambda c: (abs(boxes[c].center - box.center), boxes[c].index),
            default=None,
        )

    def _first(self) -> str | None:
        layers = self._layout.layers
        return layers[0][0] if layers and layers[0] else None

    def action_move_up(self) -> None:
        box = self._current()
        if box is None or self.selected is None:
            self._move(self._first())
            return
        self._move(self._nearest(self._layout.parents[self.selected], box))

    def action_move_down(self) -> None:
        box = self._current()
        if box is None or self.selected is None:
            self._move(self._first())
            return
        self._move(self._nearest(self._layout.children[self.selected], box))

    def _sideways(self, step: int) -> bool:
        box = self._current()
        if box is None:
            self._move(self._first())
            return True
        layer = self._layout.layers[box.layer]
        index = box.index + step
        if 0 <= index < len(layer):
            self._move(layer[index])
            return True
        return False

    async def action_move_left(self) -> None:
        # Past the leftmost box, back to the task list (as help says `h` does).
        if not self._sideways(-1):
            await self.run_action("app.focus_left")

    def action_move_right(self) -> None:
        self._sideways(1)

    def action_first(self) -> None:
        self._move(self._first())

    def action_last(self) -> None:
        layers = self._layout.layers
        if layers and layers[-1]:
            self._move(layers[-1][-1])

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        x, y = offset.x + self.scroll_offset.x, offset.y + self.scroll_offset.y
        layer = self._row_layer.get(y)
        if layer is None:
            return
        for task_id in self._layout.layers[layer]:
            box = self._layout.boxes[task_id]
            if box.x <= x < box.x + box.width:
                self.focus()
                self._move(task_id)
                return
