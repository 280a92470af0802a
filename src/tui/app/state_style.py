"""How each task state looks: a symbol that reads without colour, plus a theme colour variable."""

from __future__ import annotations

from typing import NamedTuple

from tui.model.states import GROUPS, LABELS, State


class StateStyle(NamedTuple):
    symbol: str
    # A Textual theme variable name (without "$"), so every theme colours states its own way.
    color: str
    label: str


_LOOKS: dict[State, tuple[str, str]] = {
    State.PENDING: ("·", "text-muted"),
    State.QUEUED: ("○", "secondary"),
    State.RUNNING: ("▶", "accent"),
    State.READY: ("?", "warning"),
    State.BLOCKED: ("‖", "warning"),
    State.COMPLETED: ("✓", "success"),
    State.FAILED: ("✗", "error"),
    State.TIMED_OUT: ("⌛", "error"),
    State.CANCELLED: ("⊘", "text-muted"),
    State.BUDGET_EXCEEDED: ("$", "error"),
    State.SKIPPED: ("↷", "text-muted"),
}
# The words are the model's: the engine's messages say the same ("lint is done").
STATE_STYLES: dict[State, StateStyle] = {
    s: StateStyle(*look, LABELS[s]) for s, look in _LOOKS.items()
}


# The words `state:WORD` takes: every label as shown (spaces as dashes), every state's name,
# and the model's groups (the same words `tui ls --state` takes).
STATE_WORDS: dict[str, frozenset[State]] = {
    **{st.label.replace(" ", "-"): frozenset({s}) for s, st in STATE_STYLES.items()},
    **{s.value.lower(): frozenset({s}) for s in State},
    **GROUPS,
}


def style_for(state: State | str) -> StateStyle:
    return STATE_STYLES[State(state)]
