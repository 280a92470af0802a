"""Frames between the Ray executor (in the engine's process) and its Ray driver process.

A frame is a 4-byte big-endian length and a pickle. Both ends are this same tui, started by
the engine from ``sys.executable``: nothing else writes to these pipes.
"""

from __future__ import annotations

import asyncio
import pickle
import struct
from typing import Any

_HEADER = struct.Struct(">I")


def frame(message: tuple[Any, ...]) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> tuple[Any, ...] | None:
    """The next message; None at the end of the stream (the other side is gone)."""
    try:
        header = await reader.readexactly(_HEADER.size)
        (size,) = _HEADER.unpack(header)
        message: tuple[Any, ...] = pickle.loads(await reader.readexactly(size))
    except asyncio.IncompleteReadError:
        return None
    return message
