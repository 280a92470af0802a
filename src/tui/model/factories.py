"""Default factories for pydantic fields: ``Field(default_factory=new_list)`` where one would
write ``list``. Pydantic reads each factory's signature when it builds a model; a builtin's is
parsed from its text signature through ``tokenize`` (~35 µs a field, and ~1.5 ms to compile
tokenize's patterns on the first), a Python function's is not: ~2 ms of every `tui run`."""

from __future__ import annotations

from typing import Any


def new_list() -> list[Any]:
    return []


def new_dict() -> dict[Any, Any]:
    return {}
