"""A full disk refuses a batch of output: the lines of a quiet task that share the batch with
the flood that filled the disk are still stored, and only the flood's run is told to fail."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import shell_task
from tui.engine.events import OutputBatch
from tui.engine.output import LineCounter, OutputBuffer
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.store.db import DiskFullError, Store
from tui.store.records import STDOUT


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


async def test_a_quiet_runs_lines_survive_the_flood_that_filled_the_disk(small_disk: Path) -> None:
    store = await Store.open(small_disk / "tui.db")
    try:
        recs = await store.insert_tasks(
            [shell_task("small", "seq 1 100"), shell_task("flood", "yes")], approved=True
        )
        runs = {}
        for rec in recs:
            await store.transition(rec.id, State.PENDING, State.QUEUED)
            began = await store.start_run(rec.id, "test-engine")
            assert began is not None, rec.state
            runs[rec.task.name] = LineCounter(rec.id, began.run_id)
        (small_disk / "filler").write_bytes(b"\0" * 1_000_000)

        published: list[OutputBatch] = []
        refused: list[set[int]] = []
        buffer = OutputBuffer(store, published.append, lambda e, ids: refused.append(ids))
        small = [str(i) for i in range(1, 101)]
        # One batch: the flood's lines (more than the disk has left) and the quiet task's.
        await buffer.add(runs["flood"], STDOUT, ["x" * 70] * 15_000)
        await buffer.add(runs["small"], STDOUT, small)
        await buffer.flush()

        assert refused == [{runs["flood"].run_id}]
        stored = await store.read_output(runs["small"].task_id)
        assert [ln.text for ln in stored] == small
        assert [ln.text for b in published for ln in b.lines] == small
        with pytest.raises(DiskFullError):  # the flood really did not fit
            await store.append_raw(
                [(runs["flood"].task_id, runs["flood"].run_id, 1, 0.0, "x" * 3_000_000)]
            )
    finally:
        await store.close()


async def test_a_run_that_ended_with_its_last_lines_refused_is_not_completed(
    small_disk: Path,
) -> None:
    store = await Store.open(small_disk / "tui.db")
    try:
        (small_disk / "filler").write_bytes(b"\0" * 1_000_000)
        # Exits at once with ~1 MB unstored: its end comes before the refused flush.
        t = shell_task(
            "burst",
            "yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx | head -n 15000",
        )
        async with Engine(store) as engine:
            [task_id] = await engine.submit([t])
            async with asyncio.timeout(60):
                await engine.wait_settled([task_id])
            rec = await store.get_task(task_id)
        assert rec is not None
        assert rec.state == State.FAILED, rec
        assert "database disk is full" in (rec.reason or ""), rec.reason
    finally:
        await store.close()


async def test_a_refused_runs_later_lines_leave_the_room_for_its_end(small_disk: Path) -> None:
    """The flood keeps writing until its kill lands. Batches of it small enough for the room
    the refused batch left in the WAL would take that room one after another; then the run's
    own end could never be stored and the engine would wait for room for ever."""
    store = await Store.open(small_disk / "tui.db")
    try:
        [rec] = await store.insert_tasks([shell_task("flood", "yes")], approved=True)
        await store.transition(rec.id, State.PENDING, State.QUEUED)
        began = await store.start_run(rec.id, "test-engine")
        assert began is not None
        flood = LineCounter(rec.id, began.run_id)
        (small_disk / "filler").write_bytes(b"\0" * 1_000_000)

        published: list[OutputBatch] = []
        refused: list[set[int]] = []
        buffer = OutputBuffer(store, published.append, lambda e, ids: refused.append(ids))
        await buffer.add(flood, STDOUT, ["x" * 70] * 15_000)
        await buffer.flush()
        assert refused == [{flood.run_id}]
        for _ in range(100):  # what it wrote before the kill landed, a little at a time
            await buffer.add(flood, STDOUT, ["x" * 70] * 50)
            await buffer.flush()

        assert await store.read_output(rec.id) == []
        assert published == []
        await store.end_run(began.run_id, outcome="FAILED", error="database disk is full")
        [run] = await store.runs(rec.id)
        assert run.outcome == "FAILED"
    finally:
        await store.close()


def _fill(disk: Path) -> None:
    """Take every byte left on ``disk``."""
    with open(disk / "filler", "ab") as f:
        while True:
            try:
                f.write(b"\0" * 65536)
                f.flush()
            except OSError:
                return


async def test_a_runs_end_is_stored_on_a_disk_filled_to_the_last_byte(small_disk: Path) -> None:
    """Nothing the run's own lines left in the WAL to reuse: its end takes the room the engine
    kept for ends (tui.engine.room), rather than waiting for room for ever."""
    fifo = small_disk.parent / "go"
    os.mkfifo(fifo)
    store = await Store.open(small_disk / "tui.db")
    try:
        room = small_disk / "tui.db-room"
        engine = Engine(store)
        await engine.start()
        assert room.stat().st_size > 0
        [task_id] = await engine.submit([shell_task("last", f"cat {fifo}")])
        # Opening the fifo returns once the task has it open: it is running.
        writer = await asyncio.to_thread(open, fifo, "w")
        _fill(small_disk)
        writer.write("its one line\n")
        writer.close()
        # Without the room the end waits for ever, and so would the engine's stop: fail here.
        async with asyncio.timeout(60):
            await engine.wait_settled([task_id])
        await engine.stop()
        rec = await store.get_task(task_id)
        assert rec is not None
        assert rec.state == State.FAILED, rec
        assert "database disk is full" in (rec.reason or ""), rec.reason
        assert not room.exists()
    finally:
        await store.close()
