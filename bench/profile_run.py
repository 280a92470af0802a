"""Profile ``tui <args>`` in-process, every thread included (aiosqlite runs SQLite in its own).

``python -m cProfile`` only sees the main thread, so the time the aiosqlite worker thread
spends inside SQLite shows up there as nothing but ``epoll.poll`` waits. This runner gives
each new thread its own ``cProfile.Profile`` and prints the main thread and the worker
threads separately.

    .venv/bin/python bench/profile_run.py [--top N] [--out DIR] -- run FILE --db PATH
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import threading
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=25, help="rows per table (default 25)")
    ap.add_argument("--out", type=Path, help="also write main.prof / threads.prof here")
    ap.add_argument("--sort", default="tottime", help="pstats sort key (default tottime)")
    ap.add_argument("tui_args", nargs=argparse.REMAINDER, help="arguments for `tui`")
    ns = ap.parse_args()
    args = [a for a in ns.tui_args if a != "--"] if ns.tui_args[:1] == ["--"] else ns.tui_args

    from tui.cli.main import main as tui_main

    thread_profs: list[cProfile.Profile] = []
    lock = threading.Lock()

    def start_thread_profile(*_: object) -> None:
        # Called as the new thread's first profile event: swap in a real profiler.
        prof = cProfile.Profile()
        with lock:
            thread_profs.append(prof)
        prof.enable()

    threading.setprofile(start_thread_profile)
    main_prof = cProfile.Profile()
    main_prof.enable()
    try:
        code = tui_main(args)
    finally:
        main_prof.disable()
        threading.setprofile(None)

    main_stats = pstats.Stats(main_prof, stream=io.StringIO())
    report(f"main thread (event loop), sorted by {ns.sort}", main_stats, ns.sort, ns.top)
    with lock:
        profs = list(thread_profs)
    if profs:
        # Profile objects of finished threads still hold their data: snapshot, don't disable.
        for p in profs:
            p.snapshot_stats()
        tstats = pstats.Stats(profs[0], stream=io.StringIO())
        for p in profs[1:]:
            tstats.add(p)
        report(f"{len(profs)} worker thread(s), sorted by {ns.sort}", tstats, ns.sort, ns.top)
        if ns.out:
            ns.out.mkdir(parents=True, exist_ok=True)
            tstats.dump_stats(ns.out / "threads.prof")
    if ns.out:
        ns.out.mkdir(parents=True, exist_ok=True)
        main_stats.dump_stats(ns.out / "main.prof")
    return code


def report(title: str, stats: pstats.Stats, sort: str, top: int) -> None:
    buf = io.StringIO()
    stats.stream = buf  # type: ignore[attr-defined]
    stats.strip_dirs().sort_stats(sort).print_stats(top)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    print(f"\n=== {title} ===", file=sys.stderr)
    print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
