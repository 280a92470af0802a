"""`tui run` and `tui validate`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

from tui.cli.common import (
    engine_settings,
    err,
    flush_transitions,
    ignored_settings,
    open_store,
    print_transition,
)
from tui.cli.duplicates import go_ahead
from tui.daemon.lifecycle import attach
from tui.daemon.remote import RemoteEngine
from tui.engine.client import InboxClient, live_engine_pid
from tui.engine.events import Cursor, Notice, OutputBatch
from tui.engine.scheduler import Engine
from tui.model.issues import Issue
from tui.model.loader import load_task_files
from tui.model.states import ENDED, State
from tui.model.task import Task
from tui.store.db import Store
from tui.store.records import TaskRecord


def _print_warnings(warnings: list[Issue]) -> None:
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


async def cmd_validate(args: argparse.Namespace) -> int:
    result = load_task_files(args.files)  # raises TaskFileError with every problem
    _print_warnings(result.warnings)
    print(f"ok: {len(result.tasks)} task(s) valid")
    return 0


async def cmd_run(args: argparse.Namespace) -> int:
    async with open_store(args.db) as store:
        tasks: list[Task] = []
        if args.files:
            known = await store.all_ids()
            result = load_task_files(args.files, known_ids=known)
            _print_warnings(result.warnings)
            tasks = result.tasks
            # Refuse before an engine starts: starting one would already run (and, on the
            # refusal, interrupt) tasks left queued in the database.
            taken = sorted({t.id for t in tasks} & known)
            if taken:
                err(
                    f"task ids already stored: {', '.join(taken)} (continue them with "
                    "`tui run` and no file, or `tui retry ID`)"
                )
                return 1
            if not await go_ahead(store, tasks, force=args.force):
                return 1
        return await run_tasks(store, tasks, args)


async def run_tasks(store: Store, tasks: list[Task], args: argparse.Namespace) -> int:
    """Run ``tasks`` (and what the database left unfinished) until final: here, or through the
    engine another process (the daemon, a `tui run`) runs on this database. ``args``:
    concurrency, shell, manual_approve, json."""
    # New tasks wait for `tui approve` with --manual-approve, whoever runs them.
    approved = False if args.manual_approve else None
    remote = await attach(store.path)
    if remote is not None:
        try:
            if ignored := ignored_settings(args, f"the tui daemon (pid {remote.pid})"):
                err(ignored)
            return await _run_via_daemon(remote, tasks, args.json, approved)
        finally:
            await remote.aclose()
    pid = await live_engine_pid(store)
    if pid is not None:
        if ignored := ignored_settings(
            args, f"the engine already running (pid {pid})", "until that `tui run` ends"
        ):
            err(ignored)
        return await _run_via_engine(store, pid, tasks, args.json, approved)
    concurrency, shell = engine_settings(args)
    engine = Engine(
        store, concurrency=concurrency, auto_approve=not args.manual_approve, shell=shell
    )
    return await _run_here(engine, tasks, args.json)


async def _run_here(engine: Engine, tasks: list[Task], as_json: bool) -> int:
    """Schedule in this process until every task in scope is final."""
    store = engine.store
    since = await store.cursor()
    await engine.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    printer = None
    try:
        printer = asyncio.create_task(_print_events(engine, Cursor(*since), as_json))
        ids = await engine.submit(tasks) if tasks else []
        scope = set(ids) | set(engine.unsettled_ids())
        if not scope:
            what = "every stored task is final" if engine.has_tasks else "the database is empty"
            print(f"nothing to run: {what}", file=sys.stderr)
            return 0
        done = asyncio.create_task(engine.wait_settled(scope))
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({done, stopped}, return_when=asyncio.FIRST_COMPLETED)
        interrupted = stopped.done()
        done.cancel()
        stopped.cancel()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        await engine.stop()
        await asyncio.sleep(0)  # let the printer see the last events
        if printer:
            printer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await printer
    if interrupted:
        err("interrupted: running tasks were stopped; `tui run` continues them")
        return 130
    return _summary([(await engine.get(i)) for i in sorted(scope)])


async def _print_events(engine: Engine, since: Cursor, as_json: bool) -> None:
    names: dict[str, str] = {}
    async for ev in engine.events(since):
        if isinstance(ev, OutputBatch) or ev.to_state is None:
            continue
        if ev.task_id not in names:
            rec = await engine.get(ev.task_id) or await engine.store.get_task(ev.task_id)
            if rec is None:
                continue
            names[ev.task_id] = rec.name
        print_transition(ev, names[ev.task_id], as_json)


def _summary(records: Sequence[TaskRecord | None]) -> int:
    flush_transitions()
    counts: dict[str, int] = {}
    for r in records:
        if r is not None:
            counts[r.state.value] = counts.get(r.state.value, 0) + 1
    print(
        "done: " + ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items())), file=sys.stderr
    )
    ok = all(r is not None and r.state == State.COMPLETED for r in records)
    return 0 if ok else 1


async def _run_via_daemon(
    remote: RemoteEngine, tasks: list[Task], as_json: bool, approved: bool | None
) -> int:
    """The daemon schedules this database: hand it the tasks and follow them to the end.
    Ctrl-C only stops watching; the daemon keeps running them."""
    since = remote.cursor
    if tasks:
        scope = set(await remote.submit(tasks, approved))
        err(f"submitted {len(scope)} task(s) to the tui daemon (pid {remote.pid})")
    else:
        scope = {r.id for r in await remote.list_tasks() if not r.settled}
    records = await remote.get_many(scope)
    if not scope or all(r.settled for r in records):
        print("nothing to run: every stored task is final", file=sys.stderr)
        return 0
    names = {r.id: r.name for r in records}
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, stop.set)
    follow = asyncio.create_task(_follow(remote, since, scope, names, as_json))
    stopped = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({follow, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        stopped.cancel()
        follow.cancel()
    if not follow.done() or follow.cancelled():
        err("stopped watching; the daemon keeps running the tasks (`tui` or `tui ls` shows them)")
        return 130
    return _summary(follow.result())


async def _follow(
    remote: RemoteEngine, since: Cursor, scope: set[str], names: dict[str, str], as_json: bool
) -> list[TaskRecord]:
    """Print the scope's transitions until every task in it is settled."""
    async for ev in remote.events(since):
        if isinstance(ev, Notice):
            err(ev.text)
            continue
        if isinstance(ev, OutputBatch) or ev.to_state is None or ev.task_id not in scope:
            continue
        print_transition(ev, names[ev.task_id], as_json)
        if State(ev.to_state) not in ENDED:
            continue  # the records may be further on already: print every transition first
        records = await remote.get_many(scope)
        if all(r.settled for r in records):
            return records
    return []


async def _run_via_engine(
    store: Store, pid: int, tasks: list[Task], as_json: bool, approved: bool | None
) -> int:
    """Another process schedules this database: hand it the tasks and watch them finish."""
    if not tasks:
        err(
            f"an engine (pid {pid}) is already running tasks from {store.path}; "
            "follow it with `tui ls` / `tui logs -f`"
        )
        return 1
    client = InboxClient(store, pid)
    since = (await store.cursor())[0]
    ids = set(await client.submit(tasks, approved))
    print(f"submitted {len(ids)} task(s) to the engine (pid {pid})", file=sys.stderr)
    names = {t.id: t.name for t in tasks}
    while True:
        for ev in await store.read_events(since):
            since = ev.id
            if ev.task_id in ids and ev.to_state is not None:
                print_transition(ev, names[ev.task_id], as_json)
        records = [await store.get_task(i) for i in ids]
        if all(r is not None and r.settled for r in records):
            return _summary(records)
        await asyncio.sleep(0.2)  # the engine lives in another process: poll the journal
