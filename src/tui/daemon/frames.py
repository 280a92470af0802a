"""Reading a client's request lines with bounded memory.

A request is one line, and one may be large (a `tui run` of many files submits every task at
once), so the cap per line is high. What keeps a buggy or hostile client from holding that much
per connection: each connection's reader buffers little (``SMALL``), and a line longer than
that is read on under ``big`` — one such line at a time in the whole server, within a
deadline — so the daemon holds at most one large request line plus a small buffer per
connection, however many clients send endless lines.
"""

from __future__ import annotations

import asyncio

SMALL = 1024 * 1024  # a connection's read buffer; nearly every request fits
BIG_READ_TIMEOUT = 60.0  # a large line is read within this (a local socket moves GB/s)


class RequestTooLong(Exception):
    """A line that cannot be read whole: longer than the cap, or too slow to arrive."""


async def read_request(reader: asyncio.StreamReader, big: asyncio.Lock, cap: int) -> bytes:
    """The next line (with its newline; the last one may lack it), b"" at end of input."""
    try:
        return await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as e:
        return e.partial  # the client hung up: what it sent last, if anything
    except asyncio.LimitOverrunError:
        pass
    async with big:  # the other long lines wait here, their transports paused
        try:
            async with asyncio.timeout(BIG_READ_TIMEOUT):
                return await _read_long(reader, cap)
        except TimeoutError:
            raise RequestTooLong(
                f"a request line still incomplete after {BIG_READ_TIMEOUT:.0f}s: "
                "end every request with a newline"
            ) from None


async def _read_long(reader: asyncio.StreamReader, cap: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:
        try:
            part = await reader.readuntil(b"\n")
            done = True
        except asyncio.LimitOverrunError as e:
            part = await reader.readexactly(e.consumed)
            done = False
        except asyncio.IncompleteReadError as e:
            part, done = e.partial, True
        size += len(part)
        if size > cap:
            raise RequestTooLong(
                f"a request line longer than {cap // (1024 * 1024)} MiB: "
                "send fewer tasks at once, or end every request with a newline"
            )
        parts.append(part)
        if done:
            return b"".join(parts)
