"""The MCP server's stdin, read with a bound and checked line by line before the SDK sees it.

The SDK's stdio transport reads lines of any length and drops a line that is not a JSON-RPC
message without a word, so a client waiting on that request's id waits for ever. Here every
line that is not a message gets a JSON-RPC error (parse error, or invalid request with its id
when one can be read), a line longer than ``MAX_LINE`` is dropped as it comes — never held —
and answered the same way, and the server reads on.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
import mcp_types as types
from anyio.abc import ObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

MAX_LINE = 16 * 1024 * 1024  # a tool call's arguments are what a model writes: far less
READ_SIZE = 64 * 1024
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


class CheckedStdin:
    """Lines of ``fd`` that are JSON-RPC messages, for ``stdio_server(stdin=...)``; the others
    are answered through ``reply_to`` (the transport's write stream, set once it exists)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._replies: ObjectSendStream[SessionMessage] | None = None
        self._ready = anyio.Event()

    def reply_to(self, stream: ObjectSendStream[SessionMessage]) -> None:
        self._replies = stream
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        buf = bytearray()
        dropping = False  # inside a line over MAX_LINE: its rest is dropped as it comes
        while True:
            chunk = await anyio.to_thread.run_sync(os.read, self.fd, READ_SIZE)
            if not chunk:
                if buf and not dropping:
                    line = await self._checked(bytes(buf))
                    if line is not None:
                        yield line
                return
            buf += chunk
            while (end := buf.find(b"\n")) >= 0:
                raw, buf = bytes(buf[:end]), buf[end + 1 :]
                if dropping:
                    dropping = False
                    continue
                line = await self._checked(raw)
                if line is not None:
                    yield line
            if len(buf) > MAX_LINE and not dropping:
                await self._refuse(
                    _salvaged_id(bytes(buf[:4096])),
                    types.INVALID_REQUEST,
                    f"message longer than {MAX_LINE // (1024 * 1024)} MiB: not read",
                )
                dropping = True
            if dropping:
                buf.clear()

    async def _checked(self, raw: bytes) -> str | None:
        """The line as text if it is a JSON-RPC message; else None, after answering it."""
        if not raw.strip():
            return None  # blank lines between messages: nothing was asked
        try:
            text = raw.decode()
            data = json.loads(text)
        except (ValueError, RecursionError) as e:
            why = "nested too deeply" if isinstance(e, RecursionError) else str(e)
            await self._refuse(None, types.PARSE_ERROR, f"not JSON: {why}")
            return None
        rid = data.get("id") if isinstance(data, dict) else None
        good_id = rid is None or (isinstance(rid, int | str) and not isinstance(rid, bool))
        try:
            if not good_id:  # else an object id passes as a notification: never answered
                raise ValueError("id: a request's id is a string or an integer")
            types.jsonrpc_message_adapter.validate_python(data, by_name=False)
        except ValueError as e:
            why = f"not a JSON-RPC message: {_short(e)}"
            await self._refuse(rid if good_id else None, types.INVALID_REQUEST, why)
            return None
        return text

    async def _refuse(self, rid: int | str | None, code: int, message: str) -> None:
        await self._ready.wait()
        assert self._replies is not None
        error = types.JSONRPCError(
            jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message)
        )
        await self._replies.send(SessionMessage(error))


def _salvaged_id(head: bytes) -> int | str | None:
    """The id of a message too long to parse, from its first bytes, so its sender is answered."""
    m = _ID.search(head)
    if m is None:
        return None
    try:
        value = json.loads(m.group(1))
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


def _short(e: ValueError) -> str:
    errors = getattr(e, "errors", None)
    if errors is None:
        return str(e)
    first: dict[str, Any] = errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def _take_stdin() -> int:
    """The wire's stdin on a private descriptor; fd 0 becomes /dev/null, so nothing the tools
    start (go-task and its commands) can read the client's messages."""
    wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return wire


async def serve(server: MCPServer) -> None:
    """``server.run("stdio")`` with stdin checked (the SDK still owns stdout)."""
    stdin = CheckedStdin(_take_stdin())
    async with stdio_server(stdin=cast(anyio.AsyncFile[str], stdin)) as (read, write):
        stdin.reply_to(write)
        lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs
        await lowlevel.run(read, write, lowlevel.create_initialization_options())
