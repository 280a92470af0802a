"""An agent the keeper (tui.procs.keeper) started, as the engine sees it: a :class:`Child`
whose stdout and stderr are fed by the keeper's ``out`` messages, whose stdin writes go to
the keeper, and which tells the keeper what the engine has stored (``ack``) and when it is
done with the agent (``release``). The link itself — frames, spawns, adoption — is
tui.procs.keeper_client's."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal
from typing import TYPE_CHECKING

from tui.procs.process import Child, ProcIdentity, identity_alive

if TYPE_CHECKING:
    from tui.procs.keeper_client import Keeper

PIPE_SIZE = 65536  # Linux's default pipe capacity: the most one read of an agent's pipe gave


class _FedReader:
    """A stream of a kept child, fed by the keeper's ``out`` messages."""

    def __init__(self, keeper: Keeper, key: int, stream: int, child: KeptChild) -> None:
        self._keeper = keeper
        self._key = key
        self._stream = stream
        self._child = child
        self._chunks: collections.deque[bytes] = collections.deque()
        self._eof = False  # the keeper said so
        self._closed = False
        self._waiter: asyncio.Future[None] | None = None

    @property
    def at_eof(self) -> bool:
        return self._eof

    @property
    def queued(self) -> int:
        """Bytes received, not yet read."""
        return sum(map(len, self._chunks))

    def feed(self, data: bytes) -> None:
        if not data:
            self._eof = True
        if self._closed:
            return
        if data:
            self._chunks.append(data)
            self._child._hear()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def read(self, n: int) -> bytes:
        while not self._chunks:
            if self._eof or self._closed:
                return b""
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        chunks = self._chunks
        data = chunks.popleft()
        limit = min(n, PIPE_SIZE)
        if chunks and len(data) < limit:
            # What came meanwhile as one read, up to what a filled pipe would have given: the
            # keeper forwards each of its small reads as it makes them (and the engine sizes
            # its batches of lines by a pipe's reads).
            parts = [data]
            size = len(data)
            while chunks and size + len(chunks[0]) <= limit:
                part = chunks.popleft()
                parts.append(part)
                size += len(part)
            data = b"".join(parts)
        if len(data) > n:
            data, rest = data[:n], data[n:]
            chunks.appendleft(rest)
        self._keeper._send(("read", self._key, self._stream, len(data)))
        return data

    def close(self) -> None:
        self._closed = True
        self._chunks.clear()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class _KeptStdin:
    """A kept child's stdin: writes go to the keeper, which writes them to the pipe."""

    def __init__(self, keeper: Keeper, key: int) -> None:
        self._keeper = keeper
        self._key = key
        self._closed = False

    def write(self, data: bytes) -> None:
        if self._closed:
            raise BrokenPipeError("stdin is closed")
        self._keeper._send(("stdin", self._key, bytes(data)))

    async def drain(self) -> None:
        if self._keeper._transport is None:
            raise ConnectionResetError("the keeper is gone")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._keeper._send(("stdin", self._key, None))

    def is_closing(self) -> bool:
        return self._closed


class KeptChild(Child):
    """An agent the keeper started: its pipes and exit arrive as the keeper's messages."""

    def __init__(self, keeper: Keeper, key: int, pid: int, start: int, stdin: bool) -> None:
        self.key = key
        self._keeper = keeper
        self._start = start
        self.lost = False  # the keeper died while this child ran
        self.adoptable = False  # it outlives a dead engine, for the next one (Keeper.setup)
        self._released = False
        self._heard: asyncio.Future[None] | None = None  # heard() waits on it
        self.out = _FedReader(keeper, key, 1, self)
        self.err = _FedReader(keeper, key, 2, self)
        super().__init__(pid, _KeptStdin(keeper, key) if stdin else None, self.out, self.err)

    async def heard(self) -> None:
        # A quiet command (most of a DAG's) exits before it prints: its follower then reads
        # its streams itself, and no reader task is made for either (~20 us a run).
        if self.returncode is not None or self.out._chunks or self.err._chunks:
            return
        self._heard = asyncio.get_running_loop().create_future()
        try:
            await self._heard
        finally:
            self._heard = None

    def _hear(self) -> None:
        if self._heard is not None and not self._heard.done():
            self._heard.set_result(None)

    def _exit(self, code: int) -> None:
        super()._exit(code)
        self._hear()

    def identity(self) -> ProcIdentity:
        return ProcIdentity(pid=self.pid, pgid=self.pid, start_time=self._start)

    @property
    def kept_on(self) -> bool:
        """Whether its keeper keeps it, exit code and output not acknowledged, for the next
        engine if this one dies before releasing it: an adoptable child of this engine's own
        keeper (one adopted from a dead engine's keeper is not counted on a second time)."""
        return self.adoptable and not self._keeper._attached

    def close_pipes(self) -> None:
        done = self.returncode is not None and self.out.at_eof and self.err.at_eof
        super().close_pipes()
        if self._keeper._children.pop(self.key, None) is not None and not done:
            self.release()
        elif not self.adoptable:
            self.release()  # nothing of it is kept for a next engine

    def ack(self, stream: int, offset: int) -> None:
        """The engine has committed this stream's lines up to ``offset``."""
        if not self._released:
            self._keeper._send(("ack", self.key, stream, offset))

    def release(self) -> None:
        """The engine is done with it (its end stored): the keeper forgets it."""
        if not self._released:
            self._released = True
            self._keeper._send(("forget", self.key))

    def _lose(self) -> None:
        """The keeper died: end this child's group (it is no longer anyone's child to watch)."""
        if self.returncode is None:
            self.lost = True
            if identity_alive(self.identity()):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
            self._exit(-signal.SIGKILL)
        self.out.feed(b"")
        self.err.feed(b"")
        if self.stdin is not None:
            self.stdin.close()
