"""Viewers come and go; the daemon and its runs do not notice. Sequence numbers (the store's
journal and output ids) prove that a viewer sees every event exactly once."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest
from tests.conftest import shell_task
from tests.daemon.conftest import db_rows, stored_output

from tui.daemon.lifecycle import attach
from tui.daemon.remote import RemoteEngine
from tui.engine.events import Cursor, Notice, OutputBatch, advance
from tui.engine.scheduler import EngineError
from tui.store.records import EventRecord

TIMEOUT = 60


class Seen:
    """What one viewer saw, in order."""

    def __init__(self) -> None:
        self.event_ids: list[int] = []
        self.lines: list[tuple[int, str]] = []
        self.notices: list[str] = []
        self.cursor = Cursor()

    def add(self, item: EventRecord | OutputBatch | Notice) -> None:
        if isinstance(item, Notice):
            self.notices.append(item.kind)
            return
        if isinstance(item, OutputBatch):
            self.lines += [(ln.id, ln.text) for ln in item.lines]
        else:
            self.event_ids.append(item.id)
        self.cursor = advance(self.cursor, item)


async def watch(remote: RemoteEngine, since: Cursor, seen: Seen, done) -> None:
    seen.cursor = since

    async def run() -> None:
        async for item in remote.events(since):
            seen.add(item)
            if done(item, seen):
                return

    await asyncio.wait_for(run(), TIMEOUT)


def state_is(task_id: str, state: str):
    return lambda item, _seen: (
        isinstance(item, EventRecord) and item.task_id == task_id and item.to_state == state
    )


async def test_detach_and_reattach_without_gap_or_duplicate(
    viewer: RemoteEngine, db: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "go"
    script = (
        "for i in $(seq 1 300); do echo a$i; done; "
        f"until [ -e {gate} ]; do sleep 0.05; done; "
        "for i in $(seq 1 300); do echo b$i; done"
    )
    since = viewer.cursor
    [tid] = await viewer.submit([shell_task("t", script)])
    first = Seen()
    await watch(viewer, since, first, lambda _i, s: s.lines and s.lines[-1][1] == "a300")
    await viewer.aclose()  # detach: quitting the app, or the SSH link dropping

    gate.touch()  # the run goes on with nobody watching
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while db_rows(db, f"SELECT state FROM tasks WHERE id = '{tid}'") != [("COMPLETED",)]:
        assert asyncio.get_running_loop().time() < deadline, "the task did not finish"
        await asyncio.sleep(0.05)  # nobody is attached: look at the database

    again = await attach(db)
    assert again is not None
    second = Seen()
    try:
        await watch(again, first.cursor, second, state_is(tid, "COMPLETED"))
        rest = Seen()  # output is replayed after the journal: drain the remaining lines
        await watch(
            again,
            second.cursor,
            rest,
            lambda _i, s: len(first.lines) + len(second.lines) + len(s.lines) >= 600,
        )
    finally:
        await again.aclose()

    lines = first.lines + second.lines + rest.lines
    assert [ln for _, ln in lines] == [f"a{i}" for i in range(1, 301)] + [
        f"b{i}" for i in range(1, 301)
    ]
    assert [i for i, _ in lines] == [ln.id for ln in stored_output(db)]
    events = first.event_ids + second.event_ids + rest.event_ids
    assert events == [r[0] for r in db_rows(db, "SELECT id FROM events ORDER BY id")]


ASK = 'echo "got $(tui ask "Which database?" --option SQLite --option PostgreSQL)"'


async def test_two_viewers_answer_one_question_exactly_once(viewer: RemoteEngine, db: Path) -> None:
    other = await attach(db)
    assert other is not None
    try:
        since_a, since_b = viewer.cursor, other.cursor
        [tid] = await viewer.submit([shell_task("pick", ASK)])
        asked = Seen()
        await watch(viewer, since_a, asked, lambda i, _s: getattr(i, "kind", "") == "question")
        [q] = await other.questions()  # the second viewer sees the same question
        replies = await asyncio.gather(
            viewer.answer(q.id, {"answers": {"Which database?": "SQLite"}}),
            other.answer(q.id, {"answers": {"Which database?": "PostgreSQL"}}),
            return_exceptions=True,
        )
        won = [r for r in replies if isinstance(r, str)]
        lost = [r for r in replies if isinstance(r, EngineError)]
        assert len(won) == 1 and len(lost) == 1 and "answered" in str(lost[0])

        # Both viewers see the question answered and the task finish.
        for remote, since in ((viewer, since_a), (other, since_b)):
            seen = Seen()
            await watch(remote, since, seen, state_is(tid, "COMPLETED"))
        assert await other.questions() == []
        winner = "SQLite" if replies[0] is won[0] else "PostgreSQL"
        assert [ln.text for ln in stored_output(db)] == [f"got {winner}"]
    finally:
        await other.aclose()


async def test_a_slow_viewer_does_not_hold_back_the_daemon(viewer: RemoteEngine, db: Path) -> None:
    slow = await attach(db)
    assert slow is not None
    since = slow.cursor
    await viewer.submit([shell_task("warm-up", "true")])
    stalled = slow.events(since)
    seen = Seen()
    seen.add(await asyncio.wait_for(anext(stalled), TIMEOUT))  # subscribed, then stops reading
    try:
        n = 100_000
        fast_since = viewer.cursor
        [tid] = await viewer.submit([shell_task("flood", f"seq -f '%0100g' 1 {n}")])
        # The run completes, and a viewer that reads sees it, while the slow one reads nothing.
        fast = Seen()
        await watch(viewer, fast_since, fast, lambda _i, s: len(s.lines) == n)
        assert [int(t) for _, t in fast.lines[:3]] == [1, 2, 3]

        async def drain() -> None:
            async for item in stalled:
                seen.add(item)
                if len(seen.lines) >= n and tid in {
                    r.id for r in await viewer.get_many([tid]) if r.settled
                }:
                    return

        await asyncio.wait_for(drain(), TIMEOUT)
    finally:
        await stalled.aclose()
        await slow.aclose()
    # It was told it fell behind, and then caught up from the database with nothing missing.
    assert "lagged" in seen.notices
    assert [int(t) for _, t in seen.lines] == list(range(1, n + 1))
    ids = [i for i, _ in seen.lines]
    assert ids == sorted(set(ids))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
async def test_another_user_is_refused_even_if_the_socket_is_reachable(
    viewer: RemoteEngine,
) -> None:
    sock = viewer.paths.socket
    for d in (sock.parent, sock.parent.parent):  # defeat the file modes: the peer check holds
        os.chmod(d, 0o755)
    os.chmod(sock, 0o777)
    pid = os.fork()
    if pid == 0:  # the child becomes `nobody` and tries to talk to the daemon
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(sock))
            s.settimeout(10)
            code = 0 if s.recv(1) == b"" else 2  # closed without a hello
        finally:
            os._exit(code)
    _, status = await asyncio.to_thread(os.waitpid, pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (await viewer.status()).pid > 0  # and the daemon is unharmed
