"""A viewer's handle on the daemon: the engine's client API over the socket.

Requests share one connection (replies matched by id); the event stream has a connection of
its own, so a viewer that reads events slowly never delays its own commands. If the daemon goes
away the stream says so, waits for it (restarting it when the viewer was told how), and resumes
from the last sequence numbers it saw: no gap and no duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from tui.daemon import protocol as wire
from tui.daemon.paths import DaemonPaths
from tui.engine.client import CommandClient
from tui.engine.events import Cursor, Event, Notice, advance
from tui.engine.scheduler import EngineError
from tui.model.task import Task
from tui.store.records import OutputLine, QuestionRecord, TaskRecord

RECONNECT_EVERY = 0.2  # seconds between attempts while the daemon is away
RECONNECT_TIMEOUT = 15.0  # how long a query waits for a daemon to come back


class DaemonUnavailable(EngineError):
    """No daemon answers on this database's socket."""


class DaemonStopped(EngineError):
    """The daemon said goodbye (`tui daemon stop`); the viewer should end."""


async def _open(
    paths: DaemonPaths, limit: int = wire.REQUEST_LINE_LIMIT
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, dict]:
    try:
        reader, writer = await asyncio.open_unix_connection(str(paths.socket), limit=limit)
    except (FileNotFoundError, ConnectionError) as e:
        raise DaemonUnavailable(f"no tui daemon for {paths.db}") from e
    try:
        line = await reader.readline()
    except ConnectionError:  # a daemon dying (or a stale socket) as we connect
        line = b""
    if not line:
        writer.close()
        raise DaemonUnavailable(f"the tui daemon for {paths.db} closed the connection")
    hello = wire.decode(line)
    if hello.get("t") == "bye":  # refused at the door (e.g. its database file was deleted)
        writer.close()
        raise EngineError(f"the tui daemon for {paths.db}: {hello.get('reason', '')}")
    if hello.get("protocol") != wire.PROTOCOL:
        writer.close()
        raise EngineError(
            f"the running tui daemon (pid {hello.get('pid')}) speaks protocol "
            f"{hello.get('protocol')}, this tui speaks {wire.PROTOCOL}: "
            "restart it with `tui daemon stop` (runs are recovered)"
        )
    return reader, writer, hello


class RemoteEngine(CommandClient):
    """What the app and the CLI need of an engine, served by the daemon."""

    detached = True  # runs outlive this viewer

    def __init__(self, paths: DaemonPaths, respawn: Callable[[], None] | None = None) -> None:
        self.paths = paths
        self.hello: dict[str, Any] = {}
        self._respawn = respawn
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pump: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._connecting = asyncio.Lock()

    @classmethod
    async def connect(
        cls, paths: DaemonPaths, respawn: Callable[[], None] | None = None
    ) -> RemoteEngine:
        remote = cls(paths, respawn)
        await remote._connect()
        return remote

    @property
    def pid(self) -> int:
        return int(self.hello.get("pid", 0))

    @property
    def cursor(self) -> Cursor:
        """Where the stream stood when this viewer attached (or last reconnected)."""
        return wire.cursor_from_wire(self.hello.get("cursor", [0, 0]))

    async def _connect(self) -> None:
        self._reader, self._writer, self.hello = await _open(self.paths)
        self._pump = asyncio.create_task(self._read_replies(self._reader))

    async def aclose(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()

    async def _read_replies(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                msg = wire.decode(line)
                fut = self._pending.pop(msg.get("id", -1), None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
        except (ConnectionError, ValueError):
            pass
        finally:
            self._writer = None
            gone = DaemonUnavailable(
                f"lost the tui daemon for {self.paths.db}; the command may not have reached "
                "it: check, then try again"
            )
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(gone)
            self._pending.clear()

    async def request(self, op: str, args: dict[str, Any] | None = None) -> Any:
        """One request. A query that meets a dead daemon waits for the next one (a viewer
        restarts it) and asks again; a command is never sent twice — it fails instead."""
        query = op != "command"
        for attempt in (1, 2):
            async with self._connecting:
                if self._writer is None:  # the daemon restarted since: attach again
                    await self._reconnect()
            try:
                return await self._send(op, args or {})
            except DaemonUnavailable:
                if not query or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _reconnect(self) -> None:
        deadline = asyncio.get_running_loop().time() + RECONNECT_TIMEOUT
        while True:
            try:
                await self._connect()
                return
            except DaemonUnavailable:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(RECONNECT_EVERY)  # waiting for another process to listen

    async def _send(self, op: str, args: dict[str, Any]) -> Any:
        writer = self._writer
        if writer is None:
            raise DaemonUnavailable(f"lost the tui daemon for {self.paths.db}")
        rid = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            writer.write(wire.encode({"id": rid, "op": op, "args": args}))
            await writer.drain()
        except ConnectionError as e:
            self._pending.pop(rid, None)
            raise DaemonUnavailable(f"lost the tui daemon for {self.paths.db}") from e
        reply = await fut
        if not reply["ok"]:
            raise EngineError(reply["error"])
        return reply["result"]

    # -- commands --------------------------------------------------------------------------

    async def _call(self, kind: str, payload: dict[str, Any]) -> str:
        reply = await self.request("command", {"kind": kind, "payload": payload})
        if not reply["ok"]:
            raise EngineError(reply["text"])
        return reply["text"]

    async def submit(self, tasks: list[Task], approved: bool | None = None) -> list[str]:
        # The daemon may run in another directory: pin relative project dirs to ours.
        return await super().submit([_pinned(t, Path.cwd()) for t in tasks], approved)

    async def shutdown(self) -> None:
        await self.request("shutdown")

    # -- queries ---------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        return await self.request("status")

    async def list_tasks(self) -> list[TaskRecord]:
        return [wire.task_from_wire(d) for d in await self.request("list_tasks")]

    async def get_many(self, task_ids: Iterable[str]) -> list[TaskRecord]:
        rows = await self.request("get_many", {"task_ids": list(task_ids)})
        return [wire.task_from_wire(d) for d in rows]

    async def get(self, task_id: str) -> TaskRecord | None:
        found = await self.get_many([task_id])
        return found[0] if found else None

    async def questions(self, task_id: str | None = None) -> list[QuestionRecord]:
        rows = await self.request("questions", {"task_id": task_id})
        return [wire.question_from_wire(d) for d in rows]

    async def output_index(self, task_id: str) -> list[tuple[int, int]]:
        return [tuple(x) for x in await self.request("output_index", {"task_id": task_id})]

    async def read_run_lines(self, run_id: int, first_seq: int, last_seq: int) -> list[OutputLine]:
        args = {"run_id": run_id, "first_seq": first_seq, "last_seq": last_seq}
        return [wire.line_from_wire(r) for r in await self.request("read_run_lines", args)]

    # -- the event stream ------------------------------------------------------------------

    async def events(self, since: Cursor | None = None) -> AsyncIterator[Event | Notice]:
        """Events after ``since`` (None: from attach time), across daemon restarts."""
        last = since if since is not None else self.cursor
        while True:
            try:
                reader, writer, _hello = await _open(self.paths, wire.STREAM_LINE_LIMIT)
            except DaemonUnavailable:
                yield Notice("disconnected", f"lost the tui daemon for {self.paths.db}")
                await self._wait_for_daemon()
                yield Notice("reconnected", "the tui daemon is back; caught up")
                continue
            try:
                args = {"cursor": wire.cursor_to_wire(last)}
                writer.write(wire.encode({"id": 0, "op": "subscribe", "args": args}))
                await writer.drain()
                while line := await reader.readline():
                    msg = wire.decode(line)
                    kind = msg["t"]
                    if kind == "bye":
                        raise DaemonStopped(msg.get("reason", "the daemon stopped"))
                    if kind == "lag":
                        yield Notice("lagged", "fell behind; caught up from the database")
                        continue
                    item = wire.event_from_wire(msg)
                    last = advance(last, item)
                    yield item
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()
            # The connection ended without a goodbye: the daemon died. Resume from ``last``.

    async def _wait_for_daemon(self) -> None:
        respawned = False
        while True:
            try:
                _r, w, _h = await _open(self.paths)
            except DaemonUnavailable:
                if self._respawn is not None and not respawned:
                    respawned = True
                    self._respawn()
                # Waiting on another process to listen: nothing to await but the socket.
                await asyncio.sleep(RECONNECT_EVERY)
                continue
            w.close()
            return


def _pinned(task: Task, cwd: Path) -> Task:
    pd = task.agent.project_dir
    if pd and os.path.isabs(os.path.expanduser(pd)):
        return task
    absolute = str(cwd / pd) if pd else str(cwd)
    return task.model_copy(
        update={"agent": task.agent.model_copy(update={"project_dir": absolute})}
    )
