"""Process groups: which live processes one holds, and ending one without leaving orphans.

An agent leads a session and group of its own (tui.procs.process.spawn), so the whole tree it
forks is signalled at once; members are told apart from reused pids by their start time
(ProcIdentity). Zombies count as gone (see tui.procs.process).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterable
from typing import Protocol

from tui.procs.process import DEAD_STATES, ProcIdentity, identity_alive, read_stat

__all__ = ["group_identities", "group_members", "kill_orphan_group", "terminate_group"]

# Polling interval while waiting for a group to disappear.
_POLL_INTERVAL = 0.02
# Upper bound on waiting after SIGKILL; SIGKILL cannot be ignored, so this only
# guards against processes stuck in uninterruptible sleep (state D).
_KILL_WAIT = 5.0


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
        st = read_stat(pid)
        if st is not None and st.pgrp == pgid and st.state not in DEAD_STATES:
            out.append(pid)
    return sorted(out)


def group_identities(pgid: int) -> list[ProcIdentity]:
    """Identities of the live members of ``pgid``, for callers that persist them so
    members can be matched safely after a crash even if the leader has died."""
    out: list[ProcIdentity] = []
    for pid in _iter_pids():
        st = read_stat(pid)
        if st is not None and st.pgrp == pgid and st.state not in DEAD_STATES:
            out.append(ProcIdentity(pid=pid, pgid=pgid, start_time=st.start_time))
    return sorted(out, key=lambda i: i.pid)


class _HasReturncode(Protocol):
    @property
    def returncode(self) -> int | None: ...


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


def _group_done(pgid: int, proc: _HasReturncode | None) -> bool:
    if proc is not None and proc.returncode is None:
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True  # the usual case, answered without scanning /proc
    except PermissionError:
        pass
    return not group_members(pgid)  # members exist, but maybe only zombies


async def _wait_group(pgid: int, proc: _HasReturncode | None, timeout: float) -> bool:
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
    pgid: int, *, grace: float = 5.0, proc: _HasReturncode | None = None
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
        st = read_stat(ident.pid)
        if st is not None and st.pgrp != ident.pgid and identity_alive(ident):
            # The leader moved itself to another group; kill it directly.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(ident.pid, signal.SIGKILL)
                targets.append(ident)
    own = os.getpid()
    for m in members:
        st = read_stat(m.pid)
        if (
            m.pid != own
            and st is not None
            and st.pgrp == ident.pgid
            and st.start_time == m.start_time
            and st.state not in DEAD_STATES
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
