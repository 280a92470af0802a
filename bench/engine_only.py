"""The engine and its store alone on the DAG: every run ends at once, no process is started.

What is left of a run's CPU without the agent's path (adapter, keeper, pipes, the printer):
the engine's bookkeeping on the loop and the store's transactions on its thread, from the
moment ``submit`` returns until every task has settled. Load-independent enough to compare
trees where a whole ``tui run`` is too noisy (its agents share the two cores):

    .venv/bin/python bench/engine_only.py [--tasks 1000] [--repeat 5]
    PYTHONPATH=/tmp/other/src .venv/bin/python bench/engine_only.py   # another tree

Prints the run phase's process CPU, the main thread's, the rest (the store thread) and the
wall time of each repetition, then their medians.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_dag import tui_yaml


class _AtOnce:
    """An executor whose every run completes as soon as it starts."""

    async def run(self, run: Any, rec: Any, began: Any, host: Any) -> Any:
        from tui.engine.adapter import RunResult
        from tui.model.states import State

        await asyncio.sleep(0)
        return RunResult(State.COMPLETED, exit_code=0, result="")

    async def kill(self, run: Any) -> None:
        return None

    async def close(self) -> None:
        return None


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


async def _once(tasks: list[Any], db: Path, concurrency: int) -> tuple[float, ...]:
    from tui.engine.scheduler import Engine
    from tui.store.db import Store

    store = await Store.open(db)
    engine = Engine(store, concurrency=concurrency, executor=_AtOnce())
    await engine.start()
    s0, n0 = _cpu(), time.thread_time()
    ids = await engine.submit(tasks)
    p0, m0, w0 = _cpu(), time.thread_time(), time.perf_counter()
    await engine.wait_settled(ids)
    p1, m1, wall = _cpu(), time.thread_time(), time.perf_counter() - w0
    await engine.stop()
    await store.close()
    return p1 - p0, m1 - m0, wall, p0 - s0, m0 - n0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000, help="tasks besides the fan-in (1000)")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ns = ap.parse_args()

    import tui
    from tui.config.task_files import load_files

    with tempfile.TemporaryDirectory(prefix="tui-engine-only-") as tmp:
        dag = Path(tmp) / "dag.yaml"
        dag.write_text(tui_yaml(ns.tasks))
        tasks = load_files([dag]).tasks
        rows = []
        for i in range(ns.repeat):
            once = asyncio.run(_once(tasks, Path(tmp) / f"{i}.db", ns.concurrency))
            proc, main_, wall, sub, sub_main = once
            rows.append((proc, main_, proc - main_, wall, sub, sub_main, sub - sub_main))
            print(
                f"run {i + 1}: process {proc:.3f} s CPU, main thread {main_:.3f}, "
                f"store thread {proc - main_:.3f}, wall {wall:.3f}; submit: main thread "
                f"{sub_main:.3f}, store thread {sub - sub_main:.3f} (load {_load()})"
            )
    med = [statistics.median(r[k] for r in rows) for k in range(7)]
    print(
        f"median of {ns.repeat} ({tui.__file__}): process {med[0]:.3f} s CPU, main thread "
        f"{med[1]:.3f}, store thread {med[2]:.3f}, wall {med[3]:.3f}; submit: main thread "
        f"{med[5]:.3f}, store thread {med[6]:.3f}"
    )
    return 0


def _load() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


if __name__ == "__main__":
    sys.exit(main())
