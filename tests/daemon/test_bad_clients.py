"""A real daemon meeting clients that break the protocol: each is answered (or cut off) with a
reason, the daemon's memory stays bounded, and it goes on serving everyone else."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import threading
from pathlib import Path

from tui.daemon import protocol as wire
from tui.daemon.frames import RequestTooLong, read_request
from tui.daemon.paths import daemon_paths
from tui.daemon.remote import RemoteEngine
from tui.engine import api

MB = 1024 * 1024


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def connect(db: Path, timeout: float = 10.0) -> tuple[socket.socket, dict]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(str(daemon_paths(db).socket))
    hello = json.loads(s.makefile("rb").readline())
    return s, hello


def reply_to(s: socket.socket, line: bytes) -> dict:
    s.sendall(line)
    return json.loads(s.makefile("rb").readline())


async def still_serves(viewer: RemoteEngine) -> None:
    status = await viewer.send(api.Status())
    assert status.pid == viewer.pid
    assert isinstance(await viewer.send(api.ListTasks()), api.TaskList)


def log_text(db: Path) -> str:
    log = daemon_paths(db).log
    return log.read_text() if log.exists() else ""


async def test_malformed_requests_are_each_answered_and_the_connection_goes_on(
    viewer: RemoteEngine, db: Path
) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    cases = {
        b"hello\n": "Expecting value",
        b"\xff\xfe\n": "'utf-8' codec can't decode",
        b"[1, 2]\n": "must be a JSON object",
        deep + b"\n": "nested too deeply",
        b'{"id": 7, "msg": ' + deep + b"}\n": "nested too deeply",
        b'{"id": 8, "msg": {"op": "frobnicate"}}\n': "unknown op 'frobnicate': one of submit,",
        b'{"id": 9, "msg": {"task_id": "a"}}\n': 'msg needs an "op": one of submit,',
        b'{"id": 10, "msg": {"op": "cancel", "task_id": 5}}\n': "msg.cancel.task_id: Input",
        # Before: "internal error: PydanticSerializationError", a traceback in the log.
        b'{"id": 12, "msg": {"op": "submit", "tasks": [{"name": "x\\udcff", "agent": '
        b'{"type": "shell", "instructions": "true"}}]}}\n': "lone surrogate",
    }

    def probe() -> list[tuple[bytes, dict]]:
        s, _hello = connect(db)
        with s:  # one connection for all: a bad line does not end it
            got = [(line, reply_to(s, line)) for line in cases]
            # An escaped pair is one character, not a lone surrogate: it passes.
            pair = b'{"id": 13, "msg": {"op": "cancel", "task_id": "\\ud83d\\ude00"}}\n'
            got.append((pair, reply_to(s, pair)))
            got.append((b"status", reply_to(s, wire.request(11, api.Status()))))
        return got

    got = await asyncio.to_thread(probe)
    assert got[-2][1]["error"] == "no task with id '\U0001f600'", got[-2]
    for (line, reply), want in zip(got, cases.values(), strict=False):
        assert reply["ok"] is False, line[:60]
        assert reply["error"].startswith("bad request: "), reply
        assert want in reply["error"], (line[:60], reply["error"])
        assert len(reply["error"]) < 400, reply["error"]  # a reason, not pydantic's essay
    assert got[-1][1]["ok"] is True and got[-1][1]["id"] == 11
    await still_serves(viewer)
    assert "Traceback" not in log_text(db)


async def test_a_request_line_over_the_cap_is_refused_and_the_daemon_goes_on(
    viewer: RemoteEngine, db: Path
) -> None:
    def flood() -> dict:
        s, _hello = connect(db)
        chunk = b"x" * MB
        with s:
            try:
                for _ in range(wire.REQUEST_LINE_LIMIT // MB + 2):
                    s.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass  # cut off: the reason was sent before
            return json.loads(s.makefile("rb").readline())

    reply = await asyncio.to_thread(flood)
    assert reply["ok"] is False
    assert "longer than 256 MiB" in reply["error"], reply
    await still_serves(viewer)
    assert "Traceback" not in log_text(db)


async def test_a_stream_viewer_that_keeps_sending_costs_no_memory(
    viewer: RemoteEngine, db: Path
) -> None:
    before = rss_mb(viewer.pid)

    def flood() -> None:
        s, hello = connect(db)
        with s:
            s.sendall(wire.request(1, api.Subscribe(cursor=tuple(hello["cursor"]))))
            for _ in range(200):
                s.sendall(b"y" * MB)  # no newline, and nobody reads it

    await asyncio.to_thread(flood)
    assert rss_mb(viewer.pid) - before < 64, "the daemon kept what a stream viewer sent"
    await still_serves(viewer)


async def test_many_endless_lines_at_once_hold_one_line_of_memory(
    viewer: RemoteEngine, db: Path
) -> None:
    """Six clients each send 150 MB with no newline and stay: the daemon reads one long line
    at a time, so the others wait with a small buffer instead of 150 MB each."""
    before = rss_mb(viewer.pid)
    peak = before
    socks: list[socket.socket] = []

    def send_endless() -> None:
        s, _hello = connect(db, timeout=3.0)  # the waiting ones stop being read: give up
        socks.append(s)
        try:
            for _ in range(150):
                s.sendall(b"z" * MB)
        except (TimeoutError, OSError):
            pass

    senders = [threading.Thread(target=send_endless) for _ in range(6)]
    for t in senders:
        t.start()
    while any(t.is_alive() for t in senders):  # ends: each send finishes or times out
        peak = max(peak, rss_mb(viewer.pid))
        await asyncio.sleep(0.05)  # sampling the peak, not waiting for an event
    peak = max(peak, rss_mb(viewer.pid))
    try:
        await still_serves(viewer)  # a normal request is not stuck behind them
    finally:
        for s in socks:
            s.close()
    assert peak - before < 300, f"daemon grew {peak - before:.0f} MB for 6 endless lines"
    await still_serves(viewer)


# -- read_request on its own (a real StreamReader fed by hand) ---------------------------------


def reader_of(data: bytes, limit: int = 16) -> asyncio.StreamReader:
    r = asyncio.StreamReader(limit=limit)
    r.feed_data(data)
    r.feed_eof()
    return r


async def test_read_request_takes_long_lines_whole_up_to_the_cap() -> None:
    big = asyncio.Lock()
    r = reader_of(b"short\n" + b"L" * 100 + b"\n" + b"tail")
    assert await read_request(r, big, cap=1000) == b"short\n"
    assert await read_request(r, big, cap=1000) == b"L" * 100 + b"\n"
    assert await read_request(r, big, cap=1000) == b"tail"
    assert await read_request(r, big, cap=1000) == b""


async def test_read_request_refuses_a_line_over_the_cap() -> None:
    r = reader_of(b"x" * 5000 + b"\n")
    try:
        await read_request(r, asyncio.Lock(), cap=1000)
    except RequestTooLong as e:
        assert "end every request with a newline" in str(e)
    else:
        raise AssertionError("a 5000-byte line passed a 1000-byte cap")


async def test_a_long_line_waits_for_the_one_before_it() -> None:
    big = asyncio.Lock()
    first = asyncio.StreamReader(limit=16)
    first.feed_data(b"a" * 100)  # a long line under way: its end has not come
    second = reader_of(b"b" * 100 + b"\n")
    reading_first = asyncio.create_task(read_request(first, big, cap=1000))
    reading_second = asyncio.create_task(read_request(second, big, cap=1000))
    async with asyncio.timeout(5):
        while not big.locked():
            await asyncio.sleep(0)
    for _ in range(100):  # every chance to overtake (it must not): its data is all there
        await asyncio.sleep(0)
    assert not reading_second.done()
    first.feed_data(b"\n")
    assert await reading_first == b"a" * 100 + b"\n"
    assert await reading_second == b"b" * 100 + b"\n"


async def status_out_of_descriptors(
    viewer: RemoteEngine, db: Path, *, full_backlog: bool
) -> subprocess.CompletedProcess[str]:
    """`tui daemon status` while idle connections hold every descriptor the daemon may open
    (its limit lowered with prlimit) and, with ``full_backlog``, fill its listen backlog."""
    fds = Path(f"/proc/{viewer.pid}/fd")
    soft, hard = resource.prlimit(viewer.pid, resource.RLIMIT_NOFILE)
    limit = len(os.listdir(fds)) + 20
    resource.prlimit(viewer.pid, resource.RLIMIT_NOFILE, (limit, hard))
    idle: list[socket.socket] = []
    try:
        while len(os.listdir(fds)) < limit:  # each accepted one takes a descriptor
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(daemon_paths(db).socket))
            idle.append(s)
            assert len(idle) < 200, "the daemon took more connections than its limit allows"
        while full_backlog:  # connections nobody takes from now
            s = socket.socket(socket.AF_UNIX)
            s.setblocking(False)
            try:
                s.connect(str(daemon_paths(db).socket))
            except BlockingIOError:  # full
                s.close()
                break
            idle.append(s)
        return await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "tui", "daemon", "status", "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        for s in idle:
            s.close()
        resource.prlimit(viewer.pid, resource.RLIMIT_NOFILE, (soft, hard))


async def test_a_daemon_out_of_file_descriptors_is_named_and_serves_again(
    viewer: RemoteEngine, db: Path
) -> None:
    """Idle connections cost a file descriptor each; a client that finds none left for it
    is told so (not a traceback: EINVAL reading the greeting), and the daemon serves again
    once they close."""
    res = await status_out_of_descriptors(viewer, db, full_backlog=True)
    assert res.returncode == 1, res
    assert "Traceback" not in res.stderr, res.stderr
    assert f"pid {viewer.pid}" in res.stderr and "out of file descriptors" in res.stderr
    await still_serves(viewer)


async def test_a_daemon_that_cannot_accept_is_not_called_stopped(
    viewer: RemoteEngine, db: Path
) -> None:
    """Out of descriptors (its backlog not full), the daemon never greets: the client's
    timeout said "is it stopped? `kill -CONT`" of a process that was not stopped."""
    res = await status_out_of_descriptors(viewer, db, full_backlog=False)
    assert res.returncode == 1, res
    assert "Traceback" not in res.stderr, res.stderr
    assert "it is not stopped" in res.stderr and "kill -CONT" not in res.stderr, res.stderr
    assert "out of file descriptors" in res.stderr, res.stderr
    await still_serves(viewer)
