"""Runs sent ahead of a free slot (tui.engine.dispatch, tui.procs.keeper_slots): once runs
are quick the engine stores a few more runs than it has slots and their agents start at the
keeper the moment a slot frees. No more agents than the concurrency live at once; a run sent
ahead that waits does not count against its timeout, can be cancelled without starting, and
is given back to the queue (no attempt used) if no slot frees in time.

Real engine, keeper, store and shell commands. The scenes below begin with quick commands
(so that runs are sent ahead), then a blocker that holds the only slot until the test opens
its FIFO, and a task sent ahead behind it."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import shell_task, stored, wait_state
from tui.engine.runner import Run
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.model.task import Task
from tui.procs.keeper_slots import HOLD_ENV
from tui.store.db import Store


def _peak_running(transitions: list[tuple[str, str, str, str, float]]) -> int:
    running = peak = 0
    for _, frm, to, _, _ in transitions:
        running += (to == State.RUNNING) - (frm == State.RUNNING)
        peak = max(peak, running)
    return peak


async def test_no_more_agents_live_than_the_concurrency_while_runs_are_sent_ahead(
    store: Store, tmp_path: Path
) -> None:
    active = tmp_path / "active"
    active.mkdir()
    counts = tmp_path / "counts"
    # Each marks itself active while it lives, and logs how many are: fewer than live.
    script = (
        f"mkdir {active}/$TUI_TASK_ID; ls {active} | wc -l >> {counts}; rmdir {active}/$TUI_TASK_ID"
    )
    tasks = [shell_task(f"q{i}", script) for i in range(60)]
    async with Engine(store, concurrency=2) as engine:
        await engine.submit(tasks)
        await engine.wait_settled(t.id for t in tasks)
        assert {(await stored(engine, t.id)).state for t in tasks} == {State.COMPLETED}
    seen = [int(n) for n in counts.read_text().split()]
    assert len(seen) == len(tasks)
    assert max(seen) <= 2, seen
    # Runs were sent ahead: the journal had more RUNNING than slots.
    assert _peak_running(await store.transitions()) > 2
    # Every run ran once.
    assert [len(await store.runs(t.id)) for t in tasks] == [1] * len(tasks)


@pytest.fixture
def fifos(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "gate")
    return tmp_path


def _scene(where: Path, **behind: object) -> tuple[list[Task], Task, Task]:
    """Quick runs (submit them first, and wait for them), then, submitted together, a blocker
    that keeps the only slot until ``where/gate`` is written and a task sent ahead behind it
    that appends to ``where/ran``."""
    quick = [shell_task(f"q{i}", "true") for i in range(3)]
    blocker = shell_task("blocker", f"read x < {where / 'gate'}", priority="high")
    ahead = shell_task(
        "ahead", f'echo "ran $TUI_ATTEMPT" >> {where / "ran"}', priority="low", **behind
    )
    return quick, blocker, ahead


async def _begin(engine: Engine, quick: list[Task], blocker: Task, ahead: Task) -> None:
    """The quick runs done, the blocker and the task behind it on their way."""
    await engine.submit(quick)
    await engine.wait_settled(t.id for t in quick)
    await engine.submit([blocker, ahead])
    await wait_state(engine, ahead.id, State.RUNNING)  # sent ahead: stored as running


async def _release(where: Path) -> None:
    # Opening a FIFO for writing blocks until the blocker opens it for reading.
    await asyncio.to_thread((where / "gate").write_text, "go\n")


@pytest.fixture
async def holding(store: Store, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Engine]:
    """An engine at concurrency 1 whose keeper holds a start sent ahead for a minute."""
    monkeypatch.setenv(HOLD_ENV, "60")
    async with Engine(store, concurrency=1) as engine:
        yield engine


async def test_a_run_sent_ahead_waits_for_its_slot_and_its_timeout_counts_from_its_start(
    holding: Engine, fifos: Path
) -> None:
    quick, blocker, ahead = _scene(fifos, timeout="0.3s")
    await _begin(holding, quick, blocker, ahead)
    assert (await stored(holding, blocker.id)).state == State.RUNNING
    await asyncio.sleep(0.6)  # twice its timeout goes by while it waits for the slot
    assert not (fifos / "ran").exists(), "it started while the blocker had the only slot"
    await _release(fifos)
    await holding.wait_settled([blocker.id, ahead.id])
    assert (await stored(holding, ahead.id)).state == State.COMPLETED
    assert (fifos / "ran").read_text() == "ran 1\n"
    runs = await holding.store.runs(ahead.id)
    assert [r.outcome for r in runs] == ["COMPLETED"]
    blocker_run = (await holding.store.runs(blocker.id))[0]
    assert blocker_run.ended_at is not None and runs[0].started_at is not None


async def test_a_run_sent_ahead_is_cancelled_without_starting(holding: Engine, fifos: Path) -> None:
    quick, blocker, ahead = _scene(fifos)
    await _begin(holding, quick, blocker, ahead)
    await holding.cancel(ahead.id)
    await wait_state(holding, ahead.id, State.CANCELLED)
    await _release(fifos)
    await holding.wait_settled([blocker.id])
    assert (await stored(holding, blocker.id)).state == State.COMPLETED
    assert not (fifos / "ran").exists(), "the cancelled run's command ran"


async def test_a_run_sent_ahead_with_no_slot_in_time_goes_back_to_the_queue(
    store: Store, fifos: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(HOLD_ENV, "0.05")
    quick, blocker, ahead = _scene(fifos)
    async with Engine(store, concurrency=1) as engine:
        await _begin(engine, quick, blocker, ahead)
        await wait_state(engine, ahead.id, State.QUEUED)  # given back, never started
        # It waits in the queue now, not sent ahead again and again while the blocker runs:
        # the blocker was not quick, so nothing is sent ahead until runs are quick again.
        await asyncio.sleep(0.3)
        assert not (fifos / "ran").exists()
        await _release(fifos)
        await engine.wait_settled([blocker.id, ahead.id])
        rec = await stored(engine, ahead.id)
    assert rec.state == State.COMPLETED
    # Once, as its first attempt: the run that never started is taken back whole.
    assert (fifos / "ran").read_text() == "ran 1\n"
    runs = await store.runs(ahead.id)
    assert [(r.outcome, r.attempt) for r in runs] == [("COMPLETED", 1)]
    assert (rec.attempts, rec.attempt_in_round) == (1, 1)
    reasons = [why for tid, _, _, why, _ in await store.transitions() if tid == ahead.id]
    assert "not started: no slot came free in time" in reasons
    # Nothing of it ran: `tui logs` of the task must not begin with a line saying it was not
    # started when its one real run completed (the journal says why it went back).
    assert [ln.text for ln in await store.read_output(ahead.id)] == []


async def test_a_stop_gives_back_a_run_sent_ahead_unstarted(
    store: Store, fifos: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(HOLD_ENV, "60")
    quick, blocker, ahead = _scene(fifos)
    async with Engine(store, concurrency=1) as engine:
        await _begin(engine, quick, blocker, ahead)
    # Stopped: both interrupted and queued again for the next engine, neither attempt used.
    assert (await store.get_task(ahead.id)).state == State.QUEUED  # type: ignore[union-attr]
    assert (await store.get_task(blocker.id)).state == State.QUEUED  # type: ignore[union-attr]
    assert not (fifos / "ran").exists()
    async with Engine(store, concurrency=1) as engine:
        writer = asyncio.create_task(_release(fifos))
        await engine.wait_settled([blocker.id, ahead.id])
        await writer
    # Once (a stop interrupts: not knowing whether a start crossed it, the attempt is its next).
    assert (fifos / "ran").read_text() in ("ran 1\n", "ran 2\n")


async def test_a_task_with_hooks_is_not_sent_ahead(holding: Engine, fifos: Path) -> None:
    # Sent ahead and given back, its on_start would be called twice for one start.
    quick, blocker, ahead = _scene(fifos, hooks={"on_start": ["true"]})
    await holding.submit(quick)
    await holding.wait_settled(t.id for t in quick)
    await holding.submit([blocker, ahead])
    await wait_state(holding, blocker.id, State.RUNNING)
    await _release(fifos)
    await holding.wait_settled([blocker.id, ahead.id])
    order = [
        (tid, to) for tid, _, to, _, _ in await holding.store.transitions() if tid != quick[0].id
    ]
    blocker_done = order.index((blocker.id, State.COMPLETED))
    assert order.index((ahead.id, State.RUNNING)) > blocker_done, "it was sent ahead"


async def test_after_a_run_given_back_more_quick_runs_are_needed_before_sending_ahead(
    store: Store,
) -> None:
    # A steady mix of quick and slow runs must not give a run back once per slow run: each
    # withdrawal doubles the quick runs in a row needed; a long quick stretch earns it back.
    engine = Engine(store, concurrency=2)

    def ended(*, quick: bool = True, unstarted: bool = False) -> None:
        run = Run("t", 1)
        if unstarted:
            run.kill_reason = "unstarted"
        else:
            run.began = time.monotonic() - (0 if quick else 1.0)
        engine._paced(run)

    for _ in range(2):
        ended()
    assert engine._ahead() == 2  # two quick in a row at concurrency 2
    ended(unstarted=True)
    assert engine._ahead() == 0
    for _ in range(3):
        ended()
    assert engine._ahead() == 0  # four are needed now
    ended()
    assert engine._ahead() == 2
    ended(unstarted=True)  # eight now
    for _ in range(7):
        ended()
    ended(quick=False)  # a slow one starts the count again
    for _ in range(7):
        ended()
    assert engine._ahead() == 0
    for _ in range(9):  # sixteen in a row: back to four needed
        ended()
    ended(quick=False)
    for _ in range(4):
        ended()
    assert engine._ahead() == 2
