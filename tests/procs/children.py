"""Reading an agent the keeper started to its end."""

from __future__ import annotations

import asyncio

from tui.procs.process import Child, OutPipe


async def read_all(pipe: OutPipe) -> bytes:
    out = b""
    while chunk := await pipe.read(65536):
        out += chunk
    return out


async def communicate(proc: Child) -> tuple[bytes, bytes, int]:
    """stdout, stderr and the exit code, each read to its end (30 s at most)."""
    async with asyncio.timeout(30):
        out, err, code = await asyncio.gather(
            read_all(proc.stdout), read_all(proc.stderr), proc.wait()
        )
    proc.close_pipes()
    return out, err, code
