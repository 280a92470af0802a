"""kill -9 of the daemon after an agent exited and its output was stored, but before the run's
end was committed: the next daemon finishes that run with its real exit code instead of
running the task again (its side effects would happen twice). The window is made
deterministic by TUI_TEST_STALL_END (tests only): the daemon records the end, touches a file,
and never commits it."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from tests.conftest import shell_task
from tests.daemon.kill9 import kill_9_daemon
from tests.daemon.test_chaos import wait_dead

from tui.daemon.lifecycle import ensure, stop
from tui.engine.end_log import STALL_ENV
from tui.model.states import State
from tui.store.chunks import stored_lines


def query(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


async def test_an_agent_that_exited_is_finished_not_run_again(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stalled, effects = tmp_path / "stalled", tmp_path / "effects"
    stalled.mkdir()
    once = {"retry": {"max_attempts": 1}}
    tasks = [
        shell_task("ok", f'for i in 1 2 3; do echo ok-$i; done; echo ok >> "{effects}"', **once),
        shell_task("bad", f'echo bad-1; echo bad >> "{effects}"; exit 3', **once),
        # Fails its first attempt (recorded, not committed): the retry is the second attempt.
        shell_task(
            "again",
            f'echo again-$TUI_ATTEMPT >> "{effects}"; [ "$TUI_ATTEMPT" -gt 1 ]',
            retry={"max_attempts": 2, "delay": "10ms"},
        ),
    ]
    monkeypatch.setenv(STALL_ENV, str(stalled))  # the daemon inherits it
    await kill_9_daemon(
        db,
        tasks,
        until=lambda: len(os.listdir(stalled)) == 3,
        what="the three ends recorded",
        concurrency=3,
    )
    assert query(db, "SELECT count(*) FROM runs WHERE ended_at IS NULL") == [(3,)]

    monkeypatch.delenv(STALL_ENV)
    remote = await ensure(db, concurrency=3)
    try:

        async def final() -> None:
            while True:
                recs = [await remote.get(t.id) for t in tasks]
                # Settled, not only FAILED: a failed attempt with a retry due is FAILED too.
                if all(r is not None and r.settled for r in recs):
                    return
                await asyncio.sleep(0.02)

        await asyncio.wait_for(final(), 30)
    finally:
        await remote.aclose()
        await stop(db)

    # Each side effect happened once per attempt that ran: nothing ran again.
    assert Counter(effects.read_text().split()) == {"ok": 1, "bad": 1, "again-1": 1, "again-2": 1}
    states = dict(query(db, "SELECT name, state FROM tasks"))
    assert states == {"ok": "COMPLETED", "bad": "FAILED", "again": "COMPLETED"}
    runs = query(
        db,
        "SELECT t.name, r.attempt, r.outcome, r.exit_code FROM runs r"
        " JOIN tasks t ON t.id = r.task_id ORDER BY t.name, r.attempt",
    )
    assert runs == [
        ("again", 1, "FAILED", 1),
        ("again", 2, "COMPLETED", 0),
        ("bad", 1, "FAILED", 3),
        ("ok", 1, "COMPLETED", 0),
    ]
    out = query(db, "SELECT id, task_id, run_id, stream, seq, at, text, lines FROM output")
    by_task = {tid: name for tid, name in query(db, "SELECT id, name FROM tasks")}
    texts = Counter((by_task[ln.task_id], ln.text) for ln in stored_lines(out))
    assert texts[("ok", "ok-1")] == texts[("ok", "ok-3")] == texts[("bad", "bad-1")] == 1
    assert texts[("bad", "[tui] exit code 3")] == 1  # the end's own line, not added twice


async def test_the_last_lines_of_an_agent_that_exited_are_stored_once(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon dies right after recording the end, before its last lines are stored (the
    "[tui] exit code 3" line is added just before: it is in no flush yet). Recovery stores
    what it had not, and nothing it had twice."""
    effects = tmp_path / "effects"
    script = f'for i in $(seq 1 200); do echo tail-$i; done; echo done >> "{effects}"; exit 3'
    task = shell_task("tail", script, retry={"max_attempts": 1})
    monkeypatch.setenv(STALL_ENV, "kill")
    remote = await ensure(db, concurrency=1)
    pid = remote.pid
    try:
        await remote.submit([task])
    finally:
        await remote.aclose()
    wait_dead(pid)  # it kills itself with the end recorded
    assert query(db, "SELECT count(*) FROM runs WHERE ended_at IS NULL") == [(1,)]

    monkeypatch.delenv(STALL_ENV)
    remote = await ensure(db, concurrency=1)
    try:

        async def final() -> None:
            while (rec := await remote.get(task.id)) is None or rec.state != State.FAILED:
                await asyncio.sleep(0.02)

        await asyncio.wait_for(final(), 30)
    finally:
        await remote.aclose()
        await stop(db)

    assert effects.read_text() == "done\n"
    assert query(db, "SELECT attempt, outcome, exit_code FROM runs") == [(1, "FAILED", 3)]
    out = query(db, "SELECT id, task_id, run_id, stream, seq, at, text, lines FROM output")
    lines = list(stored_lines(out))
    expected = [f"tail-{i}" for i in range(1, 201)] + ["[tui] exit code 3"]
    assert [ln.text for ln in sorted(lines, key=lambda ln: ln.seq)] == expected
    assert [ln.seq for ln in sorted(lines, key=lambda ln: ln.seq)] == list(range(1, 202))
