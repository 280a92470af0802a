"""DagView: layered drawing, keyboard walking along edges, recolouring, scrolling."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.color import Color
from textual.geometry import Region

from tui.app.state_style import STATE_STYLES
from tui.app.widgets.dag_view import DagNode, DagView
from tui.model.states import State


class DagApp(App[None]):
    def __init__(self, nodes: list[DagNode] | None = None) -> None:
        super().__init__()
        self.nodes = nodes or []
        self.picked: list[str] = []

    def compose(self) -> ComposeResult:
        yield DagView(self.nodes)

    def on_dag_view_selected(self, message: DagView.Selected) -> None:
        self.picked.append(message.task_id)


def diamond(d_state: State = State.PENDING) -> list[DagNode]:
    return [
        DagNode("a", "alpha", State.COMPLETED, ()),
        DagNode("b", "build", State.RUNNING, ("a",)),
        DagNode("c", "check", State.QUEUED, ("a",)),
        DagNode("d", "deploy", d_state, ("b", "c")),
    ]


def visible_text(view: DagView) -> list[str]:
    return [view.render_line(y).text for y in range(view.scrollable_content_region.height)]


def row_of(lines: list[str], word: str) -> int:
    return next(i for i, line in enumerate(lines) if word in line)


def colour_of(view: DagView, task_id: str) -> Color:
    """Colour of the top-left corner of ``task_id``'s box, as drawn."""
    region = view.box_region(task_id)
    assert region is not None
    strip = view._row_strip(region.y)
    at = 0
    for seg in strip:
        if at <= region.x < at + seg.cell_length:
            assert seg.style is not None and seg.style.color is not None
            return Color.from_rich_color(seg.style.color)
        at += seg.cell_length
    raise AssertionError("box not drawn")


def theme_colour(app: App[None], state: State) -> Color:
    return Color.parse(app.theme_variables[STATE_STYLES[state].color])


async def test_diamond_is_drawn_in_layers() -> None:
    app = DagApp(diamond())
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(DagView)
        await pilot.pause()
        text = view.render_text()
        for name in ("alpha", "build", "check", "deploy"):
            assert name in text
        for ch in "┌─┐│└┘▼┬":
            assert ch in text
        # fan-out below a, fan-in above d
        assert "┴" in text
        lines = text.splitlines()
        assert row_of(lines, "alpha") < row_of(lines, "build") == row_of(lines, "check")
        assert row_of(lines, "check") < row_of(lines, "deploy")
        # what the pane shows is the same picture
        shown = visible_text(view)
        assert row_of(shown, "alpha") < row_of(shown, "build") < row_of(shown, "deploy")
        a, b, c, d = (view.box_region(i) for i in "abcd")
        assert a and b and c and d
        assert a.bottom <= b.y and b.y == c.y and b.bottom <= d.y and c.bottom <= d.y
        assert not b.overlaps(c)


async def test_keyboard_walks_edges_and_posts_selected() -> None:
    app = DagApp(diamond())
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(DagView)
        view.focus()
        await pilot.press("home")
        assert view.selected == "a"
        await pilot.press("down")
        await pilot.pause()
        first = view.selected
        assert first in {"b", "c"}
        assert app.picked[-1] == first
        await pilot.press("right" if first == "b" else "left")
        sibling = view.selected
        assert sibling == ({"b", "c"} - {first}).pop()
        await pilot.press("j")
        await pilot.pause()
        assert view.selected == "d"
        assert app.picked[-1] == "d"
        await pilot.press("up")
        back = view.selected
        assert back in {"b", "c"}
        await pilot.press("k")
        assert view.selected == "a"
        await pilot.press("up")  # no dependency: stays
        assert view.selected == "a"
        await pilot.pause()
        assert app.picked == ["a", first, sibling, "d", back, "a"]


async def test_selected_box_is_highlighted() -> None:
    app = DagApp(diamond())
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(DagView)
        view.select("d")
        await pilot.pause()
        lines = view.render_text().splitlines()
        assert "╔" in lines[row_of(lines, "deploy") - 1]
        assert "╚" in lines[row_of(lines, "deploy") + 1]
        assert "╔" not in lines[row_of(lines, "alpha") - 1]
        assert app.picked == []  # select() is programmatic: no message


async def test_state_change_recolours_without_relayout() -> None:
    app = DagApp(diamond())
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(DagView)
        await pilot.pause()
        before = {i: view.box_region(i) for i in "abcd"}
        layout = view.graph_layout
        assert colour_of(view, "d") != theme_colour(app, State.FAILED)
        view.set_graph(diamond(State.FAILED))
        await pilot.pause()
        assert view.graph_layout is layout
        assert view.layout_count == 1
        assert {i: view.box_region(i) for i in "abcd"} == before
        assert colour_of(view, "d") == theme_colour(app, State.FAILED)
        assert "✗ deploy" in view.render_text()
        # a new edge does lay out again
        view.set_graph([*diamond(State.FAILED), DagNode("e", "echo", State.PENDING, ("a",))])
        assert view.layout_count == 2
        assert "echo" in view.render_text()


async def test_colours_follow_the_theme() -> None:
    app = DagApp(diamond())
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(DagView)
        await pilot.pause()
        app.theme = "textual-light"
        await pilot.pause()
        assert colour_of(view, "b") == theme_colour(app, State.RUNNING)


async def test_empty_graph_shows_hint() -> None:
    app = DagApp([])
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(DagView)
        await pilot.pause()
        assert "no tasks" in view.render_line(0).text
        await pilot.press("down")  # nothing to move to: no error, no message
        assert view.selected is None
        assert app.picked == []
        view.set_graph(diamond())
        await pilot.pause()
        assert "no tasks" not in "".join(visible_text(view))


def big_graph(layers: int = 30, width: int = 10) -> list[DagNode]:
    nodes: list[DagNode] = []
    for layer in range(layers):
        for k in range(width):
            deps: tuple[str, ...] = ()
            if layer:
                deps = (f"n{layer - 1}-{k}", f"n{layer - 1}-{(k * 3 + 1) % width}")
            nodes.append(DagNode(f"n{layer}-{k}", f"node {layer}.{k}", State.PENDING, deps))
    return nodes


async def test_large_graph_scrolls_to_keep_selection_visible() -> None:
    nodes = big_graph()
    assert len(nodes) == 300
    app = DagApp(nodes)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(DagView)
        view.focus()
        await pilot.pause()
        pane = view.scrollable_content_region
        assert view.virtual_size.width > pane.width
        assert view.virtual_size.height > pane.height

        def in_view(task_id: str) -> bool:
            box = view.box_region(task_id)
            assert box is not None
            shown = Region(view.scroll_offset.x, view.scroll_offset.y, pane.width, pane.height)
            return shown.contains_region(box)

        await pilot.press("end")
        await pilot.pause()
        last = view.graph_layout.layers[-1][-1]
        assert view.selected == last
        assert view.scroll_offset.y > 0
        assert in_view(last)
        name = next(n.name for n in nodes if n.id == last)
        assert any(name in line for line in visible_text(view))

        await pilot.press("home")
        await pilot.pause()
        assert in_view(view.selected or "")
        # walk down edges to the bottom layer; the selection stays in view all the way
        for _ in range(29):
            await pilot.press("down")
            assert in_view(view.selected or "")
        assert view.selected in view.graph_layout.layers[-1]
        for _ in range(9):
            await pilot.press("l")
        await pilot.pause()
        assert view.selected == last
        assert in_view(last)


async def test_the_selected_box_stays_in_view_when_the_graph_is_laid_out_again() -> None:
    """Folding the selected parent (space) widens its box ("per-file (2 children)"): the new
    layout was shown at the old scroll offset, the selected box cut at the pane's edge."""
    nodes = big_graph(layers=3)
    app = DagApp(nodes)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(DagView)
        pane = view.scrollable_content_region

        def in_view(task_id: str) -> bool:
            box = view.box_region(task_id)
            assert box is not None
            shown = Region(view.scroll_offset.x, view.scroll_offset.y, pane.width, pane.height)
            return shown.contains_region(box)

        view.select("n1-9")
        await pilot.pause()
        assert in_view("n1-9") and view.scroll_offset.x > 0
        wider = [
            DagNode(n.id, "node 1.9 (12 children: 3 done)", n.state, n.depends_on, group=True)
            if n.id == "n1-9"
            else n
            for n in nodes
        ]
        before = view.layout_count
        view.set_graph(wider)
        await pilot.pause()
        assert view.layout_count == before + 1
        assert in_view("n1-9")
