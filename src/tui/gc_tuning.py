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


_held = False  # between hold_gc and settle_gc (or hold_gc's undo)


def hold_gc() -> Callable[[], None]:
    """No collection at all while a command builds what it keeps (`tui run`: its modules, a
    task file's tasks), until ``settle_gc``; returns what undoes it (and ``settle_gc``'s
    tuning). A young collection mid-launch walked every task built so far (~8 ms for 1,001
    tasks), ~30 default ones before it ~3.5 ms more; the launch's cyclic garbage is ~1,000
    objects (classes, argparse's formatters) whatever the file's size, so holding costs no
    memory that grows."""
    global _held
    before = gc.get_threshold()
    was_enabled = gc.isenabled()
    gc.disable()
    _held = True

    def restore() -> None:
        global _held
        _held = False
        gc.set_threshold(*before)
        gc.unfreeze()
        if was_enabled:
            gc.enable()
        else:
            gc.disable()

    return restore


def settle_gc() -> None:
    """What exists now is kept to the end (``hold_gc``): freeze it out of every later
    collection, and collect rarely from here on (``tune_gc``'s thresholds). Does nothing
    unless held, and once."""
    global _held
    if not _held:
        return
    _held = False
    tune_gc(collect=False)  # its undo is hold_gc's
    gc.enable()
