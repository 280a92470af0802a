"""Captured output through the real engine and a real shell: a line split across reads is
stored once and whole, and stdout/stderr keep the order in which they arrived, for every
reader (store pages, the log view's line ranges, the event stream)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

from tui.engine.events import Cursor, Event, OutputBatch
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store
from tui.store.records import STDERR, STDOUT

# Each `read _ < goN` holds the script until the test has seen the previous output stored, so
# what arrives in which read (and on which pipe first) is fixed, not left to the scheduler.
SCRIPT = """\
printf 'o1\\nab'
read _ < go1
printf 'c\\n'
read _ < go2
echo e2 >&2
read _ < go3
echo o3
printf 'tail'
"""


async def _until_stored(stream: AsyncIterator[Event], text: str) -> None:
    async with asyncio.timeout(30):
        async for ev in stream:
            if isinstance(ev, OutputBatch) and any(ln.text == text for ln in ev.lines):
                return


async def _release(fifo: Path) -> None:
    # Opening a FIFO for writing blocks until the script opens it for reading.
    await asyncio.to_thread(fifo.write_text, "go\n")


async def test_split_line_and_interleaved_streams_keep_their_order(
    store: Store, tmp_path: Path
) -> None:
    for name in ("go1", "go2", "go3"):
        os.mkfifo(tmp_path / name)
    agent = {"type": "shell", "instructions": SCRIPT, "project_dir": str(tmp_path)}
    t = Task.model_validate({"name": "mix", "agent": agent})
    async with Engine(store) as engine:
        watcher = engine.events(Cursor())
        viewer = engine.events(Cursor())  # reads everything only at the end
        await engine.submit([t])
        await _until_stored(watcher, "o1")  # "ab" came in the same read, unfinished
        await _release(tmp_path / "go1")
        await _until_stored(watcher, "abc")
        await _release(tmp_path / "go2")
        await _until_stored(watcher, "e2")
        await _release(tmp_path / "go3")
        await asyncio.wait_for(engine.wait_settled([t.id]), 30)
        rec = await engine.get(t.id)
        seen: list[tuple[int, int, int, str]] = []
        async with asyncio.timeout(30):
            async for ev in viewer:
                if isinstance(ev, OutputBatch):
                    seen += [(ln.id, ln.seq, ln.stream, ln.text) for ln in ev.lines]
                    if seen[-1][3] == "tail":
                        break
    assert rec is not None and rec.state == State.COMPLETED
    expected = [
        (1, STDOUT, "o1"),
        (2, STDOUT, "abc"),
        (3, STDERR, "e2"),
        (4, STDOUT, "o3"),
        (5, STDOUT, "tail"),
    ]
    stored = await store.read_output(t.id)
    assert [(ln.seq, ln.stream, ln.text) for ln in stored] == expected
    assert [(seq, stream, text) for _, seq, stream, text in seen] == expected
    assert [i for i, *_ in seen] == [ln.id for ln in stored]
    [(run_id, count)] = await store.output_index(t.id)
    assert count == 5
    lines = await store.read_run_lines(run_id, 2, 4)
    assert [(ln.seq, ln.text) for ln in lines] == [(2, "abc"), (3, "e2"), (4, "o3")]
    assert [ln.text for ln in await store.read_output(t.id, stream=STDERR)] == ["e2"]
