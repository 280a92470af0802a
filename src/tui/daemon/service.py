"""The daemon process itself: `tui daemon start --foreground` (what the background start and a
systemd unit run). It holds an exclusive lock for its database, owns the engine, serves the
socket, writes its own log, and on SIGTERM stops the engine the way `tui run` does."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.daemon.memory import trim_when_grown
from tui.daemon.paths import DaemonPaths
from tui.daemon.redact import RedactingFormatter
from tui.engine.scheduler import EngineError

if TYPE_CHECKING:
    from tui.daemon.server import DaemonServer
    from tui.engine.runner import Executor
    from tui.engine.settings import EngineSettings
    from tui.store.db import Store

log = logging.getLogger("tui.daemon")


class DaemonRunning(EngineError):
    """Another daemon (or a foreground `tui run` / app) already serves this database."""


@contextlib.contextmanager
def daemon_lock(paths: DaemonPaths) -> Iterator[None]:
    """Held for the daemon's life; the kernel drops it if the daemon is killed, so a crashed
    daemon never blocks the next one and two racing starts cannot both win."""
    lock_path = paths.socket.with_suffix(".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise DaemonRunning(
                f"a tui daemon (pid {other}) already serves {paths.db}; "
                "`tui daemon status` shows it"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # no stale pid for the next reader (we still hold the lock)
    finally:
        os.close(fd)


def setup_logging(path: Path) -> int:
    """Log to ``path``; returns its fd (the guard writes there too)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    handler = logging.StreamHandler(os.fdopen(fd, "a", buffering=1))
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    return fd


async def serve(
    paths: DaemonPaths,
    *,
    given: Mapping[str, Any],
    fallback: EngineSettings,
    executor: Executor | None = None,
) -> int:
    """Run the daemon until SIGTERM/SIGINT or a `shutdown` request. Returns an exit code.
    ``given``: the settings passed on its command line; the others are those stored for the
    database (a daemon a viewer restarts comes back as it was started), else ``fallback``."""
    from tui.daemon.guard import Guard
    from tui.daemon.server import DaemonServer
    from tui.engine.runner import ENV_ENGINE_ID
    from tui.engine.scheduler import Engine
    from tui.engine.settings import settle_stored
    from tui.gc_tuning import tune_gc
    from tui.store.db import Store

    with daemon_lock(paths):
        log_fd = setup_logging(paths.log)
        log.info("starting (pid %d) for %s", os.getpid(), paths.db)
        store = await Store.open(paths.db)
        stop = asyncio.Event()
        chosen, notes = await settle_stored(store, given, fallback)
        for note in notes:
            log.info("%s", note)
        log.info("concurrency %d, shell %s", chosen.concurrency, chosen.shell)
        engine = Engine(
            store, concurrency=chosen.concurrency, shell=chosen.shell, executor=executor
        )
        server = DaemonServer(engine, paths, stop.set)
        loop = asyncio.get_running_loop()
        untune_gc = None
        # Stops this engine's agents the moment the daemon dies (see tui.daemon.guard).
        guard = Guard(f"{ENV_ENGINE_ID}={engine.id}", log_fd)
        engine.on_spawn = guard.spawned
        try:
            await engine.start()  # recovers what a crashed daemon left behind
            await server.start()
            await store.set_engine_socket(engine.id, str(paths.socket))  # found from any env
            untune_gc = tune_gc()  # started: what exists now stays; pause less at load
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
            # Detached from any terminal: a hang-up is not a reason to stop the agents.
            loop.add_signal_handler(signal.SIGHUP, lambda: None)
            watch = asyncio.create_task(_watch_file(store, server))
            trim = asyncio.create_task(trim_when_grown())  # a burst's freed heap goes back
            await stop.wait()
            watch.cancel()
            trim.cancel()
            log.info("stopping")
            await server.close(server.problem or "the daemon was stopped")
        finally:
            if untune_gc is not None:
                untune_gc()
            await engine.stop()
            guard.stop()  # the runs are stopped: nothing left for it to do
            await store.close()
            log.info("stopped")
    return 0


FILE_CHECK_EVERY = 2.0  # seconds between looks at whether the database file is still ours


async def _watch_file(store: Store, server: DaemonServer) -> None:
    """Stop the daemon if its database file is deleted or replaced under it: every write
    would go to a file nobody can open again. Closing the store saves what it holds."""
    from tui.store.db import DatabaseFileError

    # $TUI_DB_CHECK_SECONDS: the tests pick when the look happens.
    every = float(os.environ.get("TUI_DB_CHECK_SECONDS") or FILE_CHECK_EVERY)
    while True:
        await asyncio.sleep(every)
        try:
            store.check_file()
        except DatabaseFileError as e:
            server.refuse(str(e))
            return
