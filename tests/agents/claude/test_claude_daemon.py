"""kill -9 of the daemon while the real `claude` CLI works for it: the next daemon kills the
orphaned CLI, and the retry continues the same session with --resume."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path

import pytest

from tests.agents.claude.conftest import CLAUDE_BIN, claude_task, needs_cli
from tests.agents.claude.model_server import ModelServer, text, tool_use
from tests.agents.claude.test_claude_cli import transcript_has
from tui.daemon.lifecycle import _alive, ensure
from tui.model.states import State
from tui.procs.groups import group_members
from tui.store.db import Store

pytestmark = needs_cli


async def test_daemon_killed_mid_run_then_the_run_resumes(
    model: ModelServer, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # The daemon inherits these, as it would from the shell that started it.
    for k, v in {
        "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": "test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HOME": str(home),
        "PATH": f"{CLAUDE_BIN.parent}{os.pathsep}{os.environ['PATH']}",
    }.items():
        monkeypatch.setenv(k, v)
    db = tmp_path / "tui.db"
    gate = threading.Event()
    slow = text("resumed and done", block=gate)
    model.script("zq-dkill", [tool_use("Bash", {"command": "echo first >> trail.txt"}), slow])
    task = claude_task(
        "kill",
        "zq-dkill",
        project,
        agent={"allowed_tools": ["Bash"]},
        retry={"max_attempts": 2, "delay": "0s"},
    )

    first_daemon = await ensure(db)
    await first_daemon.submit([task])
    await model.wait_reached(slow)
    await transcript_has(home, "tool_result")
    os.kill(first_daemon.pid, signal.SIGKILL)
    await first_daemon.aclose()
    while _alive(first_daemon.pid):
        await asyncio.sleep(0.01)  # our child: reaped as soon as it is gone
    store = await Store.open(db)
    try:
        [orphan] = await store.runs(task.id)
    finally:
        await store.close()
    # The dead daemon's guard kills the CLI's group at once (tui.daemon.guard), or the next
    # daemon's recovery does: which one wins is a race, so only the stored group is checked
    # here and its end below.
    assert orphan.pgid is not None

    viewer = await ensure(db)  # a new daemon: recovers, then retries with --resume
    try:
        since = viewer.cursor

        async def finished() -> None:
            async for ev in viewer.events(since):
                if getattr(ev, "to_state", None) in ("COMPLETED", "FAILED"):
                    [rec] = await viewer.get_many([task.id])
                    if rec.settled:
                        return

        [rec] = await viewer.get_many([task.id])
        if not rec.settled:
            await asyncio.wait_for(finished(), 60)
        [rec] = await viewer.get_many([task.id])
    finally:
        await viewer.aclose()
    assert rec.state == State.COMPLETED, rec.reason

    store = await Store.open(db)
    try:
        first, second = await store.runs(task.id)
    finally:
        await store.close()
    assert first.outcome == "interrupted" and first.pgid is not None
    assert group_members(first.pgid) == []  # the dead daemon's CLI was killed, not left
    assert first.session_id and second.session_id == first.session_id
    assert (project / "trail.txt").read_text() == "first\n"  # the tool call was not repeated
    history = model.main_requests()[-1].flat_text()
    assert "echo first >> trail.txt" in history  # the earlier turns came back with --resume
