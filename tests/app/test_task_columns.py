"""Which task-list columns a pane of a given width shows."""

from __future__ import annotations

import itertools

from tui.app.widgets.task_columns import COLUMNS, PAD, fit_columns, fit_text

CONTENT = {
    "state": 13,
    "name": 40,
    "agent": 12,
    "prio": 6,
    "time": 6,
    "try": 3,
    "cost": 5,
    "tags": 10,
    "note": 30,
}


def test_columns_go_by_priority_as_the_pane_narrows() -> None:
    seen = []
    for width in range(140, 10, -1):
        layout = fit_columns(CONTENT, width, 13)
        assert sum(w + 2 * PAD for w in layout.values()) <= width
        assert list(layout) == [c for c in COLUMNS if c in layout]  # display order kept
        seen.append(set(layout))
    dropped = []
    for before, after in itertools.pairwise(seen):
        dropped += sorted(before - after)
    # extras first, the note and the name last
    assert dropped.index("tags") < dropped.index("cost") < dropped.index("note")
    assert dropped.index("agent") < dropped.index("time")
    assert "name" in seen[-1] and "state" in seen[-1]


def test_wide_panes_show_the_whole_note_and_cap_the_name() -> None:
    layout = fit_columns(CONTENT, 140, 13)
    assert layout["note"] == 30 and layout["name"] == 28 and layout["state"] == 13


def test_cells_are_cut_with_an_ellipsis() -> None:
    assert fit_text("abcdef", 4) == "abc…"
    assert fit_text("ab", 4) == "ab  "
    assert fit_text("日本語テキスト", 5) == "日本…"
