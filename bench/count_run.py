"""Count what one in-process ``tui run`` does: figures that do not move with the load.

SQL statements by kind (sqlite3's trace callback on the store's connection), store batches
(thread hops), turns of the event loop, frames and messages sent to the keeper, and with
``--calls`` the Python calls of the main thread (cProfile; slower). Also the process's own
CPU (``RUSAGE_SELF``: the engine and its store thread, not the keeper or the agents).

    .venv/bin/python bench/count_run.py [--calls] [--top N] -- run FILE --concurrency 8 --db X
    .venv/bin/python bench/count_run.py --phase -- run FILE ...   # the run phase alone, by thread

Runs whichever tui is first on ``sys.path``: ``PYTHONPATH=/tmp/other/src`` counts another tree.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import pstats
import re
import resource
import sqlite3
import sys
import threading
import time
from typing import Any

_LITERAL = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?(?:e[-+]?\d+)?\b|\?")
_SPACE = re.compile(r"\s+")


def kind_of(sql: str) -> str:
    """The statement with its values and spacing taken out, cut to a readable length."""
    return _SPACE.sub(" ", _LITERAL.sub("_", sql)).strip()[:110]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", action="store_true", help="count main-thread Python calls too")
    ap.add_argument("--cpu-only", action="store_true", help="no counting: wall and CPU only")
    ap.add_argument(
        "--phase",
        action="store_true",
        help="no counting: the run phase's CPU (from submit's return) by thread, and its calls",
    )
    ap.add_argument("--top", type=int, default=30, help="statement kinds shown (default 30)")
    ap.add_argument("--per", type=int, default=1001, help="divide by this many tasks (1001)")
    ap.add_argument("tui_args", nargs=argparse.REMAINDER, help="arguments for `tui`")
    ns = ap.parse_args()
    args = ns.tui_args[1:] if ns.tui_args[:1] == ["--"] else ns.tui_args

    import tui
    from tui.cli.main import main as tui_main

    # The store thread's own CPU, as it ends.
    from tui.store import tx

    store_cpu: list[float] = []
    work = tx._Thread._work

    def timed_work(self: Any) -> None:
        try:
            work(self)
        finally:
            store_cpu.append(time.thread_time())

    tx._Thread._work = timed_work  # type: ignore[method-assign]

    if ns.phase:
        return _phase(args)
    if ns.cpu_only:
        cpu0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        code = tui_main(args)
        cpu1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - wall0
        cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
        print(f"wall {wall:.3f} s, {_cpu_line(cpu, store_cpu)}", file=sys.stderr)
        return code

    statements: collections.Counter[str] = collections.Counter()
    connect = sqlite3.connect

    def counted_connect(*a: Any, **kw: Any) -> sqlite3.Connection:
        conn = connect(*a, **kw)
        conn.set_trace_callback(lambda sql: statements.update((kind_of(sql),)))
        return conn

    sqlite3.connect = counted_connect  # type: ignore[assignment]

    turns = 0
    run_once = asyncio.base_events.BaseEventLoop._run_once  # type: ignore[attr-defined]

    def counted_run_once(self: Any) -> None:
        nonlocal turns
        turns += 1
        run_once(self)

    asyncio.base_events.BaseEventLoop._run_once = counted_run_once  # type: ignore[attr-defined]

    batches = 0
    run_jobs = tx.run_jobs  # type: ignore[attr-defined]

    def counted_run_jobs(*a: Any, **kw: Any) -> Any:
        nonlocal batches
        batches += 1
        return run_jobs(*a, **kw)

    tx.run_jobs = counted_run_jobs  # type: ignore[attr-defined]

    frames = 0
    flush_times: list[float] = []
    messages: collections.Counter[str] = collections.Counter()
    try:
        from tui.procs.keeper_client import Keeper
    except ImportError:
        Keeper = None  # type: ignore[assignment,misc]
    if Keeper is not None:
        flush = Keeper._flush

        def counted_flush(self: Any) -> None:
            nonlocal frames
            if self._outbox and self._transport is not None:
                frames += 1
                messages.update(m[0] for m in self._outbox)
            t0 = time.perf_counter()
            flush(self)
            flush_times.append(time.perf_counter() - t0)

        Keeper._flush = counted_flush  # type: ignore[method-assign]

    prof = cProfile.Profile() if ns.calls else None
    cpu0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    if prof is not None:
        prof.enable()
    try:
        code = tui_main(args)
    finally:
        if prof is not None:
            prof.disable()
    cpu1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - wall0
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)

    per = ns.per
    total = sum(statements.values())
    out = sys.stderr
    print(f"\n=== counts of `tui {' '.join(args)}` ({tui.__file__}) ===", file=out)
    print(f"wall {wall:.3f} s, {_cpu_line(cpu, store_cpu)}", file=out)
    print(f"SQL statements {total:,} ({total / per:.2f} a task)", file=out)
    print(f"store batches {batches:,}; loop turns {turns:,}", file=out)
    if Keeper is not None:
        print(f"keeper frames {frames:,}; messages {dict(messages)}", file=out)
        ft = sorted(flush_times)
        if ft:
            print(
                f"frames sent in {sum(ft):.3f} s (median {ft[len(ft) // 2] * 1e6:.0f} us,"
                f" p90 {ft[len(ft) * 9 // 10] * 1e3:.2f} ms, max {ft[-1] * 1e3:.1f} ms)",
                file=out,
            )
    if prof is not None:
        st = pstats.Stats(prof)
        calls = st.total_calls  # type: ignore[attr-defined]
        print(f"main-thread Python calls {calls:,} ({calls / per:.0f} a task)", file=out)
    for sql, n in statements.most_common(ns.top):
        print(f"{n:7,} {n / per:6.2f}  {sql}", file=out)
    return code


def _phase(args: list[str]) -> int:
    """The run phase alone: the main thread's and the store thread's CPU from
    ``Engine.submit``'s return to ``Engine.stop`` (their own clocks, so neither the keeper nor
    the agents count). With TUI_PHASE_CALLS=1 also the main thread's Python calls over it
    (cProfile, whose cost is then in the CPU figure too), dumped to $TUI_PHASE_DUMP if set."""
    import os

    from tui.cli.main import main as tui_main
    from tui.engine.scheduler import Engine

    calls = os.environ.get("TUI_PHASE_CALLS") == "1"
    # Timed by the main thread's own CPU clock: waits (the selector's, the GIL's) are not time.
    prof = cProfile.Profile(time.thread_time) if calls else None
    mark: dict[str, float] = {}
    submit = Engine.submit

    async def timed_submit(self: Any, *a: Any, **kw: Any) -> Any:
        ids = await submit(self, *a, **kw)
        mark["main"] = time.thread_time()
        mark["store"] = _store_clock()
        if prof is not None:
            prof.enable()
        return ids

    Engine.submit = timed_submit  # type: ignore[method-assign]
    ended: dict[str, float] = {}
    close = Engine.stop

    async def timed_stop(self: Any) -> None:
        if prof is not None:
            prof.disable()
        ended["main"] = time.thread_time()
        ended["store"] = _store_clock()
        await close(self)

    Engine.stop = timed_stop  # type: ignore[method-assign]
    code = tui_main(args)
    main_cpu = ended["main"] - mark["main"]
    store = ended["store"] - mark["store"]
    line = f"run phase: main thread {main_cpu:.3f} s, store thread {store:.3f} s"
    if prof is not None:
        n = pstats.Stats(prof).total_calls  # type: ignore[attr-defined]
        line += f", main-thread calls {n:,} ({n / 1001:.0f} a task)"
        if os.environ.get("TUI_PHASE_DUMP"):
            prof.dump_stats(os.environ["TUI_PHASE_DUMP"])
    print(f"{line} (load {_load()})", file=sys.stderr)
    return code


def _store_clock() -> float:
    for th in threading.enumerate():
        if th.name == "tui-store" and th.ident is not None:
            return time.clock_gettime(time.pthread_getcpuclockid(th.ident))
    return 0.0


def _cpu_line(cpu: float, store_cpu: list[float]) -> str:
    for th in threading.enumerate():
        if th.name == "tui-store":
            th.join(5)  # stopped as the store closed: its CPU is known once it has ended
    return f"this process's CPU {cpu:.3f} s, store thread {sum(store_cpu):.3f} s (load {_load()})"


def _load() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


if __name__ == "__main__":
    sys.exit(main())
