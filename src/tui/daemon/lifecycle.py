"""Finding, starting and stopping a database's daemon (as tmux does with its server: the
first `tui` starts it in the background, every later one attaches), and reaching whichever
engine owns a database: whoever owns it (the daemon, a foreground `tui run` or app) serves its
socket, so every client goes the same way."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from tui.daemon import protocol as wire
from tui.daemon.paths import DaemonPaths, daemon_paths
from tui.daemon.remote import DaemonHung, DaemonUnavailable, OtherVersion, RemoteEngine
from tui.daemon.server import DaemonServer
from tui.engine.client import Client, LocalClient
from tui.engine.scheduler import Engine, EngineError, live_engine_pid
from tui.procs.process import ProcIdentity, identity_alive
from tui.store.db import Store, engine_sockets

START_TIMEOUT = 15.0
STOP_TIMEOUT = 30.0
POLL = 0.05  # waiting on another process to listen or exit: all we can do is look again


def foreground_requested() -> bool:
    return os.environ.get("TUI_FOREGROUND", "") not in ("", "0")


async def attach(db: Path, *, any_version: bool = False) -> RemoteEngine | None:
    """The engine that owns ``db`` over its socket (the daemon, or a foreground `tui run` or
    app), or None. Found at this user's socket path for ``db``, else at the socket the live
    engine recorded in the database (it may have started with another XDG_RUNTIME_DIR).
    DaemonHung when one holds the socket but does not answer.

    A daemon of another tui (the user upgraded) is restarted when it runs no task and no viewer
    follows it — nothing is lost: every state is stored — and named with how to restart it
    otherwise (OtherVersion);
    ``any_version`` attaches to it as it is (`tui daemon status|stop`)."""
    try:
        return await _attach(db, any_version)
    except OtherVersion as e:
        if e.hello.get("foreground") or e.busy or e.hello.get("viewers"):
            raise
        old = int(e.hello.get("pid") or 0)
        await stop(db)
        remote = await ensure(db)
        ours = wire.software_version()
        theirs = e.hello.get("version") or "an older tui"
        sys.stderr.write(
            f"tui: restarted the tui daemon (pid {old} ran tui {theirs}, it ran no task; "
            f"pid {remote.pid} runs tui {ours})\n"
        )
        return remote


async def _attach(db: Path, any_version: bool) -> RemoteEngine | None:
    paths = daemon_paths(db)
    candidates = [paths]
    for pid, start, sock in await asyncio.to_thread(engine_sockets, paths.db):
        alive = start is not None and identity_alive(ProcIdentity(pid, pid, start))
        if alive and Path(sock) != paths.socket:
            candidates.append(dataclasses.replace(paths, socket=Path(sock)))

    def respawn() -> None:
        spawn(paths)

    for where in candidates:
        try:
            return await RemoteEngine.connect(where, respawn=respawn, any_version=any_version)
        except DaemonHung:
            raise
        except DaemonUnavailable:
            continue
    return None


async def connect(store: Store) -> Client:
    """The engine that owns this database over its socket; with none running, an engine that
    does not schedule answers through the same handlers, on the store."""
    remote = await attach(store.path)
    if remote is not None:
        return remote
    pid = await live_engine_pid(store)
    if pid is not None:
        raise EngineError(
            f"a tui engine (pid {pid}) runs {store.path} but serves no socket this tui can "
            "reach (an older tui?); stop it, then try again"
        )
    engine = Engine(store)
    await engine.load()
    return LocalClient(engine)


@asynccontextmanager
async def connected(store: Store) -> AsyncIterator[Client]:
    """``connect``, closing the connection afterwards."""
    client = await connect(store)
    try:
        yield client
    finally:
        await client.aclose()


@asynccontextmanager
async def serving(
    engine: Engine, on_shutdown: Callable[[], None], *, foreground: bool, reason: str
) -> AsyncIterator[DaemonServer]:
    """Serve the socket of a started engine's database (the caller holds ``daemon_lock``):
    the daemon does, and so do a foreground `tui run` and app, so clients find one way in."""
    paths = daemon_paths(engine.store.path)
    server = DaemonServer(engine, paths, on_shutdown, foreground=foreground)
    await server.start()
    try:
        await engine.store.set_engine_socket(engine.id, str(paths.socket))
        yield server
    finally:
        await server.close(reason)


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
    remote = await attach(db, any_version=True)
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
