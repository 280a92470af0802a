"""Garbage-collector settings for the long-lived processes (the app, the daemon).

At 50,000 output lines a second the collector's pauses were most of a key press's tail
latency in the app (bench_app.py, attached: p95 67–105 ms with the defaults, ~60 ms tuned;
~50 ms with no collector at all). Young collections every 700 allocations are what the
defaults do; most of what a busy viewer allocates (lines, segments, events) dies young or is
never a cycle, so collecting far less often costs little memory and many pauses.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

YOUNG = 50_000  # allocations between young collections (default 700)


def tune_gc(*, collect: bool = True) -> Callable[[], None]:
    """Collect less often, and keep what exists now (modules, classes, widgets: all of it
    made at start-up and kept) out of every later full collection. Returns what undoes it,
    for a process that goes on without what it froze (a test that ends an app).

    ``collect=False`` (a command that tunes from its first instant, as `tui run` does) skips
    the full collection first: there is next to nothing to free yet."""
    before = gc.get_threshold()
    if collect:
        gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG, 20, 100)

    def restore() -> None:
        gc.set_threshold(*before)
        gc.unfreeze()

    return restore
