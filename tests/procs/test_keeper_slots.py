"""Runs sent ahead (tui.procs.keeper_slots): a held start begins the moment a counted agent
exits, is given back unstarted when no slot comes free in time, and is never started once
its run is cancelled, the engine stops or the engine dies. Real keeper processes, real
children: a held command that ran would leave its file."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from tests.procs.children import communicate
from tui.procs import keeper_client
from tui.procs.keeper_client import Keeper, KeeperLost, NotStarted
from tui.procs.keeper_slots import HOLD_ENV
from tui.procs.kept_child import KeptChild
from tui.procs.process import Child


@pytest.fixture
def keeper_env(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Held starts wait up to a minute (only a slot or a drop ends it), or as parametrized."""
    monkeypatch.setenv(HOLD_ENV, getattr(request, "param", "60"))


async def _holder(keeper: Keeper) -> Child:
    """A counted agent (one slot of one) that lives until its stdin is closed."""
    proc = await keeper.spawn(["cat"], cwd=None, env=None, stdin=subprocess.PIPE, slots=1)
    assert proc.stdin is not None
    return proc


async def _end(proc: Child) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    await communicate(proc)


async def _seen_by_keeper(keeper: Keeper) -> None:
    """The keeper answers in order: once a later (uncounted) spawn is back, it has handled
    every request sent before it."""
    await communicate(await keeper.spawn(["true"], cwd=None, env=None))


def _touch(path: Path) -> list[str]:
    return ["sh", "-c", 'echo ran >> "$0"', str(path)]


async def test_a_held_start_begins_when_the_slot_frees(keeper: Keeper, tmp_path: Path) -> None:
    first = await _holder(keeper)
    ran = tmp_path / "ran"
    held = asyncio.create_task(keeper.spawn(_touch(ran), cwd=None, env=None, slots=1, hold=True))
    await _seen_by_keeper(keeper)
    assert not held.done(), "started while the only slot was taken"
    assert not ran.exists()
    await _end(first)
    second = await held
    assert await communicate(second) == (b"", b"", 0)
    assert ran.read_text() == "ran\n"
    # Not before: the keeper had reaped the first when it started the second.
    assert not Path(f"/proc/{first.pid}").exists()


async def test_a_start_not_held_is_counted_but_never_waits(keeper: Keeper) -> None:
    first = await _holder(keeper)
    # An agent that may not wait (not sent ahead: the engine counted a slot for it) starts.
    other = await keeper.spawn(["true"], cwd=None, env=None, slots=1)
    assert await communicate(other) == (b"", b"", 0)
    await _end(first)


@pytest.mark.parametrize("keeper_env", ["0.05"], indirect=True)
async def test_a_held_start_with_no_slot_in_time_is_given_back_unstarted(
    keeper: Keeper, tmp_path: Path
) -> None:
    first = await _holder(keeper)
    ran = tmp_path / "ran"
    with pytest.raises(NotStarted):
        await keeper.spawn(_touch(ran), cwd=None, env=None, slots=1, hold=True)
    assert first.returncode is None  # the slot's agent goes on
    await _end(first)
    await _seen_by_keeper(keeper)
    assert not ran.exists(), "a start given back ran all the same"
    # The slot it would have had is free: the next held start begins at once.
    again = await keeper.spawn(_touch(ran), cwd=None, env=None, slots=1, hold=True)
    assert await communicate(again) == (b"", b"", 0)
    assert ran.read_text() == "ran\n"


async def test_a_cancelled_held_start_never_starts(
    keeper: Keeper, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A start the keeper made after all is killed as soon as its "spawned" comes back, most
    # often before its command did anything: seen here, not by its file alone.
    killed: list[int] = []
    end = keeper_client._end

    def spy(child: KeptChild) -> None:
        killed.append(child.pid)
        end(child)

    monkeypatch.setattr(keeper_client, "_end", spy)
    first = await _holder(keeper)
    ran = tmp_path / "ran"
    held = asyncio.create_task(keeper.spawn(_touch(ran), cwd=None, env=None, slots=1, hold=True))
    await _seen_by_keeper(keeper)
    held.cancel()
    with pytest.raises(asyncio.CancelledError):
        await held
    await _end(first)  # its slot frees after the drop reached the keeper
    nxt = await keeper.spawn(["true"], cwd=None, env=None, slots=1, hold=True)
    assert await communicate(nxt) == (b"", b"", 0)
    assert killed == [], "the cancelled start was started (then killed)"
    assert not ran.exists(), "the cancelled start ran"


async def test_a_stopping_engine_gets_its_held_starts_back(keeper: Keeper, tmp_path: Path) -> None:
    first = await keeper.spawn(["sleep", "300"], cwd=None, env=None, slots=1)
    ran = tmp_path / "ran"
    held = asyncio.create_task(keeper.spawn(_touch(ran), cwd=None, env=None, slots=1, hold=True))
    await _seen_by_keeper(keeper)
    await keeper.close()
    with pytest.raises(NotStarted):
        await held
    assert not ran.exists()
    # What still ran as it stopped (the engine ends its runs first) it ended too.
    assert not Path(f"/proc/{first.pid}").exists()


async def test_a_dead_engines_held_starts_never_start(keeper: Keeper, tmp_path: Path) -> None:
    first = await keeper.spawn(["sleep", "300"], cwd=None, env=None, slots=1)
    ran = tmp_path / "ran"
    held = asyncio.create_task(keeper.spawn(_touch(ran), cwd=None, env=None, slots=1, hold=True))
    await _seen_by_keeper(keeper)
    popen = keeper._popen
    assert popen is not None and keeper._transport is not None
    keeper._transport.abort()  # as the engine's kill -9 closes its end
    assert await asyncio.to_thread(popen.wait, 30) == 0
    with pytest.raises(KeeperLost):
        await held
    # It killed and reaped the agent it ran (not adoptable) as it went, and started nothing.
    assert not Path(f"/proc/{first.pid}").exists()
    assert not ran.exists(), "a held start ran after its engine died"
