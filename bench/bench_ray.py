"""The Ray executor's cost against the local executor, in the same run (issue 16).

Starts a one-node Ray cluster of its own (``ray start --head`` in a temp dir, in a process
group this script ends), then, with an in-process engine on a fresh database each time:

1. ``--tasks`` × ``true`` at concurrency 8, local executor and Ray executor: wall time and the
   per-task overhead of Ray ((ray − local) / tasks). Target: ≤ 5 ms per task.
2. one task printing ``--lines`` lines (``seq``), every line stored: lines/s through Ray and
   locally. Target: ≥ 200k lines/s through Ray.
3. how a run's events travel from the worker: a streaming generator (what the executor uses)
   against an actor method the engine polls for the next batch, for the same batches.

Needs the ``ray`` extra (``pip install 'tui[ray]'``). Figures on a loaded machine are not
final: the 2-core machine shares its cores with the cluster's own processes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from tui.engine.ray_executor import RayExecutor
from tui.engine.scheduler import Engine
from tui.model.task import Task
from tui.store.db import Store

RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_head(temp: Path) -> tuple[int, str]:
    port, client_port = free_port(), free_port()
    proc = subprocess.Popen(
        [RAY, "start", "--head", f"--port={port}", f"--ray-client-server-port={client_port}",
         f"--temp-dir={temp}", "--num-cpus=8",
         "--include-dashboard=false", "--disable-usage-stats",
         "--object-store-memory=100000000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
    )  # fmt: skip
    if proc.wait() != 0:
        raise SystemExit("ray start --head failed")
    ip = (temp / "ray_current_cluster").read_text().strip().rsplit(":", 1)[0]
    return proc.pid, f"{ip}:{port}"


CONCURRENCY = 8


async def run_tasks(
    db: Path, tasks: list[Task], executor: RayExecutor | None, expect_lines: int = 0
) -> float:
    # A fresh database each time, -wal and -shm included (a stale -wal would bring back the
    # previous run's tasks, already COMPLETED).
    for path in db.parent.glob(db.name + "*"):
        path.unlink()
    store = await Store.open(db)
    engine = Engine(store, concurrency=CONCURRENCY, executor=executor)
    await engine.start()
    try:
        if executor is not None:
            # Warm, as in a long-lived daemon: the cluster joined, one actor per slot started.
            warm = [shell(f"w{i}", "sleep 0.5") for i in range(CONCURRENCY)]
            await engine.wait_settled(await engine.submit(warm))
        t0 = time.perf_counter()
        ids = await engine.submit(tasks)
        await engine.wait_settled(ids)
        wall = time.perf_counter() - t0
        bad = [r.name for r in await engine.list_tasks() if r.state != "COMPLETED"]
        if bad:
            raise SystemExit(f"tasks did not complete: {bad[:5]}")
        if expect_lines:
            stored = sum(n for _, n in await store.output_index(ids[0]))
            if stored != expect_lines:
                raise SystemExit(f"{stored} lines stored, not {expect_lines}")
        return wall
    finally:
        await engine.stop()
        await store.close()


def shell(name: str, script: str) -> Task:
    return Task(name=name, agent={"type": "shell", "instructions": script})


async def transport(address: str, batches: int, per_batch: int) -> tuple[float, float]:
    """Seconds to carry ``batches`` batches of lines: streaming generator, polled method."""
    import ray

    # The executor's driver is a process of its own: this one joins the cluster for this part.
    ray.init(
        address=address, log_to_driver=False, logging_level=logging.ERROR, ignore_reinit_error=True
    )

    @ray.remote
    class Source:
        def __init__(self) -> None:
            self.left = 0

        async def stream(
            self, n: int, size: int
        ) -> AsyncIterator[list[tuple[str, int, list[str]]]]:
            for i in range(n):
                yield [("out", 1, [f"line {i}"] * size)]

        def start(self, n: int) -> None:
            self.left = n

        def poll(self, size: int) -> list[tuple[object, ...]]:
            if self.left == 0:
                return []
            self.left -= 1
            return [("out", 1, ["line"] * size)]

    source = Source.remote()  # type: ignore[attr-defined]
    await source.start.remote(0)

    async def by_stream() -> float:
        t0 = time.perf_counter()
        async for ref in source.stream.options(num_returns="streaming").remote(batches, per_batch):
            await ref
        return time.perf_counter() - t0

    async def by_poll() -> float:
        await source.start.remote(batches)
        t0 = time.perf_counter()
        while await source.poll.remote(per_batch):
            pass
        return time.perf_counter() - t0

    return await by_stream(), await by_poll()


async def measure(address: str, db: Path, tasks: int, lines: int) -> None:
    trues = [shell(f"t{i}", "true") for i in range(tasks)]
    ray_ex = RayExecutor(address)
    local = await run_tasks(db, trues, None)
    on_ray = await run_tasks(db, trues, ray_ex)
    per_task = (on_ray - local) / tasks * 1000
    print(f"{tasks} x true, concurrency {CONCURRENCY}: local {local:.2f} s, ray {on_ray:.2f} s;"
          f" overhead {per_task:.1f} ms/task (target <= 5)")  # fmt: skip
    big = [shell("big", f"seq 1 {lines}")]
    local = await run_tasks(db, big, None, lines)
    on_ray = await run_tasks(db, big, ray_ex, lines)
    print(f"{lines} lines: local {lines / local / 1000:.0f}k lines/s,"
          f" ray {lines / on_ray / 1000:.0f}k lines/s (target >= 200k)")  # fmt: skip
    stream, poll = await transport(address, 2000, 100)
    print(f"2000 batches of 100 lines: streaming generator {stream * 1000:.0f} ms,"
          f" polled method {poll * 1000:.0f} ms")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=1000)
    p.add_argument("--lines", type=int, default=1_000_000)
    p.add_argument("--concurrency", type=int, default=8)
    args = p.parse_args()
    global CONCURRENCY
    CONCURRENCY = args.concurrency
    temp = Path(tempfile.mkdtemp(prefix="bray", dir="/tmp"))
    group, address = start_head(temp)
    try:
        print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; ray at {address}")
        asyncio.run(measure(address, temp / "bench.db", args.tasks, args.lines))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        subprocess.run(["rm", "-rf", str(temp)], check=False)


if __name__ == "__main__":
    main()
