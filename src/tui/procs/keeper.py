"""The keeper: one small process per engine that starts the engine's agents, reads their pipes
and reaps them, so that none of this runs under the engine's GIL.

Run as ``python -I -S keeper.py FD`` (stdlib only, and the keeper_* modules beside it: it
is up in ~30 ms), FD being its end of a socketpair with the engine (tui.procs.keeper_client).
Both ways the socket carries frames: a 4-byte big-endian length, then a pickled list of
messages — everything one side had to say in one turn of its loop, so a hundred exits that
arrive together cost the engine one read.

engine → keeper:
  ("base", env)  first: the environment spawns' env_set / env_unset are relative to
  ("setup", engine_id, listen_path, spill_dir, results_path, wait)  where a keeper whose
                   engine died waits for the next one (see below)
  ("spawn", key, argv, env_set, env_unset, cwd, executable, want_stdin, run_id, adoptable,
   slots, hold)  slots > 0: a run's first agent, counted against that concurrency; hold: it
                   may wait for a slot (tui.procs.keeper_slots)
  ("drop", key)  a held start's run was cancelled: not to be started
  ("stdin", key, bytes | None)  None: close it
  ("read", key, stream, n)  the engine took n bytes of that stream
  ("ack", key, stream, offset)  the engine has committed that stream's lines up to there
  ("forget", key)  done with it: its group killed if it still runs, its pipes closed,
                   nothing more reported (the engine says so once the run's end is stored)
  ("stop",)  the engine stops: its EOF is not a crash (an agent still alive then, one the
            engine did not end, is killed)
keeper → engine:
  ("spawned", key, pid, start_time) | ("failed", key, errno, message, filename)
  | ("withdrawn", key)  a held start never started: no slot within its time, a drop, a stop
  ("out", key, stream, bytes)  b"": that stream's EOF
  ("exited", key, code)  the leader's exit, as ``Child.wait`` means it

``exited`` is sent when the leader is reaped (a background job may hold the pipes for ever; the
engine ends the group, then the pipes reach EOF). A stream is not read further while more than
WINDOW bytes of it are in flight (sent, not yet taken by the engine): a slow consumer makes the
agent wait on its pipe, as when the engine read the pipe itself.

Agents are started on a few threads (tui.procs.keeper_starts): the loop never waits for one.

An adoptable agent is kept, exit status and all, until the engine says ``forget``; when the
engine's end closes without a ``stop`` (the engine died), the keeper kills the groups of the
agents that cannot be adopted (their pid, hence their group, is still theirs: it has not reaped
them) and keeps the others for the next engine (tui.procs.keeper_afterlife).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import select
import signal
import socket
import sys

if __name__ == "__main__":
    # Run as `python -I -S keeper.py` (quick to start, deaf to the user's environment): the
    # directory holding the tui package is not on sys.path then. Appended, so the standard
    # library still comes first; nothing of tui's is imported but the keeper's own modules.
    sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tui.procs.keeper_afterlife import FRAME_LEN, Afterlife
from tui.procs.keeper_agent import Agent
from tui.procs.keeper_slots import Slots
from tui.procs.keeper_spawn import BaseEnv, proc_start_time
from tui.procs.keeper_starts import Start, Started, Starts

TYPE_CHECKING = False  # typing's costs ~2 ms at the keeper's start; mypy takes this name as it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# A pipe holds 64 KiB (Linux's default): a larger read gets no more, and a buffer past glibc's
# mmap threshold (128 KiB) costs each read that returns data an mmap, a page fault, an mremap
# and an munmap (a TLB shootdown across the keeper's threads): ~7 us against ~0.5.
READ_CHUNK = 64 * 1024
RECV_SIZE = 1 << 20  # the engine's frames: read into one buffer, made once, for that reason
WINDOW = 1 << 20  # bytes of one stream in flight before the keeper stops reading it
SPAWN_THREADS = 4
FS_ENCODING = (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())  # os.fsencode's


class Keeper:
    def __init__(self, sock: socket.socket) -> None:
        self.sock: socket.socket | None = sock  # None: no engine
        # The loop's epoll, straight: selectors' keys and maps cost more than the calls.
        self.epoll = select.epoll()
        self.watched: dict[int, tuple[Callable[[Any], None], Any]] = {}  # fd → callback, arg
        self.agents: dict[int, Agent] = {}  # by key
        self.living: dict[int, Agent] = {}  # pidfd → agent not reaped yet
        self.pipes: dict[int, tuple[Agent, int]] = {}  # read end → its agent and stream
        self.stdins: dict[int, Agent] = {}  # stdin write end → its agent
        self.outbox: list[tuple[Any, ...]] = []
        self.inbuf = bytearray()
        self.received = memoryview(bytearray(RECV_SIZE))
        self.stopping = False
        self.finished = False
        # Set by "setup": without it an engine's death ends every agent, as it always did.
        self.afterlife: Afterlife | None = None
        self.orphaned = False  # its first engine died: it exits once its agents are handed on
        self.base_env = BaseEnv({k: k + b"=" + v for k, v in os.environb.items()})
        self.starts = Starts(SPAWN_THREADS)
        self.slots = Slots()
        self.watch(sock.fileno(), self._from_engine, sock)
        self.watch(self.starts.wake_r, self._spawned, self.starts.wake_r)

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> None:
        while not self.finished:
            timeout = -1.0
            if self.sock is None and self.afterlife is not None:
                timeout = self.afterlife.time_left()
            if self.slots.held:  # a held start's time runs out
                wait = self.slots.wait()
                timeout = wait if timeout < 0 else min(timeout, wait)
            self._handle(self.epoll.poll(timeout))
            if self.slots.held:
                for key in self.slots.expired():
                    self.outbox.append(("withdrawn", key))
            if self.outbox and not self.finished:
                self._handle(self.epoll.poll(0))
            self._send()
            if self.orphaned and self.afterlife is not None and not self.finished:
                self.afterlife.check_done()
        self._send()

    def _handle(self, events: list[tuple[int, int]]) -> None:
        watched = self.watched
        for fd, _ in events:
            handler = watched.get(fd)
            if handler is None:  # unwatched earlier in this turn
                continue
            handler[0](handler[1])
            if self.finished:
                return

    def watch(self, fd: int, callback: Callable[[Any], None], arg: Any, out: bool = False) -> None:
        """Call ``callback(arg)`` in the loop when ``fd`` is readable (writable if ``out``)."""
        self.epoll.register(fd, select.EPOLLOUT if out else select.EPOLLIN)
        self.watched[fd] = (callback, arg)

    def unwatch(self, fd: int) -> None:
        del self.watched[fd]
        self.epoll.unregister(fd)

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
            self.sock.sendall(FRAME_LEN.pack(len(data)) + data)

    # -- from the engine ---------------------------------------------------------------------

    def _from_engine(self, sock: socket.socket) -> None:
        try:
            n = sock.recv_into(self.received)
        except OSError:
            n = 0
        if not n:
            self._engine_gone()
            return
        buf = self.inbuf
        buf += self.received[:n]
        start = 0
        while len(buf) - start >= 4:
            (size,) = FRAME_LEN.unpack_from(buf, start)
            if len(buf) - start - 4 < size:
                break
            messages = pickle.loads(memoryview(buf)[start + 4 : start + 4 + size])
            start += 4 + size
            for msg in messages:
                getattr(self, "_on_" + msg[0])(*msg[1:])
        del buf[:start]

    def _on_base(self, env: dict[str, str]) -> None:
        enc = os.fsencode
        self.base_env = BaseEnv({enc(k): enc(f"{k}={v}") for k, v in env.items()})

    def _on_setup(
        self, engine_id: str, listen_path: str, spill_dir: str, results_path: str, wait: float
    ) -> None:
        self.afterlife = Afterlife(self, engine_id, listen_path, spill_dir, results_path, wait)

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
        slots: int = 0,
        hold: bool = False,
    ) -> None:
        # os.fsencode's own work, without its checks (the engine sends str): ~2.5 us a spawn.
        enc, how = FS_ENCODING
        changed = [(k.encode(enc, how), f"{k}={v}".encode(enc, how)) for k, v in env_set.items()]
        env = (self.base_env, changed, [os.fsencode(name) for name in env_unset])
        adoptable = adoptable and self.afterlife is not None
        start = Start(key, argv, env, cwd, executable, want_stdin, run_id, adoptable)
        if slots and not self.slots.admit(start, slots, hold and not self.stopping):
            return  # held until a slot is free (or withdrawn)
        self.starts.put(start)

    def _on_drop(self, key: int) -> None:
        if self.slots.drop(key):
            self.outbox.append(("withdrawn", key))

    def _slot_freed(self, key: int) -> None:
        for start in self.slots.freed(key):
            self.starts.put(start)

    def _spawned(self, _fd: int) -> None:
        for started in self.starts.take():
            self._take(started)

    def _take(self, started: Started) -> None:
        key = started.key
        e = started.error
        if e is not None:
            self._slot_freed(key)
            if isinstance(e, OSError):
                self.outbox.append(("failed", key, e.errno or 0, e.strerror or str(e), e.filename))
            else:
                self.outbox.append(("failed", key, 0, f"{type(e).__name__}: {e}", None))
            return
        out_r, err_r, in_w = started.fds
        pid = started.pid
        agent = Agent(key, pid, out_r, err_r, in_w, started.run_id, started.adoptable)
        if agent.adoptable and self.afterlife is not None:
            agent.kept = self.afterlife.kept()
        self.agents[key] = agent
        # The start returned after the exec: /proc shows the agent itself.
        agent.start_time = started.start_time or proc_start_time(pid)
        self.outbox.append(("spawned", key, pid, agent.start_time))
        for fd, stream in ((out_r, 1), (err_r, 2)):
            # Its flags are O_RDONLY, nothing else: one call, not set_blocking's two.
            fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK)
            self.pipes[fd] = (agent, stream)
            self.watch(fd, self._readable, fd)
        if in_w >= 0:
            fcntl.fcntl(in_w, fcntl.F_SETFL, os.O_NONBLOCK)
            self.stdins[in_w] = agent
        pidfd = os.pidfd_open(pid)  # only this loop reaps it: it is there until then
        self.living[pidfd] = agent
        self.watch(pidfd, self._reap, pidfd)
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
            self.resume(agent, stream)

    def resume(self, agent: Agent, stream: int) -> None:
        agent.paused.discard(stream)
        for fd, s in agent.fds.items():
            if s == stream:
                self.watch(fd, self._readable, fd)

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
        for key in self.slots.clear():
            self.outbox.append(("withdrawn", key))

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
        self.unwatch(self.sock.fileno())
        self._send()  # what this turn had to say (a stop's withdrawn starts): its write end is open
        self.sock.close()
        self.sock = None
        self.inbuf.clear()
        self.slots.clear()  # no engine to run them for: never started
        if self.stopping:
            # The engine ended every run it knew of: an agent alive now is one whose spawn
            # it cancelled (a stop as it was under way) and whose answer it will never read.
            # Left running, unrecorded, the next engine would run that task again beside it.
            self.starts.drop_queued()  # not begun: nothing of them runs
        # Starts under way end first: none must run on unwatched once this process is gone.
        self.starts.finish()
        self._spawned(self.starts.wake_r)
        if self.stopping:
            self.end_all()
            return
        # The engine died: what it started must not run on unwatched (the next engine would
        # run those tasks again beside them), unless the next engine can take it over.
        for agent in list(self.agents.values()):
            if not agent.adoptable:
                self._on_forget(agent.key)
        if not self.agents or self.afterlife is None:
            self.end_all()
            return
        self.afterlife.begin()

    def adopted_by(self, conn: socket.socket, rest: bytes) -> None:
        """The next engine of the database said hello at the afterlife's socket: it is this
        keeper's engine now, told which agents are kept (``rest``: what it sent after)."""
        conn.setblocking(True)
        self.sock = conn
        self.watch(conn.fileno(), self._from_engine, conn)
        kept = [(a.key, a.run_id, a.pgid, a.start_time, a.code) for a in self.agents.values()]
        self.outbox.append(("kept", kept))
        if rest:  # its claims came with the hello
            self.inbuf += rest

    def end_all(self) -> None:
        """Kill every group not reaped yet, reap them, and finish."""
        for agent in self.living.values():
            self._kill(agent)
        for agent in self.living.values():  # reaped here: a container's PID 1 may not
            with contextlib.suppress(ChildProcessError):
                os.waitpid(agent.pid, 0)
        self.finished = True

    @staticmethod
    def _kill(agent: Agent) -> None:
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

    def _pause(self, agent: Agent, stream: int) -> None:
        if stream in agent.paused:
            return
        agent.paused.add(stream)
        for fd, s in agent.fds.items():
            if s == stream:
                self.unwatch(fd)

    def _close_out(self, agent: Agent, fd: int) -> None:
        stream = agent.fds.pop(fd)
        del self.pipes[fd]
        if stream not in agent.paused:
            self.unwatch(fd)
        agent.paused.discard(stream)
        os.close(fd)

    def _write_stdin(self, agent: Agent) -> None:
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
        registered = agent.stdin_fd in self.watched
        if agent.stdin_buf:
            if not registered:
                self.watch(agent.stdin_fd, self._writable, agent.stdin_fd, out=True)
            return
        if registered:
            self.unwatch(agent.stdin_fd)
        if agent.close_in:
            self._close_stdin(agent)

    def _writable(self, fd: int) -> None:
        agent = self.stdins.get(fd)
        if agent is not None:
            self._write_stdin(agent)

    def _close_stdin(self, agent: Agent) -> None:
        if agent.stdin_fd >= 0:
            if agent.stdin_fd in self.watched:
                self.unwatch(agent.stdin_fd)
            del self.stdins[agent.stdin_fd]
            os.close(agent.stdin_fd)
            agent.stdin_fd = -1

    def _reap(self, pidfd: int) -> None:
        agent = self.living.pop(pidfd)
        self.unwatch(pidfd)
        os.close(pidfd)
        try:
            _, status = os.waitpid(agent.pid, 0)
            code = os.waitstatus_to_exitcode(status)
        except ChildProcessError:  # cannot happen: nobody else reaps it
            code = 255
        agent.pid = 0
        agent.code = code
        if self.slots.live:
            self._slot_freed(agent.key)
        if self.agents.get(agent.key) is agent:
            if agent.heard:
                self.outbox.append(("exited", agent.key, code))
            if agent.stdin_fd >= 0 and not agent.fds:  # a stdin left open goes nowhere now
                self._close_stdin(agent)


def _hangup(signum: int, frame: object) -> None:
    """Nothing to do: the keeper outlives its terminal."""


def main() -> None:
    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)  # the agents must not hold the engine's socket open
    sock = socket.socket(fileno=fd)
    sock.setblocking(True)
    # A closed terminal is not the engine's end. Caught, not ignored: an exec resets a caught
    # signal to its default, while an ignored one stays ignored in every agent (a script's
    # `trap … HUP` then never runs).
    signal.signal(signal.SIGHUP, _hangup)
    keeper = Keeper(sock)
    _batch()
    keeper.run()
    # Done: every agent reaped or handed on, every file it wrote closed. Out without the
    # interpreter's teardown (its start threads, modules): the engine's stop waits for this
    # exit, the last step of a `tui run`.
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(0)


def _batch() -> None:
    """Run the loop thread as SCHED_BATCH: woken by a frame, a pipe or an exit, it does not
    preempt the engine or an agent that has the core, but runs on an idle core or at the next
    tick, and finds more done by then: fewer turns of its loop and frames each way (the DAG's
    run phase keeps both cores busy: −12 % of the keeper's and the engine main thread's CPU).
    The calling thread only: the start threads, made before, keep the default policy, and so
    do the agents they start."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux: as it was
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


if __name__ == "__main__":
    main()
