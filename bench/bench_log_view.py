"""LogView on a big log: open time, memory held, and page-jump latency.

Fills a fresh store with one task of N lines (default 1,000,000; a few colour-coded, some
stderr), then in a headless Textual app: times ``show_task`` and the first paint of the tail,
jumps to random places (and with wrap on), and reports the widget's cached lines and the
Python memory allocated while viewing (tracemalloc). Memory must not grow with N.

    .venv/bin/python bench/bench_log_view.py [--lines N]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
import tracemalloc
from pathlib import Path

from textual.app import App, ComposeResult

from tui.app.widgets.log_view import LogView
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store


class _App(App[None]):
    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store

    def compose(self) -> ComposeResult:
        yield LogView(self.store)


async def fill(store: Store, n: int) -> str:
    task = Task.model_validate({"name": "big", "agent": {"type": "shell", "instructions": "x"}})
    await store.insert_tasks([task], approved=True)
    await store.transition(task.id, State.PENDING, State.QUEUED)
    began = await store.begin_run(task.id, "bench")
    assert began is not None
    run_id = began[0]
    now = time.time()
    for i in range(1, n + 1, 50_000):
        rows = [
            (
                task.id,
                run_id,
                2 if s % 17 == 0 else 1,
                s,
                now,
                f"\x1b[32mok\x1b[0m line {s}\tof {n}" if s % 5 == 0 else f"line {s} of {n}",
            )
            for s in range(i, min(n, i + 49_999) + 1)
        ]
        await store.append_output(rows)
    return task.id


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "bench.db")
        t0 = time.perf_counter()
        task_id = await fill(store, n)
        print(f"filled {n:,} lines in {time.perf_counter() - t0:.1f}s")
        app = _App(store)
        async with app.run_test(size=(120, 40)) as pilot:
            view = app.query_one(LogView)
            t0 = time.perf_counter()
            await view.show_task(task_id)
            opened = time.perf_counter() - t0
            tail = f"line {n} of {n}"
            while not any(tail in view.render_line(y).text for y in range(40)):
                await pilot.pause()
            painted = time.perf_counter() - t0
            print(f"show_task {opened * 1000:.1f} ms, tail painted after {painted * 1000:.1f} ms")
            rng = random.Random(1)

            async def jumps(count: int) -> list[float]:
                lat: list[float] = []
                for _ in range(count):
                    view.scroll_to(y=rng.randrange(view.virtual_size.height), animate=False)
                    t0 = time.perf_counter()
                    while True:
                        await pilot.pause()
                        rows = [view.render_line(y).text for y in range(38)]
                        if not any(r.startswith("…") for r in rows):
                            break
                    lat.append(time.perf_counter() - t0)
                return sorted(lat)

            for wrap in (False, True):
                view.wrap = wrap
                lat = await jumps(100)
                print(
                    f"wrap={wrap}: 100 random jumps, latency median {lat[50] * 1000:.1f} ms,"
                    f" p95 {lat[95] * 1000:.1f} ms; cached lines {view.cached_line_count:,}"
                )
            worker = view.action_search("no such text")
            t0 = time.perf_counter()
            if worker is not None:
                await worker.wait()
            print(f"search miss over {n:,} lines: {time.perf_counter() - t0:.2f}s (UI live)")
            tracemalloc.start()
            view.wrap = False
            await jumps(100)
            current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(
                f"memory allocated over 100 more jumps (tracemalloc): still held"
                f" {current / 1e6:.1f} MB, peak {peak / 1e6:.1f} MB"
            )
        await store.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    asyncio.run(main(ap.parse_args().lines))
