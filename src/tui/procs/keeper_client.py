"""The engine's side of its keeper (tui.procs.keeper): agents started, read and reaped by a
process of their own, seen here as ordinary :class:`Child` objects.

Starting a process costs its parent's main thread the fork and exec (``_posixsubprocess``
holds the GIL through them), and every child's pipes and pidfd cost a selector add and remove
each. The keeper does all of it on the other core; the engine gets, per turn of the keeper's
loop, one frame with every start, output chunk and exit of that turn, and sends its own
requests batched the same way (one write per turn of its loop).

A keeper that dies ends what it ran: each live group is killed and its child ends as killed
with ``lost`` set (the executor treats the run as interrupted, not failed); a spawn under way
raises :class:`KeeperLost`. The next spawn starts a new keeper.

An engine that dies leaves its adoptable agents (plain commands) to its keeper, which waits
for the next engine of the database at :func:`keeper_socket` (or leaves :func:`results_path`);
:meth:`Keeper.attach` is that engine's side (tui.engine.adoption).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tui.procs.keeper_afterlife import CRED, FRAME_LEN
from tui.procs.kept_child import KeptChild
from tui.procs.kept_runs import (
    KeptRun,
    end_keepers,
    keeper_socket,
    keepers_of,
    results_path,
    running,
)
from tui.procs.process import Child
from tui.procs.run_env import layers

__all__ = ["Keeper", "KeeperLost", "NotStarted"]

CLOSE_WAIT = 10.0  # seconds a stopping keeper has to exit
_KEEPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keeper.py")
WAIT_ENV = "TUI_KEEPER_WAIT"  # seconds a keeper whose engine died waits for the next one
DEFAULT_WAIT = 300.0
ATTACH_WAIT = 5.0  # seconds to wait for a surviving keeper's answer
# Seconds the next engine waits for a dead engine's keeper that still lives to answer at its
# socket (a loaded machine may not have run it since its engine died), before it kills it:
# within the time a client gives a starting daemon (tui.daemon.lifecycle.START_TIMEOUT).
KEEPER_WAIT = 10.0
RETRY = 0.01  # seconds between tries at a live keeper's socket

log = logging.getLogger(__name__)


class KeeperLost(Exception):
    """The keeper process died while starting an agent."""


class NotStarted(Exception):
    """A start sent ahead (``hold``) found no free slot in time and was given back: nothing
    of it ran (tui.procs.keeper_slots)."""


class _Link(asyncio.Protocol):
    def __init__(self, keeper: Keeper) -> None:
        self._keeper = keeper
        self._buf = bytearray()

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        start = 0
        end = len(buf)
        while end - start >= 4:
            (size,) = FRAME_LEN.unpack_from(buf, start)
            if end - start - 4 < size:
                break
            messages = pickle.loads(memoryview(buf)[start + 4 : start + 4 + size])
            start += 4 + size
            self._keeper._received(messages)
        if start:
            del buf[:start]

    def connection_lost(self, exc: Exception | None) -> None:
        self._keeper._gone()


class Keeper:
    """One engine's keeper process and the children it runs for the engine."""

    def __init__(self) -> None:
        self._popen: subprocess.Popen[bytes] | None = None
        self._link: asyncio.Future[None] | None = None  # the keeper started, its socket open
        self._reaping: asyncio.Future[int] | None = None
        self._transport: asyncio.Transport | None = None
        self._base: dict[str, str] = {}
        self._base_seen: Mapping[str, str] | None = None  # a run's base found equal to it
        self._next = 0
        self._pending: dict[int, tuple[asyncio.Future[KeptChild], bool, bool]] = {}
        self._children: dict[int, KeptChild] = {}
        self._outbox: list[tuple[Any, ...]] = []
        self._closed: asyncio.Future[None] | None = None
        self._stopping = False
        self._setup: tuple[Any, ...] | None = None  # ("setup", ...) once told, see setup()
        self._attached = False  # a dead engine's keeper this engine adopted agents from
        self._kept: asyncio.Future[list[KeptRun]] | None = None
        self._engine_id = ""  # the engine it runs agents for: on its command line

    @property
    def set_up(self) -> bool:
        """Whether ``setup`` was done (it is then nothing to call again)."""
        return self._setup is not None

    def setup(self, engine_id: str, db_path: str) -> None:
        """Let adoptable agents outlive this engine (a database file, and a private runtime
        directory, are needed for that); idempotent."""
        if self._setup is not None or not db_path or db_path.startswith(("file:", ":memory:")):
            return
        where = keeper_socket(db_path, engine_id)
        if where is None:
            return
        try:
            wait = float(os.environ.get(WAIT_ENV, DEFAULT_WAIT))
        except ValueError:
            wait = DEFAULT_WAIT
        self._setup = (
            "setup",
            engine_id,
            str(where),
            str(where.parent),
            str(results_path(db_path, engine_id)),
            wait,
        )
        self._send(self._setup)

    def start(self, engine_id: str = "") -> None:
        """Start the keeper process now, without waiting for it (it gets going while the
        engine does; requests wait in the socket until it reads them). Idempotent.
        ``engine_id`` goes on its command line, from before it reads a request: the next
        engine tells by it whether this keeper still lives (:meth:`adopt_from`)."""
        if engine_id:
            self._engine_id = engine_id
        if self._link is None:
            self._link = asyncio.ensure_future(self._connect())

    async def _connect(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._popen = subprocess.Popen(
                [sys.executable, "-I", "-S", _KEEPER, str(theirs.fileno()), self._engine_id],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C meant for the engine's terminal is not its
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._stopping = False
        loop = asyncio.get_running_loop()
        self._closed = loop.create_future()
        transport, _ = await loop.connect_accepted_socket(lambda: _Link(self), ours)
        self._transport = transport
        # The environment every spawn is told as a difference from.
        self._base = dict(os.environ)
        self._base_seen = None
        self._send(("base", self._base))
        if self._setup is not None:  # a keeper started again after the first died
            self._send(self._setup)

    @classmethod
    async def adopt_from(cls, db_path: str, engine_id: str) -> tuple[Keeper, list[KeptRun]] | None:
        """:meth:`attach` to the keeper dead engine ``engine_id`` of this database left, for
        as long as that keeper lives: None once none does (it left its results file, if it
        kept anything), or after KEEPER_WAIT seconds.

        A keeper listens only once it has seen its engine's end, finished the starts it was
        asked for and set up its socket; on a loaded machine the next engine can be there
        first. Taking "no answer" for "nothing kept" then ends the runs and runs their tasks
        again while their agents run on (or start yet) under that keeper: every side effect
        done twice."""
        path = keeper_socket(db_path, engine_id)
        if path is None:
            return None
        deadline = time.monotonic() + KEEPER_WAIT
        keepers: list[int] | None = None  # pidfds, found once: a dead engine starts none
        try:
            while True:
                if path.exists():
                    try:
                        left = max(RETRY, deadline - time.monotonic())
                        return await cls.attach(path, engine_id, min(ATTACH_WAIT, left))
                    except (OSError, KeeperLost, TimeoutError) as e:
                        why: object = e
                else:
                    why = "it does not listen yet"
                told = keepers is not None
                if keepers is None:
                    keepers = keepers_of(engine_id)
                if not any(map(running, keepers)):
                    return None
                if time.monotonic() >= deadline:
                    # Its agents are ended as any dead engine's are (tui.engine.recovery); it
                    # must not start one more, nor run on those it has.
                    log.warning(
                        "the keeper of engine %s lives but did not answer in %.0fs (%s): killed",
                        engine_id,
                        KEEPER_WAIT,
                        why,
                    )
                    end_keepers(keepers)
                    return None
                if not told:
                    log.info("the keeper of engine %s lives, waiting for it: %s", engine_id, why)
                await asyncio.sleep(RETRY)  # its socket gives no sign to wait on till it listens
        finally:
            for fd in keepers or ():
                os.close(fd)

    @classmethod
    async def attach(
        cls, path: Path, engine_id: str, wait: float = ATTACH_WAIT
    ) -> tuple[Keeper, list[KeptRun]]:
        """Connect to the keeper engine ``engine_id`` left at ``path``: it must run as this
        user and have been that engine's. Returns it and the agents it kept; each must then
        be :meth:`claim`-ed or :meth:`drop`-ped. Raises OSError, KeeperLost when refused, or
        TimeoutError when it does not answer in ``wait`` seconds."""
        self = cls()
        self._attached = True
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            await loop.sock_connect(sock, str(path))
            _, uid, _ = CRED.unpack(
                sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, CRED.size)
            )
            if uid != os.getuid():
                raise KeeperLost(f"{path} is served by uid {uid}, not by you")
        except BaseException:
            sock.close()
            raise
        self._closed = loop.create_future()
        self._kept = loop.create_future()
        link = loop.create_future()
        link.set_result(None)
        self._link = link
        transport, _ = await loop.connect_accepted_socket(lambda: _Link(self), sock)
        self._transport = transport
        self._send(("adopt", engine_id))
        try:
            async with asyncio.timeout(wait):
                kept = await asyncio.shield(self._kept)
        except BaseException:
            transport.abort()
            raise
        return self, kept

    def claim(self, kept: KeptRun, offsets: tuple[int, int]) -> KeptChild:
        """Take over a kept agent: its output from these offsets (what the store has) on."""
        child = KeptChild(self, kept.key, kept.pid, kept.start_time, False)
        child.adoptable = True
        self._children[kept.key] = child
        self._send(("claim", kept.key, *offsets))
        return child

    def drop(self, kept: KeptRun) -> None:
        """Not taken over: the keeper kills it (if it still runs) and forgets it."""
        self._send(("forget", kept.key))

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen is not None else None

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str] | None,
        stdin: int = subprocess.DEVNULL,
        executable: str | None = None,
        run_id: int = 0,
        adoptable: bool = False,
        slots: int = 0,
        hold: bool = False,
    ) -> Child:
        """As :func:`tui.procs.process.spawn`, the process started by the keeper. An
        ``adoptable`` agent (of run ``run_id``) outlives an engine that dies, for the next one
        to adopt (see :meth:`setup`). ``slots`` > 0: a run's agent, counted against that
        concurrency; with ``hold`` it starts only once fewer are alive, and raises
        :class:`NotStarted` if no slot comes free in time (tui.procs.keeper_slots)."""
        if isinstance(argv, str | bytes) or not argv:
            raise ValueError("argv must be a non-empty sequence of arguments, not a string")
        self.start()
        assert self._link is not None
        if not self._link.done():
            await asyncio.shield(self._link)
        self._link.result()
        key = self._next = self._next + 1
        env_set, env_unset = self._env_diff(env)
        # Relative to our working directory, which is not the keeper's once we chdir.
        # An absolute one (a run's, in the DAG) is that already: no getcwd, ~1 us a spawn.
        if cwd is None or not os.path.isabs(cwd):
            cwd = os.path.join(os.getcwd(), cwd) if cwd is not None else os.getcwd()
        fut: asyncio.Future[KeptChild] = asyncio.get_running_loop().create_future()
        want_stdin = stdin == subprocess.PIPE
        self._pending[key] = (fut, want_stdin, adoptable)
        self._send(
            (
                "spawn",
                key,
                [os.fspath(a) for a in argv],
                env_set,
                env_unset,
                cwd,
                executable,
                want_stdin,
                run_id,
                adoptable,
                slots,
                hold,
            )
        )
        try:
            # Not shielded (a shield cost a future, two callbacks and a turn of the loop a
            # spawn): a cancel here cancels ``fut``, and the reply then ends the child.
            return await fut
        except asyncio.CancelledError:
            # The child may start all the same: it must not outlive this call.
            if not fut.cancelled():  # its reply came before the cancel took effect
                fut.add_done_callback(_abandon)
            elif hold:  # held, it need not start at all
                self._send(("drop", key))
            raise

    def _env_diff(self, env: Mapping[str, str] | None) -> tuple[dict[str, str], list[str]]:
        """``env`` as what differs from the keeper's base (most of it is the same)."""
        if env is None:
            env = os.environ
        base = self._base
        layered = layers(env)
        if layered is not None and self._same_base(layered[0]):
            # The run's variables over an environment equal to ours: only they can differ,
            # and none is unset.
            return {k: v for k, v in layered[1].items() if base.get(k) != v}, []
        changed = {k: v for k, v in env.items() if base.get(k) != v}
        added = sum(k not in base for k in changed)
        if len(env) - added == len(base):  # every variable of the base is still there
            return changed, []
        return changed, [k for k in base if k not in env]

    def _same_base(self, other: Mapping[str, str]) -> bool:
        """Whether ``other`` (a run's shared base environment) equals the keeper's base:
        compared once per base object (the engine makes one anew only when its own
        environment changes)."""
        if other is self._base_seen:
            return True
        if other == self._base:
            self._base_seen = other
            return True
        return False

    # -- the socket ----------------------------------------------------------------------------

    def _send(self, msg: tuple[Any, ...]) -> None:
        if self._transport is None:
            return
        if not self._outbox:
            # Due at once, but a timer: the loop runs it after the callbacks the next turn
            # begins with, not before them as call_soon would. The runs that the store's
            # answer resumes end (``forget``) in one turn and start their successors'
            # spawns in the next: one frame for both, not two (DAG: 659 → 383 frames).
            asyncio.get_running_loop().call_later(0, self._flush)
        self._outbox.append(msg)

    def _flush(self) -> None:
        if not self._outbox or self._transport is None:
            self._outbox.clear()
            return
        data = pickle.dumps(self._outbox, pickle.HIGHEST_PROTOCOL)
        self._outbox.clear()
        self._transport.write(FRAME_LEN.pack(len(data)) + data)

    def _received(self, messages: list[tuple[Any, ...]]) -> None:
        children = self._children
        for msg in messages:
            kind = msg[0]
            if kind == "out":
                child = children.get(msg[1])
                if child is not None:
                    (child.out if msg[2] == 1 else child.err).feed(msg[3])
            elif kind == "exited":
                child = children.get(msg[1])
                if child is not None:
                    child._exit(msg[2])
            elif kind == "spawned":
                fut, want_stdin, adoptable = self._pending.pop(msg[1])
                child = KeptChild(self, msg[1], msg[2], msg[3], want_stdin)
                child.adoptable = adoptable and self._setup is not None
                children[msg[1]] = child
                if fut.cancelled():  # its spawn was cancelled while it started
                    _end(child)
                else:
                    fut.set_result(child)
            elif kind == "kept":
                if self._kept is not None and not self._kept.done():
                    self._kept.set_result([KeptRun(*k) for k in msg[1]])
            elif kind == "refused":
                if self._kept is not None and not self._kept.done():
                    self._kept.set_exception(KeeperLost(msg[1]))
            elif kind == "failed":
                fut, _, _ = self._pending.pop(msg[1])
                _, _, errno, message, filename = msg
                exc: Exception = OSError(errno, message, filename) if errno else ValueError(message)
                if not fut.cancelled():
                    fut.set_exception(exc)
            elif kind == "withdrawn":
                fut, _, _ = self._pending.pop(msg[1])
                if not fut.cancelled():
                    fut.set_exception(NotStarted("no slot came free in time"))

    def _gone(self) -> None:
        self._transport = None
        self._link = None  # the next spawn starts a new keeper
        if not self._stopping and self._popen is not None:
            popen, self._popen = self._popen, None
            self._reaping = asyncio.ensure_future(asyncio.to_thread(popen.wait))
        self._outbox.clear()
        if self._kept is not None and not self._kept.done():
            self._kept.set_exception(KeeperLost("the keeper closed the connection"))
        for fut, _, _ in self._pending.values():
            if not fut.done():
                fut.set_exception(KeeperLost("the keeper process that starts agents died"))
        self._pending.clear()
        children = list(self._children.values())
        self._children.clear()
        for child in children:
            child._lose()
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)

    async def close(self) -> None:
        """Stop the keeper (the engine has ended every run) and reap it."""
        if self._link is not None and not self._link.done():
            with contextlib.suppress(Exception):
                await self._link
        if self._reaping is not None:  # a keeper that died before
            await self._reaping
            self._reaping = None
        if self._attached and self._transport is not None:
            self._stopping = True
            self._send(("stop",))
            self._flush()
            self._transport.write_eof()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CLOSE_WAIT):
                    if self._closed is not None:
                        await self._closed
            return
        if self._transport is None or self._popen is None:
            return
        self._stopping = True
        self._send(("stop",))
        self._flush()
        self._transport.write_eof()
        popen, self._popen = self._popen, None
        try:
            async with asyncio.timeout(CLOSE_WAIT):
                if self._closed is not None:
                    await self._closed
                await asyncio.to_thread(popen.wait)
        except TimeoutError:  # a keeper that does not go when told: it must not stay
            popen.kill()
            await asyncio.to_thread(popen.wait)


def _abandon(fut: asyncio.Future[KeptChild]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        _end(fut.result())


def _end(child: KeptChild) -> None:
    """A child nobody will follow (its spawn was cancelled): killed, its pipes let go."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.close_pipes()
