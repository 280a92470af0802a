"""Agent subprocesses in their own session/process group, torn down without orphans.

Every agent runs as the leader of a fresh session (``start_new_session=True``) so the
whole tree it forks (shells, test runners, ``sleep &``) shares one process group that
can be signalled at once.  Processes are identified by ``(pid, start_time)`` because
pids are reused; a pid alone is never trusted after the fact.

Zombies (state ``Z``) count as gone everywhere: in containers PID 1 often does not reap
reparented grandchildren, so they may linger as zombies forever while being harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "ProcIdentity",
    "group_identities",
    "group_members",
    "identity_alive",
    "kill_orphan_group",
    "proc_start_time",
    "spawn",
    "terminate_group",
    "wait_leader",
]

# Polling interval while waiting for a group to disappear.
_POLL_INTERVAL = 0.02
# Upper bound on waiting after SIGKILL; SIGKILL cannot be ignored, so this only
# guards against processes stuck in uninterruptible sleep (state D).
_KILL_WAIT = 5.0
# States of /proc/<pid>/stat that mean "no longer running anything".
_DEAD_STATES = frozenset("ZXx")


@dataclass(frozen=True)
class ProcIdentity:
    """A process as it was when recorded; ``start_time`` disambiguates reused pids."""

    pid: int
    pgid: int
    start_time: int  # field 22 of /proc/<pid>/stat: clock ticks since boot


class _Stat(NamedTuple):
    state: str
    ppid: int
    pgrp: int
    start_time: int


def _read_stat(pid: int) -> _Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:  # gone (ENOENT/ESRCH) or not ours to read
        return None
    # comm (field 2) is "(...)" and may itself contain spaces and ')', so split after
    # the LAST ')'; what follows starts with field 3 (state).
    close = raw.rfind(b")")
    if close < 0:
        return None
    fields = raw[close + 1 :].split()
    try:
        # fields[0] is field 3, so field N lives at index N - 3.
        return _Stat(
            state=fields[0].decode("ascii", "replace"),
            ppid=int(fields[1]),
            pgrp=int(fields[2]),
            start_time=int(fields[19]),
        )
    except (IndexError, ValueError):
        return None


def proc_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or None if it does not exist."""
    st = _read_stat(pid)
    return None if st is None else st.start_time


def identity_alive(ident: ProcIdentity) -> bool:
    """True only if the very process recorded in ``ident`` still runs (not a zombie)."""
    st = _read_stat(ident.pid)
    return st is not None and st.start_time == ident.start_time and st.state not in _DEAD_STATES


def _iter_pids() -> Iterable[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return ()
    return (int(n) for n in names if n.isdigit())


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids whose process group is ``pgid``."""
    out: list[int] = []
    for pid in _iter_pids():
        st = _read_stat(pid)
        if st is not None and st.pgrp == pgid and st.state not in _DEAD_STATES:
            out.append(pid)
    return sorted(out)


def group_identities(pgid: int) -> list[ProcIdentity]:
    """Identities of the live members of ``pgid``, for callers that persist them so
    members can be matched safely after a crash even if the leader has died."""
    out: list[ProcIdentity] = []
    for pid in _iter_pids():
        st = _read_stat(pid)
        if st is not None and st.pgrp == pgid and st.state not in _DEAD_STATES:
            out.append(ProcIdentity(pid=pid, pgid=pgid, start_time=st.start_time))
    return sorted(out, key=lambda i: i.pid)


async def spawn(
    argv: Sequence[str],
    *,
    cwd: str | None,
    env: Mapping[str, str] | None,
    stdin: int = asyncio.subprocess.DEVNULL,
) -> tuple[asyncio.subprocess.Process, ProcIdentity]:
    """Start ``argv`` (never via a shell) as leader of a new session and process group."""
    if isinstance(argv, str | bytes) or not argv:
        raise ValueError("argv must be a non-empty sequence of arguments, not a string")
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    pid = proc.pid
    st = _read_stat(pid)
    # The child may already have exited and been reaped by the child watcher; the
    # ppid check rejects a stat that belongs to a reused pid.  start_time 0 never
    # matches a real process, so such an identity is simply "not alive".
    start = st.start_time if st is not None and st.ppid == os.getpid() else 0
    # setsid() in the child makes pgid == pid; no need to query (it may be reaped).
    return proc, ProcIdentity(pid=pid, pgid=pid, start_time=start)


def _check_pgid(pgid: int) -> None:
    # killpg(0) / killpg(1) or our own group would take down the cockpit itself.
    if pgid <= 1 or pgid == os.getpgrp():
        raise ValueError(f"refusing to signal process group {pgid}")


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group; False if the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        # Some member is not ours (e.g. setuid); the ones we may signal still got it.
        return True
    return True


def _group_done(pgid: int, proc: asyncio.subprocess.Process | None) -> bool:
    if proc is not None and proc.returncode is None:
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True  # the usual case, answered without scanning /proc
    except PermissionError:
        pass
    return not group_members(pgid)  # members exist, but maybe only zombies


async def _wait_group(pgid: int, proc: asyncio.subprocess.Process | None, timeout: float) -> bool:
    # Polling /proc is the only way to observe grandchildren we are not the parent of.
    deadline = time.monotonic() + timeout
    while True:
        if _group_done(pgid, proc):
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(_POLL_INTERVAL, remaining))


async def terminate_group(
    pgid: int, *, grace: float = 5.0, proc: asyncio.subprocess.Process | None = None
) -> None:
    """SIGTERM the whole group, wait up to ``grace`` s, then SIGKILL what remains.

    Works when the leader already exited but grandchildren still hold the group, and
    when members ignore SIGTERM.  If ``proc`` (the leader) is given, its exit is also
    awaited so it does not stay an unreaped zombie of ours.
    """
    _check_pgid(pgid)
    if _group_done(pgid, proc):
        # Nothing left; signalling now could only hit a group that reused the number.
        return
    if _signal_group(pgid, signal.SIGTERM):
        # Stopped members would not act on SIGTERM until continued.
        _signal_group(pgid, signal.SIGCONT)
    if await _wait_group(pgid, proc, grace):
        return
    _signal_group(pgid, signal.SIGKILL)
    await _wait_group(pgid, proc, _KILL_WAIT)


def kill_orphan_group(
    ident: ProcIdentity, members: Iterable[ProcIdentity] = (), *, wait: float = 2.0
) -> bool:
    """Crash recovery: SIGKILL what is left of a group started by a previous run.

    The group is killed only if the recorded leader is still the same process: a bare
    pgid could have been reused by an unrelated group once the original one emptied.
    While the leader lives its pid (and therefore the pgid) cannot be reused, so all
    current members, grandchildren included, are ours.

    If the leader is already gone, only ``members`` (identities recorded earlier via
    :func:`group_identities`) that still match and are still in the group are killed;
    unrecorded grandchildren of a dead leader cannot be attributed safely and are left.

    Blocks up to ``wait`` seconds for the killed processes to disappear.  Returns True
    if anything was signalled.
    """
    killed_group = False
    targets: list[ProcIdentity] = []
    if ident.pgid > 1 and ident.pgid != os.getpgrp() and identity_alive(ident):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(ident.pgid, signal.SIGKILL)
            killed_group = True
        st = _read_stat(ident.pid)
        if st is not None and st.pgrp != ident.pgid and identity_alive(ident):
            # The leader moved itself to another group; kill it directly.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(ident.pid, signal.SIGKILL)
                targets.append(ident)
    own = os.getpid()
    for m in members:
        st = _read_stat(m.pid)
        if (
            m.pid != own
            and st is not None
            and st.pgrp == ident.pgid
            and st.start_time == m.start_time
            and st.state not in _DEAD_STATES
        ):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(m.pid, signal.SIGKILL)
                targets.append(m)

    def _gone() -> bool:
        if killed_group and group_members(ident.pgid):
            return False
        return not any(identity_alive(t) for t in targets)

    # Synchronous by design: used at startup, before any event loop work matters.
    deadline = time.monotonic() + wait
    while not _gone() and time.monotonic() < deadline:
        time.sleep(_POLL_INTERVAL)
    return killed_group or bool(targets)


async def wait_leader(proc: asyncio.subprocess.Process, poll: float = 0.1) -> int:
    """The leader's exit code, without waiting for its pipes to close.

    ``Process.wait()`` also waits until every pipe is closed, so a background job that keeps
    stdout open would hold it forever. The usual case (pipes close at exit) returns at once;
    otherwise the exit code the child watcher recorded is noticed within ``poll`` seconds.
    """
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while True:
            done, _ = await asyncio.wait({waiter}, timeout=poll)
            if done:
                return waiter.result()
            if proc.returncode is not None:
                return proc.returncode
    finally:
        waiter.cancel()
