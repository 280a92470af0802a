"""The keeper's (tui.procs.keeper) agent starts, off its loop: Popen runs on a few threads. With
vfork the parent waits until the child has exec'd (ms on a busy machine) with the GIL released,
so starts overlap; the loop itself never waits for one, it is woken by a pipe when one is done.

Imported by keeper.py, which runs as ``python -I -S``: the standard library only.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import subprocess
import threading
from typing import NamedTuple


class Start(NamedTuple):
    """One agent to start: what the engine's ``spawn`` frame asked, its env made whole."""

    key: int
    argv: list[str]
    env: dict[bytes, bytes]
    cwd: str | None
    executable: str | None
    want_stdin: bool
    run_id: int
    adoptable: bool


class Started:
    """A start done on a start thread, for the loop to take over."""

    __slots__ = ("adoptable", "error", "fds", "key", "pid", "run_id")

    def __init__(self, key: int, fds: tuple[int, int, int], run_id: int, adoptable: bool) -> None:
        self.key = key
        self.fds = fds  # stdout, stderr read ends; stdin write end (-1: none)
        self.run_id = run_id
        self.adoptable = adoptable
        self.pid = 0
        self.error: BaseException | None = None


class Starts:
    """Start requests in, :class:`Started` out; ``wake_r`` is readable when some are done."""

    def __init__(self, threads: int) -> None:
        self.requests: queue.SimpleQueue[Start | None] = queue.SimpleQueue()
        self.done: collections.deque[Started] = collections.deque()
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.threads = [
            threading.Thread(target=self._serve, name="keeper-spawn", daemon=True)
            for _ in range(threads)
        ]
        for t in self.threads:
            t.start()

    def put(self, start: Start) -> None:
        self.requests.put(start)

    def finish(self) -> None:
        """Let the starts under way end, and start no more."""
        for _ in self.threads:
            self.requests.put(None)
        for t in self.threads:
            t.join()

    def take(self) -> list[Started]:
        """The starts done since the last take (the wake pipe drained)."""
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wake_r, 4096):
                pass
        done = []
        while self.done:
            done.append(self.done.popleft())
        return done

    def _serve(self) -> None:
        while (request := self.requests.get()) is not None:
            self._start(request)

    def _start(self, start: Start) -> None:
        """On a start thread: pipes and Popen; the result goes to the loop."""
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        in_r = in_w = -1
        if start.want_stdin:
            in_r, in_w = os.pipe2(os.O_CLOEXEC)
        started = Started(start.key, (out_r, err_r, in_w), start.run_id, start.adoptable)
        try:
            popen = subprocess.Popen(
                start.argv,
                executable=start.executable,
                cwd=start.cwd,
                env=start.env,
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
            popen.returncode = 0  # reaped by the keeper's loop, never by Popen
        finally:
            for fd in (out_w, err_w, in_r):
                if fd >= 0:
                    os.close(fd)
        self.done.append(started)
        with contextlib.suppress(BlockingIOError):
            os.write(self.wake_w, b"\0")
