"""`tui ls` and `tui logs`: read the store directly, so they work beside a running engine."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from tui.cli.common import err, open_store
from tui.model.duration import format_duration
from tui.model.states import State
from tui.store.db import Store
from tui.store.records import STDERR, STDOUT, TaskRecord

FOLLOW_POLL = 0.1  # seconds between looks for new lines while following


async def cmd_ls(args: argparse.Namespace) -> int:
    states = None
    if args.state:
        try:
            states = [State(args.state.upper())]
        except ValueError:
            err(f"unknown state {args.state!r}; one of: {', '.join(s.value for s in State)}")
            return 2
    async with open_store(args.db, create=False) as store:
        records = await store.list_tasks(states=states, tag=args.tag)
    if args.json:
        print(json.dumps([r.to_json() for r in records], indent=2))
        return 0
    names = {r.id: r.name for r in records}
    if records:
        print(f"{'ID':<8}  {'NAME':<24} {'STATE':<15} {'TRY':>5} {'COST':>8}  {'AGENT':<8} NOTE")
    for r in records:
        print(_ls_line(r, names))
    return 0


def _ls_line(r: TaskRecord, names: dict[str, str]) -> str:
    note = r.reason
    if r.state == State.PENDING:
        waiting = [names.get(d, d[:8]) for d in r.depends_on]
        note = f"waiting on {', '.join(waiting)}" if waiting else note
    if r.task.tags:
        note = f"[{' '.join(r.task.tags)}] {note}"
    tries = f"{r.attempt_in_round}/{r.task.retry.max_attempts}"
    timeout = f" ≤{format_duration(r.task.timeout)}" if r.task.timeout else ""
    return (
        f"{r.id[:8]:<8}  {r.name[:24]:<24} {r.state.value:<15} {tries:>5} "
        f"{r.cost_usd:>8.4f}  {r.task.agent.type:<8} {note}{timeout}"
    )


async def cmd_logs(args: argparse.Namespace) -> int:
    stream = {"stdout": STDOUT, "stderr": STDERR}.get(args.stream or "")
    async with open_store(args.db, create=False) as store:
        task_id = await store.resolve(args.task)
        if args.raw:
            return await _print_raw(store, task_id)
        after = 0
        while True:
            lines = await store.read_output(task_id, after_id=after, stream=stream)
            for ln in lines:
                sys.stdout.write(ln.text + "\n")
            if lines:
                after = lines[-1].id
                sys.stdout.flush()
                continue
            if not args.follow:
                return 0
            rec = await store.get_task(task_id)
            if rec is None or rec.settled:
                # One more read: lines committed just before the final state.
                if not await store.read_output(task_id, after_id=after, stream=stream):
                    return 0
                continue
            await asyncio.sleep(FOLLOW_POLL)


async def _print_raw(store: Store, task_id: str) -> int:
    for _run, text in await store.read_raw(task_id):
        sys.stdout.write(text + "\n")
    return 0
