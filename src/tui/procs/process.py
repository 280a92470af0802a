"""Agent subprocesses started in their own session/process group, their pipes, and what tells
a process apart (its /proc/<pid>/stat). Ending a group without orphans: tui.procs.groups.

Every agent runs as the leader of a fresh session (``start_new_session=True``) so the
whole tree it forks (shells, test runners, ``sleep &``) shares one process group that
can be signalled at once.  Processes are identified by ``(pid, start_time)`` because
pids are reused; a pid alone is never trusted after the fact.

Zombies (state ``Z``) count as gone everywhere: in containers PID 1 often does not reap
reparented grandchildren, so they may linger as zombies forever while being harmless.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

__all__ = [
    "DEAD_STATES",
    "Child",
    "InPipe",
    "OutPipe",
    "PipeReader",
    "ProcIdentity",
    "Spawner",
    "identity_alive",
    "proc_start_time",
    "proc_state",
    "read_stat",
    "spawn",
]

# States of /proc/<pid>/stat that mean "no longer running anything".
DEAD_STATES = frozenset("ZXx")


@dataclass(frozen=True)
class ProcIdentity:
    """A process as it was when recorded; ``start_time`` disambiguates reused pids."""

    pid: int
    pgid: int
    start_time: int  # field 22 of /proc/<pid>/stat: clock ticks since boot


class _Stat(NamedTuple):
    state: str
    ppid: int
    pgrp: int
    start_time: int


def read_stat(pid: int) -> _Stat | None:
    """The fields of /proc/<pid>/stat tui uses, or None if ``pid`` does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:  # gone (ENOENT/ESRCH) or not ours to read
        return None
    # comm (field 2) is "(...)" and may itself contain spaces and ')', so split after
    # the LAST ')'; what follows starts with field 3 (state).
    close = raw.rfind(b")")
    if close < 0:
        return None
    fields = raw[close + 1 :].split()
    try:
        # fields[0] is field 3, so field N lives at index N - 3.
        return _Stat(
            state=fields[0].decode("ascii", "replace"),
            ppid=int(fields[1]),
            pgrp=int(fields[2]),
            start_time=int(fields[19]),
        )
    except (IndexError, ValueError):
        return None


def proc_state(pid: int) -> str | None:
    """The state letter of ``pid`` (R, S, D, T when stopped, …), or None if it does not exist."""
    st = read_stat(pid)
    return None if st is None else st.state


def proc_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or None if it does not exist."""
    st = read_stat(pid)
    return None if st is None else st.start_time


def identity_alive(ident: ProcIdentity) -> bool:
    """True only if the very process recorded in ``ident`` still runs (not a zombie)."""
    st = read_stat(ident.pid)
    return st is not None and st.start_time == ident.start_time and st.state not in DEAD_STATES


class PipeReader:
    """A child's stdout or stderr: non-blocking reads that wait on the event loop only when
    the pipe is empty (a busy producer is read without touching epoll at all)."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._ready: asyncio.Future[None] | None = None  # set while a read waits for data

    async def read(self, n: int) -> bytes:
        """Up to ``n`` bytes as soon as any are there; b"" at the end (and ever after)."""
        while self._fd >= 0:
            try:
                data = os.read(self._fd, n)
            except BlockingIOError:
                await self._readable()
                continue
            except OSError:  # EIO and the like: nothing more will come
                data = b""
            if not data:
                self.close()
            else:
                # A producer faster than us keeps the pipe from ever being empty: give the rest
                # of the loop (other tasks, the UI) a turn after every read, as a transport would.
                await asyncio.sleep(0)
            return data
        return b""

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        self._ready = ready = loop.create_future()
        loop.add_reader(self._fd, _resolve, ready)
        try:
            await ready
        finally:
            self._ready = None
            if self._fd >= 0:
                loop.remove_reader(self._fd)

    def close(self) -> None:
        """Close the pipe; a read waiting on it returns b"" (the fd must leave the selector
        first: its number will soon belong to another pipe)."""
        if self._fd < 0:
            return
        fd, self._fd = self._fd, -1
        if self._ready is not None:
            asyncio.get_running_loop().remove_reader(fd)
            _resolve(self._ready)
        os.close(fd)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class OutPipe(Protocol):
    """A child's stdout or stderr as its reader sees it (a pipe of ours, or the keeper's)."""

    async def read(self, n: int) -> bytes:
        """Up to ``n`` bytes as soon as any are there; b"" at the end (and ever after)."""
        ...

    def close(self) -> None: ...


class InPipe(Protocol):
    """A child's stdin as its writer sees it (``asyncio.StreamWriter`` is one)."""

    def write(self, data: bytes) -> None: ...
    async def drain(self) -> None: ...
    def close(self) -> None: ...
    def is_closing(self) -> bool: ...


class Child:
    """A started agent process: its pipes, and its exit code the moment it exits.

    ``wait()`` means the leader's exit: it does not also wait for pipes that a background job
    may hold open forever. Started here (:func:`spawn`) or by an engine's keeper
    (tui.procs.keeper_client); callers see no difference.
    """

    def __init__(self, pid: int, stdin: InPipe | None, stdout: OutPipe, stderr: OutPipe) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        # Made by the first wait() before the exit: a quick command's exit is often known
        # before anyone waits (a keeper reports its start and end in one frame).
        self._exited: asyncio.Future[int] | None = None

    def _exit(self, code: int) -> None:
        self.returncode = code
        if self._exited is not None and not self._exited.done():
            self._exited.set_result(code)

    async def wait(self) -> int:
        """The leader's exit code (negative: killed by that signal)."""
        if self.returncode is not None:
            return self.returncode
        if self._exited is None:
            self._exited = asyncio.get_running_loop().create_future()
        return await asyncio.shield(self._exited)

    async def heard(self) -> None:
        """Return once the child has exited or has output to read, whichever is first (a
        follower with nothing to write to it needs no reader until then). Here: at once."""

    def identity(self) -> ProcIdentity:
        """Who this child is, pid reuse aside (start time 0: it was never seen alive)."""
        raise NotImplementedError

    def close_pipes(self) -> None:
        self.stdout.close()
        self.stderr.close()
        if self.stdin is not None and not self.stdin.is_closing():
            self.stdin.close()


class _PopenChild(Child):
    """A child of this process, leaner than ``asyncio.subprocess.Process`` (no transports or
    protocols for pipes that are simply read)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: asyncio.StreamWriter | None,
        stdout: PipeReader,
        stderr: PipeReader,
    ) -> None:
        super().__init__(popen.pid, stdin, stdout, stderr)
        self._popen = popen
        loop = asyncio.get_running_loop()
        try:
            pidfd = os.pidfd_open(self.pid)
        except OSError:  # no pidfd (old kernel): a thread blocks in waitpid instead
            loop.run_in_executor(None, self._wait_blocking, loop)
        else:
            loop.add_reader(pidfd, self._reap, loop, pidfd)

    def _reap(self, loop: asyncio.AbstractEventLoop, pidfd: int) -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        self._exit(self._waitpid())

    def _wait_blocking(self, loop: asyncio.AbstractEventLoop) -> None:
        code = self._waitpid()
        loop.call_soon_threadsafe(self._exit, code)

    def _waitpid(self) -> int:
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:  # reaped elsewhere: the code is lost
            return 255
        return os.waitstatus_to_exitcode(status)

    def _exit(self, code: int) -> None:
        # Popen must know too, or it would think the child still runs when collected.
        self._popen.returncode = code
        super()._exit(code)

    def identity(self) -> ProcIdentity:
        """Reading /proc right after the start can wait a millisecond (until the child's exec
        is through): the engine calls this off the loop. The start time is 0 (never alive)
        once the child has been reaped."""
        st = read_stat(self.pid)
        # The ppid check rejects a stat that belongs to a reused pid.
        start = st.start_time if st is not None and st.ppid == os.getpid() else 0
        return ProcIdentity(pid=self.pid, pgid=self.pid, start_time=start)


# Popen runs on these threads, not on the event loop: with vfork the parent waits until the
# child has exec'd (0.2-2 ms, longer on a busy machine) and Python releases the GIL for that
# wait, so the loop goes on with other tasks meanwhile. Two threads: one child's exec never
# holds up the next start.
_SPAWN_THREADS = 2
_spawner: concurrent.futures.ThreadPoolExecutor | None = None


def _spawn_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _spawner
    if _spawner is None:
        _spawner = concurrent.futures.ThreadPoolExecutor(_SPAWN_THREADS, "tui-spawn")
    return _spawner


class _Started(NamedTuple):
    popen: subprocess.Popen[bytes]
    out_r: int
    err_r: int
    in_w: int  # -1 without a stdin pipe


def _start(
    argv: Sequence[str],
    cwd: str | None,
    env: Mapping[str, str] | None,
    stdin: int,
    executable: str | None,
) -> _Started:
    """Pipes and Popen, on a spawn thread: everything a start needs that may block."""
    # Our own pipes, handed to Popen as bare fds: it then makes no file objects for them.
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    in_r = in_w = -1
    if stdin == subprocess.PIPE:
        in_r, in_w = os.pipe2(os.O_CLOEXEC)
    try:
        popen = subprocess.Popen(
            argv,
            executable=executable,
            cwd=cwd,
            env=env,
            stdin=in_r if in_r >= 0 else stdin,
            stdout=out_w,
            stderr=err_w,
            start_new_session=True,
        )
    except BaseException:
        for fd in (out_r, err_r, in_w):
            if fd >= 0:
                os.close(fd)
        raise
    finally:
        for fd in (out_w, err_w, in_r):  # the child has its own copies now
            if fd >= 0:
                os.close(fd)
    return _Started(popen, out_r, err_r, in_w)


def _abandon(fut: concurrent.futures.Future[_Started]) -> None:
    """The caller of ``spawn`` was cancelled while its child was being started: the child
    must not outlive that (nobody would wait for it or end its group). Called where the start
    finishes (the spawn thread), so it happens even if the event loop is gone by then."""
    if fut.cancelled() or fut.exception() is not None:
        return
    started = fut.result()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(started.popen.pid, signal.SIGKILL)
    for fd in (started.out_r, started.err_r, started.in_w):
        if fd >= 0:
            os.close(fd)
    started.popen.wait()  # reaped at once: it was SIGKILLed


async def spawn(
    argv: Sequence[str],
    *,
    cwd: str | None,
    env: Mapping[str, str] | None,
    stdin: int = subprocess.DEVNULL,
    executable: str | None = None,
) -> Child:
    """Start ``argv`` (never via a shell) as leader of a new session and process group
    (setsid: its pgid is its pid), stdout and stderr piped; ``stdin`` is DEVNULL or PIPE.
    ``executable`` is the file to run when it is not ``argv[0]`` looked up on PATH."""
    if isinstance(argv, str | bytes) or not argv:
        raise ValueError("argv must be a non-empty sequence of arguments, not a string")
    loop = asyncio.get_running_loop()
    started = _spawn_pool().submit(_start, argv, cwd, env, stdin, executable)
    try:
        got: _Started = await asyncio.shield(asyncio.wrap_future(started))
    except asyncio.CancelledError:
        started.add_done_callback(_abandon)
        raise
    popen, out_r, err_r, in_w = got
    writer = None
    if in_w >= 0:
        pipe = open(in_w, "wb", 0)  # noqa: SIM115 - the transport owns and closes it
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), pipe
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return _PopenChild(popen, writer, PipeReader(out_r), PipeReader(err_r))


class Spawner(Protocol):
    """:func:`spawn`, or an engine keeper's ``spawn`` (the same arguments and meaning)."""

    async def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str] | None,
        stdin: int = subprocess.DEVNULL,
        executable: str | None = None,
    ) -> Child: ...
