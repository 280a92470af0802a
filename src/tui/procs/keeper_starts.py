"""The keeper's (tui.procs.keeper) agent starts, off its loop, on a few threads: glibc's
posix_spawn through ctypes (tui.procs.keeper_spawn), or Popen where that libc lacks what an
agent needs. Either waits until the child has exec'd (ms on a busy machine) with the GIL
released, so starts overlap; the loop itself never waits for one, it is woken by a pipe when
one is done.

Imported by keeper.py, which runs as ``python -I -S``: the standard library only.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import threading

from tui.procs.keeper_spawn import BaseEnv, Spawner, Unavailable


class Start:
    """One agent to start: what the engine's ``spawn`` frame asked; its env as the base, the
    entries (``NAME=value``) that differ from it by name, and the names not set. (Not a
    NamedTuple: importing typing is ~2 ms of every keeper's start.)"""

    __slots__ = ("adoptable", "argv", "cwd", "env", "executable", "key", "run_id", "want_stdin")

    def __init__(
        self,
        key: int,
        argv: list[str],
        env: tuple[BaseEnv, list[tuple[bytes, bytes]], list[bytes]],
        cwd: str | None,
        executable: str | None,
        want_stdin: bool,
        run_id: int,
        adoptable: bool,
    ) -> None:
        self.key = key
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.executable = executable
        self.want_stdin = want_stdin
        self.run_id = run_id
        self.adoptable = adoptable


class Started:
    """A start done on a start thread, for the loop to take over."""

    __slots__ = ("adoptable", "error", "fds", "key", "pid", "run_id", "start_time")

    def __init__(self, key: int, fds: tuple[int, int, int], run_id: int, adoptable: bool) -> None:
        self.key = key
        self.fds = fds  # stdout, stderr read ends; stdin write end (-1: none)
        self.run_id = run_id
        self.adoptable = adoptable
        self.pid = 0
        self.start_time = 0  # 0: not known yet (the loop reads /proc)
        self.error: BaseException | None = None


class Starts:
    """Start requests in, :class:`Started` out; ``wake_r`` is readable when some are done."""

    def __init__(self, threads: int) -> None:
        self.requests: queue.SimpleQueue[Start | None] = queue.SimpleQueue()
        self.done: collections.deque[Started] = collections.deque()
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        # Set when a start thread has written to the wake pipe and the loop has not taken
        # since: the starts done meanwhile need no byte (nor the GIL's release a write costs).
        self.woken = False
        self.home = os.getcwd()
        # Made by the first thread, off the loop: importing ctypes takes ~3 ms.
        self._made = threading.Lock()
        self._spawner: Spawner | bool | None = False  # None: Popen
        self.threads = [
            threading.Thread(target=self._serve, name="keeper-spawn", daemon=True)
            for _ in range(threads)
        ]
        for t in self.threads:
            t.start()

    def put(self, start: Start) -> None:
        self.requests.put(start)

    def drop_queued(self) -> None:
        """Forget the starts no thread has begun (the engine stopped: none is to run)."""
        with contextlib.suppress(queue.Empty):
            while True:
                self.requests.get_nowait()

    def finish(self) -> None:
        """Let the starts under way end, and start no more."""
        for _ in self.threads:
            self.requests.put(None)
        for t in self.threads:
            t.join()

    def take(self) -> list[Started]:
        """The starts done since the last take (the wake pipe drained: it holds a byte or a
        few, see ``woken``; more would wake the loop again, no harm)."""
        with contextlib.suppress(BlockingIOError):
            os.read(self.wake_r, 4096)
        # After the drain (a byte written before it was for starts taken below), before the
        # starts are taken: one done after this writes again.
        self.woken = False
        done = []
        while self.done:
            done.append(self.done.popleft())
        return done

    def spawner(self) -> Spawner | None:
        with self._made:
            if self._spawner is False:
                try:
                    self._spawner = Spawner(self.home)
                except Unavailable:
                    self._spawner = None
            assert self._spawner is not True
            return self._spawner

    def _serve(self) -> None:
        spawner = self.spawner()
        while (request := self.requests.get()) is not None:
            self._start(request, spawner)

    def _start(self, start: Start, spawner: Spawner | None) -> None:
        """On a start thread: pipes and the agent; the result goes to the loop."""
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        in_r = in_w = -1
        if start.want_stdin:
            in_r, in_w = os.pipe2(os.O_CLOEXEC)
        started = Started(start.key, (out_r, err_r, in_w), start.run_id, start.adoptable)
        try:
            if spawner is not None:
                started.pid, started.start_time = spawner.spawn(
                    start.argv, start.env, start.cwd, start.executable, (in_r, out_w, err_w)
                )
            else:
                started.pid = _popen(start, in_r, out_w, err_w)
        except BaseException as e:
            started.error = e
            for fd in (out_r, err_r, in_w):
                if fd >= 0:
                    os.close(fd)
        finally:
            for fd in (out_w, err_w, in_r):
                if fd >= 0:
                    os.close(fd)
        self.done.append(started)
        if not self.woken:
            self.woken = True
            with contextlib.suppress(BlockingIOError):
                os.write(self.wake_w, b"\0")


def _popen(start: Start, in_r: int, out_w: int, err_w: int) -> int:
    import subprocess  # the fallback only: ~8 ms of every keeper's start otherwise

    base, changed, unset = start.env
    env = {k: entry[len(k) + 1 :] for k, entry in base.whole(changed, unset).items()}
    popen = subprocess.Popen(
        start.argv,
        executable=start.executable,
        cwd=start.cwd,
        env=env,
        stdin=in_r if in_r >= 0 else subprocess.DEVNULL,
        stdout=out_w,
        stderr=err_w,
        start_new_session=True,
    )
    popen.returncode = 0  # reaped by the keeper's loop, never by Popen
    return popen.pid
