"""Default factories for pydantic fields: ``Field(default_factory=new_list)`` where one would
write ``list``. Pydantic reads each factory's signature when it builds a model; a builtin's is
parsed from its text signature through ``tokenize`` (~35 µs a field, and ~1.5 ms to compile
tokenize's patterns on the first), a Python function's is not: ~2 ms of every `tui run`."""

from __future__ import annotations

import os
from typing import Any


def new_list() -> list[Any]:
    return []


def new_dict() -> dict[Any, Any]:
    return {}


def new_task_id() -> str:
    """A random UUID's text, as ``str(uuid.uuid4())`` writes it (version 4, RFC 4122 variant)
    from the same 16 random bytes: without building a ``UUID`` on the way (its checks and
    ``__str__``, ~7 µs a task in Python: ~7 ms of a 1,000-task file's load)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # variant RFC 4122
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
