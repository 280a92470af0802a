"""The keeper: one small process per engine that starts the engine's agents, reads their pipes
and reaps them, so that none of this runs under the engine's GIL.

Run as ``python -I -S keeper.py FD`` (stdlib only: it is up in ~30 ms), FD being its end of a
socketpair with the engine (tui.procs.keeper_client). Both ways the socket carries frames: a
4-byte big-endian length, then a pickled list of messages — everything one side had to say in
one turn of its loop, so a hundred exits that arrive together cost the engine one read.

engine → keeper:
  ("base", env)  first: the environment spawns' env_set / env_unset are relative to
  ("setup", engine_id, listen_path, spill_dir, results_path, wait)  where a keeper whose
                   engine died waits for the next one (see below)
  ("spawn", key, argv, env_set, env_unset, cwd, executable, want_stdin, run_id, adoptable)
  ("stdin", key, bytes | None)  None: close it
  ("read", key, stream, n)  the engine took n bytes of that stream
  ("ack", key, stream, offset)  the engine has committed that stream's lines up to there
  ("forget", key)  done with it: its group killed if it still runs, its pipes closed,
                   nothing more reported (the engine says so once the run's end is stored)
  ("stop",)  the engine stops: its EOF is not a crash
keeper → engine:
  ("spawned", key, pid, start_time) | ("failed", key, errno, message, filename)
  ("out", key, stream, bytes)  b"": that stream's EOF
  ("exited", key, code)  the leader's exit, as ``Child.wait`` means it

``exited`` is sent when the leader is reaped (a background job may hold the pipes for ever; the
engine ends the group, then the pipes reach EOF). A stream is not read further while more than
WINDOW bytes of it are in flight (sent, not yet taken by the engine): a slow consumer makes the
agent wait on its pipe, as when the engine read the pipe itself.

Popen runs on a few threads: with vfork the
parent waits until the child has exec'd (ms on a busy machine) with the GIL released, so starts
overlap; the loop itself never waits for one.

Every byte read from an agent is kept until the engine acknowledges it as stored (past
MEMORY_CAP bytes of one stream, in a file in ``spill_dir``), and an agent is kept, exit status
and all, until the engine says ``forget``.

When the engine's end closes without a ``stop`` (the engine died), the keeper kills the groups
of the agents that cannot be adopted (their pid, hence their group, is still theirs: it has not
reaped them) and, if any adoptable one is left, keeps running them: it reads their pipes, reaps
them, and listens at ``listen_path`` (a Unix socket in the user's 0700 runtime directory) for
the next engine of the database, checking its uid (SO_PEERCRED):

  engine → keeper: ("adopt", engine_id)  refused (closed) unless it names the dead engine
  keeper → engine: ("kept", [(key, run_id, pid, start_time, exit code | None), ...])
  engine → keeper: ("claim", key, out_offset, err_offset) | ("forget", key), one per agent

then resends each claimed agent's output from those offsets (what the store has), its EOFs and
exit, and goes on as that engine's keeper for them. Once every agent is done and no engine is
there, or ``wait`` seconds after the engine died with none come, it writes what it holds (exit
statuses, output not acknowledged) to ``results_path`` (JSON lines, see ``_write_results``),
kills what still runs and exits; recovery reads that file (tui.engine.adoption).
"""

from __future__ import annotations

import base64
import collections
import contextlib
import json
import os
import pickle
import queue
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

READ_CHUNK = 256 * 1024
WINDOW = 1 << 20  # bytes of one stream in flight before the keeper stops reading it
MEMORY_CAP = 4 << 20  # bytes of one stream kept in memory before they go to a spill file
SPAWN_THREADS = 4
_LEN = struct.Struct(">I")
_CRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class _Kept:
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


class _Agent:
    __slots__ = (
        "adoptable",
        "close_in",
        "code",
        "fds",
        "heard",
        "held",
        "kept",
        "key",
        "paused",
        "pgid",
        "pid",
        "run_id",
        "start_time",
        "stdin_buf",
        "stdin_fd",
    )

    def __init__(
        self, key: int, pid: int, out: int, err: int, inw: int, run_id: int, adoptable: bool
    ) -> None:
        self.key = key
        self.pid = pid  # 0 once reaped
        self.pgid = pid  # its group, the leader reaped or not
        self.start_time = 0
        self.code: int | None = None  # the exit code, once reaped
        self.run_id = run_id
        self.adoptable = adoptable
        self.fds = {out: 1, err: 2}  # open read ends → stream
        self.held = {1: 0, 2: 0}  # bytes sent, not yet taken by the engine
        # An engine takes this agent's events: its own, or one that claimed it. Between an
        # adopting engine's hello and its claim, output goes to `kept` only: the claim resends
        # it from the stored offsets, so an event sent meanwhile would reach the engine twice.
        self.heard = True
        self.kept: dict[int, _Kept] = {}  # stream → bytes not acknowledged (adoptable only)
        self.paused: set[int] = set()
        self.stdin_fd = inw
        self.stdin_buf = bytearray()
        self.close_in = False

    @property
    def done(self) -> bool:
        return self.pid == 0 and not self.fds


class _Started:
    """A start done on a spawn thread, for the loop to take over."""

    __slots__ = ("adoptable", "error", "fds", "key", "pid", "run_id")

    def __init__(self, key: int, fds: tuple[int, int, int], run_id: int, adoptable: bool) -> None:
        self.key = key
        self.fds = fds  # stdout, stderr read ends; stdin write end (-1: none)
        self.run_id = run_id
        self.adoptable = adoptable
        self.pid = 0
        self.error: BaseException | None = None


class Keeper:
    def __init__(self, sock: socket.socket) -> None:
        self.sock: socket.socket | None = sock  # None: no engine
        self.sel = selectors.DefaultSelector()
        self.agents: dict[int, _Agent] = {}  # by key
        self.living: dict[int, _Agent] = {}  # pidfd → agent not reaped yet
        self.pipes: dict[int, tuple[_Agent, int]] = {}  # read end → its agent and stream
        self.stdins: dict[int, _Agent] = {}  # stdin write end → its agent
        self.outbox: list[tuple[Any, ...]] = []
        self.inbuf = bytearray()
        self.stopping = False
        self.finished = False
        # Set by "setup": without it an engine's death ends every agent, as it always did.
        self.engine_id = ""
        self.listen_path: str | None = None
        self.spill_dir: str | None = None
        self.results_path: str | None = None
        self.wait = 0.0
        self.orphaned = False  # its first engine died: it exits once its agents are handed on
        self.deadline = 0.0  # monotonic: when a keeper without engine gives up waiting
        self.listener: socket.socket | None = None
        self.hellos: dict[socket.socket, bytearray] = {}
        self.base_env = dict(os.environb)
        self.requests: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self.spawners = [
            threading.Thread(target=self._spawner, name="keeper-spawn", daemon=True)
            for _ in range(SPAWN_THREADS)
        ]
        for t in self.spawners:
            t.start()
        self.started: collections.deque[_Started] = collections.deque()
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.sel.register(sock, selectors.EVENT_READ, self._from_engine)
        self.sel.register(self.wake_r, selectors.EVENT_READ, self._spawned)

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> None:
        while not self.finished:
            timeout = None
            if self.sock is None:
                timeout = max(0.0, self.deadline - time.monotonic())
            for sk, _ in self.sel.select(timeout):
                sk.data(sk.fileobj)
                if self.finished:
                    break
            self._send()
            if self.orphaned and not self.finished:
                self._check_done()
        self._send()

    def _send(self) -> None:
        if not self.outbox:
            return
        if self.sock is None:  # nobody to tell: what matters is kept
            self.outbox.clear()
            return
        data = pickle.dumps(self.outbox, pickle.HIGHEST_PROTOCOL)
        self.outbox.clear()
        # OSError: the engine is gone; its EOF is handled by the read side.
        with contextlib.suppress(OSError):
            self.sock.sendall(_LEN.pack(len(data)) + data)

    # -- from the engine ---------------------------------------------------------------------

    def _from_engine(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(1 << 20)
        except OSError:
            data = b""
        if not data:
            self._engine_gone()
            return
        buf = self.inbuf
        buf += data
        start = 0
        while len(buf) - start >= 4:
            (size,) = _LEN.unpack_from(buf, start)
            if len(buf) - start - 4 < size:
                break
            messages = pickle.loads(memoryview(buf)[start + 4 : start + 4 + size])
            start += 4 + size
            for msg in messages:
                getattr(self, "_on_" + msg[0])(*msg[1:])
        del buf[:start]

    def _on_base(self, env: dict[str, str]) -> None:
        enc = os.fsencode
        self.base_env = {enc(k): enc(v) for k, v in env.items()}

    def _on_setup(
        self, engine_id: str, listen_path: str, spill_dir: str, results_path: str, wait: float
    ) -> None:
        self.engine_id = engine_id
        self.listen_path = listen_path
        self.spill_dir = spill_dir
        self.results_path = results_path
        self.wait = wait

    def _on_spawn(
        self,
        key: int,
        argv: list[str],
        env_set: dict[str, str],
        env_unset: list[str],
        cwd: str | None,
        executable: str | None,
        want_stdin: bool,
        run_id: int = 0,
        adoptable: bool = False,
    ) -> None:
        enc = os.fsencode
        env = self.base_env.copy()
        env.update((enc(k), enc(v)) for k, v in env_set.items())
        for name in env_unset:
            env.pop(enc(name), None)
        adoptable = adoptable and self.results_path is not None
        self.requests.put((key, argv, env, cwd, executable, want_stdin, run_id, adoptable))

    def _spawner(self) -> None:
        while (request := self.requests.get()) is not None:
            self._start(*request)

    def _start(
        self,
        key: int,
        argv: list[str],
        env: dict[bytes, bytes],
        cwd: str | None,
        executable: str | None,
        want_stdin: bool,
        run_id: int,
        adoptable: bool,
    ) -> None:
        """On a spawn thread: pipes and Popen; the result goes to the loop."""
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        in_r = in_w = -1
        if want_stdin:
            in_r, in_w = os.pipe2(os.O_CLOEXEC)
        started = _Started(key, (out_r, err_r, in_w), run_id, adoptable)
        try:
            popen = subprocess.Popen(
                argv,
                executable=executable,
                cwd=cwd,
                env=env,
                stdin=in_r if in_r >= 0 else subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                start_new_session=True,
            )
        except BaseException as e:
            started.error = e
            for fd in (out_r, err_r, in_w):
                if fd >= 0:
                    os.close(fd)
        else:
            started.pid = popen.pid
            popen.returncode = 0  # reaped by the loop, never by Popen
        finally:
            for fd in (out_w, err_w, in_r):
                if fd >= 0:
                    os.close(fd)
        self.started.append(started)
        with contextlib.suppress(BlockingIOError):
            os.write(self.wake_w, b"\0")

    def _spawned(self, fd: int) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(fd, 4096):
                pass
        while self.started:
            self._take(self.started.popleft())

    def _take(self, started: _Started) -> None:
        key = started.key
        e = started.error
        if e is not None:
            if isinstance(e, OSError):
                self.outbox.append(("failed", key, e.errno or 0, e.strerror or str(e), e.filename))
            else:
                self.outbox.append(("failed", key, 0, f"{type(e).__name__}: {e}", None))
            return
        out_r, err_r, in_w = started.fds
        pid = started.pid
        agent = _Agent(key, pid, out_r, err_r, in_w, started.run_id, started.adoptable)
        if agent.adoptable:
            agent.kept = {1: _Kept(self.spill_dir), 2: _Kept(self.spill_dir)}
        self.agents[key] = agent
        # Popen returned after the exec: /proc shows the agent itself.
        agent.start_time = _start_time(pid)
        self.outbox.append(("spawned", key, pid, agent.start_time))
        for fd, stream in ((out_r, 1), (err_r, 2)):
            os.set_blocking(fd, False)
            self.pipes[fd] = (agent, stream)
            self.sel.register(fd, selectors.EVENT_READ, self._readable)
        if in_w >= 0:
            os.set_blocking(in_w, False)
            self.stdins[in_w] = agent
        pidfd = os.pidfd_open(pid)  # only this loop reaps it: it is there until then
        self.living[pidfd] = agent
        self.sel.register(pidfd, selectors.EVENT_READ, self._reap)
        if self.stopping or (self.sock is None and not agent.adoptable):
            self._kill(agent)

    def _on_stdin(self, key: int, data: bytes | None) -> None:
        agent = self.agents.get(key)
        if agent is None or agent.stdin_fd < 0:
            return
        if data is None:
            agent.close_in = True
        else:
            agent.stdin_buf += data
        self._write_stdin(agent)

    def _on_read(self, key: int, stream: int, n: int) -> None:
        agent = self.agents.get(key)
        if agent is None:
            return
        agent.held[stream] -= n
        if stream in agent.paused and agent.held[stream] < WINDOW:
            self._resume(agent, stream)

    def _resume(self, agent: _Agent, stream: int) -> None:
        agent.paused.discard(stream)
        for fd, s in agent.fds.items():
            if s == stream:
                self.sel.register(fd, selectors.EVENT_READ, self._readable)

    def _on_ack(self, key: int, stream: int, offset: int) -> None:
        agent = self.agents.get(key)
        if agent is not None and agent.kept:
            agent.kept[stream].ack(offset)

    def _on_forget(self, key: int) -> None:
        agent = self.agents.pop(key, None)
        if agent is None:
            return
        if agent.pid:  # the engine is done with it: it must not run on unwatched
            self._kill(agent)
        for fd in list(agent.fds):
            self._close_out(agent, fd)
        self._close_stdin(agent)
        for kept in agent.kept.values():
            kept.close()

    def _on_stop(self) -> None:
        self.stopping = True

    def _on_claim(self, key: int, out_offset: int, err_offset: int) -> None:
        """The engine that adopts this agent has its lines up to these offsets: the rest,
        then its EOFs and exit as they are known."""
        agent = self.agents.get(key)
        if agent is None:
            return
        agent.heard = True
        for stream, offset in ((1, out_offset), (2, err_offset)):
            data = agent.kept[stream].since(offset)
            for at in range(0, len(data), READ_CHUNK):
                self.outbox.append(("out", key, stream, data[at : at + READ_CHUNK]))
            agent.held[stream] = len(data)
            if stream not in agent.fds.values():
                self.outbox.append(("out", key, stream, b""))
            elif agent.held[stream] >= WINDOW:
                self._pause(agent, stream)
        if agent.code is not None:
            self.outbox.append(("exited", key, agent.code))

    def _engine_gone(self) -> None:
        assert self.sock is not None
        self.sel.unregister(self.sock)
        self.sock.close()
        self.sock = None
        self.inbuf.clear()
        if self.stopping:
            self.finished = True
            return
        # The engine died: what it started must not run on unwatched (the next engine would
        # run those tasks again beside them), unless the next engine can take it over.
        # Starts under way end first.
        for _ in self.spawners:
            self.requests.put(None)
        for t in self.spawners:
            t.join()
        while self.started:
            self._take(self.started.popleft())
        for agent in list(self.agents.values()):
            if not agent.adoptable:
                self._on_forget(agent.key)
        if not self.agents or self.results_path is None:
            self._end_all()
            return
        self.orphaned = True
        for agent in self.agents.values():
            agent.heard = False  # until the next engine claims it
        self.deadline = time.monotonic() + self.wait
        # The engine's stderr (a terminal, or a pipe its caller reads to the end) is not ours
        # to hold open now.
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            os.close(null)
        for agent in self.agents.values():  # nobody takes their output now: read on
            agent.held = {1: 0, 2: 0}
            for stream in list(agent.paused):
                self._resume(agent, stream)
        self._listen()

    def _end_all(self) -> None:
        """Kill every group not reaped yet, reap them, and finish."""
        for agent in self.living.values():
            self._kill(agent)
        for agent in self.living.values():  # reaped here: a container's PID 1 may not
            with contextlib.suppress(ChildProcessError):
                os.waitpid(agent.pid, 0)
        self.finished = True

    @staticmethod
    def _kill(agent: _Agent) -> None:
        with contextlib.suppress(OSError):
            os.killpg(agent.pid, signal.SIGKILL)

    # -- without an engine -------------------------------------------------------------------

    def _listen(self) -> None:
        path = self.listen_path
        if path is None:
            return
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
        self.sel.register(listener, selectors.EVENT_READ, self._accept)

    def _unlisten(self) -> None:
        if self.listener is not None:
            self.sel.unregister(self.listener)
            self.listener.close()
            self.listener = None
            if self.listen_path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self.listen_path)
        for conn in list(self.hellos):
            self._drop_hello(conn)

    def _accept(self, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        _, uid, _ = _CRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size))
        if uid != os.getuid():  # another user's process: never ours to talk to
            conn.close()
            return
        conn.setblocking(False)
        self.hellos[conn] = bytearray()
        self.sel.register(conn, selectors.EVENT_READ, self._hello)

    def _drop_hello(self, conn: socket.socket) -> None:
        self.hellos.pop(conn, None)
        self.sel.unregister(conn)
        conn.close()

    def _hello(self, conn: socket.socket) -> None:
        buf = self.hellos[conn]
        try:
            data = conn.recv(65536)
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
        (size,) = _LEN.unpack_from(buf)
        if size > 65536:
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
                conn.sendall(_LEN.pack(len(reply)) + reply)
            self._drop_hello(conn)
            return
        rest = bytes(buf[4 + size :])
        self.hellos.pop(conn)
        self.sel.unregister(conn)
        self._unlisten()
        conn.setblocking(True)
        self.sock = conn
        self.sel.register(conn, selectors.EVENT_READ, self._from_engine)
        kept = [(a.key, a.run_id, a.pgid, a.start_time, a.code) for a in self.agents.values()]
        self.outbox.append(("kept", kept))
        if rest:  # its claims came with the hello
            self.inbuf += rest

    def _check_done(self) -> None:
        """Orphaned: finish once nothing is left to hand on, or once nobody came for it."""
        if self.sock is not None:
            if not self.agents:
                self.finished = True
            return
        if not self.agents:
            self._unlisten()
            self._end_all()
        elif all(a.done for a in self.agents.values()) or time.monotonic() >= self.deadline:
            self._write_results()
            self._unlisten()
            self._end_all()

    def _write_results(self) -> None:
        """What the next engine needs to finish these runs, one JSON line each: the run, the
        exit code (None: still running at the deadline, killed), and each stream's bytes
        not acknowledged, from their offset. Written whole, then renamed into place."""
        assert self.results_path is not None
        for agent in self.agents.values():  # what it left behind ends too, as the engine's would
            with contextlib.suppress(OSError):
                os.killpg(agent.pgid, signal.SIGKILL)
        lines = []
        for agent in self.agents.values():
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

    # -- agents ------------------------------------------------------------------------------

    def _readable(self, fd: int) -> None:
        owner = self.pipes.get(fd)
        if owner is None:  # closed earlier in this turn
            return
        agent, stream = owner
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if agent.heard:
            self.outbox.append(("out", agent.key, stream, data))
        if not data:
            self._close_out(agent, fd)
            return
        if agent.kept:
            agent.kept[stream].add(data)
        if self.sock is None:
            return
        agent.held[stream] += len(data)
        if agent.held[stream] >= WINDOW:
            self._pause(agent, stream)

    def _pause(self, agent: _Agent, stream: int) -> None:
        if stream in agent.paused:
            return
        agent.paused.add(stream)
        for fd, s in agent.fds.items():
            if s == stream:
                self.sel.unregister(fd)

    def _close_out(self, agent: _Agent, fd: int) -> None:
        stream = agent.fds.pop(fd)
        del self.pipes[fd]
        if stream not in agent.paused:
            self.sel.unregister(fd)
        agent.paused.discard(stream)
        os.close(fd)

    def _write_stdin(self, agent: _Agent) -> None:
        if agent.stdin_buf:
            try:
                n = os.write(agent.stdin_fd, agent.stdin_buf)
            except BlockingIOError:
                n = 0
            except OSError:  # EPIPE: the agent closed its stdin; what is left goes nowhere
                agent.stdin_buf.clear()
                agent.close_in = True
                n = 0
            del agent.stdin_buf[:n]
        registered = agent.stdin_fd in self.sel.get_map()
        if agent.stdin_buf:
            if not registered:
                self.sel.register(agent.stdin_fd, selectors.EVENT_WRITE, self._writable)
            return
        if registered:
            self.sel.unregister(agent.stdin_fd)
        if agent.close_in:
            self._close_stdin(agent)

    def _writable(self, fd: int) -> None:
        agent = self.stdins.get(fd)
        if agent is not None:
            self._write_stdin(agent)

    def _close_stdin(self, agent: _Agent) -> None:
        if agent.stdin_fd >= 0:
            if agent.stdin_fd in self.sel.get_map():
                self.sel.unregister(agent.stdin_fd)
            del self.stdins[agent.stdin_fd]
            os.close(agent.stdin_fd)
            agent.stdin_fd = -1

    def _reap(self, pidfd: int) -> None:
        agent = self.living.pop(pidfd)
        self.sel.unregister(pidfd)
        os.close(pidfd)
        try:
            _, status = os.waitpid(agent.pid, 0)
            code = os.waitstatus_to_exitcode(status)
        except ChildProcessError:  # cannot happen: nobody else reaps it
            code = 255
        agent.pid = 0
        agent.code = code
        if self.agents.get(agent.key) is agent:
            if agent.heard:
                self.outbox.append(("exited", agent.key, code))
            if agent.stdin_fd >= 0 and not agent.fds:  # a stdin left open goes nowhere now
                self._close_stdin(agent)


def _start_time(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
        return int(raw[raw.rfind(b")") + 1 :].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def main() -> None:
    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)  # the agents must not hold the engine's socket open
    sock = socket.socket(fileno=fd)
    sock.setblocking(True)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal is not the engine's end
    Keeper(sock).run()


if __name__ == "__main__":
    main()
