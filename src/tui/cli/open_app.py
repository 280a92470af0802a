"""`tui` / `tui open [FILE...]`: submit the files' tasks, then open the app."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from tui.cli.common import (
    DAEMON_SETTINGS,
    db_path,
    engine_executor,
    engine_settings,
    err,
    ignored_settings,
    open_store,
    settings_notes,
)
from tui.cli.duplicates import go_ahead
from tui.config.task_files import load_files, with_worktree_setting
from tui.daemon.lifecycle import attach, ensure, foreground_requested
from tui.daemon.remote import RemoteEngine
from tui.engine.events import Cursor
from tui.engine.scheduler import live_engine_pid
from tui.model.task import Task
from tui.store.records import TaskRecord

if TYPE_CHECKING:
    from tui.model.loader import LoadResult

APP = "tui.app.tui_app"
SSH_FPS = 20  # default frame cap over SSH (bench: 1.3x the bytes of tail -f, 1.4x at 60)


async def cmd_open(args: argparse.Namespace) -> int:
    # Fewer frames mean fewer bytes over a remote link; TEXTUAL_FPS is read at import time.
    fps = args.fps or (SSH_FPS if os.environ.get("SSH_CONNECTION") else None)
    if fps:
        os.environ["TEXTUAL_FPS"] = str(fps)
    if args.foreground or foreground_requested():
        return await _open_here(args)
    db = db_path(args.db)
    # The app's modules load in a thread while the daemon answers (or starts) and sends the
    # task list: work that waits on another process. With files to load, only once they are
    # accepted, so a refusal or a bad file does not wait for the import to end.
    app_module = None if args.files else _import_app()
    early = _load_early(args)
    async with open_store(args.db) as store:
        tasks = _load(args, await store.all_ids(), early)
        if not await go_ahead(store, tasks, force=args.force):
            return 1
    if app_module is None:
        app_module = _import_app()
    # Whoever owns the database serves its socket: the daemon, or a foreground `tui run`.
    remote = await attach(db)
    notices: list[str] = []
    if remote is None:
        notices += settings_notes(db, args)
        # The app's modules load while the daemon starts: two processes on two cores, instead
        # of one after the other (the first frame with 10k tasks: 1.04x -> 0.66x a DataTable).
        remote = await ensure(db, concurrency=args.concurrency, shell=args.shell)
    else:
        owner = f"the `tui run` (pid {remote.pid})" if remote.foreground else None
        change = "until that `tui run` ends" if owner else DAEMON_SETTINGS
        if ignored := ignored_settings(args, owner or f"the tui daemon (pid {remote.pid})", change):
            notices.append(ignored)
    try:
        if tasks:
            await remote.submit(tasks)
        listing = asyncio.create_task(_listing(remote))  # read while the app's modules load
        TuiApp = (await app_module).TuiApp
        app = TuiApp(remote, fit_terminal_colors=True, notices=notices, listing=listing)
        await app.run_async(mouse=not args.no_mouse)
    finally:
        await remote.aclose()
    return 0


def _import_app() -> asyncio.Task[ModuleType]:
    return asyncio.create_task(asyncio.to_thread(importlib.import_module, APP))


async def _listing(remote: RemoteEngine) -> tuple[Cursor, list[TaskRecord]]:
    """The task list, with the stream's cursor from before it was read (what the app follows
    the stream from)."""
    since = remote.cursor
    return since, await remote.list_tasks()


async def _open_here(args: argparse.Namespace) -> int:
    """--foreground: the engine runs in the app's process and stops when the app quits."""
    early = _load_early(args)
    async with open_store(args.db) as store:
        pid = await live_engine_pid(store)
        if pid is not None:
            err(
                f"another tui engine (pid {pid}) is scheduling {store.path}; "
                "open the app without --foreground to attach to it"
            )
            return 1
        tasks = _load(args, await store.all_ids(), early)
        if not await go_ahead(store, tasks, force=args.force):
            return 1
        from tui.app.run_app import run_app

        chosen = await engine_settings(store, args)
        await run_app(
            store,
            tasks,
            concurrency=chosen.concurrency,
            mouse=not args.no_mouse,
            shell=chosen.shell,
            executor=engine_executor(args),  # [executor] in the config
        )
    return 0


def _load_early(args: argparse.Namespace) -> LoadResult | None:
    """The files, loaded before a new database is made (as `tui run FILE` does): a refused
    one leaves no empty database behind. None: no files, or the database is there."""
    fresh = bool(args.files) and not db_path(args.db).exists()
    return load_files(args.files) if fresh else None


def _load(args: argparse.Namespace, known: set[str], early: LoadResult | None) -> list[Task]:
    if not args.files:
        return []
    # Another command may have stored tasks since the early load: load against them then.
    result = early if early is not None and not known else load_files(args.files, known_ids=known)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return with_worktree_setting(result.tasks)
