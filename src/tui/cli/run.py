"""`tui run` and `tui validate`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

from tui.cli.common import (
    DAEMON_SETTINGS,
    answer_on,
    db_path,
    engine_executor,
    engine_settings,
    err,
    flush_transitions,
    ignored_settings,
    open_store,
    print_hook_failure,
    print_question,
    print_transition,
)
from tui.cli.duplicates import go_ahead
from tui.config.task_files import load_files, with_worktree_setting
from tui.daemon.lifecycle import attach, serving
from tui.daemon.paths import daemon_paths
from tui.daemon.remote import DaemonStopped, RemoteEngine
from tui.daemon.service import DaemonRunning, daemon_lock
from tui.engine import api
from tui.engine.events import Cursor, Notice, OutputBatch, advance
from tui.engine.scheduler import Engine, live_engine_pid
from tui.gc_tuning import settle_gc
from tui.model.issues import Issue
from tui.model.states import ENDED, SATISFIED, State, label
from tui.model.task import Task
from tui.store.db import Store
from tui.store.records import EventRecord, TaskRecord


def _print_warnings(warnings: list[Issue]) -> None:
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


async def cmd_validate(args: argparse.Namespace) -> int:
    # raises TaskFileError with every problem
    result = load_files(args.files)
    settle_gc()
    _print_warnings(result.warnings)
    print(f"ok: {len(result.tasks)} task(s) valid")
    return 0


async def cmd_run(args: argparse.Namespace) -> int:
    answer_on(args.db)
    # Files are loaded before a new database is made: a refused one leaves no empty file.
    fresh = bool(args.files) and not db_path(args.db).exists()
    early = load_files(args.files) if fresh else None
    async with open_store(args.db) as store:
        tasks: list[Task] = []
        if args.files:
            known = await store.all_ids()
            # Another command may have stored tasks since: load against them then.
            result = (
                early
                if early is not None and not known
                else load_files(args.files, known_ids=known)
            )
            _print_warnings(result.warnings)
            tasks = with_worktree_setting(result.tasks)
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
    """Run ``tasks`` (and what the database left unfinished) until final: here, serving the
    database's socket as the daemon does, or through whoever already serves it (the daemon, a
    foreground `tui run`). ``args``: concurrency, shell, manual_approve, json."""
    settle_gc()  # the launch's objects are built: kept out of the run's collections
    # New tasks wait for `tui approve` with --manual-approve, whoever runs them.
    approved = False if args.manual_approve else None
    remote = await attach(store.path)
    if remote is not None:
        try:
            owner = _owner(remote)
            change = "until that `tui run` ends" if remote.foreground else DAEMON_SETTINGS
            if ignored := ignored_settings(args, owner, change):
                err(ignored)
            return await _run_via_server(store, remote, tasks, args.json, approved)
        finally:
            await remote.aclose()
    pid = await live_engine_pid(store)
    if pid is not None:
        err(
            f"a tui engine (pid {pid}) runs {store.path} but serves no socket this tui can "
            "reach (an older tui?); stop it, then try again"
        )
        return 1
    chosen = await engine_settings(store, args)
    engine = Engine(
        store,
        concurrency=chosen.concurrency,
        auto_approve=not args.manual_approve,
        shell=chosen.shell,
        executor=engine_executor(args),
    )
    try:
        with daemon_lock(daemon_paths(store.path)):
            return await _run_here(engine, tasks, args.json)
    except DaemonRunning as e:  # a daemon started meanwhile: hand the tasks to it instead
        err(str(e))
        return 1


def _owner(remote: RemoteEngine) -> str:
    return (
        f"the `tui run` (pid {remote.pid}) that owns the database"
        if remote.foreground
        else f"the tui daemon (pid {remote.pid})"
    )


async def _run_here(engine: Engine, tasks: list[Task], as_json: bool) -> int:
    """Schedule in this process until every task in scope is final, and every task another
    client handed over meanwhile too (they were accepted: they are not dropped)."""
    store = engine.store
    since = await store.cursor()
    await engine.start()
    # Runs the last engine left open (a kill -9; a stop on a full disk) that this start ended
    # from what held their end (tui.engine.end_log) were unfinished: their outcome counts.
    # (A new database has none: no read on the launch's serial path, ~60 us of CPU.)
    events = await store.read_events(since[0]) if since[0] else []
    ended = {e.task_id for e in events if e.to_state is not None}
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    printer = _Printer(engine, Cursor(*since), as_json)
    following = None
    interrupted = False
    try:
        async with serving(
            engine, stop.set, foreground=True, reason="the `tui run` that owned the database ended"
        ):
            following = asyncio.create_task(printer.follow())
            ids = await engine.submit(tasks) if tasks else []
            scope = set(ids) | set(engine.unsettled_ids()) | ended
            if not scope:
                what = "every stored task is final" if engine.has_tasks else "the database is empty"
                print(f"nothing to run: {what}", file=sys.stderr)
                return 0
            waiting = set(scope)
            while waiting and not interrupted:
                done = asyncio.create_task(engine.wait_settled(waiting))
                stopped = asyncio.create_task(stop.wait())
                await asyncio.wait({done, stopped}, return_when=asyncio.FIRST_COMPLETED)
                interrupted = stopped.done()
                done.cancel()
                stopped.cancel()
                waiting = set(engine.unsettled_ids())  # what others handed over meanwhile
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        await engine.stop()
        if following:
            await printer.finish(following)
    if interrupted:
        err("interrupted: running tasks were stopped; `tui run` continues them")
        return 130
    return _summary([(await engine.get(i)) for i in sorted(scope)])


class _Printer:
    """A foreground run's transitions, each printed once and in order: live while the engine
    runs, then the rest from the store once it has stopped (a cascade of 100,000 in one pass
    ends the run long before a terminal has shown its transitions)."""

    def __init__(self, engine: Engine, since: Cursor, as_json: bool) -> None:
        self.engine, self.since, self.as_json = engine, since, as_json
        self.names: dict[str, str] = {}
        self.last = since.event_id  # id of the last event handled

    async def follow(self) -> None:
        names = self.names
        # A pass per batch of events: resuming this coroutine per event cost more than the
        # printing.
        async for batch in self.engine.event_batches(self.since):
            for ev in batch:
                if isinstance(ev, OutputBatch):
                    continue
                # A coroutine per line cost more than the line: only a task's first line,
                # whose name is looked up, takes one.
                name = names.get(ev.task_id)
                if name is None:
                    await self._print(ev)
                else:
                    self._show(ev, name)

    async def finish(self, following: asyncio.Task[None]) -> None:
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        while evs := await self.engine.store.read_events(self.last):
            for ev in evs:
                await self._print(ev)

    async def _print(self, ev: EventRecord) -> None:
        name = self.names.get(ev.task_id)
        if name is None:
            rec = await self.engine.get(ev.task_id) or await self.engine.store.get_task(ev.task_id)
            name = self.names[ev.task_id] = rec.name if rec else ""
        self._show(ev, name)

    def _show(self, ev: EventRecord, name: str) -> None:
        if name:
            _print_event(ev, name, self.as_json)
        self.last = ev.id  # no await since printing: a cancel here cannot print it twice


def _print_event(ev: EventRecord, name: str, as_json: bool) -> None:
    """A transition line; for a question, what it asks and the command that answers it; a
    hook that failed, and why."""
    if ev.to_state is not None:
        print_transition(ev, name, as_json)
    elif ev.kind == "question" and not as_json:
        print_question(ev, name)
    elif ev.kind == "hook" and not ev.data.get("ok") and not as_json:
        print_hook_failure(ev, name)


def _summary(records: Sequence[TaskRecord | None]) -> int:
    flush_transitions()
    counts = dict.fromkeys(State, 0)  # in the list's order: pending … done, failed …
    for r in records:
        if r is not None:
            counts[r.state] += 1
    total = sum(counts.values())
    told = ", ".join(f"{n} {label(s)}" for s, n in counts.items() if n)
    print(f"{total} task{'' if total == 1 else 's'}: {told}", file=sys.stderr)
    by_id = {r.id: r for r in records if r is not None}

    def fine(r: TaskRecord | None, depth: int = 0) -> bool:
        # A subtask its satisfied parent cancelled (completion: any) is a plan that finished.
        if r is None or depth > len(by_id):
            return False
        return r.state in SATISFIED or fine(by_id.get(r.task.parent_task_id), depth + 1)

    return 0 if all(fine(r) for r in records) else 1


async def _run_via_server(
    store: Store, remote: RemoteEngine, tasks: list[Task], as_json: bool, approved: bool | None
) -> int:
    """Another process owns the database: hand it the tasks and follow them to the end.
    Ctrl-C only stops watching; the owner keeps running them."""
    since = remote.cursor
    if tasks:
        scope = set(await remote.submit(tasks, approved))
        err(f"submitted {len(scope)} task(s) to {_owner(remote)}")
    else:
        scope = {r.id for r in await remote.list_tasks() if not r.settled}
    records = await remote.get_many(scope)
    # Tasks just handed over are followed even if they are final already (a quick one may be
    # done before this asks): their transitions are printed from the stream, from `since`.
    if not scope or (not tasks and all(r.settled for r in records)):
        print("nothing to run: every stored task is final", file=sys.stderr)
        return 0
    names = {r.id: r.name for r in records}
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, stop.set)
    follow = asyncio.create_task(_follow(store, remote, since, scope, names, as_json))
    stopped = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({follow, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        stopped.cancel()
        follow.cancel()
    if not follow.done() or follow.cancelled():
        err("stopped watching; the tasks go on (`tui` or `tui ls` shows them)")
        return 130
    return _summary(follow.result())


async def _follow(
    store: Store,
    remote: RemoteEngine,
    since: Cursor,
    scope: set[str],
    names: dict[str, str],
    as_json: bool,
) -> list[TaskRecord]:
    """Print the scope's transitions, each once and in order, until every task in it is
    settled and every event that led there has been printed (across daemon restarts: the
    stream resumes where it was). A foreground owner that ends has finished what it accepted
    and sent every event first: the store then holds the outcome."""
    try:
        return await _follow_stream(remote, since, scope, names, as_json)
    except DaemonStopped:
        if not remote.foreground:
            raise
        records = [r for r in [await store.get_task(i) for i in sorted(scope)] if r is not None]
        if len(records) == len(scope) and all(r.settled for r in records):
            return records
        raise


async def _follow_stream(
    remote: RemoteEngine, since: Cursor, scope: set[str], names: dict[str, str], as_json: bool
) -> list[TaskRecord]:
    last = since
    upto: Cursor | None = None  # once all are settled: the stream position that shows it
    records: list[TaskRecord] = []
    async for ev in remote.events(since):
        if isinstance(ev, Notice):
            err(ev.text)
            continue
        last = advance(last, ev)
        if not isinstance(ev, OutputBatch) and ev.task_id in scope:
            _print_event(ev, names[ev.task_id], as_json)
            if upto is None and ev.to_state is not None and State(ev.to_state) in ENDED:
                reply = await remote.send(api.GetMany(task_ids=sorted(scope)))
                if all(r.settled for r in reply.tasks):
                    records, upto = reply.tasks, Cursor(*reply.cursor)
        if upto is not None and last.event_id >= upto.event_id:
            return records
    return records
