"""Checks shared by the model's fields, worded for the person who wrote the value."""

from __future__ import annotations

from typing import Any

from tui.model.suggest import did_you_mean


def one_of(field: str, value: Any, choices: tuple[str, ...], optional: bool) -> str:
    """Return ``value`` if it is an allowed choice, else raise a message a person can act on."""
    if isinstance(value, str) and value in choices:
        return value
    shown = ", ".join(c for c in choices if c)
    tail = " (or leave it out)" if optional else ""
    guess = did_you_mean(value, [c for c in choices if c]) if isinstance(value, str) else []
    hint = f"; did you mean '{guess[0]}'?" if guess else ""
    raise ValueError(f"{field} must be one of {shown}{tail}; got {value!r}{hint}")


def required_text(field: str, value: str) -> str:
    if not value.strip():
        raise ValueError(f"{field} must not be empty")
    return value
