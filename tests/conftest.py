"""Fixtures shared by the engine and store tests: a real SQLite file per test."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tui.engine.events import Cursor, OutputBatch
from tui.engine.scheduler import Engine
from tui.model.states import State
from tui.model.task import Task
from tui.store.db import Store
from tui.store.records import QuestionRecord, TaskRecord


@pytest.fixture(autouse=True)
def private_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own daemon socket dir and state dir (logs), and no daemon it
    started outlives it, nor a keeper. The socket dir is short: a Unix socket path has 108
    bytes."""
    runtime = Path(tempfile.mkdtemp(prefix="tui-rt-"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("TUI_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("TUI_FOREGROUND", raising=False)
    yield runtime
    for lock in (runtime / "tui").glob("*.lock"):
        pid = lock.read_text().strip()
        if pid.isdigit() and int(pid) != os.getpid():
            stop_process(int(pid))
    # A daemon killed and never followed by another leaves its keeper waiting for one
    # (TUI_KEEPER_WAIT, 300 s), its agents running.
    for keeper in keepers_under(runtime):
        end_keeper(keeper)
    shutil.rmtree(runtime, ignore_errors=True)


def keepers_under(runtime: Path) -> list[int]:
    """The keepers (tui.procs.keeper) started with ``runtime`` as their XDG_RUNTIME_DIR: this
    test's daemons' and engines' (they inherit it), never a developer's own tui's."""
    mark = b"XDG_RUNTIME_DIR=" + os.fsencode(runtime)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            if not any(a.endswith(b"/procs/keeper.py") for a in argv):
                continue
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if mark in env:
            found.append(int(entry))
    return found


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                raw = Path(f"/proc/{entry}/stat").read_bytes()
                if int(raw[raw.rfind(b")") + 1 :].split()[1]) == pid:
                    kids.append(int(entry))
    return kids


def end_keeper(pid: int, grace: float = 10.0) -> None:
    """SIGKILL the groups of the agents a keeper still runs (each leads its own), then the
    keeper, and wait until it is gone."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        for child in _children(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        ready, _, _ = select.select([pidfd], [], [], grace)
        assert ready, f"keeper {pid} still runs {grace} s after SIGKILL"
    finally:
        os.close(pidfd)


def stop_process(pid: int, grace: float = 10.0) -> None:
    """SIGTERM (a daemon then stops its agents' process groups), SIGKILL after ``grace``."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        # A daemon started from this process is our child: once it exits it stays a zombie
        # (kill(pid, 0) still succeeds) until reaped here.
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)  # another process's exit: nothing to wait on but its pid
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@contextlib.asynccontextmanager
async def owned_engine(store: Store, **kwargs: object) -> AsyncIterator[Engine]:
    """A started engine that owns the database as `tui run` does: it serves the database's
    socket, so `tui ask` and the MCP tools in its tasks reach it."""
    from tui.daemon.lifecycle import serving
    from tui.daemon.paths import daemon_paths
    from tui.daemon.service import daemon_lock

    engine = Engine(store, **kwargs)  # type: ignore[arg-type]
    with daemon_lock(daemon_paths(store.path)):
        async with engine, serving(engine, lambda: None, foreground=True, reason="test over"):
            yield engine


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(tmp_path / "tui.db")
    yield s
    await s.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An agent's project_dir: an empty directory its real tools write into."""
    p = tmp_path / "project"
    p.mkdir()
    return p


def shell_task(name: str, script: str, **fields: object) -> Task:
    return Task.model_validate(
        {"name": name, "agent": {"type": "shell", "instructions": script}, **fields}
    )


async def stored(engine: Engine, task_id: str) -> TaskRecord:
    """The task's record as stored now (it must be stored)."""
    rec = await engine.get(task_id)
    assert rec is not None, f"task {task_id} is not stored"
    return rec


async def wait_state(engine: Engine, task_id: str, *states: State) -> None:
    """Wait (on the event stream, not the clock) until the task is in one of ``states``."""

    async def watch() -> None:
        since = engine.cursor  # taken before the check, so nothing slips in between
        rec = await engine.get(task_id)
        if rec is not None and rec.state in states:
            return
        async for ev in engine.events(since):
            if isinstance(ev, OutputBatch) or ev.task_id != task_id:
                continue
            rec = await engine.get(task_id)
            if rec is not None and rec.state in states:
                return

    await asyncio.wait_for(watch(), 30)


async def question(engine: Engine, task_id: str, since: Cursor | None = None) -> QuestionRecord:
    """The task's next open question after ``since`` (default: the oldest), from the engine's
    event stream."""

    async def watch() -> QuestionRecord:
        async for ev in engine.events(since or Cursor()):
            if isinstance(ev, OutputBatch) or ev.kind != "question" or ev.task_id != task_id:
                continue
            q = await engine.store.get_question(ev.data["question_id"])
            if q is not None and q.status == "open":
                return q
        raise AssertionError("the event stream ended")

    return await asyncio.wait_for(watch(), 30)


async def answered_run(engine: Engine, task: Task, text: str, answer: str) -> TaskRecord:
    """Submit ``task``, answer the question ``text`` it asks with ``answer`` once it asks,
    and return the task when it has settled."""
    await engine.submit([task])
    q = await question(engine, task.id)
    assert q.payload["questions"][0]["question"] == text
    await engine.answer(q.id, {"answers": {text: answer}})
    await asyncio.wait_for(engine.wait_settled([task.id]), 30)
    rec = await engine.get(task.id)
    assert rec is not None
    return rec
