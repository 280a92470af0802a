"""The daemon's socket server: requests answered from the engine, event streams to viewers.

Every viewer is isolated from the others: requests run as their own tasks, and a stream that
cannot be written (a viewer on a bad link) only parks its own writer. The engine's event stream
then stops queueing for it and, when the viewer reads again, replays what it missed from the
database, so a slow viewer costs the daemon no memory and the agents no time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tui.daemon import protocol as wire
from tui.daemon.paths import DaemonPaths
from tui.engine.events import Cursor
from tui.engine.scheduler import Engine
from tui.model.states import State

log = logging.getLogger("tui.daemon")


class DaemonServer:
    def __init__(self, engine: Engine, paths: DaemonPaths, on_shutdown: Callable[[], None]):
        self.engine = engine
        self.paths = paths
        self.started_at = time.time()
        self._on_shutdown = on_shutdown
        self._server: asyncio.AbstractServer | None = None
        self._streams: set[asyncio.StreamWriter] = set()
        self._conns: set[asyncio.StreamWriter] = set()
        self._jobs: set[asyncio.Task[None]] = set()
        self.problem = ""  # why the daemon refuses to go on (its database file went away)

    async def start(self) -> None:
        sock = self.paths.socket
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()  # stale: we hold the daemon lock, so nobody else listens on it
        old = os.umask(0o177)  # the socket is born owner-only; no window with wider modes
        try:
            self._server = await asyncio.start_unix_server(
                self._serve, path=str(sock), limit=wire.REQUEST_LINE_LIMIT
            )
        finally:
            os.umask(old)
        log.info("listening on %s", sock)

    async def close(self, reason: str) -> None:
        """Tell every viewer why the daemon goes away, then stop listening."""
        if self._server is not None:
            self._server.close()
        bye = wire.encode({"t": "bye", "reason": reason})
        for w in list(self._streams):
            with contextlib.suppress(Exception):
                w.write(bye)
        for w in list(self._conns):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(w.drain(), 1.0)
            w.close()
        for job in list(self._jobs):
            job.cancel()
        with contextlib.suppress(FileNotFoundError):
            self.paths.socket.unlink()

    def refuse(self, problem: str) -> None:
        """Stop serving: the database file is not the one the engine has open any more."""
        if not self.problem:
            log.error("%s", problem)
            self.problem = problem
            self._on_shutdown()

    def _file_gone(self) -> bool:
        from tui.store.db import DatabaseFileError

        try:
            self.engine.store.check_file()
        except DatabaseFileError as e:
            self.refuse(str(e))
        return bool(self.problem)

    # -- connections -----------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = _peer_uid(writer)
        if peer != os.getuid():
            log.warning("refused a connection from uid %s", peer)
            writer.close()
            return
        if self._file_gone():
            with contextlib.suppress(ConnectionError):
                writer.write(wire.encode({"t": "bye", "reason": self.problem}))
                await writer.drain()
            writer.close()
            return
        self._conns.add(writer)
        lock = asyncio.Lock()  # replies of concurrent requests must not interleave
        try:
            hello = {"t": "hello", **await self.status(), "cursor": self._cursor()}
            writer.write(wire.encode(hello))
            await writer.drain()
            while line := await reader.readline():
                try:
                    msg = wire.decode(line)
                except ValueError:
                    log.warning("dropped a viewer that sent a malformed message")
                    return
                if msg.get("op") == "subscribe":
                    since = wire.cursor_from_wire(msg["args"]["cursor"])
                    await self._stream(reader, writer, since)
                    return
                job = asyncio.create_task(self._request(msg, writer, lock))
                self._jobs.add(job)
                job.add_done_callback(self._jobs.discard)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._conns.discard(writer)
            writer.close()

    async def _request(
        self, msg: dict[str, Any], writer: asyncio.StreamWriter, lock: asyncio.Lock
    ) -> None:
        rid = msg.get("id")
        try:
            reply = {"t": "reply", "id": rid, "ok": True, "result": await self._answer(msg)}
        except Exception as e:  # a bad request must never take the daemon down
            if not isinstance(e, (KeyError, ValueError, TypeError, LookupError)):
                log.exception("request %s failed", msg.get("op"))
            reply = {"t": "reply", "id": rid, "ok": False, "error": str(e) or type(e).__name__}
        async with lock:
            with contextlib.suppress(ConnectionError):
                writer.write(wire.encode(reply))
                await writer.drain()

    async def _answer(self, msg: dict[str, Any]) -> Any:
        op, a = msg["op"], msg.get("args") or {}
        e = self.engine
        queries: dict[str, Callable[[], Awaitable[Any]]] = {
            "list_tasks": lambda: _tasks(e.list_tasks()),
            "get_many": lambda: _tasks(e.get_many(a["task_ids"])),
            "questions": lambda: _questions(e.questions(a.get("task_id"))),
            "output_index": lambda: e.output_index(a["task_id"]),
            "read_run_lines": lambda: _lines(
                e.read_run_lines(a["run_id"], a["first_seq"], a["last_seq"])
            ),
        }
        if op == "command":
            ok, text = await e.dispatch(a["kind"], a["payload"])
            return {"ok": ok, "text": text}
        if op == "status":
            return await self.status()
        if op == "shutdown":
            log.info("shutdown requested by a viewer")
            asyncio.get_running_loop().call_soon(self._on_shutdown)
            return "stopping"
        if op not in queries:
            raise ValueError(f"unknown op {op!r}")
        return await queries[op]()

    async def _stream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, since: Cursor
    ) -> None:
        """Send events from ``since`` until the viewer hangs up (noticed even when no event
        comes, so a departed viewer is never counted or fed)."""
        pump = asyncio.create_task(self._pump_events(writer, since))
        gone = asyncio.create_task(reader.read())  # a viewer sends nothing more: EOF = gone
        self._streams.add(writer)
        try:
            await asyncio.wait({pump, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._streams.discard(writer)
            for job in (pump, gone):
                job.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                    await job

    async def _pump_events(self, writer: asyncio.StreamWriter, since: Cursor) -> None:
        lagged = False

        def on_lag() -> None:
            nonlocal lagged
            lagged = True

        async for item in self.engine.events(since, on_lag=on_lag):
            if lagged:
                lagged = False
                log.info("a viewer fell behind; catching it up from the database")
                writer.write(wire.encode({"t": "lag"}))
            for m in wire.event_messages(item):
                writer.write(wire.encode(m))
            await writer.drain()

    # -- what `tui daemon status` shows ----------------------------------------------------

    def _cursor(self) -> list[int]:
        return wire.cursor_to_wire(self.engine.cursor)

    async def status(self) -> dict[str, Any]:
        tasks = await self.engine.list_tasks()
        running = [r for r in tasks if r.state == State.RUNNING]
        return {
            "protocol": wire.PROTOCOL,
            "pid": os.getpid(),
            "db": str(self.paths.db),
            "socket": str(self.paths.socket),
            "log": str(self.paths.log),
            "started_at": self.started_at,
            "uptime": time.time() - self.started_at,
            "running_tasks": [{"id": r.id, "name": r.name} for r in running],
            "tasks": len(tasks),
            "viewers": len(self._streams),
        }


def _peer_uid(writer: asyncio.StreamWriter) -> int | None:
    sock = writer.get_extra_info("socket")
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (AttributeError, OSError):
        return None
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid


async def _tasks(records: Awaitable[Any]) -> list[dict[str, Any]]:
    return [wire.task_to_wire(r) for r in await records]


async def _questions(records: Awaitable[Any]) -> list[dict[str, Any]]:
    return [wire.question_to_wire(q) for q in await records]


async def _lines(lines: Awaitable[Any]) -> list[list[Any]]:
    return [wire.line_to_wire(ln) for ln in await lines]
