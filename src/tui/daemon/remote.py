"""A viewer's handle on the daemon: ``send(message)`` of ``tui.engine.api`` over the socket.

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
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any, TypeVar

from tui.daemon import protocol as wire
from tui.daemon.paths import DaemonPaths
from tui.engine import api
from tui.engine.client import Client
from tui.engine.events import Cursor, Event, Notice, advance
from tui.engine.scheduler import EngineError
from tui.model.task import Task
from tui.procs.process import proc_state

R = TypeVar("R", bound="api.Reply")  # a string: api is executed on first use (tui.engine)

RECONNECT_EVERY = 0.2  # seconds between attempts while the daemon is away
RECONNECT_TIMEOUT = 30.0  # how long a query waits for a daemon to come back
RESPAWN_EVERY = 5.0  # a follower whose daemon stays away starts one again this often
HELLO_TIMEOUT = 5.0  # a daemon greets at once; one that does not is stopped or stuck
REQUEST_TIMEOUT = 60.0  # the longest any request may take (a held `ask` adds its own)


class DaemonUnavailable(EngineError):
    """No daemon answers on this database's socket."""


class DaemonStopped(EngineError):
    """The daemon said goodbye (`tui daemon stop`); the viewer should end."""


class DaemonHung(DaemonUnavailable):
    """A daemon holds the socket but does not answer (e.g. stopped with SIGSTOP)."""


class OtherVersion(EngineError):
    """Whoever serves the socket runs another tui than this one: its models may refuse what
    this one sends, so nothing but ``status`` and ``shutdown`` goes to it."""

    def __init__(self, paths: DaemonPaths, hello: dict[str, Any]) -> None:
        self.hello = hello
        pid, theirs = hello.get("pid"), hello.get("version") or "an older tui"
        ours = wire.software_version()
        if hello.get("foreground"):
            what = (
                f"a `tui run` or app (pid {pid}) of tui {theirs} owns {paths.db}, this is "
                f"tui {ours}: let it end (or stop it where it runs), then try again"
            )
        else:
            what = (
                f"the tui daemon (pid {pid}) for {paths.db} runs tui {theirs}, this is "
                f"tui {ours}: run `tui daemon stop` (its running tasks are interrupted and run "
                "again when the next daemon starts), then try again"
            )
        super().__init__(what)

    @property
    def busy(self) -> list[str]:
        """The names of the tasks it runs now."""
        return [r.get("name", "") for r in self.hello.get("running_tasks", [])]


def daemon_pid(paths: DaemonPaths) -> int | None:
    """The pid written in the daemon's lock file (whoever holds it), if any."""
    try:
        text = paths.socket.with_suffix(".lock").read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _hung(paths: DaemonPaths, what: str, pid: int | None = None) -> DaemonHung:
    pid = pid or daemon_pid(paths)
    who = _who(pid)
    if not pid:
        hint = "is it stopped?"
    elif proc_state(pid) not in (None, "T", "t"):  # busy, or out of file descriptors
        hint = (
            f"it is not stopped: busy, or out of file descriptors (`ls /proc/{pid}/fd | wc -l` "
            f"counts them); `kill {pid}` ends it (runs are recovered)"
        )
    else:
        hint = (
            f"is it stopped? `kill -CONT {pid}` resumes it, `kill {pid}` ends it "
            "(runs are recovered)"
        )
    return DaemonHung(f"{who} for {paths.db} {what}; {hint}")


def _who(pid: int | None) -> str:
    return f"the tui daemon (pid {pid})" if pid else "the tui daemon"


def _dropped(paths: DaemonPaths, e: OSError) -> DaemonHung:
    pid = daemon_pid(paths)
    who = _who(pid)
    fds = f" (`ls /proc/{pid}/fd | wc -l` counts them)" if pid else ""
    return DaemonHung(
        f"{who} for {paths.db} could not take the connection ({e.strerror or e}): it may be "
        f"out of file descriptors, held by other connections{fds}; close them, or "
        "`tui daemon stop` (runs are recovered)"
    )


async def _open(
    paths: DaemonPaths, limit: int = wire.REQUEST_LINE_LIMIT, *, any_version: bool = False
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, dict]:
    # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancellation that
    # lands as the awaited call completes (a viewer told to stop then follows forever).
    try:
        async with asyncio.timeout(HELLO_TIMEOUT):
            reader, writer = await asyncio.open_unix_connection(str(paths.socket), limit=limit)
    except (FileNotFoundError, ConnectionError) as e:
        raise DaemonUnavailable(f"no tui daemon for {paths.db}") from e
    except TimeoutError:
        raise _hung(paths, f"did not accept a connection in {HELLO_TIMEOUT:.0f}s") from None
    except OSError as e:  # e.g. the socket's directory not ours to enter
        raise EngineError(f"cannot connect to {paths.socket}: {e.strerror or e}") from None
    try:
        async with asyncio.timeout(HELLO_TIMEOUT):
            line = await reader.readline()
    except ConnectionError:  # a daemon dying (or a stale socket) as we connect
        line = b""
    except TimeoutError:
        writer.close()
        raise _hung(paths, f"did not answer in {HELLO_TIMEOUT:.0f}s") from None
    except OSError as e:  # EINVAL: a daemon out of file descriptors could not take us
        writer.close()
        raise _dropped(paths, e) from None
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
    if not any_version and hello.get("version") != wire.software_version():
        writer.close()
        raise OtherVersion(paths, hello)
    return reader, writer, hello


class RemoteEngine(Client):
    """The engine API of whoever serves the database's socket (the daemon, a foreground
    `tui run` or app): ``send`` carries a message of ``tui.engine.api`` and its reply."""

    detached = True  # runs outlive this viewer

    def __init__(
        self,
        paths: DaemonPaths,
        respawn: Callable[[], None] | None = None,
        *,
        any_version: bool = False,
    ) -> None:
        self.paths = paths
        self.any_version = any_version  # for `tui daemon status|stop`: another tui's daemon
        self.hello: dict[str, Any] = {}
        self._respawn = respawn
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pump: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._connecting = asyncio.Lock()
        self._stopped = ""  # why the owner said goodbye: it is not coming back on its own

    @classmethod
    async def connect(
        cls,
        paths: DaemonPaths,
        respawn: Callable[[], None] | None = None,
        *,
        any_version: bool = False,
    ) -> RemoteEngine:
        remote = cls(paths, respawn, any_version=any_version)
        await remote._connect()
        return remote

    @property
    def pid(self) -> int:
        return int(self.hello.get("pid", 0))

    @property
    def version(self) -> str:
        """The tui it runs ("" for one older than the version handshake)."""
        return str(self.hello.get("version") or "")

    @property
    def foreground(self) -> bool:
        """Served by a foreground `tui run` / app, not the daemon."""
        return bool(self.hello.get("foreground"))

    @property
    def cursor(self) -> Cursor:
        """Where the stream stood when this viewer attached (or last reconnected)."""
        return wire.cursor_from_wire(self.hello.get("cursor", [0, 0]))

    async def _connect(self) -> None:
        self._reader, self._writer, self.hello = await _open(
            self.paths, any_version=self.any_version
        )
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
                if msg.get("t") == "bye":
                    self._stopped = msg.get("reason") or "the tui daemon stopped"
                    break
                fut = self._pending.pop(msg.get("id", -1), None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
        except (OSError, ValueError):  # reset, refused, EINVAL…, or garbled
            pass
        finally:
            self._writer = None
            gone: EngineError = DaemonUnavailable(
                f"lost the tui daemon for {self.paths.db}; the command may not have reached "
                "it: check, then try again"
            )
            if self._stopped:
                gone = DaemonStopped(self._stopped)
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(gone)
            self._pending.clear()

    async def send(self, message: api.Message[R]) -> R:
        """One request and its typed reply. A query that meets a dead daemon waits for the
        next one (restarting it when this viewer was told how) and asks again; a command is
        never sent twice — it fails instead."""
        sent: api.Message[Any] = message
        if isinstance(message, api.Submit):
            # The daemon may run in another directory: pin relative project dirs to ours.
            sent = message.model_copy(
                update={"tasks": [_pinned(t, Path.cwd()) for t in message.tasks]}
            )
        query = not isinstance(message, api.COMMANDS)
        for attempt in (1, 2):
            if self._stopped:  # stopped on purpose: starting another behind its back is wrong
                raise DaemonStopped(self._stopped)
            async with self._connecting:
                if self._writer is None:  # the daemon restarted since: attach again
                    await self._reconnect()
            try:
                result = await self._request(sent)
            except DaemonUnavailable:
                if not query or attempt == 2:
                    raise
                continue
            return message.reply.model_validate(result)  # type: ignore[return-value]
        raise AssertionError("unreachable")

    async def _reconnect(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RECONNECT_TIMEOUT
        respawned = False
        while True:
            try:
                await self._connect()
                return
            except DaemonHung:
                raise
            except DaemonUnavailable:
                if loop.time() > deadline:
                    raise
                if self._respawn is not None and not respawned:
                    respawned = True
                    self._respawn()
                await asyncio.sleep(RECONNECT_EVERY)  # waiting for another process to listen

    async def _request(self, message: api.Message[Any]) -> Any:
        writer = self._writer
        if writer is None:
            raise DaemonUnavailable(f"lost the tui daemon for {self.paths.db}")
        rid = next(self._ids)
        data = wire.request(rid, message)  # before a reply is awaited: it may not encode
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            writer.write(data)
            await writer.drain()
        except ConnectionError as e:
            self._pending.pop(rid, None)
            if self._writer is writer:  # dead: a query's next attempt attaches again (the
                self._writer = None  # reader may not have seen the end of the connection yet)
                writer.close()
            raise DaemonUnavailable(f"lost the tui daemon for {self.paths.db}") from e
        try:
            # A cancel (the app quitting) always ends the request, even one whose reply came in
            # the same loop turn: see ``_open``.
            async with asyncio.timeout(_timeout(message)):
                reply = await fut
        except TimeoutError:
            op = message.op  # type: ignore[attr-defined]
            done = "" if not isinstance(message, api.COMMANDS) else " (it may have been done)"
            raise _hung(self.paths, f"did not answer `{op}`{done}", self.pid) from None
        finally:
            self._pending.pop(rid, None)
        if not reply["ok"]:
            raise EngineError(reply["error"])
        return reply["result"]

    @property
    def db_path(self) -> str:
        return str(self.paths.db)

    async def shutdown(self) -> None:
        await self.send(api.Shutdown())

    async def status(self) -> api.StatusReply:
        return await self.send(api.Status())

    # -- the event stream ------------------------------------------------------------------

    async def events(self, since: Cursor | None = None) -> AsyncGenerator[Event | Notice, None]:
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
                writer.write(wire.request(0, api.Subscribe(cursor=tuple(last))))
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
        """Until a daemon answers again; one that stays away is started again every
        RESPAWN_EVERY seconds (a start that loses a race to another is harmless)."""
        loop = asyncio.get_running_loop()
        respawn_at = loop.time()
        while True:
            try:
                _r, w, _h = await _open(self.paths)
            except DaemonUnavailable:
                if self._respawn is not None and loop.time() >= respawn_at:
                    respawn_at = loop.time() + RESPAWN_EVERY
                    self._respawn()
                # Waiting on another process to listen: nothing to await but the socket.
                await asyncio.sleep(RECONNECT_EVERY)
                continue
            w.close()
            return


def _timeout(message: api.Message[Any]) -> float | None:
    if isinstance(message, api.Ask) and message.wait:
        return message.timeout + REQUEST_TIMEOUT if message.timeout else None
    return REQUEST_TIMEOUT


def _pinned(task: Task, cwd: Path) -> Task:
    pd = task.agent.project_dir
    if pd and os.path.isabs(os.path.expanduser(pd)):
        return task
    absolute = str(cwd / pd) if pd else str(cwd)
    return task.model_copy(
        update={"agent": task.agent.model_copy(update={"project_dir": absolute})}
    )
