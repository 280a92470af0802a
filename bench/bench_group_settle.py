"""How long settling a group parent costs as its children end one by one (on demand; not a
test). A group of N children is submitted to an engine that does not start runs; each child
is then moved RUNNING -> COMPLETED in the store, one at a time, and the engine settles its
parent after each, as its schedule loop does. Printed: the time spent settling (the part that
used to rescan every child on each change: quadratic) and the store transitions beside it.

    .venv/bin/python bench/bench_group_settle.py [N ...]     # default: 1000 10000
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import yaml

from tui.engine.scheduler import Engine
from tui.model.loader import load_task_text
from tui.model.states import State
from tui.store.db import Move, Store


def group_file(n: int) -> str:
    children = [
        {"name": f"c{i}", "agent": {"type": "shell", "instructions": "true"}} for i in range(n)
    ]
    return yaml.safe_dump({"tasks": [{"name": "grp", "id": "grp", "subtasks": children}]})


async def settle_time(n: int, db: Path) -> tuple[float, float, str]:
    loaded = load_task_text(group_file(n), "group.yaml")
    store = await Store.open(db)
    try:
        engine = Engine(store)
        await engine.load()
        await engine.submit(loaded.tasks)
        await engine._settle_subtasks()  # the group lets its children out of PENDING
        kids = [t.id for t in loaded.tasks if t.parent_task_id]
        started = await store.move_many(
            [(Move(k, State.QUEUED, State.RUNNING, "bench", {}), None) for k in kids]
        )
        assert all(started), "children not QUEUED"
        for rec in started:
            assert rec is not None
            engine._took(rec)
        await engine._settle_subtasks()
        settling = storing = 0.0
        for k in kids:
            t0 = time.perf_counter()
            rec = await store.transition(k, State.RUNNING, State.COMPLETED, "bench", result='"x"')
            assert rec is not None
            engine._took(rec)
            t1 = time.perf_counter()
            await engine._settle_subtasks()
            settling += time.perf_counter() - t1
            storing += t1 - t0
        parent = await store.get_task("grp")
        assert parent is not None
        return settling, storing, parent.state.value
    finally:
        await store.close()


async def main(sizes: list[int]) -> None:
    print(f"{'children':>9} {'settling (s)':>13} {'per child (us)':>15} {'store (s)':>10}  parent")
    for n in sizes:
        with tempfile.TemporaryDirectory() as d:
            settling, storing, state = await settle_time(n, Path(d) / "bench.db")
        print(f"{n:>9} {settling:>13.3f} {settling / n * 1e6:>15.1f} {storing:>10.3f}  {state}")


if __name__ == "__main__":
    asyncio.run(main([int(a) for a in sys.argv[1:]] or [1000, 10000]))
