"""Which task-list columns fit the pane, and how wide each is.

The list never scrolls sideways: columns are dropped by priority as the pane narrows (tags
first, then priority, agent, the state's label, cost, attempt, time, and the note last before
the name; attempt never shows without time, nor cost without attempt), names are capped so
one long name does not widen every row, and a cell that is still too long is cut with "…"
rather than to a stray letter. Spare room goes to the name (up to its cap) before the note
grows past its minimum.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size

COLUMNS = (
    "state",
    "name",
    "project",
    "agent",
    "node",
    "prio",
    "time",
    "try",
    "cost",
    "tags",
    "note",
)
PAD = 1  # blank cells either side of every column
NAME_CAP = 28  # widest a name column grows; longer names are cut with "…"
NAME_FIRST = 20  # the name's share before optional columns are considered (most names whole)
NOTE_MIN = 8  # "waiting…": enough to tell notes apart; the name comes first
SYMBOL_WIDTH = 2  # a state's symbol alone (⌛ takes two cells)
NOTE_FIRST = 40  # the note's share before the extras (state label, agent, prio, tags)
CAPS = {
    "project": 16,
    "agent": 16,
    "node": 12,
    "prio": 8,
    "time": 7,
    "try": 5,
    "cost": 8,
    "tags": 16,
}
WANTED = ("time", "try", "cost")  # after the note, in this order
# Only with room to spare, in this order. NODE (the Ray node a run was placed on) shows only
# once some task ran on Ray: with the local executor it stays empty and takes no room.
EXTRAS = ("project", "node", "agent", "prio", "tags")


def most_width(widths: list[int]) -> int:
    """The width that holds most of ``widths`` whole: every name up to ``NAME_FIRST``, and
    longer ones when they are more than a fifth of them (one long name among short ones is
    cut, not given the room of every row's note)."""
    if not widths:
        return 0
    ranked = sorted(widths)
    short = max((w for w in ranked if w <= NAME_FIRST), default=0)
    cut = max(1, len(ranked) // 5) if len(ranked) >= 3 else 0
    return max(short, ranked[len(ranked) - 1 - cut])


def fit_columns(
    content: dict[str, int], width: int, state_width: int, name_most: int | None = None
) -> dict[str, int]:
    """``content``: the widest text seen per column (headers included; 0 for a column no
    row has filled, which is then not shown). Returns the visible columns, in display
    order, with their widths.

    The state shows its symbol alone until there is room for its label too. ``name_most``:
    what most names need (``most_width``); the name column takes more only with room to
    spare."""

    def used(cols: dict[str, int]) -> int:
        return sum(w + 2 * PAD for w in cols.values())

    def fits(extra: int) -> bool:
        return used(chosen) + extra <= width

    name_want = min(content["name"], NAME_CAP)
    name_most = name_want if name_most is None else min(max(name_most, len("name")), name_want)
    note_want = content["note"]
    chosen = {"state": SYMBOL_WIDTH, "name": min(name_most, NAME_FIRST)}
    if used(chosen) > width:  # very narrow: the name takes what is left
        chosen["name"] = max(1, width - used({"state": SYMBOL_WIDTH}) - 2 * PAD)
        return chosen
    if note_want and fits(min(note_want, NOTE_MIN) + 2 * PAD):
        chosen["note"] = min(note_want, NOTE_MIN)
    for col in WANTED:
        want = min(content.get(col, 0), CAPS[col])
        if want and not fits(want + 2 * PAD):
            break  # not TRY where TIME did not fit: the note has those cells instead
        if want:
            chosen[col] = want

    def grow(col: str, upto: int) -> None:
        chosen[col] += max(0, min(width - used(chosen), upto - chosen[col]))

    grow("name", name_most)  # most names whole before a longer note: names are what one scans
    if "note" in chosen:
        grow("note", min(note_want, NOTE_FIRST))
    grow("name", name_want)  # the few long names, once the notes have their share
    if fits(state_width - SYMBOL_WIDTH):
        chosen["state"] = state_width
    for col in EXTRAS:
        want = min(content.get(col, 0), CAPS[col])
        if want and fits(want + 2 * PAD):
            chosen[col] = want
    if "note" in chosen:
        grow("note", note_want)
    return {c: chosen[c] for c in COLUMNS if c in chosen}


def fit_text(text: str, width: int) -> str:
    """``text`` in exactly ``width`` cells: padded, or cut with "…"."""
    size = len(text) if text.isascii() else cell_len(text)
    if size <= width:
        return text + " " * (width - size)
    if width <= 1:
        return "…"[:width]
    return set_cell_size(text, width - 1) + "…"
