"""Pure layered (Sugiyama-style) layout for the DAG view; no Textual in here.

Pipeline: networkx ``topological_generations`` gives the layers (a task sits one layer
below its deepest dependency), long edges get one dummy point per layer they cross, a few
barycenter sweeps (keeping the ordering with the fewest crossings, counted exactly) order
each layer, and an order-preserving least-squares placement (pool-adjacent-violators)
pulls every box towards the mean of its neighbours. Edges are then routed in the gap
between two layers: each source gets a horizontal track (sources whose spans do not
overlap share one, and fan-in arrows into the same port merge), so fan-out reads as
``┴`` splitting and fan-in as ``┬`` joining above a ``▼``.

Coordinates are in terminal cells; layers go top to bottom (dependencies above).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

from rich.cells import cell_len

if TYPE_CHECKING:
    import networkx as nx

BOX_HEIGHT = 3
MIN_BOX_WIDTH = 9
MAX_BOX_WIDTH = 25
GROUP_MAX_BOX_WIDTH = 41  # a folded parent says "name (5 children: 3 done)"
BOX_GAP = 2  # columns between two boxes (or a box and an edge passing through the layer)
DUMMY_GAP = 1  # columns between two edges passing through a layer
MARGIN = 1  # blank columns left of the leftmost item
ORDER_SWEEPS = 6
PLACE_SWEEPS = 6

# Connection bits of an edge cell.
N, S, E, W = 1, 2, 4, 8
EDGE_GLYPHS: dict[int, str] = {
    N: "│",
    S: "│",
    N | S: "│",
    E: "─",
    W: "─",
    E | W: "─",
    S | E: "╭",
    S | W: "╮",
    N | E: "╰",
    N | W: "╯",
    N | S | E: "├",
    N | S | W: "┤",
    S | E | W: "┬",
    N | E | W: "┴",
    N | S | E | W: "┼",
}
CROSSING = 16  # a vertical passing over another source's horizontal: drawn as "│"


def box_width(name: str, group: bool = False) -> int:
    """Cells of a box for ``name``: ``│ ✓ name │`` (symbols may be double width)."""
    cap = GROUP_MAX_BOX_WIDTH if group else MAX_BOX_WIDTH
    width = max(MIN_BOX_WIDTH, min(cap, cell_len(name) + 7))
    return width | 1  # odd, so the ports sit exactly in the middle


@dataclass(frozen=True, slots=True)
class Box:
    x: int
    y: int
    width: int
    layer: int
    index: int  # position among the real boxes of its layer
    in_ports: bool  # an arrow enters through the top border
    out_ports: bool  # an edge leaves through the bottom border

    @property
    def port(self) -> int:
        return self.x + self.width // 2

    @property
    def center(self) -> int:
        return self.port


@dataclass(slots=True)
class DagLayout:
    boxes: dict[str, Box] = field(default_factory=dict)
    layers: list[list[str]] = field(default_factory=list)  # real nodes only, in order
    parents: dict[str, list[str]] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    # row -> {column: connection bits (| CROSSING)}
    edge_cells: dict[int, dict[int, int]] = field(default_factory=dict)
    width: int = 0
    height: int = 0
    ignored_edges: list[tuple[str, str]] = field(default_factory=list)  # broke a cycle


def _acyclic(graph: nx.DiGraph) -> list[tuple[str, str]]:
    """Drop edges until ``graph`` is a DAG (a malformed input must still draw)."""
    import networkx as nx

    dropped: list[tuple[str, str]] = []
    while True:
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            return dropped
        u, v = cycle[-1][0], cycle[-1][1]
        graph.remove_edge(u, v)
        dropped.append((u, v))


def _crossings(upper: list[str], lower: list[str], down: dict[str, list[str]]) -> int:
    """Exact crossings between two adjacent layers (inversion count, Fenwick tree)."""
    pos = {v: i for i, v in enumerate(lower)}
    targets = [pos[v] for u in upper for v in sorted(down[u], key=pos.__getitem__)]
    tree = [0] * (len(lower) + 1)
    count = 0
    for seen, t in enumerate(targets):
        at_most = 0  # already-seen targets <= t
        i = t + 1
        while i > 0:
            at_most += tree[i]
            i -= i & -i
        count += seen - at_most
        i = t + 1
        while i <= len(lower):
            tree[i] += 1
            i += i & -i
    return count


def _order_layers(
    ranks: list[list[str]], up: dict[str, list[str]], down: dict[str, list[str]]
) -> list[list[str]]:
    def total(order: list[list[str]]) -> int:
        return sum(_crossings(a, b, down) for a, b in pairwise(order))

    order = [list(r) for r in ranks]
    best = [list(r) for r in order]
    best_cost = total(order)
    for sweep in range(ORDER_SWEEPS):
        downward = sweep % 2 == 0
        idx = range(1, len(order)) if downward else range(len(order) - 2, -1, -1)
        for li in idx:
            ref = order[li - 1] if downward else order[li + 1]
            nbrs = up if downward else down
            pos = {v: i for i, v in enumerate(ref)}
            here = {v: i for i, v in enumerate(order[li])}

            def key(v: str, nbrs: dict[str, list[str]] = nbrs, pos: dict = pos, here=here):
                ps = [pos[u] for u in nbrs[v]]
                # no neighbour on that side: keep the node where it is
                return (sum(ps) / len(ps) if ps else here[v], here[v])

            order[li].sort(key=key)
        cost = total(order)
        if cost < best_cost:
            best_cost, best = cost, [list(r) for r in order]
        if best_cost == 0:
            break
    return best


def _isotonic(values: list[float], weights: list[float]) -> list[float]:
    """Weighted least-squares non-decreasing fit (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, w in zip(values, weights, strict=True):
        blocks.append([v, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks[-1]
            blocks[-1] = [(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2]
    out: list[float] = []
    for mean, _w, count in blocks:
        out.extend([mean] * int(count))
    return out


def _fill_gaps(values: list[float | None]) -> list[float]:
    """Replace each None by the nearest value on its left (else on its right, else 0)."""
    last: float | None = None
    for i, v in enumerate(values):
        if v is None:
            values[i] = last
        else:
            last = v
    last = None
    for i in range(len(values) - 1, -1, -1):
        if values[i] is None:
            values[i] = 0.0 if last is None else last
        else:
            last = values[i]
    return [0.0 if v is None else v for v in values]  # no None is left: this says so to mypy


def _place(
    order: list[list[str]],
    widths: dict[str, int],
    dummy: set[str],
    up: dict[str, list[str]],
    down: dict[str, list[str]],
) -> dict[str, int]:
    """Left x of every item: order kept, gaps kept, each as near its neighbours as it can."""
    offsets: dict[str, int] = {}
    for layer in order:
        at = 0
        prev: str | None = None
        for v in layer:
            if prev is not None:
                at += widths[prev] + (DUMMY_GAP if prev in dummy and v in dummy else BOX_GAP)
            offsets[v] = at
            prev = v
    # x = offset + shift, with shifts non-decreasing along a layer: that keeps every gap.
    x: dict[str, float] = dict.fromkeys(offsets, 0.0)
    # Centre each layer under the widest one to start with.
    span = {i: (offsets[lay[-1]] + widths[lay[-1]]) if lay else 0 for i, lay in enumerate(order)}
    widest = max(span.values(), default=0)
    for i, layer in enumerate(order):
        for v in layer:
            x[v] = offsets[v] + (widest - span[i]) / 2

    def centre(v: str) -> float:
        return x[v] + widths[v] / 2

    for sweep in range(PLACE_SWEEPS):
        downward = sweep % 2 == 0
        idx = range(1, len(order)) if downward else range(len(order) - 2, -1, -1)
        nbrs = up if downward else down
        for li in idx:
            layer = order[li]
            wanted: list[float | None] = []
            weights: list[float] = []
            for v in layer:
                ns = nbrs[v]
                if ns:
                    c = sum(centre(u) for u in ns) / len(ns)
                    wanted.append(c - widths[v] / 2 - offsets[v])
                    weights.append(4.0 if v in dummy else 1.0)  # keep long edges straight
                else:  # nothing to align with: stay packed beside the nearest item that has
                    wanted.append(None)
                    weights.append(0.01)
            for v, s in zip(layer, _isotonic(_fill_gaps(wanted), weights), strict=True):
                x[v] = offsets[v] + s
    # Integer columns: rounding the (non-decreasing) shifts keeps them non-decreasing.
    cols = {v: offsets[v] + round(x[v] - offsets[v]) for v in x}
    left = min(cols.values(), default=0)
    return {v: c - left + MARGIN for v, c in cols.items()}


def layout(
    node_ids: Sequence[str],
    edges: Iterable[tuple[str, str]],
    names: dict[str, str],
    groups: Collection[str] = (),
) -> DagLayout:
    """Lay out ``node_ids`` with ``edges`` as (dependency, dependent) pairs; the boxes of
    ``groups`` (folded parents) may be wider."""
    result = DagLayout()
    if not node_ids:
        return result
    # networkx costs ~60 ms to import: paid when a DAG is first drawn, not before the first frame.
    import networkx as nx

    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(node_ids)
    known = set(node_ids)
    graph.add_edges_from((u, v) for u, v in edges if u in known and v in known and u != v)
    result.ignored_edges = _acyclic(graph)

    rank_of: dict[str, int] = {}
    ranks: list[list[str]] = []
    input_pos = {v: i for i, v in enumerate(node_ids)}
    for i, gen in enumerate(nx.topological_generations(graph)):
        ranks.append(sorted(gen, key=input_pos.__getitem__))
        for v in gen:
            rank_of[v] = i

    # Augmented graph: every edge spans one layer (dummy points on the long ones).
    up: dict[str, list[str]] = {v: [] for v in node_ids}
    down: dict[str, list[str]] = {v: [] for v in node_ids}
    dummy: set[str] = set()
    for u, v in graph.edges:
        prev = u
        for r in range(rank_of[u] + 1, rank_of[v]):
            d = f"\0{u}\0{v}\0{r}"
            dummy.add(d)
            up[d], down[d] = [], []
            ranks[r].append(d)
            down[prev].append(d)
            up[d].append(prev)
            prev = d
        down[prev].append(v)
        up[v].append(prev)

    order = _order_layers(ranks, up, down)
    widths = {v: 1 if v in dummy else box_width(names.get(v, v), v in groups) for v in up}
    xs = _place(order, widths, dummy, up, down)

    # Vertical positions and routing, gap by gap.
    cells: dict[int, dict[int, int]] = {}

    def paint(net: dict[tuple[int, int], int]) -> None:
        for (cx, cy), bits in net.items():
            row = cells.setdefault(cy, {})
            old = row.get(cx, 0)
            vertical, horizontal = N | S, E | W
            if old and (
                (old & ~vertical == 0 and bits & ~horizontal == 0)
                or (old & ~horizontal == 0 and bits & ~vertical == 0)
            ):
                row[cx] = old | bits | CROSSING
            else:
                row[cx] = old | bits

    def port(v: str) -> int:
        return xs[v] if v in dummy else xs[v] + widths[v] // 2

    y = 0
    layer_y: list[int] = []
    for li, layer in enumerate(order):
        layer_y.append(y)
        for v in layer:
            if v in dummy:  # the edge passes straight through the box rows
                paint({(xs[v], y + k): N | S for k in range(BOX_HEIGHT)})
        if li == len(order) - 1:
            y += BOX_HEIGHT
            break
        top = y + BOX_HEIGHT  # first row of the gap
        # One net per source: its port, and the ports of its targets.
        nets: list[tuple[int, int, int, list[int]]] = []  # (lo, hi, src x, target xs)
        straight: list[int] = []
        for v in layer:
            if not down[v]:
                continue
            sx = port(v)
            txs = sorted({port(t) for t in down[v]})
            if txs == [sx]:
                straight.append(sx)
            else:
                nets.append((min(sx, txs[0]), max(sx, txs[-1]), sx, txs))
        tracks: list[list[tuple[int, int, list[int]]]] = []
        placed: list[int] = []
        for lo, hi, _sx, txs in sorted(nets, key=lambda n: (n[0], n[1])):
            for t, members in enumerate(tracks):
                if all(
                    hi < mlo - 1
                    or mhi < lo - 1
                    # fan-in: lines that all lead into the same single port merge
                    or (len(txs) == 1 and txs == mtx)
                    for mlo, mhi, mtx in members
                ):
                    members.append((lo, hi, txs))
                    placed.append(t)
                    break
            else:
                tracks.append([(lo, hi, txs)])
                placed.append(len(tracks) - 1)
        gap = max(1, len(tracks))
        bottom = top + gap - 1  # last row of the gap
        for sx in straight:
            paint({(sx, r): N | S for r in range(top, bottom + 1)})
        for (lo, hi, sx, txs), t in zip(
            sorted(nets, key=lambda n: (n[0], n[1])), placed, strict=True
        ):
            ty = top + t
            net: dict[tuple[int, int], int] = {}

            def add(cx: int, cy: int, bits: int, net: dict = net) -> None:
                net[(cx, cy)] = net.get((cx, cy), 0) | bits

            for r in range(top, ty):
                add(sx, r, N | S)
            add(sx, ty, N)
            for cx in range(lo, hi + 1):
                add(cx, ty, (E if cx < hi else 0) | (W if cx > lo else 0))
            for tx in txs:
                add(tx, ty, S)
                for r in range(ty + 1, bottom + 1):
                    add(tx, r, N | S)
            paint(net)
        y = bottom + 1

    for li, layer in enumerate(order):
        real = [v for v in layer if v not in dummy]
        result.layers.append(real)
        for i, v in enumerate(real):
            result.boxes[v] = Box(
                x=xs[v],
                y=layer_y[li],
                width=widths[v],
                layer=li,
                index=i,
                in_ports=bool(up[v]),
                out_ports=bool(down[v]),
            )
    for v in node_ids:
        result.parents[v] = sorted(graph.predecessors(v), key=input_pos.__getitem__)
        result.children[v] = sorted(graph.successors(v), key=input_pos.__getitem__)
    result.edge_cells = cells
    result.width = max((xs[v] + widths[v] for v in xs), default=0) + MARGIN
    result.height = y
    return result
