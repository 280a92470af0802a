"""The daemon gives a burst's freed heap back (tui.daemon.memory)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tui.daemon.memory import _malloc_trim

# In a process of its own: the test process's heap is whatever the suite left in it.
BURST = """
import gc
from tui.daemon.memory import rss_bytes, trim_heap
base = rss_bytes()
burst = [bytes(1000) + str(i).encode() for i in range(150_000)]  # ~150 MB from malloc
keep = burst[-1]  # the heap's top stays in use: it cannot simply shrink
grown = rss_bytes()
del burst
gc.collect()
freed = rss_bytes()  # all free, and still resident: what glibc keeps for reuse
trimmed = trim_heap()
print(base >> 20, grown >> 20, freed >> 20, rss_bytes() >> 20, trimmed)
"""


@pytest.mark.skipif(_malloc_trim() is None, reason="no glibc malloc_trim here")
def test_freed_burst_goes_back_to_the_system() -> None:
    out = subprocess.run([sys.executable, "-c", BURST], capture_output=True, text=True, check=True)
    *sizes, trimmed = out.stdout.split()
    base, grown, freed, after = (int(v) for v in sizes)
    assert trimmed == "True"
    assert grown - base > 100, out.stdout  # the burst was resident
    assert freed - base > 100, out.stdout  # and freed, it stayed so
    assert after - base < 20, out.stdout  # the trim gave it back
