"""kill -9 of the daemon stops its agents at once (the guard), not when the next daemon
starts: meanwhile nobody would record how they end, and a script that finished its work
unwatched would be run again by the next daemon."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path

import pytest
from tests.cli.cli_support import marker_processes
from tests.conftest import shell_task
from tests.daemon.test_chaos import wait_dead

from tui.daemon.lifecycle import ensure, stop
from tui.model.states import State


async def wait_for(predicate, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for: {what}"
        await asyncio.sleep(0.02)  # other processes' state: nothing to await but a look


def guards() -> list[int]:
    return marker_processes("tui.daemon.guard")


async def test_a_killed_daemon_takes_its_agents_with_it(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Agents started in the daemon's own process: no keeper keeps them. (A shell agent its
    # keeper started is kept for the next daemon, and killed by the guard if the keeper dies
    # too: tests/daemon/test_adopt.py.)
    monkeypatch.setenv("TUI_KEEPER", "0")
    marker = f"tui-guard-{uuid.uuid4().hex[:10]}"
    gate, effect = tmp_path / "gate", tmp_path / "effect"
    script = (
        # A background subshell (its command line is the script's, marker included) and
        # the script itself, which does its work once the gate opens.
        f": {marker}; (while :; do sleep 0.05; done) &"
        f' while [ ! -e "{gate}" ]; do sleep 0.02; done; echo done >> "{effect}"'
    )
    remote = await ensure(db, concurrency=2)
    pid = remote.pid
    try:
        task = shell_task("held", script)
        await remote.submit([task])

        async def running() -> None:
            while (rec := await remote.get(task.id)) is None or rec.state != State.RUNNING:
                await asyncio.sleep(0.02)

        await asyncio.wait_for(running(), 30)
        await wait_for(lambda: len(marker_processes(marker)) >= 2, "the script and its child")
    finally:
        os.kill(pid, signal.SIGKILL)
        await remote.aclose()
    wait_dead(pid)
    # No daemon runs now: only the guard can have stopped them (the script and the
    # background subshell of its group).
    await wait_for(lambda: not marker_processes(marker), "the dead daemon's agents to stop")
    gate.touch()
    assert not effect.exists()


async def test_a_daemon_that_stops_normally_takes_its_guard_along(db: Path) -> None:
    remote = await ensure(db, concurrency=2)
    pid = remote.pid
    await remote.aclose()
    mine = [p for p in guards() if _parent(p) == pid]
    assert len(mine) == 1, "the daemon runs one guard"
    await stop(db)
    await wait_for(lambda: not Path(f"/proc/{mine[0]}").exists(), "the guard to leave")


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])
