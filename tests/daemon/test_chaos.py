"""kill -9 of the daemon at random points of a 50-task run, 20 times over: every task ends in a
legal state, no line any viewer saw is lost, and no agent process outlives the run."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
import uuid
from pathlib import Path

from tests.cli.cli_support import marker_processes
from tests.conftest import shell_task
from tests.daemon.conftest import db_rows, stored_output

from tui.daemon.lifecycle import _alive, ensure
from tui.daemon.remote import RemoteEngine
from tui.engine.events import Notice, OutputBatch
from tui.model.states import State, valid_transition
from tui.store.records import OutputLine

ROUNDS = 20


def seq(line: OutputLine) -> int:
    return line.seq


TASKS = 50


def wait_dead(pid: int) -> None:
    deadline = time.monotonic() + 30
    while _alive(pid):  # reaps it: the test started it, so it is our child
        assert time.monotonic() < deadline, f"daemon {pid} survived SIGKILL"
        time.sleep(0.01)


async def look(remote: RemoteEngine, seen: dict[int, str], count: int) -> None:
    """Watch as a viewer does, remembering every line shown, until ``count`` items came."""
    shown = 0
    since = remote.cursor
    if await finished(remote):
        return
    async for item in remote.events(since):
        if isinstance(item, OutputBatch):
            seen.update((ln.id, ln.text) for ln in item.lines)
        if not isinstance(item, Notice):
            shown += 1
        if shown >= count or (getattr(item, "kind", "") == "state" and await finished(remote)):
            return


async def finished(remote: RemoteEngine) -> bool:
    records = await remote.list_tasks()
    return bool(records) and all(r.settled for r in records)


async def test_sigkill_the_daemon_at_random_points(db: Path) -> None:
    seed = int(os.environ.get("TUI_CHAOS_SEED") or time.time_ns() % 100_000)
    rng = random.Random(seed)
    marker = f"tui-chaos-{uuid.uuid4().hex[:10]}"
    tasks = [
        shell_task(
            f"t{n}",
            f": {marker}; for i in $(seq 1 20); do echo t{n}-$i; sleep 0.01; done",
            id=f"t{n:02d}",
            retry={"max_attempts": 30},
            depends_on=[f"t{n - 1:02d}"] if n % 5 else [],
        )
        for n in range(TASKS)
    ]
    seen: dict[int, str] = {}  # every output line any viewer was shown, by id
    for round_no in range(ROUNDS):
        remote = await ensure(db, concurrency=8)
        pid = remote.pid
        try:
            if round_no == 0:
                await remote.submit(tasks)
            # Kill after a random number of events and output batches seen.
            await asyncio.wait_for(look(remote, seen, rng.randint(1, 40)), 60)
        finally:
            os.kill(pid, signal.SIGKILL)
            await remote.aclose()
        wait_dead(pid)

    remote = await ensure(db, concurrency=8)  # the last start recovers and finishes the run
    try:
        await asyncio.wait_for(look(remote, seen, 10**9), 120)
        records = await remote.list_tasks()
    finally:
        await remote.aclose()

    context = f"(seed {seed}: rerun with TUI_CHAOS_SEED={seed})"
    assert len(records) == TASKS, context
    assert all(r.state == State.COMPLETED for r in records), (
        [(r.name, r.state, r.reason) for r in records if r.state != State.COMPLETED],
        context,
    )
    # Every transition in the journal is legal, in order, for every task.
    for tid, frm, to in db_rows(
        db, "SELECT task_id, from_state, to_state FROM transitions ORDER BY id"
    ):
        assert frm is None or valid_transition(State(frm), State(to)), (tid, frm, to, context)
    # No line a viewer was shown is lost or changed.
    stored = {ln.id: ln.text for ln in stored_output(db)}
    assert {i: stored.get(i) for i in seen} == seen, context
    # Each attempt's lines are whole and in order; the last attempt of each task has all 20.
    for r in records:
        [(run_id,)] = db_rows(db, f"SELECT max(id) FROM runs WHERE task_id = '{r.id}'")
        texts = [ln.text for ln in sorted(stored_output(db, f"run_id = {run_id}"), key=seq)]
        assert texts == [f"{r.name}-{i}" for i in range(1, 21)], (r.name, context)
    assert marker_processes(marker) == [], f"orphaned agent processes {context}"
