"""The afterlife of a keeper (tui.procs.keeper) whose engine died: it keeps that engine's
adoptable agents running, their output, and waits for the next engine of the database.

Set up by the engine ("setup", see keeper.py) before it dies: every byte read from an adoptable
agent is kept until the engine acknowledges it as stored (past MEMORY_CAP bytes of one stream,
in an unlinked file in ``spill_dir``). When the engine's end closes without a ``stop``, the
keeper reads their pipes on, reaps them, and listens at ``listen_path`` (a Unix socket in the
user's 0700 runtime directory) for the next engine of the database, checking its uid
(SO_PEERCRED):

  engine → keeper: ("adopt", engine_id)  refused (closed) unless it names the dead engine
  keeper → engine: ("kept", [(key, run_id, pid, start_time, exit code | None), ...])
  engine → keeper: ("claim", key, out_offset, err_offset) | ("forget", key), one per agent

then resends each claimed agent's output from those offsets (what the store has), its EOFs and
exit, and goes on as that engine's keeper for them. Once every agent is done and no engine is
there, or ``wait`` seconds after the engine died with none come, it writes what it holds (exit
statuses, output not acknowledged) to ``results_path`` (JSON lines, see
:meth:`Afterlife.write_results`), kills what still runs and exits; recovery reads that file
(tui.engine.adoption, tui.procs.kept_runs).

Imported by keeper.py, which runs as ``python -I -S``: the standard library only.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import socket
import struct
import time

# Not typing's: importing typing is ~2 ms of every keeper's start (mypy takes the name as it).
TYPE_CHECKING = False

if TYPE_CHECKING:  # never at run time: keeper.py runs as __main__ and imports this module
    from tui.procs.keeper import Keeper

MEMORY_CAP = 4 << 20  # bytes of one stream kept in memory before they go to a spill file
FRAME_LEN = struct.Struct(
    ">I"
)  # the length before each frame, both ways (keeper.py, keeper_client)
HELLO_MAX = 65536  # bytes of an adopting engine's first frame
CRED = struct.Struct("3i")  # struct ucred (SO_PEERCRED): pid, uid, gid


class Kept:
    """One stream's bytes the engine has not acknowledged as stored: offsets [start, end) of
    the stream, the oldest in a spill file (unlinked: it goes with the keeper), the rest in
    memory."""

    __slots__ = ("end", "fd", "file_len", "file_start", "mem", "spill_dir", "start")

    def __init__(self, spill_dir: str | None) -> None:
        self.spill_dir = spill_dir
        self.start = self.end = 0
        self.mem = bytearray()
        self.fd = -1
        self.file_start = self.file_len = 0

    def add(self, data: bytes) -> None:
        self.mem += data
        self.end += len(data)
        if len(self.mem) > MEMORY_CAP and self.spill_dir is not None:
            self._spill()

    def _spill(self) -> None:
        try:
            if self.fd < 0:
                import tempfile  # only once a stream outgrows memory: ~3 ms at the keeper's start

                fd, path = tempfile.mkstemp(prefix="keeper-spill-", dir=self.spill_dir)
                os.unlink(path)
                self.fd = fd
                self.file_start, self.file_len = self.end - len(self.mem), 0
            with memoryview(self.mem) as whole:  # released before mem is cleared
                view = whole
                while view:
                    n = os.pwrite(self.fd, view, self.file_len)
                    self.file_len += n
                    view = view[n:]
                view.release()
        except OSError:  # no room: it stays in memory
            return
        self.mem.clear()

    def ack(self, offset: int) -> None:
        if offset <= self.start:
            return
        self.start = min(offset, self.end)
        mem_start = self.end - len(self.mem)
        if self.fd >= 0 and self.start >= mem_start:
            os.close(self.fd)
            self.fd = -1
            self.file_len = 0
        if self.start > mem_start:
            del self.mem[: self.start - mem_start]

    def since(self, offset: int) -> bytes:
        """The bytes from ``offset`` (no earlier than what is kept) to the end."""
        offset = max(offset, self.start)
        parts = []
        mem_start = self.end - len(self.mem)
        if self.fd >= 0 and offset < mem_start:
            parts.append(os.pread(self.fd, mem_start - offset, offset - self.file_start))
        parts.append(bytes(self.mem[max(0, offset - mem_start) :]))
        return b"".join(parts)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.mem = bytearray()


class Afterlife:
    """Where a keeper's adoptable agents go once its engine died (the engine's "setup"): the
    socket the next engine finds it at, and the results file left when none came."""

    def __init__(
        self,
        keeper: Keeper,
        engine_id: str,
        listen_path: str,
        spill_dir: str,
        results_path: str,
        wait: float,
    ) -> None:
        self.keeper = keeper
        self.engine_id = engine_id
        self.listen_path = listen_path
        self.spill_dir = spill_dir
        self.results_path = results_path
        self.wait = wait
        self.deadline = 0.0  # monotonic: when a keeper without engine gives up waiting
        self.listener: socket.socket | None = None
        self.hellos: dict[socket.socket, bytearray] = {}

    def kept(self) -> dict[int, Kept]:
        """An adoptable agent's streams, kept until acknowledged."""
        return {1: Kept(self.spill_dir), 2: Kept(self.spill_dir)}

    def begin(self) -> None:
        """The engine died leaving adoptable agents: read them on and wait for the next one."""
        keeper = self.keeper
        keeper.orphaned = True
        for agent in keeper.agents.values():
            agent.heard = False  # until the next engine claims it
        self.deadline = time.monotonic() + self.wait
        # The engine's stderr (a terminal, or a pipe its caller reads to the end) is not ours
        # to hold open now.
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            os.close(null)
        for agent in keeper.agents.values():  # nobody takes their output now: read on
            agent.held = {1: 0, 2: 0}
            for stream in list(agent.paused):
                keeper.resume(agent, stream)
        self._listen()

    def time_left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def check_done(self) -> None:
        """Finish once nothing is left to hand on, or once nobody came for it."""
        keeper = self.keeper
        if keeper.sock is not None:
            if not keeper.agents:
                keeper.finished = True
            return
        if not keeper.agents:
            self._unlisten()
            keeper.end_all()
        elif all(a.done for a in keeper.agents.values()) or time.monotonic() >= self.deadline:
            self.write_results()
            self._unlisten()
            keeper.end_all()

    def write_results(self) -> None:
        """What the next engine needs to finish these runs, one JSON line each: the run, the
        exit code (None: still running at the deadline, killed), and each stream's bytes
        not acknowledged, from their offset. Written whole, then renamed into place."""
        import base64  # here, not at the keeper's start: only a keeper left alone writes this
        import json

        agents = self.keeper.agents.values()
        for agent in agents:  # what it left behind ends too, as the engine's would
            with contextlib.suppress(OSError):
                os.killpg(agent.pgid, signal.SIGKILL)
        lines = []
        for agent in agents:
            code = None if agent.pid else agent.code  # not reaped: did not end by itself
            streams = {
                str(s): [k.start, base64.b64encode(k.since(k.start)).decode()]
                for s, k in agent.kept.items()
            }
            record = {
                "engine_id": self.engine_id,
                "run_id": agent.run_id,
                "pid": agent.pgid,
                "code": code,
                "streams": streams,
            }
            lines.append(json.dumps(record) + "\n")
        tmp = f"{self.results_path}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.writelines(lines)
            os.replace(tmp, self.results_path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    # -- the socket the next engine comes to -------------------------------------------------

    def _listen(self) -> None:
        path = self.listen_path
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            listener.bind(path)
            os.chmod(path, 0o600)
            listener.listen(8)
        except OSError:  # no socket: the results file is left when the agents are done
            listener.close()
            return
        listener.setblocking(False)
        self.listener = listener
        self.keeper.watch(listener.fileno(), self._accept, listener)

    def _unlisten(self) -> None:
        if self.listener is not None:
            self.keeper.unwatch(self.listener.fileno())
            self.listener.close()
            self.listener = None
            with contextlib.suppress(OSError):
                os.unlink(self.listen_path)
        for conn in list(self.hellos):
            self._drop_hello(conn)

    def _accept(self, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        _, uid, _ = CRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, CRED.size))
        if uid != os.getuid():  # another user's process: never ours to talk to
            conn.close()
            return
        conn.setblocking(False)
        self.hellos[conn] = bytearray()
        self.keeper.watch(conn.fileno(), self._hello, conn)

    def _drop_hello(self, conn: socket.socket) -> None:
        self.hellos.pop(conn, None)
        self.keeper.unwatch(conn.fileno())
        conn.close()

    def _hello(self, conn: socket.socket) -> None:
        buf = self.hellos[conn]
        try:
            data = conn.recv(HELLO_MAX)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop_hello(conn)
            return
        buf += data
        if len(buf) < 4:
            return
        (size,) = FRAME_LEN.unpack_from(buf)
        if size > HELLO_MAX:
            self._drop_hello(conn)
            return
        if len(buf) < 4 + size:
            return
        try:
            messages = pickle.loads(buf[4 : 4 + size])
            kind, engine_id = messages[0]
        except Exception:
            self._drop_hello(conn)
            return
        if kind != "adopt" or engine_id != self.engine_id:  # not the engine it ran for
            with contextlib.suppress(OSError):
                reply = pickle.dumps([("refused", "not this keeper's engine")])
                conn.sendall(FRAME_LEN.pack(len(reply)) + reply)
            self._drop_hello(conn)
            return
        self.hellos.pop(conn)
        self.keeper.unwatch(conn.fileno())
        self._unlisten()
        self.keeper.adopted_by(conn, bytes(buf[4 + size :]))
