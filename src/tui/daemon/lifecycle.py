"""Finding, starting and stopping a database's daemon (as tmux does with its server: the
first `tui` starts it in the background, every later one attaches)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from tui.daemon.paths import DaemonPaths, daemon_paths
from tui.daemon.remote import DaemonUnavailable, RemoteEngine
from tui.engine.scheduler import EngineError

START_TIMEOUT = 15.0
STOP_TIMEOUT = 30.0
POLL = 0.05  # waiting on another process to listen or exit: all we can do is look again


def foreground_requested() -> bool:
    return os.environ.get("TUI_FOREGROUND", "") not in ("", "0")


async def attach(db: Path) -> RemoteEngine | None:
    """The running daemon of ``db``, or None."""
    paths = daemon_paths(db)
    try:
        return await RemoteEngine.connect(paths, respawn=lambda: spawn(paths))
    except DaemonUnavailable:
        return None


def spawn(paths: DaemonPaths, *, concurrency: int | None = None, shell: str | None = None) -> int:
    """Start the daemon detached from this terminal and session; returns its pid."""
    argv = [sys.executable, "-m", "tui", "daemon", "start", "--foreground", "--db", str(paths.db)]
    if concurrency is not None:
        argv += ["--concurrency", str(concurrency)]
    if shell is not None:
        argv += ["--shell", shell]
    paths.log.parent.mkdir(parents=True, exist_ok=True)
    with open(os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # no SIGHUP or Ctrl-C from the terminal that started it
            close_fds=True,
        )
    return proc.pid


async def ensure(
    db: Path, *, concurrency: int | None = None, shell: str | None = None
) -> RemoteEngine:
    """Attach to the daemon of ``db``, starting it first if none runs."""
    remote = await attach(db)
    if remote is not None:
        return remote
    paths = daemon_paths(db)
    log_start = _log_size(paths)
    pid = spawn(paths, concurrency=concurrency, shell=shell)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        remote = await attach(db)
        if remote is not None:
            return remote
        if not _alive(pid):
            # It lost a race with another start (fine: attach to the winner) or failed.
            remote = await attach(db)
            if remote is not None:
                return remote
            raise EngineError(
                f"the tui daemon did not start: {_log_tail(paths, log_start)} (log: {paths.log})"
            )
        await asyncio.sleep(POLL)
    raise EngineError(f"the tui daemon did not answer in {START_TIMEOUT:.0f}s (log: {paths.log})")


async def stop(db: Path) -> int | None:
    """Ask the daemon of ``db`` to stop and wait until it has; its pid, or None if none ran."""
    remote = await attach(db)
    if remote is None:
        return None
    pid = remote.pid
    try:
        await remote.shutdown()
    finally:
        await remote.aclose()
    deadline = time.monotonic() + STOP_TIMEOUT
    while _alive(pid):
        if time.monotonic() > deadline:
            raise EngineError(f"the tui daemon (pid {pid}) did not stop in {STOP_TIMEOUT:.0f}s")
        await asyncio.sleep(POLL)
    return pid


def _alive(pid: int) -> bool:
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
        if done:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _log_size(paths: DaemonPaths) -> int:
    try:
        return paths.log.stat().st_size
    except FileNotFoundError:
        return 0


def _log_tail(paths: DaemonPaths, since: int) -> str:
    try:
        with open(paths.log, "rb") as f:
            f.seek(since)
            lines = f.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return "no log written"
    return lines[-1] if lines else "no log written"
