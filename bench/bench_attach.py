"""Attach time: how long a viewer (the app, `tui run`) takes to attach to a running daemon
and load what the app shows first (every task and the open questions), with N tasks stored.

Baseline, measured in the same run: opening the database in-process and loading the same
tasks (what the app did before the daemon). The tasks are stored PENDING and unapproved, so
the daemon holds them without running anything.

    .venv/bin/python bench/bench_attach.py --tasks 10000 --repeat 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from tui.daemon import lifecycle
from tui.model.task import Task
from tui.store.db import Store


async def fill(db: Path, n: int) -> None:
    store = await Store.open(db)
    tasks = [
        Task.model_validate(
            {"name": f"t{i}", "tags": ["bench"], "agent": {"type": "shell", "instructions": "true"}}
        )
        for i in range(n)
    ]
    await store.insert_tasks(tasks, approved=False)
    await store.close()


async def attach_once(db: Path) -> float:
    t0 = time.perf_counter()
    remote = await lifecycle.attach(db)
    assert remote is not None
    tasks = await remote.list_tasks()
    await remote.questions()
    elapsed = time.perf_counter() - t0
    await remote.aclose()
    assert len(tasks) > 0
    return elapsed


async def local_once(db: Path) -> float:
    t0 = time.perf_counter()
    store = await Store.open(db)
    await store.list_tasks()
    await store.questions()
    elapsed = time.perf_counter() - t0
    await store.close()
    return elapsed


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tui-bench-attach-") as tmp:
        os.environ["XDG_RUNTIME_DIR"] = tmp  # a private daemon, stopped at the end
        os.environ["TUI_STATE_DIR"] = tmp
        db = Path(tmp) / "tui.db"
        await fill(db, args.tasks)
        t0 = time.perf_counter()
        remote = await lifecycle.ensure(db)
        cold = time.perf_counter() - t0
        await remote.aclose()
        try:
            attach = statistics.median([await attach_once(db) for _ in range(args.repeat)])
            local = statistics.median([await local_once(db) for _ in range(args.repeat)])
        finally:
            await lifecycle.stop(db)
    print(f"tasks stored:                     {args.tasks:,}")
    print(f"daemon start (cold, recovers all): {cold:.2f} s")
    print(f"attach + load tasks + questions:   {attach:.3f} s (median of {args.repeat})")
    print(f"in-process open + load (baseline): {local:.3f} s")
    print(f"ratio attach / in-process:         {attach / local:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
