"""The keeper: one small process per engine that starts the engine's agents, reads their pipes
and reaps them, so that none of this runs under the engine's GIL.

Run as ``python -I -S keeper.py FD`` (stdlib only: it is up in ~30 ms), FD being its end of a
socketpair with the engine (tui.procs.keeper_client). Both ways the socket carries frames: a
4-byte big-endian length, then a pickled list of messages — everything one side had to say in
one turn of its loop, so a hundred exits that arrive together cost the engine one read.

engine → keeper:
  ("base", env)  first: the environment spawns' env_set / env_unset are relative to
  ("spawn", key, argv, env_set, env_unset, cwd, executable, want_stdin)
  ("stdin", key, bytes | None)  None: close it
  ("read", key, stream, n)  the engine took n bytes of that stream
  ("forget", key)  close its pipes, report nothing more of it (not needed once the
                   engine has seen its exit and both EOFs: the keeper forgets it then)
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

When the engine's end closes without a ``stop`` (the engine died), the keeper kills the groups
of the agents it has not reaped yet (their pid, hence their group, is still theirs) and exits.
"""

from __future__ import annotations

import collections
import contextlib
import os
import pickle
import queue
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
from typing import Any

READ_CHUNK = 256 * 1024
WINDOW = 1 << 20  # bytes of one stream in flight before the keeper stops reading it
SPAWN_THREADS = 4
_LEN = struct.Struct(">I")


class _Agent:
    __slots__ = ("close_in", "fds", "held", "key", "paused", "pid", "stdin_buf", "stdin_fd")

    def __init__(self, key: int, pid: int, out: int, err: int, inw: int) -> None:
        self.key = key
        self.pid = pid  # 0 once reaped
        self.fds = {out: 1, err: 2}  # open read ends → stream
        self.held = {1: 0, 2: 0}  # bytes sent, not yet taken by the engine
        self.paused: set[int] = set()
        self.stdin_fd = inw
        self.stdin_buf = bytearray()
        self.close_in = False


class _Started:
    """A start done on a spawn thread, for the loop to take over."""

    __slots__ = ("error", "fds", "key", "pid")

    def __init__(self, key: int, fds: tuple[int, int, int]) -> None:
        self.key = key
        self.fds = fds  # stdout, stderr read ends; stdin write end (-1: none)
        self.pid = 0
        self.error: BaseException | None = None


class Keeper:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sel = selectors.DefaultSelector()
        self.agents: dict[int, _Agent] = {}  # by key
        self.living: dict[int, _Agent] = {}  # pidfd → agent not reaped yet
        self.pipes: dict[int, tuple[_Agent, int]] = {}  # read end → its agent and stream
        self.stdins: dict[int, _Agent] = {}  # stdin write end → its agent
        self.outbox: list[tuple[Any, ...]] = []
        self.inbuf = bytearray()
        self.stopping = False
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
        while self.sock.fileno() >= 0:
            for sk, _ in self.sel.select():
                sk.data(sk.fileobj)
                if self.sock.fileno() < 0:
                    return
            self._send()

    def _send(self) -> None:
        if not self.outbox:
            return
        data = pickle.dumps(self.outbox, pickle.HIGHEST_PROTOCOL)
        self.outbox.clear()
        # OSError: the engine is gone; its EOF is handled by the read side.
        with contextlib.suppress(OSError):
            self.sock.sendall(_LEN.pack(len(data)) + data)

    # -- from the engine ---------------------------------------------------------------------

    def _from_engine(self, _sock: object) -> None:
        try:
            data = self.sock.recv(1 << 20)
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

    def _on_spawn(
        self,
        key: int,
        argv: list[str],
        env_set: dict[str, str],
        env_unset: list[str],
        cwd: str | None,
        executable: str | None,
        want_stdin: bool,
    ) -> None:
        enc = os.fsencode
        env = self.base_env.copy()
        env.update((enc(k), enc(v)) for k, v in env_set.items())
        for name in env_unset:
            env.pop(enc(name), None)
        self.requests.put((key, argv, env, cwd, executable, want_stdin))

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
    ) -> None:
        """On a spawn thread: pipes and Popen; the result goes to the loop."""
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        in_r = in_w = -1
        if want_stdin:
            in_r, in_w = os.pipe2(os.O_CLOEXEC)
        started = _Started(key, (out_r, err_r, in_w))
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
        agent = _Agent(key, pid, out_r, err_r, in_w)
        self.agents[key] = agent
        # Popen returned after the exec: /proc shows the agent itself.
        self.outbox.append(("spawned", key, pid, _start_time(pid)))
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
        if self.stopping or self.sock.fileno() < 0:
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
            agent.paused.discard(stream)
            for fd, s in agent.fds.items():
                if s == stream:
                    self.sel.register(fd, selectors.EVENT_READ, self._readable)

    def _on_forget(self, key: int) -> None:
        agent = self.agents.pop(key, None)
        if agent is None:
            return
        for fd in list(agent.fds):
            self._close_out(agent, fd)
        self._close_stdin(agent)

    def _on_stop(self) -> None:
        self.stopping = True

    def _engine_gone(self) -> None:
        self.sel.unregister(self.sock)
        self.sock.close()
        if not self.stopping:
            # The engine died: what it started must not run on unwatched (the next engine
            # would run those tasks again beside them). Starts under way end first.
            for _ in self.spawners:
                self.requests.put(None)
            for t in self.spawners:
                t.join()
            while self.started:
                self._take(self.started.popleft())
            for agent in self.living.values():
                self._kill(agent)
            for agent in self.living.values():  # reaped here: a container's PID 1 may not
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(agent.pid, 0)

    @staticmethod
    def _kill(agent: _Agent) -> None:
        with contextlib.suppress(OSError):
            os.killpg(agent.pid, signal.SIGKILL)

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
        self.outbox.append(("out", agent.key, stream, data))
        if not data:
            self._close_out(agent, fd)
            self._done(agent)
            return
        agent.held[stream] += len(data)
        if agent.held[stream] >= WINDOW:
            agent.paused.add(stream)
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
        if self.agents.get(agent.key) is agent:
            self.outbox.append(("exited", agent.key, code))
            self._done(agent)

    def _done(self, agent: _Agent) -> None:
        """Reaped and both pipes at EOF: nothing more can come, and the engine (which saw
        the same) does not send ``forget``. A stdin left open goes nowhere now."""
        if agent.pid == 0 and not agent.fds and self.agents.get(agent.key) is agent:
            del self.agents[agent.key]
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
    Keeper(sock).run()


if __name__ == "__main__":
    main()
