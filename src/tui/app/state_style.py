"""How each task state looks: a symbol that reads without colour, plus a theme colour variable."""

from __future__ import annotations

from typing import NamedTuple

from tui.model.states import State


class StateStyle(NamedTuple):
    symbol: str
    # A Textual theme variable name (without "$"), so every theme colours states its own way.
    color: str
    label: str


STATE_STYLES: dict[State, StateStyle] = {
    State.PENDING: StateStyle("·", "text-muted", "pending"),
    State.QUEUED: StateStyle("○", "secondary", "queued"),
    State.RUNNING: StateStyle("▶", "accent", "running"),
    State.READY: StateStyle("?", "warning", "needs you"),
    State.BLOCKED: StateStyle("‖", "warning", "blocked"),
    State.COMPLETED: StateStyle("✓", "success", "done"),
    State.FAILED: StateStyle("✗", "error", "failed"),
    State.TIMED_OUT: StateStyle("⌛", "error", "timed out"),
    State.CANCELLED: StateStyle("⊘", "text-muted", "cancelled"),
    State.BUDGET_EXCEEDED: StateStyle("$", "error", "over budget"),
    State.SKIPPED: StateStyle("↷", "text-muted", "skipped"),
}


# "failed" as the screen counts and filters it: a cancel is the user's choice, not a failure.
FAILED_GROUP: frozenset[State] = frozenset({State.FAILED, State.TIMED_OUT, State.BUDGET_EXCEEDED})

# The words `state:WORD` takes: every label as shown (spaces as dashes), every state's name,
# and a few groups.
STATE_WORDS: dict[str, frozenset[State]] = {
    **{st.label.replace(" ", "-"): frozenset({s}) for s, st in STATE_STYLES.items()},
    **{s.value.lower(): frozenset({s}) for s in State},
    "failed": FAILED_GROUP,
    "completed": frozenset({State.COMPLETED}),
    "canceled": frozenset({State.CANCELLED}),
    "waiting": frozenset({State.READY, State.BLOCKED}),
    "finished": frozenset({State.COMPLETED, State.CANCELLED, State.SKIPPED, *FAILED_GROUP}),
}


def style_for(state: State | str) -> StateStyle:
    return STATE_STYLES[State(state)]
