"""`tui ls` and `tui logs`: read the store directly, so they work beside a running engine;
`tui logs -f` then follows the engine's event stream."""

from __future__ import annotations

import argparse
import json
import sys

from tui.cli.common import err, one_line, open_store, printable
from tui.daemon.lifecycle import attach, ensure
from tui.daemon.remote import DaemonStopped, RemoteEngine
from tui.engine.events import Cursor, Notice, OutputBatch, advance
from tui.model.duration import format_duration
from tui.model.states import State, label, states_named
from tui.model.tree import short_name, tree_order
from tui.store.db import Store
from tui.store.records import STDERR, STDOUT, OutputLine, TaskRecord


async def cmd_ls(args: argparse.Namespace) -> int:
    states = None
    if args.state:
        try:
            states = sorted(states_named(args.state))  # "done", COMPLETED or "failed"
        except ValueError as e:
            err(f"--state: {e}")
            return 2
    async with open_store(args.db, create=False) as store:
        records = await store.list_tasks(states=states, tag=args.tag)
    if args.json:
        print(json.dumps([r.to_json() for r in records], indent=2))
        return 0
    names = {r.id: r.name for r in records}
    if records:
        print(f"{'ID':<8}  {'NAME':<24} {'STATE':<11} {'TRY':>5} {'COST':>8}  {'AGENT':<8} NOTE")
    for r, depth in tree_order(records, lambda r: r.id, lambda r: r.task.parent_task_id):
        print(printable(_ls_line(r, names, depth)))
    return 0


def _ls_line(r: TaskRecord, names: dict[str, str], depth: int = 0) -> str:
    note = r.reason
    if r.state == State.PENDING:
        waiting = [names.get(d, d[:8]) for d in r.depends_on]
        note = f"waiting on {', '.join(waiting)}" if waiting else note
    if r.task.tags:
        note = f"[{' '.join(r.task.tags)}] {note}"
    tries = f"{r.attempt_in_round}/{r.task.retry.max_attempts}"
    timeout = f" ≤{format_duration(r.task.timeout)}" if r.task.timeout else ""
    # A subtask is shown under its parent, indented, by its own part of the name.
    name = "  " * depth + one_line(short_name(r.name, names.get(r.task.parent_task_id, "")))
    # A task waiting on its classifier shows that phase, and no agent yet.
    state, agent = (r.phase, "?") if r.phase else (label(r.state), r.task.agent.type)
    return (
        f"{r.id[:8]:<8}  {name[:24]:<24} {state:<11} {tries:>5} "
        f"{r.cost_usd:>8.4f}  {agent:<8} {one_line(note)}{timeout}"
    )


async def cmd_logs(args: argparse.Namespace) -> int:
    stream = {"stdout": STDOUT, "stderr": STDERR}.get(args.stream or "")
    async with open_store(args.db, create=False) as store:
        task_id = await store.resolve(args.task)
        if args.raw:
            return await _print_raw(store, task_id)
        events_seen = (await store.cursor())[0]  # before the state is read: nothing missed
        after = 0
        while lines := await store.read_output(task_id, after_id=after, stream=stream):
            _write(lines)
            after = lines[-1].id
        rec = await store.get_task(task_id)
        if not args.follow or rec is None or rec.settled:
            return 0
        # Following: what is stored is out; the rest comes from the engine's event stream
        # (started if none runs: nothing else would move the task on).
        remote = await attach(store.path)
        if remote is None:
            # Its owner (a foreground `tui run`) may have ended with it since it was read:
            # asked after the attach failed, settled means no daemon is needed for it.
            rec = await store.get_task(task_id)
            if rec is not None and not rec.settled:
                remote = await ensure(store.path)
    printed = [after]  # the last line id written, as the stream goes
    if remote is not None:
        try:
            await _follow_output(
                remote, task_id, stream, Cursor(events_seen, after), printed, args.db
            )
        except DaemonStopped:
            if not remote.foreground:  # a foreground owner ends once the task is final
                raise
        finally:
            await remote.aclose()
    # The task is final: whatever the stream had not brought yet is stored.
    async with open_store(args.db, create=False) as store:
        while lines := await store.read_output(task_id, after_id=printed[0], stream=stream):
            _write(lines)
            printed[0] = lines[-1].id
    return 0


async def _follow_output(
    remote: RemoteEngine,
    task_id: str,
    stream: int | None,
    since: Cursor,
    printed: list[int],
    db: str | None,
) -> None:
    """The task's lines after ``since`` until it is settled (``printed[0]``: the last line id
    written)."""
    last = since
    upto: Cursor | None = None
    async for item in remote.events(last):
        if isinstance(item, Notice):
            # The owner went away: a foreground `tui run` ends with its tasks, maybe before
            # this stream began. A settled task's rest is in the database (the caller prints
            # it): no daemon is started to tell what is already known.
            if item.kind == "disconnected" and await _settled(db, task_id):
                return
            err(item.text)
            continue
        last = advance(last, item)
        if isinstance(item, OutputBatch):
            mine = [ln for ln in item.lines_of(task_id) if stream is None or ln.stream == stream]
            _write(mine)
            if mine:
                printed[0] = mine[-1].id
        elif upto is None and item.task_id == task_id and item.to_state is not None:
            # Asked of the database, not the owner: a foreground `tui run` closes as its last
            # task settles, and a request to it then would start a daemon in its place.
            upto = await _settled_at(db, task_id)
        if upto is not None and last.event_id >= upto.event_id and last.output_id >= upto.output_id:
            return


async def _settled(db: str | None, task_id: str) -> bool:
    async with open_store(db, create=False) as store:
        rec = await store.get_task(task_id)
    return rec is None or rec.settled


async def _settled_at(db: str | None, task_id: str) -> Cursor | None:
    """How far the stream must go to have brought all of a settled task (None: not settled;
    the cursor is read after the task, so it is at or past the settling)."""
    async with open_store(db, create=False) as store:
        rec = await store.get_task(task_id)
        at = Cursor(*await store.cursor())
    return at if rec is None or rec.settled else None


def _write(lines: list[OutputLine]) -> None:
    if lines:
        sys.stdout.write("".join(ln.text + "\n" for ln in lines))
        sys.stdout.flush()


async def _print_raw(store: Store, task_id: str) -> int:
    for _run, text in await store.read_raw(task_id):
        sys.stdout.write(text + "\n")
    return 0
