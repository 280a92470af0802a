"""The engine's agents are started by its keeper (tui.procs.keeper): a real engine, a real keeper,
real shells."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import shell_task, wait_state
from tui.engine.runner import LocalExecutor
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.procs.process import ProcIdentity, identity_alive, proc_start_time
from tui.store.db import Store
from tui.store.records import STDOUT


def _keeper_pid(engine: Engine) -> int:
    executor = engine.executor
    assert isinstance(executor, LocalExecutor)
    assert executor.keeper is not None
    pid = executor.keeper.pid
    assert pid is not None
    return pid


async def test_an_agent_is_the_keepers_child_and_its_row_names_it(store: Store) -> None:
    t = shell_task("ppid", 'echo "$PPID"; exit 4')
    async with Engine(store) as engine:
        await engine.submit([t])
        await asyncio.wait_for(engine.wait_settled([t.id]), 30)
        keeper = _keeper_pid(engine)
    (line,) = [ln for ln in await store.read_output(t.id) if ln.stream == STDOUT]
    assert int(line.text) == keeper != os.getpid()
    (run,) = await store.runs(t.id)
    assert run.exit_code == 4 and run.pid is not None and run.pid == run.pgid
    assert run.proc_start  # the identity the keeper read when it started the agent


async def test_without_a_keeper_the_agent_is_the_engines_child(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TUI_KEEPER", "0")
    t = shell_task("ppid", 'echo "$PPID"')
    async with Engine(store) as engine:
        await engine.submit([t])
        await asyncio.wait_for(engine.wait_settled([t.id]), 30)
        executor = engine.executor
        assert isinstance(executor, LocalExecutor) and executor.keeper is None
    (line,) = [ln for ln in await store.read_output(t.id) if ln.stream == STDOUT]
    assert int(line.text) == os.getpid()


async def test_a_keeper_that_dies_interrupts_its_runs_and_they_run_again(
    store: Store, tmp_path: Path
) -> None:
    # The first attempt marks itself and waits (with a background job in its group); the
    # keeper is killed. The attempt ends as interrupted (not counted: max_attempts is 1), its
    # whole group is gone, and the task runs again under a new keeper and completes.
    mark = tmp_path / "first"
    script = (
        f'if [ -e "{mark}" ]; then echo second; exit 0; fi\n'
        f'sleep 300 & echo "$$ $!" > "{mark}.tmp"; mv "{mark}.tmp" "{mark}"\n'
        "sleep 300\n"
    )
    t = shell_task("survivor", script)
    async with Engine(store) as engine:
        await engine.submit([t])
        deadline = time.monotonic() + 30
        while not mark.exists():
            assert time.monotonic() < deadline, "the first attempt never started"
            await asyncio.sleep(0.01)
        pids = [int(p) for p in mark.read_text().split()]
        idents = [ProcIdentity(p, p, proc_start_time(p) or 0) for p in pids]
        first_keeper = _keeper_pid(engine)
        os.kill(first_keeper, signal.SIGKILL)
        await wait_state(engine, t.id, State.COMPLETED, State.FAILED)
        rec = await engine.get(t.id)
        assert rec is not None and rec.state == State.COMPLETED
        assert _keeper_pid(engine) != first_keeper
    assert not any(identity_alive(i) for i in idents), "the first attempt's group was left"
    runs = await store.runs(t.id)
    assert [(r.outcome, r.error) for r in runs] == [
        ("interrupted", "the keeper process that ran the agent died"),
        ("COMPLETED", ""),
    ]
    requeued = [why for _, _, to, why, _ in await store.transitions(t.id) if to == "QUEUED"]
    assert len(requeued) == 2 and "interrupted" in requeued[1], requeued
    assert [ln.text for ln in await store.read_output(t.id) if ln.stream == STDOUT] == ["second"]
