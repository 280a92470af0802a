"""Give a burst's freed memory back to the system.

Parsing, storing and running one file of 10,000 tasks leaves the daemon's heap at its
high-water mark (44 → 205 MB measured, docs/hardening.md) though much of it is free again:
glibc keeps freed memory for reuse. A daemon lives for days, so when its resident size has
grown by a lot since it last looked, it collects once and asks glibc to return what is free
(`malloc_trim`). Elsewhere (musl, macOS) only the collection runs.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a trim is first due: ctypes is ~1.5 ms of every `tui run`
    import ctypes

log = logging.getLogger(__name__)

TRIM_EVERY = 30.0  # seconds between looks at the resident size
TRIM_GROWTH = 64 << 20  # bytes of growth since the last trim that make it worth one
_PAGE = os.sysconf("SC_PAGE_SIZE")


@functools.cache
def _malloc_trim() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def trim_heap() -> bool:
    """Collect garbage, then return free heap memory to the system. True when glibc did."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    return bool(trim(0))


def rss_bytes() -> int:
    """This process's resident size (Linux; 0 where /proc has no statm)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:
        return 0


async def trim_when_grown(every: float = TRIM_EVERY, growth: int = TRIM_GROWTH) -> None:
    """Forever: every ``every`` seconds, trim the heap if the resident size grew by
    ``growth`` since the last trim (a look costs one read of /proc)."""
    base = rss_bytes()
    while True:
        await asyncio.sleep(every)
        now = rss_bytes()
        if now - base < growth:
            continue
        trim_heap()
        base = rss_bytes()
        log.info("heap trimmed: %d MB resident, was %d MB", base >> 20, now >> 20)
