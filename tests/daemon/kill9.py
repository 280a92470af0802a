"""A daemon killed -9 in the middle of a run: the prologue of the recovery tests (test_adopt,
test_exit_kept). A real daemon on the test's database: start it, submit, wait for the moment
the test is about, kill -9, wait until it is gone."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.daemon.conftest import db_rows
from tests.daemon.test_chaos import wait_dead
from tests.daemon.test_guard import wait_for

from tui.daemon.lifecycle import ensure
from tui.model.task import Task


@dataclass
class Killed:
    """What the killed daemon left."""

    engine_id: str  # the one engine its runs were started by
    agents: list[int]  # the pids of the runs it left open, as stored
    keeper: int | None  # the parent of the first of them, if it still runs


async def kill_9_daemon(
    db: Path,
    tasks: list[Task],
    *,
    until: Callable[[], bool],
    what: str,
    concurrency: int = 1,
    timeout: float = 60,
) -> Killed:
    """Submit ``tasks`` to a daemon started on ``db``; once ``until()`` holds (``what``, within
    ``timeout`` seconds), kill -9 it. Killed whatever happens, and gone on return."""
    remote = await ensure(db, concurrency=concurrency)
    pid = remote.pid
    try:
        await remote.submit(tasks)
        await wait_for(until, what, timeout=timeout)
    finally:
        os.kill(pid, signal.SIGKILL)
        await remote.aclose()
    wait_dead(pid)
    (engine_id,) = {e for (e,) in db_rows(db, "SELECT engine_id FROM runs")}
    agents = open_run_pids(db)
    return Killed(engine_id, agents, _parent(agents[0]) if agents else None)


def open_run_pids(db: Path) -> list[int]:
    """The pids stored for the runs not ended yet."""
    return [p for (p,) in db_rows(db, "SELECT pid FROM runs WHERE ended_at IS NULL") if p]


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # it ended
        return None
    return int(stat[stat.rfind(")") + 2 :].split()[1])
