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
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from tui.daemon import protocol as wire
from tui.daemon.frames import SMALL, RequestTooLong, read_request
from tui.daemon.paths import DaemonPaths
from tui.engine import api
from tui.engine.events import Cursor, advance
from tui.engine.scheduler import Engine, EngineError
from tui.model.states import State

log = logging.getLogger("tui.daemon")

DRAIN_TIMEOUT = 2.0  # how long a stopping server lets its streams catch up


def _ops() -> str:
    # Not at import: a `tui run` no client talks to never builds api's message classes.
    return ", ".join(m.model_fields["op"].default for m in api.MESSAGES)


def _reached(sent: Cursor, target: Cursor) -> bool:
    return sent.event_id >= target.event_id and sent.output_id >= target.output_id


class DaemonServer:
    def __init__(
        self,
        engine: Engine,
        paths: DaemonPaths,
        on_shutdown: Callable[[], None],
        *,
        foreground: bool = False,
    ) -> None:
        self.engine = engine
        self.foreground = foreground
        self.paths = paths
        self.started_at = time.time()
        self._on_shutdown = on_shutdown
        self._server: asyncio.AbstractServer | None = None
        self._streams: set[asyncio.StreamWriter] = set()
        self._conns: set[asyncio.StreamWriter] = set()
        self._jobs: set[asyncio.Task[None]] = set()
        self.problem = ""  # why the daemon refuses to go on (its database file went away)
        self._sent: dict[asyncio.StreamWriter, Cursor] = {}  # how far each stream was sent
        self._sent_changed = asyncio.Condition()
        self._bound: tuple[int, int] | None = None  # (st_dev, st_ino) of the socket we bound
        self._big_line = asyncio.Lock()  # one long request line read at a time (frames.py)

    async def start(self) -> None:
        sock = self.paths.socket
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()  # stale: we hold the daemon lock, so nobody else listens on it
        old = os.umask(0o177)  # the socket is born owner-only; no window with wider modes
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=str(sock), limit=SMALL)
        finally:
            os.umask(old)
        st = os.lstat(sock)
        self._bound = (st.st_dev, st.st_ino)
        log.info("listening on %s", sock)

    def _remove_socket(self) -> None:
        """Unlink the socket path only if it is still the one we bound: once our lock file
        is gone (its directory deleted under us) a newer daemon may already listen there,
        and removing its socket would leave its viewers unable to find it."""
        sock = self.paths.socket
        try:
            st = os.lstat(sock)
        except FileNotFoundError:
            return
        if (st.st_dev, st.st_ino) != self._bound:
            log.info("%s is another daemon's socket now: left in place", sock)
            return
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()

    async def close(self, reason: str) -> None:
        """Tell every viewer why the daemon goes away, then stop listening. Each event stream
        first gets what the engine published (briefly waited for), so a follower sees the
        last transitions before the goodbye."""
        if self._server is not None:
            self._server.close()
        target = self.engine.cursor
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(DRAIN_TIMEOUT), self._sent_changed:
                await self._sent_changed.wait_for(
                    lambda: all(_reached(c, target) for c in self._sent.values())
                )
        if self._jobs:  # requests under way get their replies (a cancel that ended the run)
            await asyncio.wait(set(self._jobs), timeout=DRAIN_TIMEOUT)
        bye = wire.encode({"t": "bye", "reason": reason})
        for w in list(self._conns):  # streams and request connections alike
            with contextlib.suppress(Exception):
                w.write(bye)
        for w in list(self._conns):
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await w.drain()
            w.close()
        for job in list(self._jobs):
            job.cancel()
        self._remove_socket()

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
        jobs: set[asyncio.Task[None]] = set()
        try:
            status = (await self.status()).model_dump()
            # ``version`` only here, not in the Status reply: an older viewer's StatusReply
            # would refuse the extra field.
            version = wire.software_version()
            hello = {"t": "hello", **status, "version": version, "cursor": self._cursor()}
            writer.write(wire.encode(hello))
            await writer.drain()
            while line := await self._read(reader, writer, lock):
                try:
                    raw = wire.decode(line)
                    msg = api.parse_request(raw.get("msg"))
                except ValueError as e:  # not JSON, or not a message: say what, go on
                    why = f"bad request: {_explain(e)}"
                    await self._send(writer, lock, wire.failure(_rid(line), why))
                    continue
                if isinstance(msg, api.Subscribe):
                    await self._stream(reader, writer, Cursor(*msg.cursor))
                    return
                job = asyncio.create_task(self._request(raw.get("id"), msg, writer, lock))
                for group in (self._jobs, jobs):
                    group.add(job)
                    job.add_done_callback(group.discard)
        except (ConnectionError, RequestTooLong):
            pass
        finally:
            # A client that hung up waits for nothing: a held `ask` expires its question.
            for job in list(jobs):
                job.cancel()
            self._conns.discard(writer)
            writer.close()

    async def _read(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, lock: asyncio.Lock
    ) -> bytes:
        try:
            return await read_request(reader, self._big_line, wire.REQUEST_LINE_LIMIT)
        except RequestTooLong as e:  # said, and the connection closed: its rest is unread
            log.warning("closed a connection: %s", e)
            await self._send(writer, lock, wire.failure(None, f"bad request: {e}"))
            raise

    async def _request(
        self, rid: Any, msg: api.Message[Any], writer: asyncio.StreamWriter, lock: asyncio.Lock
    ) -> None:
        try:
            out = wire.reply(rid, await self.handle(msg))
        except EngineError as e:
            out = wire.failure(rid, str(e))
        except Exception as e:  # a bad request must never take the daemon down
            log.exception("request %s failed", type(msg).__name__)
            out = wire.failure(rid, f"internal error: {type(e).__name__}: {e}")
        await self._send(writer, lock, out)

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, lock: asyncio.Lock, data: bytes) -> None:
        async with lock:
            with contextlib.suppress(ConnectionError):
                writer.write(data)
                await writer.drain()

    async def handle(self, msg: api.Message[Any]) -> api.Reply:
        """The server's own messages here; every other one is the engine's."""
        if isinstance(msg, api.Status):
            return await self.status()
        if isinstance(msg, api.Shutdown):
            log.info("shutdown requested by a viewer")
            asyncio.get_running_loop().call_soon(self._on_shutdown)
            return api.Done(text="stopping")
        return await self.engine.handle(msg)

    async def _stream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, since: Cursor
    ) -> None:
        """Send events from ``since`` until the viewer hangs up (noticed even when no event
        comes, so a departed viewer is never counted or fed)."""
        pump = asyncio.create_task(self._pump_events(writer, since))
        gone = asyncio.create_task(_until_eof(reader))  # a viewer sends nothing more
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

        self._sent[writer] = since
        try:
            async for item in self.engine.events(since, on_lag=on_lag):
                if lagged:
                    lagged = False
                    log.info("a viewer fell behind; catching it up from the database")
                    writer.write(wire.encode({"t": "lag"}))
                for m in wire.event_messages(item):
                    writer.write(wire.encode(m))
                await writer.drain()
                self._sent[writer] = advance(self._sent[writer], item)
                async with self._sent_changed:
                    self._sent_changed.notify_all()
        finally:
            self._sent.pop(writer, None)

    # -- what `tui daemon status` shows ----------------------------------------------------

    def _cursor(self) -> list[int]:
        return wire.cursor_to_wire(self.engine.cursor)

    async def status(self) -> api.StatusReply:
        tasks = await self.engine.list_tasks()
        # Stopping the daemon would interrupt an agent waiting for an answer too.
        live = self.engine.running_ids()
        running = [r for r in tasks if r.id in live or r.state == State.RUNNING]
        ending = self.engine.ending_ids()
        return api.StatusReply(
            protocol=wire.PROTOCOL,
            pid=os.getpid(),
            db=str(self.paths.db),
            socket=str(self.paths.socket),
            log=str(self.paths.log),
            started_at=self.started_at,
            uptime=time.time() - self.started_at,
            running_tasks=[
                api.RunningTask(id=r.id, name=r.name, ending=r.id in ending) for r in running
            ],
            tasks=len(tasks),
            viewers=len(self._streams),
            foreground=self.foreground,
            concurrency=self.engine.concurrency,
            shell=self.engine.shell,
        )


def _peer_uid(writer: asyncio.StreamWriter) -> int | None:
    sock = writer.get_extra_info("socket")
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (AttributeError, OSError):
        return None
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid


async def _until_eof(reader: asyncio.StreamReader) -> None:
    """Wait for a stream's viewer to hang up; whatever it still sends is dropped, not kept."""
    while await reader.read(SMALL):
        pass


def _explain(e: ValueError) -> str:
    """What is wrong with a request, in a line or three: pydantic's own text names every
    member of the message union before it says anything."""
    if not isinstance(e, ValidationError):
        return str(e)
    said = []
    for err in e.errors()[:3]:
        where = ".".join(str(p) for p in ("msg", *err["loc"]))
        if err["type"] == "union_tag_not_found":
            said.append(f'{where} needs an "op": one of {_ops()}')
        elif err["type"] == "union_tag_invalid":
            said.append(f"{where}: unknown op {err['ctx']['tag']!r}: one of {_ops()}")
        else:
            said.append(f"{where}: {err['msg']}")
    more = e.error_count() - len(said)
    return "; ".join(said) + (f" (and {more} more)" if more > 0 else "")


def _rid(line: bytes) -> Any:
    """The id of a request that could not be parsed, if it has one, so its sender is answered."""
    try:
        return wire.decode(line).get("id")
    except ValueError:
        return None
