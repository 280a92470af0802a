from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tui.procs.groups import group_identities, group_members, kill_orphan_group, terminate_group
from tui.procs.process import Child, OutPipe, ProcIdentity, identity_alive, proc_start_time, spawn


def _ident(pid: int, pgid: int) -> ProcIdentity:
    start = proc_start_time(pid)
    assert start is not None, f"pid {pid} vanished"
    return ProcIdentity(pid=pid, pgid=pgid, start_time=start)


def _kill_leftovers(idents: Sequence[ProcIdentity]) -> None:
    # Test hygiene only: never leave sleeps behind if an assertion failed.
    for i in idents:
        if identity_alive(i):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(i.pid, signal.SIGKILL)


async def _readline(reader: OutPipe) -> bytes:
    """One line, a byte at a time (tests read a few short lines only)."""
    line = b""
    while not line.endswith(b"\n"):
        byte = await reader.read(1)
        if not byte:
            break
        line += byte
    return line


async def _read_all(reader: OutPipe) -> bytes:
    out = b""
    while chunk := await reader.read(65536):
        out += chunk
    return out


async def _communicate(proc: Child) -> tuple[bytes, bytes]:
    """Both pipes to their end, then the exit; the pipes are closed after."""
    out, err = await asyncio.gather(_read_all(proc.stdout), _read_all(proc.stderr))
    await proc.wait()
    proc.close_pipes()
    return out, err


@contextlib.asynccontextmanager
async def spawned(
    script: str,
) -> AsyncIterator[tuple[Child, ProcIdentity, list[ProcIdentity]]]:
    """Run a bash script that prints the pid of each child, then 'ready'."""
    proc = await spawn(["bash", "-c", script], cwd=None, env=None)
    ident = proc.identity()
    children: list[ProcIdentity] = []
    try:
        while True:
            line = await asyncio.wait_for(_readline(proc.stdout), 10)
            assert line, "child exited before printing 'ready'"
            text = line.decode().strip()
            if text == "ready":
                break
            children.append(_ident(int(text), ident.pgid))
        yield proc, ident, children
    finally:
        _kill_leftovers([ident, *children])
        await asyncio.wait_for(_communicate(proc), 10)  # reap and close pipes


async def test_spawn_new_session_cwd_env(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "FOO": "bar baz"}
    proc = await spawn(
        ["sh", "-c", 'echo "$(pwd)|$FOO|$(ps -o sid= -p $$)"; echo err >&2'],
        cwd=str(tmp_path),
        env=env,
    )
    ident = proc.identity()
    assert ident.pid == ident.pgid == proc.pid
    out, err = await _communicate(proc)
    cwd, foo, sid = out.decode().strip().split("|")
    assert (cwd, foo, int(sid)) == (str(tmp_path), "bar baz", proc.pid)
    assert err == b"err\n"
    assert proc.returncode == 0


async def test_spawn_rejects_shell_string() -> None:
    with pytest.raises(ValueError):
        await spawn("echo hi", cwd=None, env=None)
    with pytest.raises(ValueError):
        await spawn([], cwd=None, env=None)


async def test_terminate_group_kills_grandchildren() -> None:
    script = "sleep 300 & echo $!; sleep 300 & echo $!; echo ready; wait"
    async with spawned(script) as (proc, ident, children):
        assert len(children) == 2
        assert identity_alive(ident)
        assert {ident.pid, *(c.pid for c in children)} <= set(group_members(ident.pgid))
        await terminate_group(ident.pgid, grace=5.0, proc=proc)
        assert group_members(ident.pgid) == []
        assert not identity_alive(ident)
        assert not any(identity_alive(c) for c in children)
        assert proc.returncode is not None


async def test_terminate_group_sigkills_after_grace_when_term_ignored() -> None:
    script = "trap '' TERM; sleep 300 & echo $!; sleep 300 & echo $!; echo ready; wait"
    async with spawned(script) as (proc, ident, children):
        t0 = time.monotonic()
        await terminate_group(ident.pgid, grace=0.5, proc=proc)
        elapsed = time.monotonic() - t0
        # Returning only after the grace shows SIGTERM really was ignored.
        assert elapsed >= 0.5
        assert elapsed < 5.0
        assert group_members(ident.pgid) == []
        assert not any(identity_alive(c) for c in [ident, *children])
        assert proc.returncode == -signal.SIGKILL


async def test_terminate_group_after_leader_exited() -> None:
    # The grandchild keeps the leader's stdout pipe open, like a stray dev server.
    script = "sleep 300 & echo $!; echo ready; exit 0"
    async with spawned(script) as (proc, ident, children):
        (child,) = children
        deadline = time.monotonic() + 10
        while identity_alive(ident):  # leader gone (zombie or reaped)
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        assert group_members(ident.pgid) == [child.pid]
        await terminate_group(ident.pgid, grace=5.0, proc=proc)
        assert group_members(ident.pgid) == []
        assert not identity_alive(child)
        assert proc.returncode == 0


async def test_terminate_group_when_already_gone() -> None:
    proc = await spawn(["true"], cwd=None, env=None)
    ident = proc.identity()
    await _communicate(proc)
    t0 = time.monotonic()
    await terminate_group(ident.pgid, grace=5.0, proc=proc)
    assert time.monotonic() - t0 < 1.0


async def test_terminate_group_refuses_own_group() -> None:
    for pgid in (0, 1, os.getpgrp()):
        with pytest.raises(ValueError):
            await terminate_group(pgid, grace=0.1)


async def test_identity_alive_after_death_and_reuse() -> None:
    proc = await spawn(["sleep", "300"], cwd=None, env=None)
    ident = proc.identity()
    try:
        assert identity_alive(ident)
        # Same live pid, different start time: a reused pid must not be trusted.
        assert not identity_alive(dataclasses.replace(ident, start_time=ident.start_time + 1))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        await _communicate(proc)
    assert not identity_alive(ident)
    assert proc_start_time(ident.pid) is None

    me = _ident(os.getpid(), os.getpgrp())
    assert identity_alive(me)
    assert not identity_alive(dataclasses.replace(me, start_time=me.start_time - 1))


async def test_stat_parsing_with_hostile_comm(tmp_path: Path) -> None:
    # comm containing ") (" and spaces must not shift the parsed fields.
    exe = tmp_path / "x) (y z"
    exe.symlink_to("/bin/sleep")
    proc = await spawn([str(exe), "300"], cwd=None, env=None)
    ident = proc.identity()
    try:
        comm = Path(f"/proc/{proc.pid}/comm").read_text().strip()
        assert comm == "x) (y z"
        assert ident.start_time >= _ident(os.getpid(), 0).start_time
        assert group_members(ident.pgid) == [proc.pid]
        assert group_identities(ident.pgid) == [ident]
        assert identity_alive(ident)
    finally:
        await terminate_group(ident.pgid, grace=1.0, proc=proc)
        await _communicate(proc)


_DAEMON = """
import json, os, subprocess, sys
from tui.procs.process import proc_start_time

p = subprocess.Popen(
    ["bash", "-c", "sleep 300 & echo $!; sleep 300 & echo $!; echo ready; wait"],
    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    start_new_session=True,
)
children = []
for line in p.stdout:
    if line.strip() == b"ready":
        break
    children.append(int(line))
leader = {"pid": p.pid, "pgid": os.getpgid(p.pid), "start_time": proc_start_time(p.pid)}
print(json.dumps({"leader": leader, "children": children}))
os._exit(0)  # "crash": no cleanup of the agent group
"""


def _run_dead_daemon() -> tuple[ProcIdentity, list[ProcIdentity]]:
    res = subprocess.run(
        [sys.executable, "-c", _DAEMON],
        capture_output=True,
        timeout=30,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    data = json.loads(res.stdout)
    leader = ProcIdentity(**data["leader"])
    children = [_ident(pid, leader.pgid) for pid in data["children"]]
    return leader, children


def test_kill_orphan_group_after_daemon_died() -> None:
    leader, children = _run_dead_daemon()
    try:
        assert leader.pgid == leader.pid
        assert identity_alive(leader)
        assert {leader.pid, *(c.pid for c in children)} <= set(group_members(leader.pgid))
        assert kill_orphan_group(leader) is True
        assert group_members(leader.pgid) == []
        assert not any(identity_alive(i) for i in [leader, *children])
        assert kill_orphan_group(leader) is False
    finally:
        _kill_leftovers([leader, *children])


def test_kill_orphan_group_ignores_stale_identity() -> None:
    leader, children = _run_dead_daemon()
    try:
        stale = dataclasses.replace(leader, start_time=leader.start_time + 1)
        assert kill_orphan_group(stale) is False
        assert all(identity_alive(i) for i in [leader, *children])
    finally:
        _kill_leftovers([leader, *children])


async def test_kill_orphan_group_dead_leader_uses_recorded_members() -> None:
    script = "sleep 300 >/dev/null 2>&1 & echo $!; echo ready; read _; exit 0"
    proc = await spawn(["bash", "-c", script], cwd=None, env=None, stdin=subprocess.PIPE)
    ident = proc.identity()
    children: list[ProcIdentity] = []
    try:
        assert proc.stdin is not None
        child = _ident(int(await asyncio.wait_for(_readline(proc.stdout), 10)), ident.pgid)
        children.append(child)
        assert (await asyncio.wait_for(_readline(proc.stdout), 10)).strip() == b"ready"
        recorded = group_identities(ident.pgid)
        assert recorded == sorted([ident, child], key=lambda i: i.pid)
        proc.stdin.close()  # let the leader exit, orphaning the grandchild
        await asyncio.wait_for(proc.wait(), 10)
        assert not identity_alive(ident)
        assert identity_alive(child)
        # Without recorded members the group cannot be attributed safely: untouched.
        assert kill_orphan_group(ident) is False
        assert identity_alive(child)
        assert kill_orphan_group(ident, recorded) is True
        assert not identity_alive(child)
        assert group_members(ident.pgid) == []
    finally:
        _kill_leftovers([ident, *children])
        await asyncio.wait_for(_communicate(proc), 10)


async def test_exit_is_seen_without_pidfd(monkeypatch: pytest.MonkeyPatch) -> None:
    # Kernels before 5.3 have no pidfd_open: a thread waits for the exit instead.
    def no_pidfd(pid: int, flags: int = 0) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    proc = await spawn(["bash", "-c", "echo out; echo err >&2; exit 3"], cwd=None, env=None)
    out, err = await asyncio.wait_for(_communicate(proc), 10)
    assert (out, err, proc.returncode) == (b"out\n", b"err\n", 3)


async def test_identity_of_a_reaped_child_is_never_alive() -> None:
    proc = await spawn(["true"], cwd=None, env=None)
    assert proc.identity().pid == proc.pid
    await _communicate(proc)
    gone = proc.identity()
    assert gone.start_time == 0 and not identity_alive(gone)


async def test_a_producer_faster_than_its_reader_does_not_starve_the_loop() -> None:
    # `yes` keeps the pipe full: every read finds data at once, so only the reader itself
    # can let other coroutines (the UI, other tasks) run between reads.
    proc = await spawn(["yes", "x" * 1000], cwd=None, env=None)
    ticks = 0
    reading = True

    async def ticker() -> None:
        nonlocal ticks
        while reading:
            ticks += 1
            await asyncio.sleep(0)

    other = asyncio.ensure_future(ticker())
    try:
        for _ in range(200):
            data = await proc.stdout.read(65536)
            assert data
            hashlib.sha256(data * 16).digest()  # the reader's own work: it falls behind
        reading = False
        await other
        assert ticks >= 100
    finally:
        reading = False
        await terminate_group(proc.pid, grace=1.0, proc=proc)
        await _communicate(proc)


async def test_closing_a_pipe_ends_the_read_waiting_on_it() -> None:
    proc = await spawn(["sleep", "300"], cwd=None, env=None)  # prints nothing
    try:
        waiting = asyncio.ensure_future(proc.stdout.read(1024))
        await asyncio.sleep(0)  # let it start waiting for data
        assert not waiting.done()
        proc.stdout.close()
        assert await asyncio.wait_for(waiting, 10) == b""
        assert await proc.stdout.read(1024) == b""
    finally:
        await terminate_group(proc.pid, grace=1.0, proc=proc)
        await _communicate(proc)


class _HeldPopen(subprocess.Popen[bytes]):
    """A Popen that starts only once ``go`` is set (real process, held start)."""

    go: threading.Event | None = None  # set per test
    started: threading.Event | None = None  # set once the real Popen returned
    pids: list[int] = []  # what was started, per test
    # If set, the start asks this loop to let it go (it must be running).
    loop: asyncio.AbstractEventLoop | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        assert self.go is not None and self.started is not None
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.go.set)
        if not self.go.wait(10):
            raise TimeoutError("the start was never let go")
        super().__init__(*args, **kwargs)
        self.pids.append(self.pid)
        self.started.set()


async def test_the_loop_runs_while_a_child_is_being_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With vfork the parent waits until the child's exec is through (milliseconds on a busy
    # machine): that wait must not stop the engine's loop. The start here goes through only
    # once the loop has run a callback it asked for: on the loop's thread it never would.
    monkeypatch.setattr(_HeldPopen, "go", threading.Event())
    monkeypatch.setattr(_HeldPopen, "started", threading.Event())
    monkeypatch.setattr(_HeldPopen, "loop", asyncio.get_running_loop())
    monkeypatch.setattr(subprocess, "Popen", _HeldPopen)
    proc = await asyncio.wait_for(spawn(["true"], cwd=None, env=None), 15)
    await asyncio.wait_for(_communicate(proc), 10)
    assert proc.returncode == 0


async def test_a_start_cancelled_midway_leaves_no_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The caller goes away while the child is being started: the child is killed and reaped,
    # its pipes closed, never left running with nobody to end it.
    go, started = threading.Event(), threading.Event()
    monkeypatch.setattr(_HeldPopen, "go", go)
    monkeypatch.setattr(_HeldPopen, "started", started)
    monkeypatch.setattr(_HeldPopen, "pids", [])
    monkeypatch.setattr(subprocess, "Popen", _HeldPopen)
    task = asyncio.create_task(spawn(["sleep", "300"], cwd=None, env=None))
    await asyncio.sleep(0)  # the start is under way (held)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    fds_before = len(os.listdir("/proc/self/fd"))
    go.set()
    assert await asyncio.to_thread(started.wait, 10)
    (pid,) = _HeldPopen.pids
    deadline = time.monotonic() + 10
    while proc_start_time(pid) is not None:  # killed and reaped: gone from /proc
        assert time.monotonic() < deadline, f"the child {pid} was left behind"
        await asyncio.sleep(0.01)
    # The parent's ends of its pipes are closed again.
    assert len(os.listdir("/proc/self/fd")) <= fds_before


async def test_a_start_whose_loop_is_gone_before_it_finishes_leaves_no_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `tui run` interrupted mid-start: the runner is cancelled and the event loop closed while
    # the child is still being started on its thread. The child is still killed and reaped.
    go, started = threading.Event(), threading.Event()
    monkeypatch.setattr(_HeldPopen, "go", go)
    monkeypatch.setattr(_HeldPopen, "started", started)
    monkeypatch.setattr(_HeldPopen, "pids", [])
    monkeypatch.setattr(subprocess, "Popen", _HeldPopen)

    async def cancel_midway() -> None:
        task = asyncio.create_task(spawn(["sleep", "300"], cwd=None, env=None))
        await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def own_loop() -> None:
        asyncio.run(cancel_midway())  # returns, and closes its loop, before the start is done

    await asyncio.to_thread(own_loop)
    go.set()
    assert await asyncio.to_thread(started.wait, 10)
    (pid,) = _HeldPopen.pids
    deadline = time.monotonic() + 10
    while proc_start_time(pid) is not None:
        assert time.monotonic() < deadline, f"the child {pid} was left behind"
        await asyncio.sleep(0.01)
